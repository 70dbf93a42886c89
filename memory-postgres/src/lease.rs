//! Connections from the pool for one call (a [`Lease`] goes back only once answered), and the
//! statements run on them, kept prepared only where the pool mode allows.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use memory_core::MemoryError;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::{Query, QueryAs, QueryScalar};
use sqlx::{Connection, Executor, FromRow, PgConnection, Postgres};

use crate::config::PoolMode;
use crate::store::PostgresStore;

impl PostgresStore {
    /// A connection from the pool, closed unless it is marked answered (see [`Lease`]).
    pub(crate) async fn lease(&self) -> Result<Lease, MemoryError> {
        match self.pool.acquire().await {
            Ok(connection) => Ok(Lease::new(connection, self.release_within)),
            Err(sqlx::Error::PoolTimedOut) if !self.reached_a_standby.load(Ordering::Relaxed) => {
                Err(self.no_connection().await)
            }
            Err(err) => Err(self.db_error(err)),
        }
    }

    /// Why the pool gave no connection within its timeout, as `Unavailable`. sqlx's pool keeps
    /// the cause to itself (it retries a refused connection until its timeout, then reports
    /// only that it timed out), so a TCP connect to the server tells a server that cannot be
    /// reached, named with the cause, from one whose connections are all in use.
    async fn no_connection(&self) -> MemoryError {
        let options = self.pool.connect_options();
        let waited = self.pool.options().get_acquire_timeout();
        let (host, port) = (options.get_host(), options.get_port());
        let cause = match options.get_socket() {
            // A Unix socket: nothing to add to what sqlx said.
            Some(_) => None,
            None => match tokio::time::timeout(
                PROBE_WITHIN,
                tokio::net::TcpStream::connect((host, port)),
            )
            .await
            {
                Ok(Ok(_)) => None,
                Ok(Err(err)) => Some(format!("connecting to {host}:{port}: {err}")),
                Err(_) => Some(format!(
                    "connecting to {host}:{port}: no answer within {PROBE_WITHIN:?}"
                )),
            },
        };
        MemoryError::Unavailable {
            what: self.location.clone(),
            message: match cause {
                Some(cause) => format!("no connection within {waited:?} ({cause})"),
                None => format!(
                    "no connection within {waited:?}: the server accepts TCP connections, but \
                     all {} of the pool's were in use or none could be opened",
                    self.pool.size()
                ),
            },
            source: Some(Box::new(sqlx::Error::PoolTimedOut)),
        }
    }

    /// `work` on a connection from the pool, returning what it returned. The connection goes
    /// back to the pool only when `work` ran to its end: a call dropped while it waits (its
    /// deadline passed) closes it, see [`Lease`].
    pub(crate) async fn leased<T>(
        &self,
        work: impl AsyncFnOnce(&mut PgConnection) -> T,
    ) -> Result<T, MemoryError> {
        let mut lease = self.lease().await?;
        let answer = work(&mut lease).await;
        lease.answered();
        Ok(answer)
    }

    /// One statement, `work`, on a connection from the pool, as [`PostgresStore::leased`]:
    /// alone in session mode; in transaction mode inside a transaction of its own that sets the
    /// timeouts, since outside one the pooler may send each of its round trips (a statement not
    /// kept prepared takes two) to another server connection.
    pub(crate) async fn single<T>(
        &self,
        work: impl AsyncFnOnce(&mut PgConnection) -> Result<T, sqlx::Error>,
    ) -> Result<Result<T, sqlx::Error>, MemoryError> {
        self.leased(async |connection| match self.pool_mode {
            PoolMode::Session => work(connection).await,
            PoolMode::Transaction => {
                let mut transaction = self.transaction(connection).await?;
                match work(&mut transaction).await {
                    Ok(answer) => transaction.commit().await.map(|()| answer),
                    Err(err) => {
                        // Answered here, not when the connection next goes out.
                        let _ = transaction.rollback().await;
                        Err(err)
                    }
                }
            }
        })
        .await
    }

    /// Whether statements stay prepared on their connection for the next call: in session mode.
    /// A pooler in transaction mode may hand the next transaction another server connection,
    /// where a named statement is missing, or is another client's of the same name; there each
    /// statement is parsed anew, unnamed, inside its transaction.
    pub(crate) fn keeps_prepared(&self) -> bool {
        self.pool_mode == PoolMode::Session
    }

