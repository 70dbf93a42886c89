//! What a store implements for the compare-and-swap writer: one snapshot read, one conditional
//! write, and a hold where the store can.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use crate::document::{Document, DocumentId};
use crate::error::MemoryError;
use crate::history::retention::Retention;
use crate::history::revision::{Revision, RevisionTip};

/// One document as [`CompareAndSwap::fetch`] read it.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The document; its `version` is the counter in decimal.
    pub document: Document,
    /// Its version counter: 0 for a document never written.
    pub version: u64,
    /// Its idempotency receipts as stored (see [`Receipts`](crate::raw::Receipts)), when they were
    /// asked for; `None` when not asked for or never written.
    pub receipts: Option<String>,
    /// Its newest recorded revision, read in the same snapshot ([`RevisionTip::empty`] at
    /// version `"0"` when none was ever recorded).
    pub tip: RevisionTip,
}

/// One document of a compare-and-swap: lands only if the document is still at `expected`,
/// and then is at `expected + 1`.
#[derive(Debug, Clone, Copy)]
pub struct CasWrite<'a> {
    /// The document.
    pub id: &'a DocumentId,
    /// Its new text.
    pub text: &'a str,
    /// The version it was read at: 0 for a document never written.
    pub expected: u64,
    /// `Some` when the write was planned from this writer's last view of the document instead
    /// of a fresh read ([`CompareAndSwap::checks_text`]): it then lands only where the document
    /// also still holds exactly this text. A version alone can repeat (a purged document
    /// starts again at 1) and an edit made outside agent-memory need not change it.
    pub expected_text: Option<&'a str>,
    /// Its idempotency receipts to store with the text in the same step, or `None` to leave
    /// the stored ones as they are.
    pub receipts: Option<&'a str>,
    /// The revisions to record with the text in the same step, oldest first (an external one
    /// for an unrecorded hand edit, then the write's own; none when history is off). Their
    /// `time` is this process's clock: a store with a server records its own instead. The
    /// store prunes what `retention` no longer keeps in the same step.
    pub revisions: &'a [Revision],
    /// How much of the document's history to keep once this write lands.
    pub retention: Retention,
}

/// What a [`CompareAndSwap::compare_and_swap`] came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swapped {
    /// Every write landed, as one step the store dated `at` by its clock: the `modified` a
    /// read now gives each written document, where the store tells it (`None`: it does not).
    Landed(Option<SystemTime>),
    /// Another writer changed this document first, or held its lock past the wait: nothing
    /// was written.
    Lost(DocumentId),
}

/// Documents a store holds for one writer, from its read to its write: see
/// [`CompareAndSwap::hold`].
pub struct Held<'a> {
    /// The documents as read while held, as [`CompareAndSwap::fetch`] gives them.
    pub fetched: Vec<Fetched>,
    /// The writer's turn: its write, or its release.
    pub turn: Box<dyn HeldTurn + 'a>,
}

/// What [`CompareAndSwap::hold`] got.
pub enum Hold<'a> {
    /// The documents, held.
    Held(Held<'a>),
    /// Another writer held this document past the lock wait: a lost race.
    Busy(DocumentId),
}

/// A writer's turn at documents the store holds for it ([`CompareAndSwap::hold`]). Dropped
/// unused, the store lets the documents go on its own (a rolled-back transaction, a lock that
/// expires), so a turn must not be held longer than a write takes.
#[async_trait]
pub trait HeldTurn: Send {
    /// [`CompareAndSwap::compare_and_swap`] on the held documents, then lets them go. Other
    /// writers waited, so this loses ([`Swapped::Lost`]) only if the hold itself was lost (it
    /// outlived its lock's expiry, or the store could not hold a document not yet written).
    async fn write(self: Box<Self>, writes: &[CasWrite<'_>]) -> Result<Swapped, MemoryError>;

    /// Lets the documents go unwritten: the call refused, replayed, or changed nothing.
    async fn release(self: Box<Self>);
}

/// The two round trips a versioned backend provides;
/// [`CasWriter::sync`](crate::raw::CasWriter::sync) does the rest.
///
/// The store keeps each document's history beside it ([`crate::MemoryProvider::history`]):
/// `fetch` reads the newest revision's [`RevisionTip`] in its snapshot, `compare_and_swap`
/// records the [`CasWrite::revisions`] it is given, atomically with the text.
#[async_trait]
pub trait CompareAndSwap: Send + Sync {
    /// Reads `ids` as one consistent snapshot, in order, each with its version counter (0 and
    /// empty text for a document never written), and with its stored receipts if `receipts`.
    async fn fetch(&self, ids: &[DocumentId], receipts: bool) -> Result<Vec<Fetched>, MemoryError>;

    /// Writes every one of `writes` if each document is still at its expected version, and its
    /// history still ends just before the first of [`CasWrite::revisions`] (a purge restarts
    /// versions but not revision numbers, so this is what tells a write planned before one), as
    /// one atomic step, dated once: [`Swapped::Landed`] when they all landed (with that time,
    /// which a store should tell: a writer keeps it in its views, and a scope's index dates
    /// the notes written with it by it); [`Swapped::Lost`] naming a document another writer
    /// changed first, or whose lock another writer held past `lock_wait`, and then nothing
    /// was written.
    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        lock_wait: Duration,
    ) -> Result<Swapped, MemoryError>;

    /// Whether [`CompareAndSwap::compare_and_swap`] (and a held write) honour
    /// [`CasWrite::expected_text`]. Then a writer plans its next write from its last view of a
    /// document (what it read or wrote last) and skips the read: a writer alone writes in one
    /// round trip, and a stale view costs one lost attempt. `false` (the default): every
    /// attempt reads first.
    fn checks_text(&self) -> bool {
        false
    }

    /// Called before a call that writes nothing because its receipts show it landed already
    /// (a replay) is acknowledged: makes sure what [`CompareAndSwap::fetch`] read of `ids` is
    /// as safe as a write this store acknowledges (a store that waits for replicas waits for
    /// them here too). The default: nothing to do.
    async fn confirm_replay(&self, _ids: &[DocumentId]) -> Result<(), MemoryError> {
        Ok(())
    }

    /// [`CompareAndSwap::fetch`], holding the documents for this writer until its turn writes or
    /// is released: other writers that hold or write them wait for the turn instead of racing
    /// it. A writer holds only after losing a race, so one alone pays nothing for it.
    /// `Ok(None)`: this store cannot hold (the default), and writers race.
    async fn hold(
        &self,
        _ids: &[DocumentId],
        _receipts: bool,
        _lock_wait: Duration,
    ) -> Result<Option<Hold<'_>>, MemoryError> {
        Ok(None)
    }
}
