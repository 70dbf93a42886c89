//! Serving a [`Service`] on a listener: connections counted and timed, and a stop that lets
//! the requests in flight and the writes they started finish.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use crate::service::Service;
use crate::wire;

impl Service {
    /// Serves on `listener` until `shutdown` completes; then stops accepting, lets the
    /// requests in flight and every write started finish (up to the config's
    /// `shutdown_timeout_ms`), and returns.
    ///
    /// Each connection must send a request's headers whole within `header_timeout_ms` of the
    /// request before (or of its opening), else it is closed: so a client that trickles
    /// headers, or a connection left idle, holds nothing for long. At most `max_connections`
    /// are open at once; more wait in the listen queue.
    ///
    /// # Errors
    /// None so far: a failure to accept a connection is waited out (the machine's limit on
    /// open files, or a connection reset before it was accepted).
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(self.header_timeout);
        let connections = Arc::new(Semaphore::new(self.max_connections));
        let open = hyper_util::server::graceful::GracefulShutdown::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                () = &mut shutdown => break,
                accepted = accept(&listener, &connections) => accepted,
            };
            let Some((stream, place)) = accepted else {
                continue;
            };
            // Answers are written whole; waiting to fill a segment only delays them.
            let _ = stream.set_nodelay(true);
            let service = hyper_util::service::TowerToHyperService::new(self.router.clone());
            let connection = open.watch(http.serve_connection(
                hyper_util::rt::TokioIo::new(wire::Wire::new(stream)),
                service,
            ));
            tokio::spawn(async move {
                // A connection's end (closed, timed out, reset) is the client's business.
                let _ = connection.await;
                drop(place);
            });
        }
        drop(listener);
        let stopping = Instant::now();
        // Connections in flight get until the shutdown timeout; then they are dropped.
        let _ = tokio::time::timeout(self.shutdown_timeout, open.shutdown()).await;
        self.tasks.close();
        let left = self.shutdown_timeout.saturating_sub(stopping.elapsed());
        let _ = tokio::time::timeout(left, self.tasks.wait()).await;
        Ok(())
    }
}

/// The next connection, with its place among those open at once; `None` when accepting
/// failed, after a pause when the failure is the machine's (out of file descriptors, say), so
/// the loop does not spin.
async fn accept(
    listener: &tokio::net::TcpListener,
    connections: &Arc<Semaphore>,
) -> Option<(tokio::net::TcpStream, tokio::sync::OwnedSemaphorePermit)> {
    let place = Arc::clone(connections).acquire_owned().await.ok()?;
    match listener.accept().await {
        Ok((stream, _)) => Some((stream, place)),
        Err(error) => {
            let reset = matches!(
                error.kind(),
                std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::ConnectionReset
            );
            if !reset {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            None
        }
    }
}
