//! Agent memory in PostgreSQL, for many writers on many hosts.
//!
//! One row per document (`memory_documents` in the provider's schema) carries the text and a
//! version that every write bumps by one. `sync` reads the rows, computes the new text with
//! memory-core's shared semantics while holding no lock, and writes with compare-and-swap: the
//! write lands only if the version is still the one it read. A writer that lost the race reads
//! again and retries with jittered backoff, up to `max_attempts`, then reports `Contention`.
//! A call that touches both documents commits both in one transaction, or neither.
//!
//! Every call ends within its deadline (`deadline_ms`, default 10 s): a write never waits on
//! another session's row lock past it, and a connection that stops answering fails the call
//! with `Unavailable` (or `OutcomeUnknown` for an unanswered write) and is closed, not reused.
//!
//! The identity map is the table `memory_identities` beside the documents, one row per
//! (platform, platform user id); a link runs in a transaction that holds the row's lock.
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

use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use memory_core::{
    CasWrite, CasWriter, CompareAndSwap, DEFAULT_DEADLINE, Document, DocumentId, EventBus, Fetched,
    Identity, IdentityMap, IfMatch, MemoryContext, MemoryError, MemoryProvider, MemoryUpdate,
    PersonalityId, Prefetch, Receipts, Subscription, SyncReport, UserId, Version, sha256_hex,
};
use sqlx::migrate::MigrateError;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgArguments, PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::query::QueryAs;
use sqlx::{AssertSqlSafe, Connection, PgConnection, Postgres};

pub use config::{DEFAULT_MAX_ATTEMPTS, PostgresConfig};

/// The memory contract on PostgreSQL. Cheap to share: clone the pool, not the provider.
#[derive(Debug)]
pub struct PostgresProvider {
    pool: PgPool,
    schema: String,
    /// `"<schema>".memory_documents`, for messages.
    table: String,
    /// `"<schema>".memory_identities`, for messages.
    identities: String,
    sql: Statements,
    /// `postgres://host:port/database/schema`: where documents are, without credentials.
    location: String,
    writer: CasWriter,
    max_attempts: u32,
    /// How long one call may take; `writer` has the same.
    deadline: Duration,
    /// The `lock_timeout` the pool's connections were opened with, when this provider opened
    /// them; `None` for a pool given to `from_pool`, whose setting is unknown.
    lock_timeout: Option<Duration>,
    events: EventBus,
}

