//! Agent memory in PostgreSQL, for many writers on many hosts.
//!
//! One row per document (`memory_documents` in the provider's schema) carries the text and a
//! version that every write bumps by one. `sync` reads the rows, computes the new text with
//! memory-core's shared semantics while holding no lock, and writes with compare-and-swap: the
//! write lands only if the version is still the one it read. A writer that lost the race holds
//! the documents (their advisory and row locks, in a transaction) and writes in its turn, so
//! writers queue on the server instead of retrying; past that, lost attempts are retried with
//! jittered backoff, up to `max_attempts`, then `Contention`.
//! A call that touches both documents commits both in one transaction, or neither.
//!
//! Every call ends within its deadline (`deadline_ms`, default 10 s): a write never waits on
//! another session's row lock past it, and a connection that stops answering fails the call
//! with `Unavailable` (or `OutcomeUnknown` for an unanswered write) and is closed, not reused.
//!
//! Each document's history is the table `memory_history`: one row per revision, written by the
//! same statement as the change it records (one round trip, one atomic step), with the
//! server's time; the same statement prunes what the retention (`history`, default the newest
//! 100 per document) no longer keeps, a few rows per write. `purge` erases a document, its
//! receipts and its history in one transaction, leaving a tombstone without content.
//!
//! The identity map is the table `memory_identities` beside the documents, one row per
//! (platform, platform user id); a link or an unlink runs in a transaction that holds the row's
//! lock.
//!
//! ```no_run
//! # async fn demo() -> Result<(), memory_core::MemoryError> {
//! use memory_core::{IfMatch, MemoryContext, MemoryProvider, MemoryUpdate, PersonalityId, Store, UserId};
//! use memory_postgres::{PostgresConfig, PostgresProvider};
//!
//! let memory = PostgresProvider::connect(&PostgresConfig::new("postgres://localhost/agents")).await?;
//! let ctx = MemoryContext::new(PersonalityId::new("ada")?, UserId::new("grace")?);
//! memory.sync(&ctx, &[MemoryUpdate::add(Store::User, "Prefers short answers.")], &IfMatch::NONE).await?;
//! # Ok(()) }
//! ```

