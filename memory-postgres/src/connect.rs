//! Connecting: the first connection, checked; the pool, which refuses a standby and pings a
//! connection idle for long; and errors that name a standby or a pooler's refusal.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use memory_core::MemoryError;
use memory_core::raw::{Connect, Settings};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Executor, PgConnection};

use crate::config::{PoolMode, PostgresConfig};
use crate::sql::Begin;
use crate::store::{PostgresStore, server_name, validate_schema};

#[async_trait]
impl Connect for PostgresStore {
    type Config = PostgresConfig;

    /// Connects with `config`, and applies the migrations unless `config.migrate` is false.
    ///
    /// # Errors
    /// [`MemoryError::Config`] for a bad URL, schema name or deadline (never echoing the
    /// password); [`MemoryError::Unavailable`], naming the server and the cause (a refused
    /// connection, a standby), as soon as the connection fails, and at the latest when the
    /// shorter of the connect timeout and the deadline passes without one.
    async fn connect(config: &PostgresConfig) -> Result<(Self, Settings), MemoryError> {
        validate_schema(&config.schema)?;
        let options = config.connect_options()?;
        let server = server_name(&options);
        let timeout = config.connect_timeout();
        let deadline = config.deadline();
        // The first connection is opened here, not by the pool: sqlx's pool retries a refused
        // connection until its timeout and then reports only that it timed out (`memory sync`
        // against a server that was down took 15 s, three connect timeouts, to say "pool timed
        // out"). Opened here, a refusal ends the call at once with its cause; and as a
        // connection is what the first call of a lazily connected provider waits for, it is
        // bounded by the deadline too.
        let within = timeout.min(deadline);
        let mut first = open_checked(&options, &server, within).await?;
        let reached_a_standby = Arc::new(AtomicBool::new(false));
        // Lazy: the connection above showed the server answers; the pool opens its own as
        // calls need them (`first` cannot be handed to it), each within the connect timeout.
        let pool = PgPoolOptions::new()
            .max_connections(config.max_connections.max(1))
            .acquire_timeout(timeout)
            // sqlx pings every idle connection as a call takes it: a round trip before each
            // call's first statement, as long as the statement itself for a prefetch. A
            // connection comes back to the pool only after answering all its call's statements
            // and a ping (see [`Lease`]), so one used moments ago is taken as it is; one idle longer
            // (a server restarted meanwhile) is pinged first, within the deadline.
            .test_before_acquire(false)
            .after_connect({
                let reached_a_standby = reached_a_standby.clone();
                move |connection, _| {
                    let reached_a_standby = reached_a_standby.clone();
                    Box::pin(async move {
                        let standby = in_recovery(connection).await;
                        reached_a_standby.store(matches!(standby, Ok(true)), Ordering::Relaxed);
                        if standby? {
                            return Err(in_recovery_error());
                        }
                        Ok(())
                    })
                }
            })
            .before_acquire(move |connection, meta| {
                Box::pin(async move {
                    if meta.idle_for < TEST_IDLE_AFTER {
                        return Ok(true);
                    }
                    match tokio::time::timeout(deadline, connection.ping()).await {
                        Ok(answered) => answered.map(|()| true),
                        Err(_) => Err(sqlx::Error::Io(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "no reply to a ping on acquire within the deadline",
                        ))),
                    }
                })
            })
            .connect_lazy_with(options);
        let mut store = Self::from_pool(pool, &config.schema)?;
        store.reached_a_standby = reached_a_standby;
        store.release_within = deadline;
        store.lock_timeout = Some(config.lock_timeout());
        if config.pool_mode == PoolMode::Transaction {
            store.pool_mode = PoolMode::Transaction;
            store.begin = Begin::with(&config.timeouts());
        }
        let migrated = match config.migrate {
            true => store.migrate_on(&mut first).await,
            false => Ok(()),
        };
        // A graceful close (the server sees the session end), but never longer than the
        // deadline: over TLS, sqlx's close waits to read from the peer.
        let _ = tokio::time::timeout(deadline, first.close()).await;
        migrated?;
        let settings = Settings {
            max_attempts: config.max_attempts,
            deadline: config.deadline(),
            retention: config.history,
        };
        Ok((store, settings))
    }
}