    /// `sql` as a statement of this provider, kept prepared on its connection only where
    /// [`PostgresStore::keeps_prepared`] says: every statement on the pool goes through this
    /// or its two siblings, so that none is left prepared behind a transaction pooler.
    pub(crate) fn query<'q>(&self, sql: &'q Arc<str>) -> Query<'q, Postgres, PgArguments> {
        sqlx::query(sql).persistent(self.keeps_prepared())
    }

    /// [`PostgresStore::query`], for rows read as `O`.
    pub(crate) fn query_as<'q, O>(&self, sql: &'q Arc<str>) -> QueryAs<'q, Postgres, O, PgArguments>
    where
        O: for<'r> FromRow<'r, PgRow>,
    {
        sqlx::query_as(sql).persistent(self.keeps_prepared())
    }

    /// [`PostgresStore::query`], for one column read as `O`.
    pub(crate) fn query_scalar<'q, O>(
        &self,
        sql: &'q Arc<str>,
    ) -> QueryScalar<'q, Postgres, O, PgArguments>
    where
        (O,): for<'r> FromRow<'r, PgRow>,
    {
        sqlx::query_scalar(sql).persistent(self.keeps_prepared())
    }

    /// A transaction on `connection`, begun as this provider begins them (see
    /// [`Begin`](crate::sql::Begin)).
    pub(crate) async fn transaction<'c>(
        &self,
        connection: &'c mut PgConnection,
    ) -> Result<sqlx::Transaction<'c, Postgres>, sqlx::Error> {
        connection.begin_with(self.begin.write.clone()).await
    }
}

/// How long a TCP connect that looks for why the pool gave no connection may take (see
/// [`PostgresStore::no_connection`]): a reachable server answers one in well under this.
const PROBE_WITHIN: Duration = Duration::from_millis(500);

/// A pooled connection in use by one call. It goes back to the pool only once the call marks
/// it answered and it answers a ping within `release_within`, in the background; otherwise it
/// is dropped. A call dropped at its deadline may have left it waiting for a reply, and sqlx
/// tests a connection coming back with no time bound, so one that stalled would hold its pool
/// slot until TCP gives up, minutes later (or never, behind a proxy that keeps the socket open).
pub(crate) struct Lease {
    /// `None` once it went back to the pool or was dropped.
    connection: Option<PoolConnection<Postgres>>,
    release_within: Duration,
}

impl Lease {
    fn new(connection: PoolConnection<Postgres>, release_within: Duration) -> Self {
        Lease {
            connection: Some(connection),
            release_within,
        }
    }

    /// Every statement sent on the connection was answered (with rows or an error): it goes
    /// back to the pool if it answers a ping in time (sqlx then pings it once more).
    fn answered(mut self) {
        let (Some(mut connection), within) = (self.connection.take(), self.release_within) else {
            return;
        };
        tokio::spawn(async move {
            if !matches!(
                tokio::time::timeout(within, connection.ping()).await,
                Ok(Ok(()))
            ) {
                discard(connection);
            }
        });
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            discard(connection);
        }
    }
}

/// Drops `connection` without closing it gracefully: detached from the pool, which frees its
/// slot at once, and dropped, which closes its socket. sqlx's graceful close, and its hard
/// close too, flush first, and over TLS a flush waits to read from the peer: one that stalled
/// never answers, and the close would hold the slot for good (seen with `sslmode=prefer`).
fn discard(connection: PoolConnection<Postgres>) {
    drop(connection.detach());
}

impl Deref for Lease {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        self.connection
            .as_deref()
            .expect("a lease holds its connection until it is dropped")
    }
}

impl DerefMut for Lease {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.connection
            .as_deref_mut()
            .expect("a lease holds its connection until it is dropped")
    }
}

/// Ends the transaction on `lease` with `statement` (`COMMIT` or `ROLLBACK`). Answered, the
/// connection may go back to the pool; otherwise it is closed, which ends the transaction.
pub(crate) async fn finish(mut lease: Lease, statement: &'static str) -> Result<(), sqlx::Error> {
    (&mut *lease).execute(sqlx::raw_sql(statement)).await?;
    lease.answered();
    Ok(())
}