mod config;

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use memory_core::raw::{
    CasWrite, CompareAndSwap, Connect, DEFAULT_DEADLINE, Fetched, Held, HeldTurn, Hold,
    RevisionTip, Settings, StoredHistory, StoredRevision, Versioned, VersionedStore,
    from_signed_unix_millis, sha256_hex,
};
use memory_core::{
    Document, DocumentId, IdempotencyKey, Identity, IdentityMap, MemoryError, PersonalityId,
    Purged, Retention, Revision, Surface, UserId, Version,
};
use sqlx::pool::PoolConnection;
use sqlx::postgres::PgRow;
use sqlx::postgres::{PgArguments, PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::query::{Query, QueryAs, QueryScalar};
use sqlx::{Connection, Executor, FromRow, PgConnection, Postgres};

pub use config::{DEFAULT_MAX_ATTEMPTS, PoolMode, PostgresConfig};

/// The memory contract on PostgreSQL: [`PostgresStore`]'s statements under the generic
/// provider. Cheap to share: clone the pool, not the provider.
pub type PostgresProvider = Versioned<PostgresStore>;

/// What touches PostgreSQL: the statements on one schema's tables, on a pool.
#[derive(Debug)]
pub struct PostgresStore {
    pool: PgPool,
    schema: String,
    /// `"<schema>".memory_documents`, for messages.
    table: String,
    /// `"<schema>".memory_identities`, for messages.
    identities: String,
    /// `"<schema>".memory_history`, for messages.
    history: String,
    sql: Statements,
    /// `postgres://host:port/database/schema`: where documents are, without credentials.
    location: String,
    /// The `lock_timeout` the pool's connections were opened with, when this provider opened
    /// them; `None` for a pool given to `from_pool`, whose setting is unknown.
    lock_timeout: Option<Duration>,
    /// How the server hands out connections (see [`PoolMode`]).
    pool_mode: PoolMode,
    /// What starts each transaction, and each read-only snapshot (see [`Begin`]).
    begin: Begin,
    /// Whether the last connection opened reached a standby, which was refused (see
    /// [`in_recovery`]): the pool then times out without saying why, so this says it.
    reached_a_standby: Arc<AtomicBool>,
    /// How long a connection going back to the pool has to answer a ping (see [`Lease`]): the
    /// deadline.
    release_within: Duration,
}

/// The statements that start this provider's transactions. In transaction mode each also sets
/// the timeouts for its transaction (`SET LOCAL`), which in session mode the connection has.
/// Each is `READ WRITE`, the snapshot too though it only reads: a server in recovery (a
/// standby) refuses that at once, so neither a write nor a read goes to a standby, even behind
/// a pooler that may hand each transaction to another server.
#[derive(Debug)]
struct Begin {
    /// A read-write transaction.
    write: String,
    /// A read-only snapshot: one view of the document, its tip and its revisions.
    snapshot: String,
}

impl Begin {
    /// `BEGIN`, followed by `timeouts` set for the transaction.
    fn with(timeouts: &[(&str, String)]) -> Self {
        let settings: String = timeouts
            .iter()
            .map(|(setting, value)| format!("; SET LOCAL {setting} = '{value}'"))
            .collect();
        Begin {
            write: format!("BEGIN READ WRITE{settings}"),
            snapshot: format!("BEGIN ISOLATION LEVEL REPEATABLE READ READ WRITE{settings}"),
        }
    }
}

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
    /// A store on an existing pool, using the tables in `schema`; run it as a provider with
    /// [`Versioned::new`]. Does no I/O: call [`PostgresStore::migrate`] if the tables may not
    /// exist yet. Since the pool's `lock_timeout` is not known, every write sets its own in its
    /// transaction.
    ///
    /// # Errors
    /// [`MemoryError::Config`] when `schema` is not 1 to 63 lowercase letters, digits and `_`,
    /// starting with a letter or `_` (and not `pg_`).
    pub fn from_pool(pool: PgPool, schema: &str) -> Result<Self, MemoryError> {
        validate_schema(schema)?;
        let options = pool.connect_options();
        let location = format!(
            "{}/{}/{schema}",
            server_name(&options),
            options.get_database().unwrap_or("postgres")
        );
        let table = format!("\"{schema}\".memory_documents");
        let identities = format!("\"{schema}\".memory_identities");
        let history = format!("\"{schema}\".memory_history");
        Ok(PostgresStore {
            sql: Statements::for_tables(schema, &table, &history, &identities),
            table,
            identities,
            history,
            schema: schema.to_owned(),
            location,
            pool,
            lock_timeout: None,
            pool_mode: PoolMode::Session,
            begin: Begin::with(&[]),
            reached_a_standby: Arc::new(AtomicBool::new(false)),
            release_within: DEFAULT_DEADLINE,
        })
    }

    /// Creates the schema and applies the embedded migrations that are not applied yet. Safe to
    /// call from many processes at once: they take turns on an advisory lock. Safe behind a
    /// pooler in transaction mode: it is one transaction, and nothing of it outlives that.
    ///
    /// # Errors
    /// [`MemoryError::Unavailable`] when the server cannot be reached or a migration fails.
    pub async fn migrate(&self) -> Result<(), MemoryError> {
        let options = self.pool.connect_options();
        let timeout = self.pool.options().get_acquire_timeout();
        let mut connection = tokio::time::timeout(timeout, PgConnection::connect_with(&options))
            .await
            .map_err(|_| MemoryError::Unavailable {
                what: self.location.clone(),
                message: format!("no connection within {timeout:?}"),
                source: None,
            })?
            .map_err(|err| self.unavailable(err))?;
        let migrated = self.migrate_on(&mut connection).await;
        let _ = connection.close().await;
        migrated
    }

    /// [`PostgresStore::migrate`] on `connection`, which stays open.
    async fn migrate_on(&self, connection: &mut PgConnection) -> Result<(), MemoryError> {
        self.migrate_up_to(connection, i64::MAX).await
    }

    /// Applies the embedded migrations up to and including `last` on `connection`, as
    /// [`PostgresStore::migrate`] does. Public only for the tests of upgrades: a schema
    /// migrated by an earlier version is this with that version's last migration.
    #[doc(hidden)]
    pub async fn migrate_up_to(
        &self,
        connection: &mut PgConnection,
        last: i64,
    ) -> Result<(), MemoryError> {
        // Hosts that start together on a fresh schema take turns on the lock, but the one
        // waiting began its transaction before the first committed: its catalog lookups may
        // still miss the schema or tables just created, and creating them again fails on a
        // duplicate. A new transaction sees them; by the third, every such race is over.
        let mut attempts = 1;
        let migrated = loop {
            match self.migrate_in_one_transaction(connection, last).await {
                Err(Migrating::Sql(err)) if attempts < 3 && created_meanwhile(&err) => {
                    attempts += 1;
                }
                migrated => break migrated,
            }
        };
        migrated.map_err(|err| match err {
            Migrating::Sql(err) if refused_as_a_standby(&err) => self.unavailable(err),
            Migrating::Sql(err) => {
                MemoryError::unavailable(format!("migrating {}", self.location), err)
            }
            mismatch => MemoryError::Config {
                message: format!(
                    "the migrations applied in {} do not match this memory-postgres ({mismatch}): use a schema of its own, or a matching version",
                    self.location
                ),
            },
        })
    }

    /// [`PostgresStore::migrate_up_to`]'s work on `connection`, in one transaction that holds
    /// the migrations' advisory lock: the schema, the table of applied migrations, and each
    /// embedded migration not applied yet, recorded there as it is applied.
    ///
    /// The table is `_memory_migrations` in the schema, with the columns sqlx's migrator keeps
    /// (and its SHA-384 checksums of each migration's text), so that an application's own sqlx
    /// migrations can share the schema, and schemas that sqlx's migrator migrated (this crate
    /// ran it until it moved to sqlx 0.8.6, whose migrator cannot name its table) read the same.
    async fn migrate_in_one_transaction(
        &self,
        connection: &mut PgConnection,
        last: i64,
    ) -> Result<(), Migrating> {
        // The migrations name their tables without a schema: the search path names it, for
        // this transaction only. Waiting for another process's migration may take longer than
        // a call's deadline: the timeouts are lifted for it. Every statement here is parsed
        // anew, never left prepared: behind a pooler, another client may get this server
        // connection next (and any that another client left there are dropped first).
        // `search_path` as an identifier: a quoted string would be one schema's whole name.
        let schema = &self.schema;
        let mut transaction = connection
            .begin_with(format!(
                "BEGIN READ WRITE; DEALLOCATE ALL; SET LOCAL search_path = \"{schema}\"; \
                 SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0"
            ))
            .await?;
        let database: String = sqlx::query_scalar("SELECT current_database()")
            .persistent(false)
            .fetch_one(&mut *transaction)
            .await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .persistent(false)
            .bind(migration_lock_key(&database))
            .execute(&mut *transaction)
            .await?;
        let table = format!("\"{schema}\"._memory_migrations");
        (&mut *transaction)
            .execute(sqlx::raw_sql(&format!(
                "CREATE SCHEMA IF NOT EXISTS \"{schema}\"; \
             CREATE TABLE IF NOT EXISTS {table} ( \
               version BIGINT PRIMARY KEY, description TEXT NOT NULL, \
               installed_on TIMESTAMPTZ NOT NULL DEFAULT now(), success BOOLEAN NOT NULL, \
               checksum BYTEA NOT NULL, execution_time BIGINT NOT NULL)"
            )))
            .await?;
        let applied: Vec<(i64, bool, Vec<u8>)> = sqlx::query_as(&format!(
            "SELECT version, success, checksum FROM {table} ORDER BY version"
        ))
        .persistent(false)
        .fetch_all(&mut *transaction)
        .await?;
        for (version, success, checksum) in &applied {
            if !success {
                return Err(Migrating::Failed(*version));
            }
            match MIGRATIONS.iter().find(|known| known.version == *version) {
                None => return Err(Migrating::Unknown(*version)),
                Some(known) if *known.checksum != **checksum => {
                    return Err(Migrating::Changed(*version));
                }
                Some(_) => {}
            }
        }
        let record = format!(
            "INSERT INTO {table} (version, description, success, checksum, execution_time) \
             VALUES ($1, $2, TRUE, $3, $4)"
        );
        for migration in MIGRATIONS.iter().filter(|migration| {
            migration.version <= last
                && !migration.migration_type.is_down_migration()
                && !applied
                    .iter()
                    .any(|(version, ..)| *version == migration.version)
        }) {
            let started = std::time::Instant::now();
            (&mut *transaction)
                .execute(sqlx::raw_sql(&migration.sql))
                .await?;
            sqlx::query(&record)
                .persistent(false)
                .bind(migration.version)
                .bind(&*migration.description)
                .bind(&*migration.checksum)
                .bind(i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX))
                .execute(&mut *transaction)
                .await?;
        }
        transaction.commit().await?;
        Ok(())
    }

    /// The pool, for health checks and for sharing with the rest of the application.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The schema holding this provider's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    fn unavailable(&self, err: sqlx::Error) -> MemoryError {
        unavailable(&self.location, &self.reached_a_standby, err)
    }

    /// [`IdentityMap::link`] on `connection`.
    async fn link_on(
        &self,
        connection: &mut PgConnection,
        identity: &Identity,
        user: &UserId,
        relink: bool,
    ) -> Result<Option<UserId>, MemoryError> {
        let failed = |err| self.identity_error(err);
        let key = (identity.platform(), identity.platform_user());
        let mut transaction = self.transaction(connection).await.map_err(failed)?;
        loop {
            let inserted = self
                .query(&self.sql.link_first)
                .bind(key.0)
                .bind(key.1)
                .bind(user.as_str())
                .execute(&mut *transaction)
                .await
                .map_err(failed)?;
            if inserted.rows_affected() == 1 {
                transaction.commit().await.map_err(failed)?;
                return Ok(None);
            }
            let current: Option<String> = self
                .query_scalar(&self.sql.lock_link)
                .bind(key.0)
                .bind(key.1)
                .fetch_optional(&mut *transaction)
                .await
                .map_err(failed)?;
            // Deleted by hand between the two statements: this is a first link after all.
            let Some(current) = current else {
                continue;
            };
            let current = self.stored_user(identity, current)?;
            // Refused or unchanged: dropping the transaction rolls it back, writing nothing.
            if identity.check_link(Some(&current), user, relink)? {
                self.query(&self.sql.relink)
                    .bind(key.0)
                    .bind(key.1)
                    .bind(user.as_str())
                    .execute(&mut *transaction)
                    .await
                    .map_err(failed)?;
                transaction.commit().await.map_err(failed)?;
            }
            return Ok(Some(current));
        }
    }

    /// [`IdentityMap::unlink`] on `connection`: one `DELETE ... RETURNING`, in a transaction
    /// committed only when the row it removed held a user id of ours. A row that is not ours
    /// is `Corrupt`, and dropping the transaction rolls the delete back, writing nothing.
    async fn unlink_on(
        &self,
        connection: &mut PgConnection,
        identity: &Identity,
    ) -> Result<Option<UserId>, MemoryError> {
        let failed = |err| self.identity_error(err);
        let mut transaction = self.transaction(connection).await.map_err(failed)?;
        let removed: Option<String> = self
            .query_scalar(&self.sql.unlink)
            .bind(identity.platform())
            .bind(identity.platform_user())
            .fetch_optional(&mut *transaction)
            .await
            .map_err(failed)?;
        // Not linked: nothing was deleted, and dropping the transaction ends it.
        let Some(removed) = removed else {
            return Ok(None);
        };
        let removed = self.stored_user(identity, removed)?;
        transaction.commit().await.map_err(failed)?;
        Ok(Some(removed))
    }

    /// A connection from the pool, closed unless it is marked answered (see [`Lease`]).
    async fn lease(&self) -> Result<Lease, MemoryError> {
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
    async fn leased<T>(
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
    async fn single<T>(
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
    fn keeps_prepared(&self) -> bool {
        self.pool_mode == PoolMode::Session
    }

    /// `sql` as a statement of this provider, kept prepared on its connection only where
    /// [`PostgresStore::keeps_prepared`] says: every statement on the pool goes through this
    /// or its two siblings, so that none is left prepared behind a transaction pooler.
    fn query<'q>(&self, sql: &'q Arc<str>) -> Query<'q, Postgres, PgArguments> {
        sqlx::query(sql).persistent(self.keeps_prepared())
    }

    /// [`PostgresStore::query`], for rows read as `O`.
    fn query_as<'q, O>(&self, sql: &'q Arc<str>) -> QueryAs<'q, Postgres, O, PgArguments>
    where
        O: for<'r> FromRow<'r, PgRow>,
    {
        sqlx::query_as(sql).persistent(self.keeps_prepared())
    }

    /// [`PostgresStore::query`], for one column read as `O`.
    fn query_scalar<'q, O>(&self, sql: &'q Arc<str>) -> QueryScalar<'q, Postgres, O, PgArguments>
    where
        (O,): for<'r> FromRow<'r, PgRow>,
    {
        sqlx::query_scalar(sql).persistent(self.keeps_prepared())
    }

    /// A transaction on `connection`, begun as this provider begins them (see [`Begin`]).
    async fn transaction<'c>(
        &self,
        connection: &'c mut PgConnection,
    ) -> Result<sqlx::Transaction<'c, Postgres>, sqlx::Error> {
        connection.begin_with(self.begin.write.clone()).await
    }

    /// An error on the documents' table.
    fn db_error(&self, err: sqlx::Error) -> MemoryError {
        self.table_error(&self.table, err)
    }

    /// An error on the history table.
    fn history_error(&self, err: sqlx::Error) -> MemoryError {
        self.table_error(&self.history, err)
    }

    /// An error on the identity map's table.
    fn identity_error(&self, err: sqlx::Error) -> MemoryError {
        self.table_error(&self.identities, err)
    }

    /// A missing table is a setup mistake with a fix to name; anything else is `Unavailable`.
    fn table_error(&self, table: &str, err: sqlx::Error) -> MemoryError {
        if let sqlx::Error::Database(db) = &err
            && matches!(db.code().as_deref(), Some("42P01" | "3F000"))
        {
            // Reads and writes of documents touch their history too: name the one missing.
            let table = if db.message().contains("memory_history") {
                &self.history
            } else {
                table
            };
            return MemoryError::Config {
                message: format!(
                    "{table} does not exist in {}: call migrate() or connect with migrate on",
                    self.location
                ),
            };
        }
        self.unavailable(err)
    }

    /// The user id of a stored link: anything but a valid id was not written by us.
    fn stored_user(&self, identity: &Identity, user: String) -> Result<UserId, MemoryError> {
        UserId::new(user).map_err(|err| MemoryError::Corrupt {
            location: format!("{}/memory_identities/{identity}", self.location),
            reason: err.to_string(),
        })
    }

    /// Where `id` is, for reports and messages.
    fn location_of(&self, id: &DocumentId) -> String {
        format!("{}/{}", self.location, id.relative_path())
    }

    /// Where `id`'s history is, for messages about its stored revisions.
    fn history_location(&self, id: &DocumentId) -> String {
        format!("{}/memory_history/{}", self.location, id.relative_path())
    }

    /// The rows of `ids`, in order, one statement on `connection`: each document with (if
    /// `tips`) the tip of its history, both absent (NULL) for a document never written or never
    /// recorded.
    async fn select_on(
        &self,
        connection: &mut PgConnection,
        ids: &[DocumentId],
        receipts: bool,
        tips: bool,
    ) -> Result<Vec<SelectedRow>, sqlx::Error> {
        let (kinds, owners): (Vec<&str>, Vec<&str>) = ids.iter().map(row_key).unzip();
        let statement = if tips {
            &self.sql.select
        } else {
            &self.sql.select_documents
        };
        self.query_as(statement)
            .bind(&kinds)
            .bind(&owners)
            .bind(receipts)
            .fetch_all(connection)
            .await
    }

    /// `ids` as one snapshot, in order, without their histories' tips: what reads need (a
    /// `sync` reads through [`CompareAndSwap::fetch`], with them).
    ///
    /// One or two documents (a read, a prefetch) are read by the leaner `read_two`: two
    /// primary-key lookups, no arrays to unnest, no join, no sort, no tip; rows are matched to
    /// `ids` here.
    async fn documents(&self, ids: &[DocumentId]) -> Result<Vec<Document>, MemoryError> {
        let (first, second) = match ids {
            [one] => (one, one),
            [first, second] => (first, second),
            _ => {
                let rows = self
                    .single(async |connection| self.select_on(connection, ids, false, false).await)
                    .await?
                    .map_err(|err| self.db_error(err))?;
                return ids
                    .iter()
                    .zip(rows)
                    .map(|(id, row)| Ok(self.fetched(id, row)?.document))
                    .collect();
            }
        };
        let (first, second) = (row_key(first), row_key(second));
        let mut rows: Vec<ReadRow> = self
            .single(async |connection| {
                self.query_as(&self.sql.read_two)
                    .bind(first.0)
                    .bind(first.1)
                    .bind(second.0)
                    .bind(second.1)
                    .fetch_all(connection)
                    .await
            })
            .await?
            .map_err(|err| self.db_error(err))?;
        let mut documents: Vec<Document> = Vec::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            // The same document twice: one row, read once.
            if i > 0 && ids[i - 1] == *id {
                documents.push(documents[i - 1].clone());
                continue;
            }
            let key = row_key(id);
            let row = rows
                .iter()
                .position(|row| (row.kind.as_str(), row.owner.as_str()) == key)
                .map(|at| rows.swap_remove(at));
            let (version, updated_at) = (
                row.as_ref().map(|row| row.version),
                row.as_ref().map(|row| row.updated_at),
            );
            let selected = SelectedRow {
                content: row.map(|row| row.content),
                version,
                updated_at,
                receipts: None,
                tip: TipColumns {
                    tip_number: None,
                    tip_version: None,
                    tip_sha256: None,
                    tip_bytes: None,
                },
                now: 0,
            };
            documents.push(self.fetched(id, selected)?.document);
        }
        Ok(documents)
    }

    /// `id` as [`PostgresStore::select_on`] read it.
    fn fetched(&self, id: &DocumentId, row: SelectedRow) -> Result<Fetched, MemoryError> {
        let corrupt = |reason: String| MemoryError::Corrupt {
            location: self.location_of(id),
            reason,
        };
        // The table's CHECK keeps versions positive.
        let version = match row.version {
            Some(version) => u64::try_from(version)
                .map_err(|_| corrupt(format!("version {version} is not positive")))?,
            None => 0,
        };
        let tip = self.tip(id, row.tip)?;
        let document = Document {
            id: id.clone(),
            text: row.content.unwrap_or_default(),
            version: Version::new(version.to_string()),
            location: self.location_of(id),
            modified: row.updated_at.map(from_signed_unix_millis),
        };
        Ok(Fetched {
            document,
            version,
            receipts: row.receipts,
            tip,
        })
    }

    /// The tip of `id`'s history as stored: none (every column NULL) is the empty tip.
    fn tip(&self, id: &DocumentId, tip: TipColumns) -> Result<RevisionTip, MemoryError> {
        let (Some(number), Some(version_after), Some(sha256_after), Some(bytes)) = (
            tip.tip_number,
            tip.tip_version,
            tip.tip_sha256,
            tip.tip_bytes,
        ) else {
            return Ok(RevisionTip::empty(Version::new("0")));
        };
        let location = || format!("{}#{number}", self.history_location(id));
        Ok(RevisionTip {
            number: stored_count(number, "number", location)?,
            version_after: Version::new(version_after),
            sha256_after,
            bytes_after: stored_count(bytes, "bytes_after", location)?,
        })
    }

    /// A stored revision of `id`, or `Corrupt` naming the revision and what in it is not ours.
    fn revision(&self, id: &DocumentId, row: HistoryRow) -> Result<Revision, MemoryError> {
        StoredRevision {
            number: row.number,
            version_before: row.version_before,
            version_after: row.version_after,
            sha256_before: row.sha256_before,
            sha256_after: row.sha256_after,
            bytes_before: row.bytes_before,
            bytes_after: row.bytes_after,
            time: from_signed_unix_millis(row.time),
            surface: row.surface,
            personality: row.personality,
            user: row.user_id,
            idempotency_key: row.idempotency_key,
            session: row.session,
            updates: Some(row.updates),
            text: row.content,
        }
        .check(id, &self.history_location(id))
    }

    /// [`VersionedStore::history`] on `connection`: the document, its tip and its newest
    /// `limit` revisions read in one snapshot (a read-only repeatable-read transaction).
    async fn history_on(
        &self,
        connection: &mut PgConnection,
        document: &DocumentId,
        limit: usize,
    ) -> Result<StoredHistory, MemoryError> {
        let failed = |err| self.history_error(err);
        let mut transaction = connection
            .begin_with(self.begin.snapshot.clone())
            .await
            .map_err(failed)?;
        let selected = self
            .select_on(
                &mut transaction,
                std::slice::from_ref(document),
                false,
                true,
            )
            .await
            .map_err(failed)?;
        let (kind, owner) = row_key(document);
        let rows: Vec<HistoryRow> = self
            .query_as(&self.sql.history)
            .bind(kind)
            .bind(owner)
            // "All" (usize::MAX) is more than any document holds.
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&mut *transaction)
            .await
            .map_err(failed)?;
        transaction.commit().await.map_err(failed)?;
        let Some(row) = selected.into_iter().next() else {
            return Err(self.unavailable(sqlx::Error::RowNotFound));
        };
        let now = from_signed_unix_millis(row.now);
        Ok(StoredHistory {
            current: self.fetched(document, row)?,
            recorded: rows
                .into_iter()
                .map(|row| self.revision(document, row))
                .collect::<Result<_, _>>()?,
            now,
            location: self.history_location(document),
        })
    }

    /// [`VersionedStore::purge`] on `connection`, in one transaction that holds the document's
    /// row (or, for a document with no row, its key) from the first statement, so that no
    /// write lands between the erasing and the commit: a write waiting on it then finds the
    /// document gone, and retries on the document as never written.
    async fn purge_on(
        &self,
        connection: &mut PgConnection,
        document: &DocumentId,
        surface: Surface,
        retention: &Retention,
    ) -> Result<Purged, MemoryError> {
        let failed = |err| self.db_error(err);
        let (kind, owner) = row_key(document);
        let mut transaction = self.transaction(connection).await.map_err(failed)?;
        let erased_text = loop {
            let deleted: Option<String> = self
                .query_scalar(&self.sql.purge_document)
                .bind(kind)
                .bind(owner)
                .fetch_optional(&mut *transaction)
                .await
                .map_err(failed)?;
            if deleted.is_some() {
                break deleted;
            }
            // No row: an empty one, never committed, holds the key instead, so a first write
            // of the document waits for the purge. One written in between ends in a conflict
            // here: then it is deleted like any other.
            let held = self
                .query(&self.sql.purge_hold)
                .bind(kind)
                .bind(owner)
                .bind(sha256_hex(""))
                .execute(&mut *transaction)
                .await
                .map_err(failed)?;
            if held.rows_affected() == 1 {
                break None;
            }
        };
        let erased: ErasedRow = self
            .query_as(&self.sql.purge_history)
            .bind(kind)
            .bind(owner)
            .fetch_one(&mut *transaction)
            .await
            .map_err(|err| self.history_error(err))?;
        let tip = self.tip(document, erased.tip)?;
        let now = from_signed_unix_millis(erased.now);
        let mut stored = Vec::with_capacity(erased.numbers.len());
        for (number, time) in erased.numbers.into_iter().zip(erased.times) {
            let number = stored_count(number, "number", || self.history_location(document))?;
            stored.push((number, from_signed_unix_millis(time)));
        }
        let revisions = retention.count_kept(stored, tip.number, now);
        let tombstone = retention
            .leaves_tombstone(erased_text.is_some(), revisions)
            .then(|| Revision::tombstone(document, &tip, Version::new("0"), surface, now));
        if let Some(tombstone) = &tombstone {
            self.query(&self.sql.tombstone)
                .bind(kind)
                .bind(owner)
                .bind(to_i64(tombstone.number))
                .bind(tombstone.version_before.as_str())
                .bind(tombstone.version_after.as_str())
                .bind(&tombstone.sha256_before)
                .bind(&tombstone.sha256_after)
                .bind(to_i64(tombstone.bytes_before))
                .bind(to_i64(tombstone.bytes_after))
                .bind(tombstone.surface.to_string())
                .execute(&mut *transaction)
                .await
                .map_err(|err| self.history_error(err))?;
        }
        transaction.commit().await.map_err(failed)?;
        Ok(Purged {
            document: document.clone(),
            location: self.location_of(document),
            bytes: erased_text.map_or(0, |text| text.len()),
            revisions,
            tombstone,
        })
    }
}

