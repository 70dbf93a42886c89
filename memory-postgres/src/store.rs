//! The store: the pool and the schema's tables, where a document's row is, what an error on a
//! table means, and the storage calls of `VersionedStore` (reading, listing, history, purge).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use async_trait::async_trait;
use memory_core::raw::{DEFAULT_DEADLINE, StoredHistory, VersionedStore};
use memory_core::{
    Document, DocumentId, MemoryError, PersonalityId, Purged, Retention, Revision, Surface, UserId,
    Version,
};
use sqlx::postgres::{PgConnectOptions, PgPool};

use crate::config::PoolMode;
use crate::sql::{Begin, Statements};

// Named by the docs' links.
#[cfg(doc)]
use memory_core::raw::Versioned;

/// What touches PostgreSQL: the statements on one schema's tables, on a pool.
#[derive(Debug)]
pub struct PostgresStore {
    pub(crate) pool: PgPool,
    pub(crate) schema: String,
    /// `"<schema>".memory_documents`, for messages.
    table: String,
    /// `"<schema>".memory_identities`, for messages.
    identities: String,
    /// `"<schema>".memory_history`, for messages.
    history: String,
    pub(crate) sql: Statements,
    /// `postgres://host:port/database/schema`: where documents are, without credentials.
    pub(crate) location: String,
    /// The `lock_timeout` the pool's connections were opened with, when this provider opened
    /// them; `None` for a pool given to `from_pool`, whose setting is unknown.
    pub(crate) lock_timeout: Option<Duration>,
    /// How the server hands out connections (see [`PoolMode`]).
    pub(crate) pool_mode: PoolMode,
    /// What starts each transaction, and each read-only snapshot (see [`Begin`]).
    pub(crate) begin: Begin,
    /// Whether the last connection opened reached a standby, which was refused (see
    /// [`in_recovery`](crate::connect::in_recovery)): the pool then times out without saying
    /// why, so this says it.
    pub(crate) reached_a_standby: Arc<AtomicBool>,
    /// How long a connection going back to the pool has to answer a ping (see
    /// [`Lease`](crate::lease::Lease)): the deadline.
    pub(crate) release_within: Duration,
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

    /// The pool, for health checks and for sharing with the rest of the application.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The schema holding this provider's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// An error on the documents' table.
    pub(crate) fn db_error(&self, err: sqlx::Error) -> MemoryError {
        self.table_error(&self.table, err)
    }

    /// An error on the history table.
    pub(crate) fn history_error(&self, err: sqlx::Error) -> MemoryError {
        self.table_error(&self.history, err)
    }

    /// An error on the identity map's table.
    pub(crate) fn identity_error(&self, err: sqlx::Error) -> MemoryError {
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

    /// Where `id` is, for reports and messages.
    pub(crate) fn location_of(&self, id: &DocumentId) -> String {
        format!("{}/{}", self.location, id.relative_path())
    }

    /// Where `id`'s history is, for messages about its stored revisions.
    pub(crate) fn history_location(&self, id: &DocumentId) -> String {
        format!("{}/memory_history/{}", self.location, id.relative_path())
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

    /// One statement that sends no text of a document `known` still has.
    async fn read_changed(
        &self,
        ids: &[DocumentId],
        known: &[Option<&Version>],
    ) -> Result<Vec<Option<Document>>, MemoryError> {
        self.changed_documents(ids, known).await
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

    /// One statement (`Statements::redact`), which lands only on the tip it was planned on.
    async fn redact(
        &self,
        document: &DocumentId,
        redacted: &Revision,
        rebased: Option<&Revision>,
        tip: u64,
    ) -> Result<bool, MemoryError> {
        self.redact_revision(document, redacted, rebased, tip).await
    }
}

/// The primary key of a document's row: a note's owner is its layout path, which names its
/// scope and its path in one string.
pub(crate) fn row_key(id: &DocumentId) -> (&'static str, String) {
    match id {
        DocumentId::GlobalMemory => ("global_memory", String::new()),
        DocumentId::PersonalityMemory { personality } => {
            ("personality_memory", personality.to_string())
        }
        DocumentId::UserProfile { user } => ("user_profile", user.to_string()),
        DocumentId::Note(_) => ("note", id.relative_path()),
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
        "note" => DocumentId::from_relative_path(owner).filter(|id| id.note_path().is_some()),
        _ => None,
    }
}

/// Schema names go into SQL, so only plain identifiers are accepted.
pub(crate) fn validate_schema(schema: &str) -> Result<(), MemoryError> {
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
pub(crate) fn server_name(options: &PgConnectOptions) -> String {
    format!("postgres://{}:{}", options.get_host(), options.get_port())
}
