//! What a store with a version counter per document implements, beside [`CompareAndSwap`].

use std::time::SystemTime;

use async_trait::async_trait;

use crate::document::{Document, DocumentId, Version};
use crate::error::MemoryError;
use crate::history::retention::Retention;
use crate::history::revision::{Purged, Revision, Surface};
use crate::raw::cas::store::{CompareAndSwap, Fetched};
use crate::raw::versioned::settings::Settings;

/// A document's history as a store read it: what [`VersionedStore::history`] returns.
#[derive(Debug, Clone)]
pub struct StoredHistory {
    /// The document as it is now, with its history's tip, read in the same snapshot as
    /// `recorded` (so a hand edit since the tip shows).
    pub current: Fetched,
    /// The newest revisions stored, newest first: at least the `limit` asked for where there are
    /// that many. Revisions a write has not pruned yet may be among them;
    /// [`Versioned`](crate::raw::Versioned) leaves out what the retention no longer keeps.
    pub recorded: Vec<Revision>,
    /// The store's clock at the read (the server's, where there is one), for the age rule.
    pub now: SystemTime,
    /// Where the revisions are kept (a table, a key), as a `Corrupt` error names a revision
    /// that cannot be rebuilt: `<location>#<number>`.
    pub location: String,
}

/// The calls that touch storage, for a store with a version counter per document. Together with
/// [`CompareAndSwap`] (one snapshot read, one conditional write, and a hold where the store can),
/// this is all a backend writes; [`Versioned`](crate::raw::Versioned) makes it a
/// [`MemoryProvider`](crate::MemoryProvider).
#[async_trait]
pub trait VersionedStore: CompareAndSwap {
    /// Where the documents are, for messages: a URL without credentials, a key prefix.
    fn location(&self) -> String;

    /// `ids` as they are now, in order: one consistent read, without receipts or history.
    /// The default reads them with [`CompareAndSwap::fetch`].
    async fn read(&self, ids: &[DocumentId]) -> Result<Vec<Document>, MemoryError> {
        Ok(self
            .fetch(ids, false)
            .await?
            .into_iter()
            .map(|fetched| fetched.document)
            .collect())
    }

    /// `ids` as [`VersionedStore::read`] reads them, except that a document whose version is
    /// still the one `known` gives for it may come back as `None`: the caller has its text
    /// already. For documents only agent-memory writes (a scope's index), whose version
    /// changes with every write and never repeats. The default reads them all.
    async fn read_changed(
        &self,
        ids: &[DocumentId],
        known: &[Option<&Version>],
    ) -> Result<Vec<Option<Document>>, MemoryError> {
        debug_assert_eq!(ids.len(), known.len());
        Ok(self.read(ids).await?.into_iter().map(Some).collect())
    }

    /// Every document stored (written at least once, even if cleared since), in any order.
    /// Whatever stored is not a document of the layout is left out.
    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError>;

    /// `document` and its newest `limit` (at least 1) stored revisions, in one snapshot. A stored
    /// revision that is not ours (a hand edit of the store) is [`MemoryError::Corrupt`];
    /// [`StoredRevision::check`](crate::raw::StoredRevision::check) checks the fields.
    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<StoredHistory, MemoryError>;

    /// Erases `document`, its receipts and its history in one atomic step, leaving a tombstone
    /// ([`Revision::tombstone`]) where [`Retention::leaves_tombstone`] says, stored in the same
    /// step.
    /// A write racing the purge either lands before it (and is erased) or finds the
    /// document never written.
    async fn purge(
        &self,
        document: &DocumentId,
        surface: Surface,
        retention: &Retention,
    ) -> Result<Purged, MemoryError>;

    /// Stores a redaction ([`Redaction::Store`](crate::raw::Redaction)) of `document`'s
    /// history in one atomic step: `redacted` in place of the revision of its number, and
    /// `rebased`, the revision after it with its whole text, in place of that one where it is
    /// still kept as its change alone. Only where `tip` is still the number of the newest
    /// revision stored and `redacted`'s revision is not redacted yet: otherwise nothing is
    /// written and the answer is `false` (plan again).
    async fn redact(
        &self,
        document: &DocumentId,
        redacted: &Revision,
        rebased: Option<&Revision>,
        tip: u64,
    ) -> Result<bool, MemoryError>;
}

/// A store built from its configuration, for
/// [`Versioned::connect`](crate::raw::Versioned::connect).
#[async_trait]
pub trait Connect: VersionedStore + Sized {
    /// What the store is built from.
    type Config: Sync;

    /// Connects (and prepares the storage where the configuration asks), and returns the
    /// store with the settings its provider runs with.
    async fn connect(config: &Self::Config) -> Result<(Self, Settings), MemoryError>;
}