#[async_trait]
impl VersionedStore for PostgresStore {
    fn location(&self) -> String {
        self.location.clone()
    }

    async fn read(&self, ids: &[DocumentId]) -> Result<Vec<Document>, MemoryError> {
        self.documents(ids).await
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        let rows: Vec<(String, String)> = self
            .single(async |connection| self.query_as(&self.sql.list).fetch_all(connection).await)
            .await?
            .map_err(|err| self.db_error(err))?;
        Ok(rows
            .iter()
            .filter_map(|(kind, owner)| document_id(kind, owner))
            .collect())
    }

    /// The document, its history's tip and its newest `limit` revisions in one read-only
    /// repeatable-read transaction, so a hand edit shows as an external revision at the head.
    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<StoredHistory, MemoryError> {
        self.leased(async |connection| self.history_on(connection, document, limit).await)
            .await?
    }

    /// One transaction: the row (text and receipts) and the history go, and a tombstone is
    /// left when something was erased and history is on. Past the deadline the call is
    /// `Unavailable`, whether or not its commit landed: repeating a purge is safe.
    async fn purge(
        &self,
        document: &DocumentId,
        surface: Surface,
        retention: &Retention,
    ) -> Result<Purged, MemoryError> {
        self.leased(async |connection| {
            self.purge_on(connection, document, surface, retention)
                .await
        })
        .await?
    }
}

