//! The store: the connection and the prefix's keys, where a document's keys are, what an error
//! on a key means, and the storage calls of `VersionedStore` (reading, listing, history, purge).

use std::time::Duration;

use async_trait::async_trait;
use memory_core::raw::{StoredHistory, VersionedStore};
use memory_core::{
    Document, DocumentId, MemoryError, Purged, Retention, Revision, Surface, Version,
};
use redis::{RedisError, Script};

use crate::connection::RedisConnection;
use crate::queue::Holds;
use crate::scripts::{
    HISTORY_SCRIPT, LINK_SCRIPT, PURGE_SCRIPT, READ_SCRIPT, REDACT_SCRIPT, UNLINK_SCRIPT,
    WRITE_SCRIPT,
};

// Named by the docs' links.
#[cfg(doc)]
use memory_core::raw::{Connect, Versioned};

/// What touches Redis: scripts and transactions on one prefix's keys (see the crate docs).
pub struct RedisStore {
    pub(crate) connection: RedisConnection,
    pub(crate) prefix: String,
    /// `redis://host:port/db`, `redis://host:port,... (cluster)` or `redis://host:port,...
    /// (sentinel, master NAME)`: where documents are, without credentials.
    pub(crate) server: String,
    pub(crate) read_script: Script,
    pub(crate) write_script: Script,
    pub(crate) history_script: Script,
    pub(crate) purge_script: Script,
    pub(crate) redact_script: Script,
    pub(crate) link_script: Script,
    pub(crate) unlink_script: Script,
    /// The writers that hold documents after a lost race, and their waits: see `hold.rs`.
    pub(crate) holds: Holds,
    /// How many replicas a write waits for before it is acknowledged; `None`: none.
    pub(crate) wait: Option<WaitForReplicas>,
}

/// `wait_replicas` and `wait_timeout_ms` of the settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WaitForReplicas {
    pub(crate) replicas: u32,
    pub(crate) timeout: Duration,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("server", &self.server)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// A store on an existing connection (a [`redis::aio::ConnectionManager`], a
    /// [`redis::aio::MultiplexedConnection`] or a [`redis::cluster_async::ClusterConnection`]),
    /// with its keys under `{prefix}:`. `server` names the server in locations and messages:
    /// give it without credentials. Run it as a provider with [`Versioned::new`]. Its writers
    /// race rather than hold (holding needs connections of its own to wait on, which
    /// [`Connect::connect`] makes).
    ///
    /// # Errors
    /// [`MemoryError::Config`] when `prefix` is not 1 to 64 letters, digits and `_ - . :`.
    pub fn from_connection(
        connection: impl Into<RedisConnection>,
        prefix: &str,
        server: impl Into<String>,
    ) -> Result<Self, MemoryError> {
        validate_prefix(prefix)?;
        Ok(RedisStore {
            connection: connection.into(),
            prefix: prefix.to_owned(),
            server: server.into(),
            read_script: Script::new(READ_SCRIPT),
            write_script: Script::new(WRITE_SCRIPT),
            history_script: Script::new(HISTORY_SCRIPT),
            purge_script: Script::new(PURGE_SCRIPT),
            redact_script: Script::new(REDACT_SCRIPT),
            link_script: Script::new(LINK_SCRIPT),
            unlink_script: Script::new(UNLINK_SCRIPT),
            holds: Holds::default(),
            wait: None,
        })
    }

    /// The key of `document`: `{prefix}:` and its path in the markdown layout.
    pub fn key(&self, document: &DocumentId) -> String {
        format!("{{{}}}:{}", self.prefix, document.relative_path())
    }

    /// The key of `document`'s history: `{prefix}:history:` and its path in the markdown
    /// layout, a stream with one entry per revision, oldest first.
    pub fn history_key(&self, document: &DocumentId) -> String {
        format!("{{{}}}:history:{}", self.prefix, document.relative_path())
    }

    /// The key of the set of every document written, as paths in the markdown layout.
    pub fn index_key(&self) -> String {
        format!("{{{}}}:documents", self.prefix)
    }

    /// The key of the identity map: a hash from `platform:platform-user-id` to the user id.
    pub fn identity_map_key(&self) -> String {
        format!("{{{}}}:identity-map", self.prefix)
    }

    /// The connection, to share with the rest of the application.
    pub fn connection(&self) -> &RedisConnection {
        &self.connection
    }

    pub(crate) fn key_location(&self, key: &str) -> String {
        format!("{} {key}", self.server)
    }

    pub(crate) fn error(&self, err: RedisError) -> MemoryError {
        MemoryError::unavailable(&self.server, err)
    }

    /// An error on the index set: a key of another type is `Corrupt`.
    fn index_error(&self, err: RedisError) -> MemoryError {
        match err.code() {
            Some("WRONGTYPE") => MemoryError::Corrupt {
                location: self.key_location(&self.index_key()),
                reason: "it is not a set".to_owned(),
            },
            _ => self.error(err),
        }
    }

    /// `send` on the provider's connection, and once more if the connection had dropped since
    /// the last call (a server restart, an idle kill): the manager fails the first command on
    /// a dropped connection while it reconnects. Only for what is safe to send twice (a read,
    /// a hold under the same token).
    pub(crate) async fn send_repeatable<T, F>(
        &self,
        send: impl Fn(RedisConnection) -> F,
    ) -> redis::RedisResult<T>
    where
        F: std::future::Future<Output = redis::RedisResult<T>>,
    {
        let reply = send(self.connection.clone()).await;
        if reply.as_ref().is_err_and(RedisError::is_connection_dropped) {
            return send(self.connection.clone()).await;
        }
        reply
    }

    /// `Corrupt` for the bytes at `key`.
    pub(crate) fn corrupt(&self, key: &str, reason: impl Into<String>) -> MemoryError {
        MemoryError::Corrupt {
            location: self.key_location(key),
            reason: reason.into(),
        }
    }

    /// An error a document script raised: `CORRUPT <key> <reason>` is `Corrupt` naming the
    /// key; anything else is the server's.
    pub(crate) fn script_error(&self, err: RedisError) -> MemoryError {
        match err.code() {
            Some("CORRUPT") => {
                let detail = err.detail().unwrap_or_default();
                let (key, reason) = detail.split_once(' ').unwrap_or((detail, "it is not ours"));
                self.corrupt(key, reason)
            }
            _ => self.error(err),
        }
    }
}