impl PostgresProvider {
    /// Connects with `config`, and applies the migrations unless `config.migrate` is false.
    ///
    /// # Errors
    /// [`MemoryError::Config`] for a bad URL, schema name or deadline (never echoing the
    /// password); [`MemoryError::Unavailable`] when no connection is made within the connect
    /// timeout.
    pub async fn connect(config: &PostgresConfig) -> Result<Self, MemoryError> {
        validate_schema(&config.schema)?;
        let options = config.connect_options()?;
        let server = server_name(&options);
        let timeout = config.connect_timeout();
        let deadline = config.deadline();
        let connecting = PgPoolOptions::new()
            .max_connections(config.max_connections.max(1))
            .acquire_timeout(timeout)
            // sqlx pings every connection that comes back to the pool, with no time bound: one
            // whose path stalls would hold its pool slot until TCP gives up, minutes later (or
            // never, behind a proxy that keeps the socket open). A first ping bounded by the
            // deadline closes such a connection instead; one that answers is pinged again by
            // sqlx, in the background of the call that used it.
            .after_release(move |connection, _| {
                Box::pin(async move {
                    match tokio::time::timeout(deadline, connection.ping()).await {
                        Ok(answered) => answered.map(|()| true),
                        Err(_) => Err(sqlx::Error::Io(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "no reply to a ping on release within the deadline",
                        ))),
                    }
                })
            })
            .connect_with(options);
        // The pool bounds the wait already; the outer bound is for a TCP connect that the
        // pool's own timeout does not interrupt.
        let pool = match tokio::time::timeout(timeout + Duration::from_secs(1), connecting).await {
            Ok(pool) => pool.map_err(|err| MemoryError::unavailable(&server, err))?,
            Err(_) => {
                return Err(MemoryError::Unavailable {
                    what: server,
                    message: format!("no connection within {timeout:?}"),
                    source: None,
                });
            }
        };
        let mut provider = Self::from_pool(pool, &config.schema)?
            .with_max_attempts(config.max_attempts)
            .with_deadline(config.deadline());
        provider.lock_timeout = Some(config.lock_timeout());
        if config.migrate {
            provider.migrate().await?;
        }
        Ok(provider)
    }

    /// A provider on an existing pool, using the tables in `schema`. Does no I/O: call
    /// [`PostgresProvider::migrate`] if the tables may not exist yet. Its calls have the
    /// default deadline of 10 s (see [`PostgresProvider::with_deadline`]); since the pool's
    /// `lock_timeout` is not known, every write sets its own in its transaction.
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
        Ok(PostgresProvider {
            sql: Statements::for_tables(&table, &identities),
            table,
            identities,
            schema: schema.to_owned(),
            location,
            pool,
            writer: CasWriter::new(DEFAULT_MAX_ATTEMPTS),
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            deadline: DEFAULT_DEADLINE,
            lock_timeout: None,
            events: EventBus::new(),
        })
    }

    /// Sets how many compare-and-swap attempts a `sync` makes before `Contention` (at least 1).
    pub fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self.writer = CasWriter::new(max_attempts).with_deadline(self.deadline);
        self
    }

    /// Sets how long one call may take in all (see [`PostgresConfig::deadline_ms`]).
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self.writer = CasWriter::new(self.max_attempts).with_deadline(deadline);
        self
    }

    /// Creates the schema and applies the embedded migrations that are not applied yet. Safe to
    /// call from many processes at once: they take turns on an advisory lock.
    ///
    /// # Errors
    /// [`MemoryError::Unavailable`] when the server cannot be reached or a migration fails.
    pub async fn migrate(&self) -> Result<(), MemoryError> {
        // The migrations name their tables without a schema, so they run on a connection of
        // their own whose search_path is the provider's schema; the pool is left untouched.
        // A migration may wait for another process's (on an advisory lock) longer than a call's
        // deadline: the statement timeout is lifted for it.
        let options = (*self.pool.connect_options()).clone().options([
            ("search_path", self.schema.as_str()),
            ("statement_timeout", "0"),
        ]);
        let timeout = self.pool.options().get_acquire_timeout();
        let mut connection = tokio::time::timeout(timeout, PgConnection::connect_with(&options))
            .await
            .map_err(|_| MemoryError::Unavailable {
                what: self.location.clone(),
                message: format!("no connection within {timeout:?}"),
                source: None,
            })?
            .map_err(|err| self.unavailable(err))?;
        let mut migrator = sqlx::migrate!();
        migrator.create_schema(self.schema.clone());
        // A table of our own, so an application's sqlx migrations can share the schema.
        migrator.dangerous_set_table_name(format!("\"{}\"._memory_migrations", self.schema));
        // `run_direct`, not `run`: `run`'s `Acquire` bound makes this future not provably
        // `Send`, so it could not be awaited inside a boxed `Send` future (the wiring's lazy
        // connect).
        let migrated = migrator.run_direct(None, &mut connection, false).await;
        let _ = connection.close().await;
        migrated.map_err(|err| match err {
            MigrateError::VersionMismatch(_)
            | MigrateError::VersionMissing(_)
            | MigrateError::VersionTooOld(..)
            | MigrateError::VersionTooNew(..)
            | MigrateError::Dirty(_) => MemoryError::Config {
                message: format!(
                    "the migrations applied in {} do not match this memory-postgres ({err}): use a schema of its own, or a matching version",
                    self.location
                ),
            },
            err => MemoryError::unavailable(format!("migrating {}", self.location), err),
        })
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
        MemoryError::unavailable(&self.location, err)
    }

    /// `call` bounded by the deadline: past it, `Unavailable` (the connection it was waiting
    /// on is closed by its [`Lease`]). `sync` has the same bound from its [`CasWriter`].
    async fn within_deadline<T>(
        &self,
        call: impl Future<Output = Result<T, MemoryError>>,
    ) -> Result<T, MemoryError> {
        tokio::time::timeout(self.deadline, call)
            .await
            .unwrap_or_else(|_| {
                Err(MemoryError::Unavailable {
                    what: self.location.clone(),
                    message: format!(
                        "no reply within the call's deadline of {} ms",
                        self.deadline.as_millis()
                    ),
                    source: None,
                })
            })
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
        let mut transaction = connection.begin().await.map_err(failed)?;
        loop {
            let inserted = sqlx::query(AssertSqlSafe(self.sql.link_first.clone()))
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
            let current: Option<String> =
                sqlx::query_scalar(AssertSqlSafe(self.sql.lock_link.clone()))
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
                sqlx::query(AssertSqlSafe(self.sql.relink.clone()))
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

    /// `work` on a connection from the pool, returning what it returned. The connection goes
    /// back to the pool only when `work` ran to its end: a call dropped while it waits (its
    /// deadline passed) closes it, see [`Lease`].
    async fn leased<T>(
        &self,
        work: impl AsyncFnOnce(&mut PgConnection) -> T,
    ) -> Result<T, MemoryError> {
        let connection = self
            .pool
            .acquire()
            .await
            .map_err(|err| self.db_error(err))?;
        let mut lease = Lease {
            connection,
            answered: false,
        };
        let answer = work(&mut lease).await;
        lease.answered();
        Ok(answer)
    }

    /// An error on the documents' table.
    fn db_error(&self, err: sqlx::Error) -> MemoryError {
        self.table_error(&self.table, err)
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
}

#[async_trait]
impl MemoryProvider for PostgresProvider {
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        self.within_deadline(self.prefetch_by_fetch(ctx)).await
    }

    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        self.writer
            .sync(self, &self.events, ctx, updates, if_match)
            .await
    }

    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        self.within_deadline(self.read_by_fetch(document)).await
    }

    async fn receipts(&self, document: &DocumentId) -> Result<Receipts, MemoryError> {
        self.within_deadline(self.receipts_by_fetch(document)).await
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        let rows: Vec<(String, String)> = self
            .within_deadline(async {
                self.leased(async |connection| {
                    sqlx::query_as(AssertSqlSafe(self.sql.list.clone()))
                        .fetch_all(connection)
                        .await
                })
                .await?
                .map_err(|err| self.db_error(err))
            })
            .await?;
        let mut ids: Vec<DocumentId> = rows
            .iter()
            .filter_map(|(kind, owner)| document_id(kind, owner))
            .collect();
        ids.sort();
        Ok(ids)
    }

    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<Vec<memory_core::Revision>, MemoryError> {
        let _ = (document, limit);
        Err(MemoryError::Config {
            message: "TODO(issue 21): history".into(),
        })
    }

    async fn purge(
        &self,
        document: &DocumentId,
        surface: memory_core::Surface,
    ) -> Result<memory_core::Purged, MemoryError> {
        let _ = (document, surface);
        Err(MemoryError::Config {
            message: "TODO(issue 21): purge".into(),
        })
    }

    fn subscribe(&self) -> Subscription {
        self.events.subscribe()
    }
}