#[async_trait]
impl IdentityMap for PostgresStore {
    async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        let user: Option<String> = self
            .single(async |connection| {
                self.query_scalar(&self.sql.resolve)
                    .bind(identity.platform())
                    .bind(identity.platform_user())
                    .fetch_optional(connection)
                    .await
            })
            .await?
            .map_err(|err| self.identity_error(err))?;
        user.map(|user| self.stored_user(identity, user))
            .transpose()
    }

    /// One transaction: a first link inserts the row; any other link locks the row, decides
    /// with [`Identity::check_link`] and updates it only if that says so. Concurrent first
    /// links of one identity queue on the primary key, so exactly one inserts and the others
    /// then see its row.
    async fn link(
        &self,
        identity: &Identity,
        user: &UserId,
        relink: bool,
    ) -> Result<Option<UserId>, MemoryError> {
        self.leased(async |connection| self.link_on(connection, identity, user, relink).await)
            .await?
    }

    /// One `DELETE ... RETURNING` (see `unlink_on`): concurrent unlinks of one identity queue on
    /// its row, so exactly one deletes it and returns its user, the others find no row.
    async fn unlink(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        self.leased(async |connection| self.unlink_on(connection, identity).await)
            .await?
    }

    async fn identities(&self) -> Result<Vec<(Identity, UserId)>, MemoryError> {
        let rows: Vec<(String, String, String)> = self
            .single(async |connection| {
                self.query_as(&self.sql.identities)
                    .fetch_all(connection)
                    .await
            })
            .await?
            .map_err(|err| self.identity_error(err))?;
        rows.into_iter()
            .map(|(platform, platform_user, user)| {
                let identity =
                    Identity::new(platform, platform_user).map_err(|err| MemoryError::Corrupt {
                        location: format!("{}/memory_identities", self.location),
                        reason: err.to_string(),
                    })?;
                let user = self.stored_user(&identity, user)?;
                Ok((identity, user))
            })
            .collect()
    }
}

/// The two round trips [`CasWriter`](memory_core::raw::CasWriter) needs: one snapshot read, one conditional write.
#[async_trait]
impl CompareAndSwap for PostgresStore {
    /// Reads `ids` in one statement, so they are one consistent snapshot, each with the tip of
    /// its history.
    async fn fetch(&self, ids: &[DocumentId], receipts: bool) -> Result<Vec<Fetched>, MemoryError> {
        let rows = self
            .single(async |connection| self.select_on(connection, ids, receipts, true).await)
            .await?
            .map_err(|err| self.db_error(err))?;
        ids.iter()
            .zip(rows)
            .map(|(id, row)| self.fetched(id, row))
            .collect()
    }

    /// One statement for all writes. It runs alone when the connections' `lock_timeout`
    /// keeps its lock waits within `lock_wait`; otherwise (and for two documents, which commit
    /// only if both rows landed) in a transaction, which first lowers `lock_timeout` to fit.
    /// A row another session holds locked is not waited for: it is about to change, so the
    /// write loses at once, and [`CasWriter`](memory_core::raw::CasWriter) holds the documents next (see `hold`).
    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        lock_wait: Duration,
    ) -> Result<Option<DocumentId>, MemoryError> {
        if writes.is_empty() {
            return Ok(None);
        }
        // Each row may wait its own `lock_timeout`, so they share what is left.
        let rows = u32::try_from(writes.len()).unwrap_or(u32::MAX);
        // At least the shortest wait a `lock_timeout` takes (0 would be none): near the
        // deadline the write still tries, and a lost race names the row that was held.
        let per_row = (lock_wait / rows).max(SHORTEST_LOCK_WAIT);
        let binds = WriteBinds::of(writes)?;
        let query = binds.bound(self.query_as(&self.sql.write));
        let bounded = self.lock_timeout.is_some_and(|timeout| timeout <= per_row);
        let landed = if writes.len() == 1 && bounded {
            self.single(async |connection| query.fetch_all(connection).await)
                .await?
        } else {
            let lower_to = (!bounded).then_some(per_row);
            self.leased(async |connection| {
                let transaction = self.transaction(connection).await?;
                write_in_transaction(
                    transaction,
                    query,
                    writes.len(),
                    lower_to,
                    self.keeps_prepared(),
                )
                .await
            })
            .await?
        };
        let landed = match landed {
            Ok(rows) => rows,
            // A lock held past `lock_timeout`, two writers locking the same rows in a
            // different order, or a revision number taken meanwhile: a lost race too.
            Err(sqlx::Error::Database(err)) if is_retryable(err.code().as_deref()) => Vec::new(),
            Err(err) => return Err(self.db_error(err)),
        };
        Ok(lost_on(writes, &landed))
    }

    /// The write statement compares the text too, where a write gives it.
    fn checks_text(&self) -> bool {
        true
    }

    /// A transaction on a connection of its own that takes, in key order, each document's
    /// advisory lock (every holder takes it, so holders take turns also on a document with no
    /// row yet) and its row's lock, then reads the documents: the migration's `memory_hold`,
    /// one round trip after `BEGIN`. Each lock is waited for at most `lock_timeout` and at most
    /// its share of `lock_wait`; past that the hold is `Busy`. The turn's write is the usual
    /// statement (its version check stays as a guard) and `COMMIT`; its release `ROLLBACK`.
    /// A turn dropped unused closes its connection, which ends the transaction (see
    /// `Lease`): it never goes back to the pool with the locks held.
    async fn hold(
        &self,
        ids: &[DocumentId],
        receipts: bool,
        lock_wait: Duration,
    ) -> Result<Option<Hold<'_>>, MemoryError> {
        let Some(first) = ids.first() else {
            return Ok(None);
        };
        // Two locks per document, each waited for in turn.
        let locks = u32::try_from(2 * ids.len()).unwrap_or(u32::MAX);
        let mut per_lock = lock_wait / locks;
        if let Some(timeout) = self.lock_timeout {
            per_lock = per_lock.min(timeout);
        }
        // As in `compare_and_swap`: a hold near the deadline still tries, so that when it is
        // busy it names the document another session holds.
        let per_lock = per_lock.max(SHORTEST_LOCK_WAIT);
        let mut lease = self.lease().await?;
        let (kinds, owners): (Vec<&str>, Vec<&str>) = ids.iter().map(row_key).unzip();
        let lock_timeout = format!("{}ms", per_lock.as_millis());
        let held = async {
            (&mut *lease)
                .execute(sqlx::raw_sql(&self.begin.write))
                .await?;
            self.query_as::<SelectedRow>(&self.sql.hold)
                .bind(&kinds)
                .bind(&owners)
                .bind(receipts)
                .bind(&lock_timeout)
                .fetch_all(&mut *lease)
                .await
        }
        .await;
        let rows = match held {
            Ok(rows) => rows,
            Err(err) => {
                // Answered with an error: the transaction, if begun, is rolled back and the
                // connection goes back to the pool. Unanswered, the lease closes it.
                let answered = matches!(err, sqlx::Error::Database(_));
                // A lock held past the wait, or a deadlock: another writer has the documents.
                let busy = matches!(&err, sqlx::Error::Database(db)
                    if is_retryable(db.code().as_deref()));
                let rolled_back = answered && finish(lease, "ROLLBACK").await.is_ok();
                if rolled_back && busy {
                    let busy_on = self.held_by_others(ids).await;
                    return Ok(Some(Hold::Busy(busy_on.unwrap_or_else(|| first.clone()))));
                }
                return Err(self.db_error(err));
            }
        };
        let fetched = ids
            .iter()
            .zip(rows)
            .map(|(id, row)| self.fetched(id, row))
            .collect::<Result<Vec<_>, _>>();
        match fetched {
            Ok(fetched) if fetched.len() == ids.len() => Ok(Some(Hold::Held(Held {
                fetched,
                turn: Box::new(PgTurn {
                    provider: self,
                    lease,
                }),
            }))),
            Ok(_) => {
                let _ = finish(lease, "ROLLBACK").await;
                Err(self.unavailable(sqlx::Error::RowNotFound))
            }
            Err(err) => {
                let _ = finish(lease, "ROLLBACK").await;
                Err(err)
            }
        }
    }
}