#[async_trait]
impl VersionedStore for RedisStore {
    fn location(&self) -> String {
        format!("{} {{{}}}:", self.server, self.prefix)
    }

    /// One transaction (see `read.rs`), without receipts or tips.
    async fn read(&self, ids: &[DocumentId]) -> Result<Vec<Document>, MemoryError> {
        self.read_documents(ids).await
    }

    /// One transaction (see `read.rs`) that sends no text of a document `known` still has.
    async fn read_changed(
        &self,
        ids: &[DocumentId],
        known: &[Option<&Version>],
    ) -> Result<Vec<Option<Document>>, MemoryError> {
        RedisStore::read_changed(self, ids, known).await
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        let paths: Vec<Vec<u8>> = redis::cmd("SMEMBERS")
            .arg(self.index_key())
            .query_async(&mut self.connection.clone())
            .await
            .map_err(|err| self.index_error(err))?;
        // Like a path outside the layout, a member that is not UTF-8 names no document.
        Ok(paths
            .iter()
            .filter_map(|path| std::str::from_utf8(path).ok())
            .filter_map(DocumentId::from_relative_path)
            .collect())
    }

    /// One script run reads the document and its newest `limit` revisions in one atomic step,
    /// with the server's clock.
    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<StoredHistory, MemoryError> {
        self.read_history(document, limit).await
    }

    /// One script run erases the document, its receipts and its history, takes it out of the
    /// index and leaves the tombstone, atomically. Purging again after a lost reply finds the
    /// document gone: it erases at most the tombstone the first purge left, and leaves the
    /// next.
    async fn purge(
        &self,
        document: &DocumentId,
        surface: Surface,
        retention: &Retention,
    ) -> Result<Purged, MemoryError> {
        self.purge_document(document, surface, retention).await
    }

    /// One script run writes the history stream anew with the revision redacted, where its
    /// newest revision is still the one planned on; sent again after a lost reply, it finds
    /// the revision redacted and writes nothing.
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

/// Prefixes become part of every key; braces would break the hash tag that keeps a
/// deployment's keys in one Redis Cluster slot.
pub(crate) fn validate_prefix(prefix: &str) -> Result<(), MemoryError> {
    let valid = (1..=64).contains(&prefix.len())
        && prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    if valid {
        Ok(())
    } else {
        Err(MemoryError::Config {
            message: format!(
                "invalid key prefix {prefix:?}: use 1 to 64 letters, digits and '_', '-', '.', ':'"
            ),
        })
    }
}