#[async_trait]
impl IdentityMap for PostgresProvider {
    async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        let user: Option<String> = self
            .within_deadline(async {
                self.leased(async |connection| {
                    sqlx::query_scalar(AssertSqlSafe(self.sql.resolve.clone()))
                        .bind(identity.platform())
                        .bind(identity.platform_user())
                        .fetch_optional(connection)
                        .await
                })
                .await?
                .map_err(|err| self.identity_error(err))
            })
            .await?;
        user.map(|user| self.stored_user(identity, user))
            .transpose()
    }

    /// One transaction: a first link inserts the row; any other link locks the row, decides
    /// with [`Identity::check_link`] and updates it only if that says so. Concurrent first
    /// links of one identity queue on the primary key, so exactly one inserts and the others
    /// then see its row. Past the deadline the call is `Unavailable`, whether or not its commit
    /// landed: repeating a link is safe.
    async fn link(
        &self,
        identity: &Identity,
        user: &UserId,
        relink: bool,
    ) -> Result<Option<UserId>, MemoryError> {
        self.within_deadline(async {
            self.leased(async |connection| self.link_on(connection, identity, user, relink).await)
                .await?
        })
        .await
    }

    async fn identities(&self) -> Result<Vec<(Identity, UserId)>, MemoryError> {
        let rows: Vec<(String, String, String)> = self
            .within_deadline(async {
                self.leased(async |connection| {
                    sqlx::query_as(AssertSqlSafe(self.sql.identities.clone()))
                        .fetch_all(connection)
                        .await
                })
                .await?
                .map_err(|err| self.identity_error(err))
            })
            .await?;
        let mut links = rows
            .into_iter()
            .map(|(platform, platform_user, user)| {
                let identity =
                    Identity::new(platform, platform_user).map_err(|err| MemoryError::Corrupt {
                        location: format!("{}/memory_identities", self.location),
                        reason: err.to_string(),
                    })?;
                let user = self.stored_user(&identity, user)?;
                Ok((identity, user))
            })
            .collect::<Result<Vec<_>, MemoryError>>()?;
        // Sorted here, not by ORDER BY: the database's collation need not compare bytes.
        links.sort();
        Ok(links)
    }
}