impl PostgresStore {
    pub(crate) fn unavailable(&self, err: sqlx::Error) -> MemoryError {
        unavailable(&self.location, &self.reached_a_standby, err)
    }
}

/// How long a pooled connection may sit idle and still be used without a ping first.
const TEST_IDLE_AFTER: Duration = Duration::from_secs(1);

/// A failed connect: `Config` when the server refused the session settings of session mode (a
/// pooler answers so), else as [`unavailable`].
fn refused(server: &str, reached_a_standby: &AtomicBool, err: sqlx::Error) -> MemoryError {
    if err.to_string().contains("unsupported startup parameter") {
        return MemoryError::Config {
            message: format!(
                "{server} refused the connection's startup parameters ({err}): behind a pooler in transaction mode (PgBouncer's pool_mode = transaction), set pool_mode = \"transaction\""
            ),
        };
    }
    unavailable(server, reached_a_standby, err)
}

/// `err` on `what` as `Unavailable`, retryable: a standby is named as such, whether it refused
/// a statement or the pool timed out because every connection it opened reached one (see
/// [`in_recovery`]). A failover, while it happens, fails calls so.
fn unavailable(what: &str, reached_a_standby: &AtomicBool, err: sqlx::Error) -> MemoryError {
    let standby = match &err {
        sqlx::Error::PoolTimedOut => reached_a_standby.load(Ordering::Relaxed),
        err => refused_as_a_standby(err),
    };
    if standby {
        return on_a_standby(what, err);
    }
    MemoryError::unavailable(what, err)
}

/// `Unavailable` on `what`, which is a standby, with `err` as what it answered.
fn on_a_standby(what: &str, err: sqlx::Error) -> MemoryError {
    MemoryError::Unavailable {
        what: what.to_owned(),
        message: format!(
            "the server is a standby (in recovery), which takes no writes and may serve stale reads ({err}); calls fail until it is promoted or the URL reaches the primary"
        ),
        source: Some(Box::new(err)),
    }
}

/// What a connection to a standby fails with (see [`in_recovery`]).
fn in_recovery_error() -> sqlx::Error {
    sqlx::Error::Protocol("the server is in recovery (a standby)".to_owned())
}

/// A connection to the server of `options` (named `server` in errors), checked not to be a
/// standby, within `within`. It fails as soon as the server refuses or cannot be reached, with
/// the cause (sqlx's pool would retry a refused connection until its timeout, then report
/// only that it timed out), and at `within` when nothing answers.
async fn open_checked(
    options: &PgConnectOptions,
    server: &str,
    within: Duration,
) -> Result<PgConnection, MemoryError> {
    let opening = async {
        let mut connection = PgConnection::connect_with(options)
            .await
            .map_err(|err| refused(server, &AtomicBool::new(false), err))?;
        match in_recovery(&mut connection).await {
            Ok(false) => Ok(connection),
            Ok(true) => {
                let _ = connection.close().await;
                Err(on_a_standby(server, in_recovery_error()))
            }
            Err(err) => Err(unavailable(server, &AtomicBool::new(false), err)),
        }
    };
    match tokio::time::timeout(within, opening).await {
        Ok(opened) => opened,
        Err(_) => Err(MemoryError::Unavailable {
            what: server.to_owned(),
            message: format!(
                "no connection within {within:?} (the shorter of connect_timeout_ms and deadline_ms)"
            ),
            source: None,
        }),
    }
}

/// Whether the server refused `err`'s statement for being in recovery: `BEGIN READ WRITE`
/// ("cannot set transaction read-write mode during recovery"), or a write
/// (`read_only_sql_transaction`, 25006, which no transaction of ours is otherwise).
pub(crate) fn refused_as_a_standby(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db)
        if db.code().as_deref() == Some("25006") || db.message().contains("during recovery"))
}

/// Whether the server of a new connection is in recovery (a standby), which the pool refuses:
/// it never keeps one, so no plain read comes from a standby (a transaction's `BEGIN READ
/// WRITE` refuses it too, see [`Begin`]). One round trip per connection opened, in the simple
/// protocol, which a pooler in transaction mode takes.
pub(crate) async fn in_recovery(connection: &mut PgConnection) -> Result<bool, sqlx::Error> {
    let row = connection
        .fetch_one(sqlx::raw_sql("SELECT pg_is_in_recovery()"))
        .await?;
    sqlx::Row::try_get(&row, 0)
}
