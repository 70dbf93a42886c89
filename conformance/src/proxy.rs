//! A TCP proxy to a test server whose forwarding can be stopped without closing anything, as a
//! network path that silently drops everything would: for the deadline tests of every backend
//! with a server.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// What a connection of the proxy forwards.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Budget {
    /// Everything.
    All,
    /// This many more reads from the client, and whatever the server sends.
    Requests(usize),
    /// Nothing, either way.
    Nothing,
}

impl Budget {
    fn lets_through(self, from_client: bool) -> bool {
        match self {
            Budget::All => true,
            Budget::Requests(left) => left > 0 || !from_client,
            Budget::Nothing => false,
        }
    }
}

/// The proxy's switches, shared by its connections.
struct Switches {
    /// The state connections accepted from now on start in.
    new_connections: Mutex<Budget>,
    /// The state of every connection accepted so far.
    connections: Mutex<Vec<Arc<watch::Sender<Budget>>>>,
    /// Whether replies are held, on every connection (see
    /// [`StallingProxy::hold_replies_from_request_with`]).
    replies_held: watch::Sender<bool>,
    /// Bytes that, once seen in a request, hold the replies from then on.
    trip: Mutex<Option<Vec<u8>>>,
    /// Where connections accepted from now on go (`host:port`).
    upstream: Mutex<String>,
}

/// A TCP proxy to a server that stalls on command: what it holds back is neither dropped nor
/// closed, and flows again when it resumes.
pub struct StallingProxy {
    addr: SocketAddr,
    switches: Arc<Switches>,
    /// Accepts connections; aborting it drops every connection's tasks, and so their sockets.
    accepting: JoinHandle<()>,
}

impl StallingProxy {
    /// A proxy on a free loopback port to `upstream` (`host:port`), forwarding everything.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start(upstream: impl Into<String>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let switches = Arc::new(Switches {
            new_connections: Mutex::new(Budget::All),
            connections: Mutex::new(Vec::new()),
            replies_held: watch::Sender::new(false),
            trip: Mutex::new(None),
            upstream: Mutex::new(upstream.into()),
        });
        let accepting = tokio::spawn({
            let switches = switches.clone();
            async move {
                let mut pumps = JoinSet::new();
                while let Ok((client, _)) = listener.accept().await {
                    let upstream = switches.upstream.lock().unwrap().clone();
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        continue;
                    };
                    let budget = *switches.new_connections.lock().unwrap();
                    let switch = Arc::new(watch::Sender::new(budget));
                    switches.connections.lock().unwrap().push(switch.clone());
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    pumps.spawn(pump(
                        client_read,
                        server_write,
                        switch.clone(),
                        switches.clone(),
                        true,
                    ));
                    pumps.spawn(pump(
                        server_read,
                        client_write,
                        switch,
                        switches.clone(),
                        false,
                    ));
                }
            }
        });
        StallingProxy {
            addr,
            switches,
            accepting,
        }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections accepted from now on go to `upstream` (`host:port`), as a DNS name or a
    /// pooler pointed at a promoted standby would send them; those open now stay as they are.
    pub fn retarget(&self, upstream: impl Into<String>) {
        *self.switches.upstream.lock().unwrap() = upstream.into();
    }

    /// Every connection, open or opened from now on, stops forwarding, either way.
    pub fn stall(&self) {
        *self.switches.new_connections.lock().unwrap() = Budget::Nothing;
        self.set_open(Budget::Nothing);
    }

    /// Every open connection forwards `requests` more reads from the client (and whatever the
    /// server answers meanwhile), then stops forwarding.
    pub fn stall_after(&self, requests: usize) {
        self.set_open(Budget::Requests(requests));
    }

    /// Connections opened from now on forward; those open now stay as they are.
    pub fn let_new_through(&self) {
        *self.switches.new_connections.lock().unwrap() = Budget::All;
    }

    /// Goes on forwarding requests, but holds every reply from the first request that
    /// contains `needle` on (on every connection).
    pub fn hold_replies_from_request_with(&self, needle: &[u8]) {
        *self.switches.trip.lock().unwrap() = Some(needle.to_vec());
    }

    /// Every connection forwards again, what was held first.
    pub fn resume(&self) {
        *self.switches.trip.lock().unwrap() = None;
        *self.switches.new_connections.lock().unwrap() = Budget::All;
        self.switches.replies_held.send_replace(false);
        self.set_open(Budget::All);
    }

    fn set_open(&self, budget: Budget) {
        for switch in self.switches.connections.lock().unwrap().iter() {
            switch.send_replace(budget);
        }
    }
}

impl Drop for StallingProxy {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

/// Copies `from` to `to` while the connection's budget (and, for replies, the proxy's hold)
/// lets it through; whatever arrives meanwhile (bytes, or the end of the stream) waits until
/// it does.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    switch: Arc<watch::Sender<Budget>>,
    switches: Arc<Switches>,
    from_client: bool,
) {
    let mut forwarding = switch.subscribe();
    let mut held = switches.replies_held.subscribe();
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let read = from.read(&mut buffer).await;
        if forwarding
            .wait_for(|budget| budget.lets_through(from_client))
            .await
            .is_err()
        {
            return;
        }
        if !from_client && held.wait_for(|held| !*held).await.is_err() {
            return;
        }
        let n = match read {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if from_client {
            switch.send_if_modified(|budget| match budget {
                Budget::Requests(left) => {
                    *left -= 1;
                    true
                }
                _ => false,
            });
            let mut trip = switches.trip.lock().unwrap();
            let tripped = trip.as_ref().is_some_and(|needle| {
                buffer[..n]
                    .windows(needle.len())
                    .any(|window| window == needle)
            });
            if tripped {
                *trip = None;
                switches.replies_held.send_replace(true);
            }
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