impl PostgresStore {
    /// The first of `ids` that another session holds now, for the `Busy` of a hold that timed
    /// out to name the document it waited for. `None` when there is one document (it is that
    /// one), when none is held any more, or when the question got no answer.
    async fn held_by_others(&self, ids: &[DocumentId]) -> Option<DocumentId> {
        if ids.len() < 2 {
            return None;
        }
        let (kinds, owners): (Vec<&str>, Vec<&str>) = ids.iter().map(row_key).unzip();
        let position: Option<i64> = self
            .single(async |connection| {
                self.query_scalar(&self.sql.held_by_others)
                    .bind(&kinds)
                    .bind(&owners)
                    .fetch_optional(connection)
                    .await
            })
            .await
            .ok()?
            .ok()?;
        let index = usize::try_from(position?).ok()?.checked_sub(1)?;
        ids.get(index).cloned()
    }
}

/// Documents a writer holds: the transaction of [`CompareAndSwap::hold`] on its connection.
struct PgTurn<'a> {
    provider: &'a PostgresStore,
    /// In the transaction that holds the locks; unanswered, so that dropping the turn unused
    /// closes the connection rather than pool it with the transaction open.
    lease: Lease,
}

#[async_trait]
impl HeldTurn for PgTurn<'_> {
    async fn write(
        self: Box<Self>,
        writes: &[CasWrite<'_>],
    ) -> Result<Option<DocumentId>, MemoryError> {
        let PgTurn {
            provider,
            mut lease,
        } = *self;
        let Some(first) = writes.first() else {
            let _ = finish(lease, "ROLLBACK").await;
            return Ok(None);
        };
        let binds = match WriteBinds::of(writes) {
            Ok(binds) => binds,
            Err(err) => {
                let _ = finish(lease, "ROLLBACK").await;
                return Err(err);
            }
        };
        let landed = binds
            .bound(provider.query_as(&provider.sql.write))
            .fetch_all(&mut *lease)
            .await;
        match landed {
            Ok(landed) => match lost_on(writes, &landed) {
                None => {
                    finish(lease, "COMMIT")
                        .await
                        .map_err(|err| provider.db_error(err))?;
                    Ok(None)
                }
                // The hold was lost: a document without a row that another writer inserted
                // meanwhile. Nothing of the others is committed either.
                Some(lost) => {
                    finish(lease, "ROLLBACK")
                        .await
                        .map_err(|err| provider.db_error(err))?;
                    Ok(Some(lost))
                }
            },
            Err(sqlx::Error::Database(err)) => {
                let retryable = is_retryable(err.code().as_deref());
                finish(lease, "ROLLBACK")
                    .await
                    .map_err(|err| provider.db_error(err))?;
                if retryable {
                    Ok(Some(first.id.clone()))
                } else {
                    Err(provider.db_error(sqlx::Error::Database(err)))
                }
            }
            // No reply: the lease closes the connection, which rolls the transaction back.
            Err(err) => Err(provider.db_error(err)),
        }
    }

    async fn release(self: Box<Self>) {
        // One that cannot be rolled back is closed: that ends the transaction as well.
        let _ = finish(self.lease, "ROLLBACK").await;
    }
}

/// Ends the transaction on `lease` with `statement` (`COMMIT` or `ROLLBACK`). Answered, the
/// connection may go back to the pool; otherwise it is closed, which ends the transaction.
async fn finish(mut lease: Lease, statement: &'static str) -> Result<(), sqlx::Error> {
    (&mut *lease).execute(sqlx::raw_sql(statement)).await?;
    lease.answered();
    Ok(())
}

/// The first of `writes` whose row is not among `landed` (the rows the write statement
/// returned): the document another writer changed first.
fn lost_on(writes: &[CasWrite<'_>], landed: &[(String, String)]) -> Option<DocumentId> {
    writes
        .iter()
        .map(|write| write.id)
        .find(|id| {
            let key = row_key(id);
            !landed
                .iter()
                .any(|(kind, owner)| (kind.as_str(), owner.as_str()) == key)
        })
        .cloned()
}

/// The values [`Statements::write`] binds for one compare-and-swap.
struct WriteBinds<'a> {
    kinds: Vec<&'static str>,
    owners: Vec<&'a str>,
    texts: Vec<&'a str>,
    expected: Vec<i64>,
    /// The text each was planned from, where that was the writer's view and not a read.
    expected_texts: Vec<Option<&'a str>>,
    hashes: Vec<String>,
    receipts: Vec<Option<&'a str>>,
    /// Per document: the number its first revision takes and the one its last takes (0: it
    /// records none), and the lowest number its retention keeps after them.
    first: Vec<i64>,
    tip: Vec<i64>,
    oldest: Vec<i64>,
    /// Per document: the newest of its revisions stored whole (`Revision::is_base`), 0 for
    /// none, which pruning may start from though the statement cannot see it yet.
    base: Vec<i64>,
    revisions: RevisionColumns<'a>,
    max_age_ms: Option<i64>,
}

impl<'a> WriteBinds<'a> {
    /// The values for `writes`, pruned as their retention says (the provider's: one for all).
    ///
    /// # Errors
    /// As [`RevisionColumns::of`].
    fn of(writes: &'a [CasWrite<'a>]) -> Result<Self, MemoryError> {
        let retention = writes
            .first()
            .map_or(Retention::OFF, |write| write.retention);
        let (kinds, owners): (Vec<&'static str>, Vec<&'a str>) =
            writes.iter().map(|write| row_key(write.id)).unzip();
        let texts: Vec<&'a str> = writes.iter().map(|write| write.text).collect();
        let numbers = |write: &CasWrite<'_>| {
            let number = |revision: Option<&Revision>| revision.map_or(0, |r| r.number);
            (
                number(write.revisions.first()),
                number(write.revisions.last()),
            )
        };
        Ok(WriteBinds {
            kinds,
            owners,
            expected: writes
                .iter()
                .map(|write| write.expected.try_into().unwrap_or(i64::MAX))
                .collect(),
            expected_texts: writes.iter().map(|write| write.expected_text).collect(),
            hashes: texts.iter().map(|text| sha256_hex(text)).collect(),
            texts,
            receipts: writes.iter().map(|write| write.receipts).collect(),
            first: writes.iter().map(|w| to_i64(numbers(w).0)).collect(),
            tip: writes.iter().map(|w| to_i64(numbers(w).1)).collect(),
            oldest: writes
                .iter()
                .map(|w| to_i64(retention.oldest_kept(numbers(w).1)))
                .collect(),
            base: writes
                .iter()
                .map(|w| {
                    let bases = w.revisions.iter().filter(|r| r.is_base());
                    to_i64(bases.map(|r| r.number).max().unwrap_or(0))
                })
                .collect(),
            revisions: RevisionColumns::of(writes)?,
            max_age_ms: retention
                .max_age
                .map(|age| to_i64(age.min(LONGEST_MAX_AGE).as_millis())),
        })
    }

    /// `statement` (the write statement) with these values bound.
    fn bound<'q>(
        &'q self,
        statement: QueryAs<'q, Postgres, (String, String), PgArguments>,
    ) -> QueryAs<'q, Postgres, (String, String), PgArguments> {
        let query = statement
            .bind(&self.kinds)
            .bind(&self.owners)
            .bind(&self.texts)
            .bind(&self.expected)
            .bind(&self.hashes)
            .bind(&self.receipts)
            .bind(&self.first)
            .bind(&self.tip)
            .bind(&self.oldest)
            .bind(&self.expected_texts)
            .bind(&self.base);
        self.revisions.bind(query).bind(self.max_age_ms)
    }
}

/// How long a pooled connection may sit idle and still be used without a ping first.
const TEST_IDLE_AFTER: Duration = Duration::from_secs(1);

/// How long a TCP connect that looks for why the pool gave no connection may take (see
/// [`PostgresStore::no_connection`]): a reachable server answers one in well under this.
const PROBE_WITHIN: Duration = Duration::from_millis(500);

/// The longest age limit sent to the server: the statement subtracts it from `now()`, which must
/// stay a timestamp (they end at 4713 BC). Any longer limit prunes nothing more.
const LONGEST_MAX_AGE: Duration = Duration::from_secs(1000 * 366 * 86_400);

/// How many of a document's oldest revisions a write looks at for pruning: a bounded amount of
/// work per write, more than the one or two revisions a write adds, so that what a lowered
/// retention leaves behind drains away over the next writes.
const PRUNE_PER_WRITE: usize = 8;

/// A document as [`Statements::select`] reads it, with the tip of its history.
#[derive(sqlx::FromRow)]
struct SelectedRow {
    content: Option<String>,
    version: Option<i64>,
    /// Milliseconds since the Unix epoch: sqlx decodes TIMESTAMPTZ only with a time crate.
    updated_at: Option<i64>,
    receipts: Option<String>,
    #[sqlx(flatten)]
    tip: TipColumns,
    /// The server's clock, in milliseconds.
    now: i64,
}