/// The two round trips [`CasWriter`] needs: one snapshot read, one conditional write.
#[async_trait]
impl CompareAndSwap for PostgresProvider {
    /// Reads `ids` in one statement, so they are one consistent snapshot.
    async fn fetch(&self, ids: &[DocumentId], receipts: bool) -> Result<Vec<Fetched>, MemoryError> {
        let (kinds, owners): (Vec<&str>, Vec<&str>) = ids.iter().map(row_key).unzip();
        let rows: Vec<(String, String, String, i64, i64, Option<String>)> = self
            .leased(async |connection| {
                sqlx::query_as(AssertSqlSafe(self.sql.select.clone()))
                    .bind(&kinds)
                    .bind(&owners)
                    .bind(receipts)
                    .fetch_all(connection)
                    .await
            })
            .await?
            .map_err(|err| self.db_error(err))?;
        Ok(ids
            .iter()
            .map(|id| {
                let key = row_key(id);
                let (text, version, modified, receipts) = rows
                    .iter()
                    .find(|(kind, owner, ..)| (kind.as_str(), owner.as_str()) == key)
                    // The table's CHECK keeps versions positive.
                    .map_or(
                        (String::new(), 0, None, None),
                        |(.., text, version, millis, receipts)| {
                            (
                                text.clone(),
                                version.unsigned_abs(),
                                Some(unix_millis(*millis)),
                                receipts.clone(),
                            )
                        },
                    );
                let document = Document {
                    id: id.clone(),
                    text,
                    version: Version::new(version.to_string()),
                    location: format!("{}/{}", self.location, id.relative_path()),
                    modified,
                };
                Fetched {
                    document,
                    version,
                    receipts,
                    tip: memory_core::RevisionTip::empty(Version::new("0")),
                }
            })
            .collect())
    }

    /// One statement for all writes. It runs alone when the connections' `lock_timeout`
    /// keeps its lock waits within `lock_wait`; otherwise (and for two documents, which commit
    /// only if both rows landed) in a transaction, which first lowers `lock_timeout` to fit.
    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        lock_wait: Duration,
    ) -> Result<Option<DocumentId>, MemoryError> {
        let Some(first) = writes.first() else {
            return Ok(None);
        };
        // Each row may wait its own `lock_timeout`, so they share what is left.
        let rows = u32::try_from(writes.len()).unwrap_or(u32::MAX);
        let per_row = lock_wait / rows;
        // No time left to wait for anything: whoever holds the rows has won the race.
        if per_row < Duration::from_millis(1) {
            return Ok(Some(first.id.clone()));
        }
        let (kinds, owners): (Vec<&str>, Vec<&str>) =
            writes.iter().map(|write| row_key(write.id)).unzip();
        let texts: Vec<&str> = writes.iter().map(|write| write.text).collect();
        let expected: Vec<i64> = writes
            .iter()
            .map(|write| write.expected.try_into().unwrap_or(i64::MAX))
            .collect();
        let hashes: Vec<String> = texts.iter().map(|text| sha256_hex(text)).collect();
        let receipts: Vec<Option<&str>> = writes.iter().map(|write| write.receipts).collect();
        let query = sqlx::query_as::<_, (String, String)>(AssertSqlSafe(self.sql.upsert.clone()))
            .bind(&kinds)
            .bind(&owners)
            .bind(&texts)
            .bind(&expected)
            .bind(&hashes)
            .bind(&receipts);
        let bounded = self.lock_timeout.is_some_and(|timeout| timeout <= per_row);
        let landed = self
            .leased(async |connection| {
                if writes.len() == 1 && bounded {
                    query.fetch_all(connection).await
                } else {
                    let lower_to = (!bounded).then_some(per_row);
                    write_in_transaction(connection, query, writes.len(), lower_to).await
                }
            })
            .await?;
        let landed = match landed {
            Ok(rows) => rows,
            // A lock held past `lock_timeout`, or two writers locking the same rows in a
            // different order: a lost race too.
            Err(sqlx::Error::Database(err)) if is_retryable(err.code().as_deref()) => Vec::new(),
            Err(err) => return Err(self.db_error(err)),
        };
        Ok(writes
            .iter()
            .map(|write| write.id)
            .find(|id| {
                let key = row_key(id);
                !landed
                    .iter()
                    .any(|(kind, owner)| (kind.as_str(), owner.as_str()) == key)
            })
            .cloned())
    }
}

