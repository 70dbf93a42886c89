//! A connection to the master that Redis Sentinel names, which follows a failover.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::sentinel::SentinelClient;
use redis::{
    AsyncConnectionConfig, Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, ServerErrorKind,
    Value,
};

/// A connection to the current master of a set that Redis Sentinel monitors. The first call,
/// and the first after one that failed in a way a failover explains (the connection dropped or
/// timed out, or the server answered `READONLY`: it was demoted to a replica), asks the
/// sentinels for the master again and connects to it, after checking that it is one
/// (`ROLE`). Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct SentinelConnection(Arc<Inner>);

impl std::fmt::Debug for SentinelConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentinelConnection")
            .field("generation", &self.generation())
            .finish_non_exhaustive()
    }
}

struct Inner {
    sentinels: tokio::sync::Mutex<SentinelClient>,
    config: AsyncConnectionConfig,
    /// The master's connection while it serves, and which one it is: the count of masters
    /// found so far.
    current: Mutex<Option<(MultiplexedConnection, u64)>>,
    /// How many masters were found; counted only by the finder, under `sentinels`' lock.
    found: AtomicU64,
}

impl SentinelConnection {
    /// Finds the master through `sentinels` and connects to it with `config`.
    ///
    /// # Errors
    /// When no sentinel answers, none knows the master, or the master cannot be reached.
    pub async fn connect(
        sentinels: SentinelClient,
        config: AsyncConnectionConfig,
    ) -> redis::RedisResult<SentinelConnection> {
        let connection = SentinelConnection(Arc::new(Inner {
            sentinels: tokio::sync::Mutex::new(sentinels),
            config,
            current: Mutex::new(None),
            found: AtomicU64::new(0),
        }));
        connection.master().await?;
        Ok(connection)
    }

    /// A client for the master the sentinels name now, for connections of a waiter's own,
    /// and the generation it belongs to (see [`SentinelConnection::generation`]).
    pub(crate) async fn master_client(&self) -> redis::RedisResult<(redis::Client, u64)> {
        let generation = self.generation();
        let mut sentinels = self.0.sentinels.lock().await;
        Ok((sentinels.async_get_client().await?, generation))
    }

    /// How many times the master was looked for: a connection made for an earlier one may
    /// lead to a demoted server.
    pub(crate) fn generation(&self) -> u64 {
        self.0.found.load(Ordering::SeqCst)
    }

    /// The master's connection: the current one, or a new one to the master the sentinels
    /// name now.
    async fn master(&self) -> redis::RedisResult<(MultiplexedConnection, u64)> {
        if let Some(current) = self.current() {
            return Ok(current);
        }
        // One finder at a time: the others then take what it found.
        let mut sentinels = self.0.sentinels.lock().await;
        if let Some(current) = self.current() {
            return Ok(current);
        }
        let client = sentinels.async_get_client().await?;
        let connection = client
            .get_multiplexed_async_connection_with_config(&self.0.config)
            .await?;
        let current = (connection, self.0.found.fetch_add(1, Ordering::SeqCst) + 1);
        *self
            .0
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(current.clone());
        Ok(current)
    }

    fn current(&self) -> Option<(MultiplexedConnection, u64)> {
        self.0
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Forgets the connection of `generation`, if it is still the current one, so the next
    /// call finds the master again.
    fn forget(&self, generation: u64) {
        let mut current = self
            .0
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if current
            .as_ref()
            .is_some_and(|(_, found)| *found == generation)
        {
            *current = None;
        }
    }
}

/// Whether a failover explains `err`: the connection dropped, was refused or timed out, or the
/// server was demoted to a replica (`READONLY`).
fn after_failover(err: &RedisError) -> bool {
    err.is_connection_dropped()
        || err.is_io_error()
        || err.is_timeout()
        || err.is_connection_refusal()
        || err.kind() == ErrorKind::Server(ServerErrorKind::ReadOnly)
}

impl ConnectionLike for SentinelConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let (mut connection, generation) = self.master().await?;
            let reply = connection.req_packed_command(cmd).await;
            if reply.as_ref().is_err_and(after_failover) {
                self.forget(generation);
            }
            reply
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let (mut connection, generation) = self.master().await?;
            let replies = connection
                .req_packed_commands(pipeline, offset, count)
                .await;
            // In a pipeline that ignores errors, a refusal comes back as a value.
            let demoted = |values: &Vec<Value>| {
                values.iter().any(|value| {
                    matches!(value, Value::ServerError(err)
                        if err.kind() == Some(ServerErrorKind::ReadOnly))
                })
            };
            if replies.as_ref().map_or_else(after_failover, demoted) {
                self.forget(generation);
            }
            replies
        })
    }

    fn get_db(&self) -> i64 {
        self.current()
            .map_or(0, |(connection, _)| connection.get_db())
    }
}