/// A document as [`Statements::read_two`] reads it.
#[derive(sqlx::FromRow)]
struct ReadRow {
    kind: String,
    owner: String,
    content: String,
    version: i64,
    /// Milliseconds since the Unix epoch.
    updated_at: i64,
}

/// The newest revision of a document: every column NULL when it has none.
#[derive(sqlx::FromRow)]
struct TipColumns {
    tip_number: Option<i64>,
    tip_version: Option<String>,
    tip_sha256: Option<String>,
    tip_bytes: Option<i64>,
}

/// What [`Statements::purge_history`] erased: each revision's number and time (milliseconds
/// since the Unix epoch), in the same order, and the newest of them.
#[derive(sqlx::FromRow)]
struct ErasedRow {
    numbers: Vec<i64>,
    times: Vec<i64>,
    #[sqlx(flatten)]
    tip: TipColumns,
    now: i64,
}

/// One stored revision, as [`Statements::history`] reads it.
#[derive(sqlx::FromRow)]
struct HistoryRow {
    number: i64,
    version_before: String,
    version_after: String,
    sha256_before: String,
    sha256_after: String,
    bytes_before: i64,
    bytes_after: i64,
    /// Milliseconds since the Unix epoch.
    time: i64,
    surface: String,
    personality: Option<String>,
    user_id: Option<String>,
    idempotency_key: Option<String>,
    session: Option<String>,
    updates: String,
    content: Option<String>,
}

/// The revisions of one compare-and-swap, one array per column of the history table, as the
/// write statement unnests them.
struct RevisionColumns<'a> {
    kind: Vec<&'static str>,
    owner: Vec<&'a str>,
    number: Vec<i64>,
    version_before: Vec<&'a str>,
    version_after: Vec<&'a str>,
    sha256_before: Vec<&'a str>,
    sha256_after: Vec<&'a str>,
    bytes_before: Vec<i64>,
    bytes_after: Vec<i64>,
    surface: Vec<String>,
    personality: Vec<Option<&'a str>>,
    user: Vec<Option<&'a str>>,
    idempotency_key: Vec<Option<&'a str>>,
    session: Vec<Option<&'a str>>,
    updates: Vec<String>,
    content: Vec<Option<&'a str>>,
}

impl<'a> RevisionColumns<'a> {
    /// The revisions of all `writes`, in order. Their `time` is left out: the server stamps
    /// its own.
    ///
    /// # Errors
    /// [`MemoryError::InvalidUpdate`] for updates that cannot be written as JSON (none can
    /// fail today; the error is there so that no future update panics a write).
    fn of(writes: &'a [CasWrite<'a>]) -> Result<Self, MemoryError> {
        let count = writes.iter().map(|write| write.revisions.len()).sum();
        let mut columns = RevisionColumns {
            kind: Vec::with_capacity(count),
            owner: Vec::with_capacity(count),
            number: Vec::with_capacity(count),
            version_before: Vec::with_capacity(count),
            version_after: Vec::with_capacity(count),
            sha256_before: Vec::with_capacity(count),
            sha256_after: Vec::with_capacity(count),
            bytes_before: Vec::with_capacity(count),
            bytes_after: Vec::with_capacity(count),
            surface: Vec::with_capacity(count),
            personality: Vec::with_capacity(count),
            user: Vec::with_capacity(count),
            idempotency_key: Vec::with_capacity(count),
            session: Vec::with_capacity(count),
            updates: Vec::with_capacity(count),
            content: Vec::with_capacity(count),
        };
        for write in writes {
            let (kind, owner) = row_key(write.id);
            for revision in write.revisions {
                let updates = serde_json::to_string(&revision.updates).map_err(|err| {
                    MemoryError::InvalidUpdate {
                        index: 0,
                        document: write.id.clone(),
                        reason: format!("cannot be recorded as JSON: {err}"),
                    }
                })?;
                columns.kind.push(kind);
                columns.owner.push(owner);
                columns.number.push(to_i64(revision.number));
                columns
                    .version_before
                    .push(revision.version_before.as_str());
                columns.version_after.push(revision.version_after.as_str());
                columns.sha256_before.push(&revision.sha256_before);
                columns.sha256_after.push(&revision.sha256_after);
                columns.bytes_before.push(to_i64(revision.bytes_before));
                columns.bytes_after.push(to_i64(revision.bytes_after));
                columns.surface.push(revision.surface.to_string());
                columns
                    .personality
                    .push(revision.personality.as_ref().map(PersonalityId::as_str));
                columns
                    .user
                    .push(revision.user.as_ref().map(UserId::as_str));
                columns.idempotency_key.push(
                    revision
                        .idempotency_key
                        .as_ref()
                        .map(IdempotencyKey::as_str),
                );
                columns.session.push(revision.session.as_deref());
                columns.updates.push(updates);
                columns.content.push(revision.text.as_deref());
            }
        }
        Ok(columns)
    }

    /// `query` with the columns bound, in the order [`Statements::write`] takes them.
    fn bind<'q>(
        &'q self,
        query: QueryAs<'q, Postgres, (String, String), PgArguments>,
    ) -> QueryAs<'q, Postgres, (String, String), PgArguments> {
        query
            .bind(&self.kind)
            .bind(&self.owner)
            .bind(&self.number)
            .bind(&self.version_before)
            .bind(&self.version_after)
            .bind(&self.sha256_before)
            .bind(&self.sha256_after)
            .bind(&self.bytes_before)
            .bind(&self.bytes_after)
            .bind(&self.surface)
            .bind(&self.personality)
            .bind(&self.user)
            .bind(&self.idempotency_key)
            .bind(&self.session)
            .bind(&self.updates)
            .bind(&self.content)
    }
}

/// The upsert of `rows` rows in `transaction`, committed only if every row landed; with the
/// transaction's `lock_timeout` lowered to `lower_to` first, if given.
async fn write_in_transaction<'q>(
    mut transaction: sqlx::Transaction<'_, Postgres>,
    query: QueryAs<'q, Postgres, (String, String), PgArguments>,
    rows: usize,
    lower_to: Option<Duration>,
    persistent: bool,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    if let Some(lock_wait) = lower_to {
        // `true`: for this transaction only. Whole milliseconds, at least 1 (0 would be none).
        sqlx::query("SELECT set_config('lock_timeout', $1, true)")
            .persistent(persistent)
            .bind(format!("{}ms", lock_wait.as_millis().max(1)))
            .execute(&mut *transaction)
            .await?;
    }
    let landed = query.fetch_all(&mut *transaction).await;
    if landed.as_ref().is_ok_and(|landed| landed.len() == rows) {
        transaction.commit().await?;
    } else {
        // Answered here, not when the connection next goes out. A rollback that fails leaves
        // a broken connection, which the pool closes on return.
        let _ = transaction.rollback().await;
    }
    landed
}

/// Whether a migration failed on something another host created meanwhile: a duplicate
/// schema, table, object or catalog key.
fn created_meanwhile(err: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = err else {
        return false;
    };
    matches!(
        db.code().as_deref(),
        Some("23505" | "42P06" | "42P07" | "42710")
    )
}

/// The migrations in `migrations/`, embedded at build time with their checksums.
static MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!();

/// Why migrating failed: a statement, or a schema whose applied migrations are not this
/// version's.
#[derive(Debug)]
enum Migrating {
    /// A statement failed.
    Sql(sqlx::Error),
    /// A migration was left failed (by sqlx's migrator, which could record one so).
    Failed(i64),
    /// A migration this version does not have: the schema is a later version's, or another's.
    Unknown(i64),
    /// A migration whose text differs from this version's.
    Changed(i64),
}

impl From<sqlx::Error> for Migrating {
    fn from(err: sqlx::Error) -> Self {
        Migrating::Sql(err)
    }
}

impl std::fmt::Display for Migrating {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Migrating::Sql(err) => write!(f, "{err}"),
            Migrating::Failed(version) => write!(f, "migration {version} is recorded as failed"),
            Migrating::Unknown(version) => write!(
                f,
                "migration {version} was applied but is not one of this version's"
            ),
            Migrating::Changed(version) => write!(
                f,
                "migration {version} was applied with another text than this version's"
            ),
        }
    }
}

/// The advisory lock sqlx's migrator takes for `database` (sqlx-postgres's `generate_lock_id`),
/// so that migrators of earlier versions of this crate, which let sqlx take it, and an
/// application's own sqlx migrations take turns with ours.
fn migration_lock_key(database: &str) -> i64 {
    const CRC_32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
    0x3d32_ad9e * i64::from(CRC_32.checksum(database.as_bytes()))
}

