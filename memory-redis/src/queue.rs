//! The queue writers wait in for a document another writer holds (see `hold.rs`): the
//! connections they block on, and how long a lock and a wake last.

use std::sync::Mutex;
use std::time::Duration;

use redis::{AsyncConnectionConfig, Script};

use crate::connection::RedisConnection;
use crate::scripts::{LOCK_SCRIPT, RELEASE_SCRIPT};
use crate::sentinel::SentinelConnection;

/// How long a lock outlives a holder that neither writes nor lets go (it died, or its
/// connection did). A live holder's turn lasts one computation and one write, far less.
pub(crate) const LOCK_TTL: Duration = Duration::from_secs(2);
/// How long a wake waits for a waiter that is about to block.
pub(crate) const WAKE_TTL: Duration = Duration::from_secs(1);
/// The longest a waiter blocks before it tries the locks again: the bound on what a lost wake
/// costs (its waiter went away, or it came before the waiter blocked, with another's).
pub(crate) const WAKE_POLL: Duration = Duration::from_millis(50);

/// Where a provider's waiting connections come from.
pub(crate) enum Waiters {
    /// One server: a connection to it.
    Server(redis::Client),
    /// A Redis Cluster: a cluster connection, which sends the wait to the master that owns
    /// the wake list's slot. Its commands time out after [`Waiters::response_timeout`].
    Cluster(Box<redis::cluster::ClusterClient>),
    /// Redis Sentinel: a connection to the master it names now. One made for an earlier
    /// master (before a failover) is not used again.
    Sentinel(SentinelConnection),
}

impl Waiters {
    /// Which master waiting connections made now lead to: under Sentinel, how many times the
    /// master was looked for; elsewhere always the same.
    fn generation(&self) -> u64 {
        match self {
            Waiters::Sentinel(sentinel) => sentinel.generation(),
            Waiters::Server(_) | Waiters::Cluster(_) => 0,
        }
    }

    /// How long a waiting connection waits for a reply: a whole wait and some.
    pub(crate) fn response_timeout() -> Duration {
        WAKE_POLL + Duration::from_secs(1)
    }
}

/// What a provider needs to hold documents: the scripts, and connections to wait on.
pub(crate) struct Holds {
    /// Where waiting connections come from; `None` (a provider made from a connection alone):
    /// this provider does not hold, and its writers race.
    pub(crate) waiters: Option<Waiters>,
    connect_timeout: Duration,
    pub(crate) lock_script: Script,
    pub(crate) release_script: Script,
    /// Waiting connections not in use, each used by one waiter at a time, with the master
    /// they lead to (see [`Waiters::generation`]).
    idle: Mutex<Vec<(RedisConnection, u64)>>,
}

impl Default for Holds {
    fn default() -> Self {
        Holds {
            waiters: None,
            connect_timeout: Duration::from_secs(1),
            lock_script: Script::new(LOCK_SCRIPT),
            release_script: Script::new(RELEASE_SCRIPT),
            idle: Mutex::new(Vec::new()),
        }
    }
}

impl Holds {
    /// Holds that wait on connections made by `waiters`.
    pub(crate) fn new(waiters: Waiters, connect_timeout: Duration) -> Self {
        Holds {
            waiters: Some(waiters),
            connect_timeout,
            ..Holds::default()
        }
    }

    /// Blocks until a wake on `wake_key` or `timeout`. Anything that goes wrong ends the wait
    /// early (the caller tries the locks again), after a short pause if no connection was made.
    pub(crate) async fn wait(&self, wake_key: &str, timeout: Duration) {
        let Some((mut connection, generation)) = self.take().await else {
            tokio::time::sleep(timeout.min(Duration::from_millis(5))).await;
            return;
        };
        // Redis reads the timeout as seconds; 0 would block forever.
        let seconds = format!("{:.3}", timeout.as_secs_f64().max(0.001));
        let woke: redis::RedisResult<redis::Value> = redis::cmd("BLPOP")
            .arg(wake_key)
            .arg(seconds)
            .query_async(&mut connection)
            .await;
        // A connection whose wait failed, or was cancelled (then this is never reached), may
        // still be blocked: it is dropped, never reused.
        if woke.is_ok() {
            self.idle
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push((connection, generation));
        }
    }

    /// An idle waiting connection to the current master, or a new one.
    async fn take(&self) -> Option<(RedisConnection, u64)> {
        let waiters = self.waiters.as_ref()?;
        let generation = waiters.generation();
        let idle = {
            let mut idle = self
                .idle
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            idle.retain(|(_, made_for)| *made_for == generation);
            idle.pop()
        };
        if idle.is_some() {
            return idle;
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(Waiters::response_timeout()));
        let connection: RedisConnection = match waiters {
            Waiters::Server(client) => client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .ok()?
                .into(),
            Waiters::Cluster(client) => client.get_async_connection().await.ok()?.into(),
            Waiters::Sentinel(sentinel) => {
                let (client, generation) = sentinel.master_client().await.ok()?;
                let connection = client.get_multiplexed_async_connection_with_config(&config);
                return Some((connection.await.ok()?.into(), generation));
            }
        };
        Some((connection, generation))
    }
}