/// The upsert of `rows` rows in a transaction on `connection`, committed only if every row
/// landed; with the transaction's `lock_timeout` lowered to `lower_to` first, if given.
async fn write_in_transaction<'q>(
    connection: &mut PgConnection,
    query: QueryAs<'q, Postgres, (String, String), PgArguments>,
    rows: usize,
    lower_to: Option<Duration>,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    let mut transaction = connection.begin().await?;
    if let Some(lock_wait) = lower_to {
        // `true`: for this transaction only. Whole milliseconds, at least 1 (0 would be none).
        sqlx::query("SELECT set_config('lock_timeout', $1, true)")
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

/// A pooled connection in use by one call. Unless the call marks it answered, it is closed
/// instead of going back to the pool: a call dropped at its deadline may have left it waiting
/// for a reply, and the pool would test it on return with no time bound, so one that stalled
/// would hold its pool slot for good.
struct Lease {
    connection: PoolConnection<Postgres>,
    answered: bool,
}

impl Lease {
    /// Every statement sent on the connection was answered (with rows or an error): it may go
    /// back to the pool.
    fn answered(mut self) {
        self.answered = true;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.answered {
            self.connection.close_on_drop();
        }
    }
}

impl Deref for Lease {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        &self.connection
    }
}

impl DerefMut for Lease {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.connection
    }
}

/// The statements of one provider, built once from its (validated) schema name.
#[derive(Debug)]
struct Statements {
    select: Arc<str>,
    upsert: Arc<str>,
    list: Arc<str>,
    resolve: Arc<str>,
    link_first: Arc<str>,
    lock_link: Arc<str>,
    relink: Arc<str>,
    identities: Arc<str>,
}

impl Statements {
    fn for_tables(table: &str, identities: &str) -> Self {
        Statements {
            // The time as epoch milliseconds: sqlx decodes TIMESTAMPTZ only with a time crate.
            select: format!(
                "SELECT kind, owner, content, version, \
                   (extract(epoch FROM updated_at) * 1000)::int8, \
                   CASE WHEN $3 THEN receipts END FROM {table} \
                 WHERE (kind, owner) IN (SELECT * FROM unnest($1::text[], $2::text[]))"
            )
            .into(),
            // A new document is inserted at version 1; an existing one is updated only where
            // its version is still the expected one. A row another writer got to first is
            // neither, and is missing from RETURNING. A NULL receipts value keeps the stored one.
            upsert: format!(
                "INSERT INTO {table} AS d (kind, owner, content, version, sha256, receipts) \
                 SELECT kind, owner, content, expected + 1, sha256, receipts \
                 FROM unnest($1::text[], $2::text[], $3::text[], $4::int8[], $5::text[], \
                             $6::text[]) \
                   AS w(kind, owner, content, expected, sha256, receipts) \
                 ON CONFLICT (kind, owner) DO UPDATE \
                   SET content = excluded.content, version = excluded.version, \
                       sha256 = excluded.sha256, updated_at = now(), \
                       receipts = COALESCE(excluded.receipts, d.receipts) \
                   WHERE d.version = excluded.version - 1 \
                 RETURNING kind, owner"
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

/// A time the server gave as milliseconds since the Unix epoch; one before 1970 (only a hand
/// edit could write it) reads as the epoch.
fn unix_millis(millis: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

/// Serialization failures, deadlocks and lock waits past `lock_timeout`: the statement was
/// rolled back and may be retried.
fn is_retryable(code: Option<&str>) -> bool {
    matches!(code, Some("40001" | "40P01" | "55P03"))
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

/// `postgres://host:port`, for messages and locations: never the credentials.
fn server_name(options: &PgConnectOptions) -> String {
    format!("postgres://{}:{}", options.get_host(), options.get_port())
}