/// A pooled connection in use by one call. It goes back to the pool only once the call marks
/// it answered and it answers a ping within `release_within`, in the background; otherwise it
/// is dropped. A call dropped at its deadline may have left it waiting for a reply, and sqlx
/// tests a connection coming back with no time bound, so one that stalled would hold its pool
/// slot until TCP gives up, minutes later (or never, behind a proxy that keeps the socket open).
struct Lease {
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

/// The statements of one provider, built once from its (validated) schema name.
#[derive(Debug)]
struct Statements {
    select: Arc<str>,
    hold: Arc<str>,
    held_by_others: Arc<str>,
    select_documents: Arc<str>,
    read_two: Arc<str>,
    write: Arc<str>,
    history: Arc<str>,
    purge_document: Arc<str>,
    purge_hold: Arc<str>,
    purge_history: Arc<str>,
    tombstone: Arc<str>,
    list: Arc<str>,
    resolve: Arc<str>,
    link_first: Arc<str>,
    lock_link: Arc<str>,
    relink: Arc<str>,
    unlink: Arc<str>,
    identities: Arc<str>,
}

impl Statements {
    fn for_tables(schema: &str, table: &str, history: &str, identities: &str) -> Self {
        // `unnest` of the array parameters `$first..`, of these element types, each behind a
        // scalar subquery. Unwrapped, the planner counts a bound array's elements (1 or 2) but
        // assumes 10 for an unbound one, so a plan made for the values always looks cheaper
        // than the generic plan and the statement is planned anew on every call (twice the
        // time of the execution of `select`). Behind a subquery both assume the same, and the
        // generic plan is kept after the first few calls.
        let unnest = |first: usize, types: &[&str]| {
            let arrays: Vec<String> = types
                .iter()
                .enumerate()
                .map(|(i, ty)| format!("(SELECT ${}::{ty}[])", first + i))
                .collect();
            format!("unnest({})", arrays.join(", "))
        };
        // The newest revision of document `w`: one backward step on the primary key.
        let tip = format!(
            "SELECT h.number AS tip_number, h.version_after AS tip_version, \
                    h.sha256_after AS tip_sha256, h.bytes_after AS tip_bytes \
             FROM {history} AS h WHERE h.kind = w.kind AND h.owner = w.owner \
             ORDER BY h.number DESC LIMIT 1"
        );
        // Whether a write whose first revision is `w.first` still numbers on from the tip it
        // read (trivially so when it records none). A document purged and written again
        // since reads the same version as before, but its history has moved on: the write
        // must not land, or text computed from the purged content would.
        let unchanged_tip = format!(
            "(w.first = 0 OR NOT EXISTS (SELECT FROM {history} AS n \
               WHERE n.kind = w.kind AND n.owner = w.owner AND n.number >= w.first))"
        );
        // select: (kind, owner); write: (kind, owner, content, expected, sha256, receipts,
        // first, tip, oldest, expected_text, base), then the history table's columns as
        // RevisionColumns has them, then the age limit.
        let documents = unnest(1, &["text", "text"]);
        let writes = unnest(
            1,
            &[
                "text", "text", "text", "int8", "text", "text", "int8", "int8", "int8", "text",
                "int8",
            ],
        );
        let revisions = unnest(
            12,
            &[
                "text", "text", "int8", "text", "text", "text", "text", "int8", "int8", "text",
                "text", "text", "text", "text", "text", "text",
            ],
        );
        // One row per id, in order, whether or not the document or its history exists, with
        // the tip or (for reads, which do not need it) NULLs in its place.
        // Times as epoch milliseconds: sqlx decodes TIMESTAMPTZ only with a time crate.
        let select = |tip: &str| {
            let (columns, join) = if tip.is_empty() {
                (
                    "NULL::int8 AS tip_number, NULL::text AS tip_version, \
                     NULL::text AS tip_sha256, NULL::int8 AS tip_bytes"
                        .to_owned(),
                    String::new(),
                )
            } else {
                (
                    "t.tip_number, t.tip_version, t.tip_sha256, t.tip_bytes".to_owned(),
                    format!("LEFT JOIN LATERAL ({tip}) AS t ON true"),
                )
            };
            format!(
                "SELECT d.content, d.version, \
                   (extract(epoch FROM d.updated_at) * 1000)::int8 AS updated_at, \
                   CASE WHEN $3 THEN d.receipts END AS receipts, {columns}, \
                   (extract(epoch FROM now()) * 1000)::int8 AS now \
                 FROM {documents} WITH ORDINALITY AS w(kind, owner, position) \
                 LEFT JOIN {table} AS d ON d.kind = w.kind AND d.owner = w.owner {join} \
                 ORDER BY w.position"
            )
        };
        Statements {
            select: select(&tip).into(),
            // The migration's function: the locks, then `select`'s read.
            hold: format!(
                "SELECT content, version, updated_at, receipts, tip_number, tip_version, \
                   tip_sha256, tip_bytes, now \
                 FROM \"{schema}\".memory_hold($1, $2, $3, $4)"
            )
            .into(),
            // Which of the documents another session holds: its advisory lock (as memory_hold
            // takes it, in this schema) or its row's lock. Each is tried, not waited for, and
            // let go when the statement ends; only a hold that timed out asks.
            held_by_others: format!(
                "SELECT w.position FROM unnest($1::text[], $2::text[]) WITH ORDINALITY \
                   AS w(kind, owner, position) \
                 WHERE NOT pg_try_advisory_xact_lock(hashtextextended( \
                     '{schema}' || '/' || w.kind || '/' || w.owner, 0)) \
                   OR (EXISTS (SELECT FROM {table} AS d \
                         WHERE d.kind = w.kind AND d.owner = w.owner) \
                     AND NOT EXISTS (SELECT FROM {table} AS d \
                         WHERE d.kind = w.kind AND d.owner = w.owner FOR UPDATE SKIP LOCKED)) \
                 ORDER BY w.position LIMIT 1"
            )
            .into(),
            select_documents: select("").into(),
            // Two documents by their keys, in one statement (one snapshot); the second is left
            // out where it is the first again.
            read_two: format!(
                "SELECT kind, owner, content, version, \
                   (extract(epoch FROM updated_at) * 1000)::int8 AS updated_at \
                 FROM {table} WHERE kind = $1 AND owner = $2 \
                 UNION ALL \
                 SELECT kind, owner, content, version, \
                   (extract(epoch FROM updated_at) * 1000)::int8 AS updated_at \
                 FROM {table} WHERE kind = $3 AND owner = $4 AND NOT (kind = $1 AND owner = $2)"
            )
            .into(),
            // The compare-and-swap, its revisions and their pruning in one statement (one
            // round trip, one atomic step). An existing document is updated only where its
            // version is still the expected one, its text the expected one when the write was
            // planned from the writer's last view of it (a hand edit need not change the
            // version; the lengths are compared first, so the stored text is read only when
            // they are equal), and its row is not locked by another session (`free`): a
            // writer holding it ([`CompareAndSwap::hold`]) is about to change it, so this write
            // would lose anyway, and losing at once sends it to the holders' queue instead of
            // a wait on the row and then that queue too. A held write locked the row itself,
            // which does not stop it. A new document (expected 0) is inserted only where no
            // row is. A row another writer got to first is neither, and is missing from
            // RETURNING, so its revisions are not recorded either. Then each landed document
            // drops, from its oldest few revisions, the ones its retention no longer keeps
            // (never the new tip): by count (below `w.oldest`) or by age ($28 milliseconds,
            // NULL for none), by the server's clock like the revisions' times, and only below
            // `base`, the newest revision stored whole (a checkpoint, a hand edit, a tombstone,
            // or the first) at or below the oldest kept, which the kept changes are rebuilt
            // from (`Revision::is_base`; a change's `content` is NULL). `doomed` is
            // materialized so that the plan starts from those few rows, not from all the
            // document's revisions. A NULL receipts value keeps the stored one. Times are the
            // statement's: in a held write's transaction `now()` is when it began to wait, so
            // its revision could be older than the one it waited for.
            write: format!(
                "WITH w AS ( \
                   SELECT * FROM {writes} \
                     AS w(kind, owner, content, expected, sha256, receipts, first, tip, oldest, \
                          expected_text, base)), \
                 free AS ( \
                   SELECT d.kind, d.owner FROM {table} AS d \
                   JOIN w ON d.kind = w.kind AND d.owner = w.owner \
                   WHERE w.expected > 0 AND d.version = w.expected \
                     AND (w.expected_text IS NULL OR d.content = w.expected_text) \
                   FOR UPDATE OF d SKIP LOCKED), \
                 updated AS ( \
                   UPDATE {table} AS d \
                   SET content = w.content, version = w.expected + 1, sha256 = w.sha256, \
                       updated_at = statement_timestamp(), \
                       receipts = COALESCE(w.receipts, d.receipts) \
                   FROM w JOIN free AS f ON f.kind = w.kind AND f.owner = w.owner \
                   WHERE d.kind = w.kind AND d.owner = w.owner \
                     AND d.version = w.expected AND {unchanged_tip} \
                   RETURNING d.kind, d.owner), \
                 inserted AS ( \
                   INSERT INTO {table} \
                     (kind, owner, content, version, sha256, receipts, updated_at) \
                   SELECT w.kind, w.owner, w.content, 1, w.sha256, w.receipts, \
                     statement_timestamp() FROM w \
                   WHERE w.expected = 0 AND {unchanged_tip} \
                   ON CONFLICT (kind, owner) DO NOTHING \
                   RETURNING kind, owner), \
                 landed AS (SELECT kind, owner FROM updated \
                            UNION ALL SELECT kind, owner FROM inserted), \
                 recorded AS ( \
                   INSERT INTO {history} (kind, owner, number, version_before, version_after, \
                     sha256_before, sha256_after, bytes_before, bytes_after, surface, \
                     personality, user_id, idempotency_key, session, updates, content, time) \
                   SELECT r.*, statement_timestamp() FROM {revisions} \
                     AS r(kind, owner, number, version_before, version_after, sha256_before, \
                       sha256_after, bytes_before, bytes_after, surface, personality, user_id, \
                       idempotency_key, session, updates, content) \
                   JOIN landed AS l ON l.kind = r.kind AND l.owner = r.owner), \
                 doomed AS MATERIALIZED ( \
                   SELECT o.kind, o.owner, o.number \
                   FROM landed AS l \
                   JOIN w ON w.kind = l.kind AND w.owner = l.owner \
                   CROSS JOIN LATERAL ( \
                     SELECT CASE WHEN $28::int8 IS NULL THEN w.oldest \
                       ELSE GREATEST(w.oldest, COALESCE( \
                         (SELECT min(v.number) FROM {history} AS v \
                          WHERE v.kind = l.kind AND v.owner = l.owner \
                            AND v.time >= statement_timestamp() \
                                          - $28::int8 * interval '1 millisecond'), \
                         w.tip)) END AS number) AS kept \
                   CROSS JOIN LATERAL ( \
                     SELECT GREATEST( \
                       (SELECT max(b.number) FROM {history} AS b \
                        WHERE b.kind = l.kind AND b.owner = l.owner \
                          AND b.number <= kept.number \
                          AND (b.content IS NOT NULL OR b.updates = '[]' OR b.number = 1)), \
                       CASE WHEN w.base > 0 AND w.base <= kept.number THEN w.base END) \
                       AS number) AS base \
                   CROSS JOIN LATERAL ( \
                     SELECT o.kind, o.owner, o.number, o.time FROM {history} AS o \
                     WHERE o.kind = l.kind AND o.owner = l.owner \
                     ORDER BY o.number LIMIT {PRUNE_PER_WRITE}) AS o \
                   WHERE o.number < w.tip AND o.number < base.number \
                     AND (o.number < w.oldest \
                          OR o.time < statement_timestamp() - $28::int8 * interval '1 millisecond')), \
                 pruned AS ( \
                   DELETE FROM {history} AS h USING doomed AS x \
                   WHERE h.kind = x.kind AND h.owner = x.owner AND h.number = x.number) \
                 SELECT kind, owner FROM landed"
            )
            .into(),
            history: format!(
                "SELECT number, version_before, version_after, sha256_before, sha256_after, \
                   bytes_before, bytes_after, (extract(epoch FROM time) * 1000)::int8 AS time, \
                   surface, personality, user_id, idempotency_key, session, updates, content \
                 FROM {history} WHERE kind = $1 AND owner = $2 \
                 ORDER BY number DESC LIMIT $3"
            )
            .into(),
            // Takes the row's lock, waiting for a write in progress, and erases it.
            purge_document: format!(
                "DELETE FROM {table} WHERE kind = $1 AND owner = $2 RETURNING content"
            )
            .into(),
            // Holds a document's key while it has no row; never committed (purge_history
            // deletes it). Waits for a first write in progress, then inserts nothing.
            purge_hold: format!(
                "INSERT INTO {table} (kind, owner, content, version, sha256) \
                 VALUES ($1, $2, '', 1, $3) ON CONFLICT (kind, owner) DO NOTHING"
            )
            .into(),
            // Erases the history (and the row purge_hold may have inserted), returning the
            // number and time of each revision there was (to count those the retention kept)
            // and the newest, which the tombstone numbers on from.
            purge_history: format!(
                "WITH erased AS ( \
                   DELETE FROM {history} WHERE kind = $1 AND owner = $2 \
                   RETURNING number, version_after, sha256_after, bytes_after, \
                     (extract(epoch FROM time) * 1000)::int8 AS ms), \
                 held AS (DELETE FROM {table} WHERE kind = $1 AND owner = $2) \
                 SELECT (SELECT coalesce(array_agg(number), '{{}}') FROM erased) AS numbers, \
                   (SELECT coalesce(array_agg(ms), '{{}}') FROM erased) AS times, \
                   t.number AS tip_number, t.version_after AS tip_version, \
                   t.sha256_after AS tip_sha256, t.bytes_after AS tip_bytes, \
                   (extract(epoch FROM now()) * 1000)::int8 AS now \
                 FROM (SELECT) AS one \
                 LEFT JOIN (SELECT * FROM erased ORDER BY number DESC LIMIT 1) AS t ON true"
            )
            .into(),
            // At the transaction's time, which purge_history returned.
            tombstone: format!(
                "INSERT INTO {history} (kind, owner, number, version_before, version_after, \
                   sha256_before, sha256_after, bytes_before, bytes_after, surface, content) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL)"
            )
            .into(),
            list: format!("SELECT kind, owner FROM {table}").into(),
            resolve: format!(
                "SELECT user_id FROM {identities} WHERE platform = $1 AND platform_user = $2"
            )
            .into(),
            // Waits for a concurrent insert of the same key to commit, then inserts nothing.
            link_first: format!(
                "INSERT INTO {identities} (platform, platform_user, user_id) VALUES ($1, $2, $3) \
                 ON CONFLICT (platform, platform_user) DO NOTHING"
            )
            .into(),
            lock_link: format!(
                "SELECT user_id FROM {identities} WHERE platform = $1 AND platform_user = $2 \
                 FOR UPDATE"
            )
            .into(),
            relink: format!(
                "UPDATE {identities} SET user_id = $3, updated_at = now() \
                 WHERE platform = $1 AND platform_user = $2"
            )
            .into(),
            unlink: format!(
                "DELETE FROM {identities} WHERE platform = $1 AND platform_user = $2 \
                 RETURNING user_id"
            )
            .into(),
            identities: format!("SELECT platform, platform_user, user_id FROM {identities}").into(),
        }
    }
}

/// The primary key of a document's row.
fn row_key(id: &DocumentId) -> (&'static str, &str) {
    match id {
        DocumentId::GlobalMemory => ("global_memory", ""),
        DocumentId::PersonalityMemory { personality } => {
            ("personality_memory", personality.as_str())
        }
        DocumentId::UserProfile { user } => ("user_profile", user.as_str()),
    }
}

/// The document a row holds, or `None` for a row that is not one of ours (a bad id written by
/// hand), which `list` skips.
fn document_id(kind: &str, owner: &str) -> Option<DocumentId> {
    match kind {
        "global_memory" if owner.is_empty() => Some(DocumentId::GlobalMemory),
        "personality_memory" => PersonalityId::new(owner)
            .ok()
            .map(|personality| DocumentId::PersonalityMemory { personality }),
        "user_profile" => UserId::new(owner)
            .ok()
            .map(|user| DocumentId::UserProfile { user }),
        _ => None,
    }
}

/// The shortest `lock_timeout` a write or a hold sets: whole milliseconds, and 0 would mean no
/// bound at all.
const SHORTEST_LOCK_WAIT: Duration = Duration::from_millis(1);

/// Serialization failures, deadlocks, lock waits past `lock_timeout`, and unique violations
/// (only a revision number can be one: a purge's tombstone took it after the writer read the
/// tip): the statement was rolled back and may be retried on a fresh read.
fn is_retryable(code: Option<&str>) -> bool {
    matches!(code, Some("40001" | "40P01" | "55P03" | "23505"))
}

/// A count or size for a column (BIGINT): ours never reach `i64::MAX`.
fn to_i64(value: impl TryInto<i64>) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

/// A count, size or revision number as stored in `column`: a negative one was not written by
/// us (the tables' CHECKs forbid it; a hand edit may have dropped them).
fn stored_count<T: TryFrom<i64>>(
    value: i64,
    column: &str,
    location: impl Fn() -> String,
) -> Result<T, MemoryError> {
    T::try_from(value).map_err(|_| MemoryError::Corrupt {
        location: location(),
        reason: format!("{column}: {value} is negative"),
    })
}

/// Schema names go into SQL, so only plain identifiers are accepted.
fn validate_schema(schema: &str) -> Result<(), MemoryError> {
    let valid = schema.len() <= 63
        && schema.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && schema
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !schema.starts_with("pg_");
    if valid {
        Ok(())
    } else {
        Err(MemoryError::Config {
            message: format!(
                "invalid schema name {schema:?}: use 1 to 63 lowercase letters, digits and '_', starting with a letter or '_' (not 'pg_')"
            ),
        })
    }
}

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
fn refused_as_a_standby(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db)
        if db.code().as_deref() == Some("25006") || db.message().contains("during recovery"))
}

/// Whether the server of a new connection is in recovery (a standby), which the pool refuses:
/// it never keeps one, so no plain read comes from a standby (a transaction's `BEGIN READ
/// WRITE` refuses it too, see [`Begin`]). One round trip per connection opened, in the simple
/// protocol, which a pooler in transaction mode takes.
async fn in_recovery(connection: &mut PgConnection) -> Result<bool, sqlx::Error> {
    let row = connection
        .fetch_one(sqlx::raw_sql("SELECT pg_is_in_recovery()"))
        .await?;
    sqlx::Row::try_get(&row, 0)
}

/// `postgres://host:port`, for messages and locations: never the credentials.
fn server_name(options: &PgConnectOptions) -> String {
    format!("postgres://{}:{}", options.get_host(), options.get_port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_migration_lock_is_the_one_sqlx_takes() {
        // sqlx-postgres 0.9's generate_lock_id("test"): 0x3d32ad9e * CRC-32("test").
        assert_eq!(migration_lock_key("test"), 3_729_328_775_749_822_312);
    }

    #[test]
    fn transactions_begin_with_their_timeouts() {
        let none = Begin::with(&[]);
        assert_eq!(&*none.write, "BEGIN READ WRITE");
        assert_eq!(
            &*none.snapshot,
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ WRITE"
        );
        let set = Begin::with(&[
            ("lock_timeout", "5ms".to_owned()),
            ("statement_timeout", "9ms".to_owned()),
        ]);
        assert_eq!(
            &*set.write,
            "BEGIN READ WRITE; SET LOCAL lock_timeout = '5ms'; SET LOCAL statement_timeout = '9ms'"
        );
        assert!(set.snapshot.ends_with(
            "READ WRITE; SET LOCAL lock_timeout = '5ms'; SET LOCAL statement_timeout = '9ms'"
        ));
    }
}
