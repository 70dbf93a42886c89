//! The compare-and-swap writer against in-memory stores that lose races, drop replies, hold
//! documents or stall, as a store's server or network may.

mod deadlines;
mod holds;
mod queues;
mod races;
mod records;
mod replies;
mod views;

use std::collections::BTreeMap;
use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use crate::context::MemoryContext;
use crate::document::{Document, DocumentId, Store, Version};
use crate::error::MemoryError;
use crate::history::retention::Retention;
use crate::history::revision::{Revision, RevisionTip};
use crate::id::{PersonalityId, UserId};
use crate::idempotency::key::IdempotencyKey;
use crate::idempotency::receipts::Receipts;
use crate::raw::cas::queues::{LOCAL_QUEUES, queue_of};
use crate::raw::cas::store::{CasWrite, CompareAndSwap, Fetched, Held, HeldTurn, Hold, Swapped};
use crate::raw::cas::views::{CONTENDED_FOR, VIEWS_KEPT, Views};
use crate::raw::cas::writer::{CasWriter, DEFAULT_DEADLINE, ends_before};
use crate::raw::events::EventBus;
use crate::raw::plan::plan_sync;
use crate::report::{DocumentReport, IfMatch};
use crate::sha256::sha256_hex;
use crate::update::MemoryUpdate;

/// A document's text, version and receipts.
type Stored = (String, u64, Option<String>);

/// An in-memory versioned store whose next `lose` compare-and-swaps fail, as if another
/// host had written first.
#[derive(Default)]
struct FlakyStore {
    documents: StdMutex<BTreeMap<DocumentId, Stored>>,
    lose: AtomicU32,
    attempts: AtomicU32,
    /// Reply `Unavailable` to the next compare-and-swap, after writing (true) or before.
    drop_reply: StdMutex<Option<bool>>,
    /// Whether it honours `expected_text` (and so gets writes planned from views).
    checks_text: bool,
    fetches: AtomicU32,
    /// The revisions of every write that landed, in order.
    revisions: StdMutex<Vec<Revision>>,
}

impl FlakyStore {
    /// One document as it is now.
    async fn read_by_fetch(&self, id: &DocumentId) -> Result<Document, MemoryError> {
        Ok(self
            .fetch(std::slice::from_ref(id), false)
            .await?
            .remove(0)
            .document)
    }

    /// One document's stored receipts.
    async fn receipts_by_fetch(&self, id: &DocumentId) -> Result<Receipts, MemoryError> {
        let fetched = self.fetch(std::slice::from_ref(id), true).await?.remove(0);
        Receipts::parse("test", fetched.receipts.as_deref())
    }
}

#[async_trait]
impl CompareAndSwap for FlakyStore {
    async fn fetch(&self, ids: &[DocumentId], receipts: bool) -> Result<Vec<Fetched>, MemoryError> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        let documents = self.documents.lock().unwrap();
        Ok(ids
            .iter()
            .map(|id| {
                let (text, version, stored) = documents.get(id).cloned().unwrap_or_default();
                let document = Document {
                    id: id.clone(),
                    text,
                    version: Version::new(version.to_string()),
                    location: String::new(),
                    modified: None,
                };
                Fetched {
                    document,
                    version,
                    receipts: stored.filter(|_| receipts),
                    tip: RevisionTip::empty(Version::new("0")),
                }
            })
            .collect())
    }

    fn checks_text(&self) -> bool {
        self.checks_text
    }

    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        _lock_wait: Duration,
    ) -> Result<Swapped, MemoryError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let lost = self
            .lose
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if lost {
            return Ok(Swapped::Lost(writes[0].id.clone()));
        }
        let drop_reply = self.drop_reply.lock().unwrap().take();
        let dropped = || MemoryError::unavailable("test", "connection reset");
        if drop_reply == Some(false) {
            return Err(dropped());
        }
        let mut documents = self.documents.lock().unwrap();
        for write in writes {
            let (text, current, _) = documents.get(write.id).cloned().unwrap_or_default();
            let text_moved = write.expected_text.is_some_and(|expected| expected != text);
            if current != write.expected || text_moved {
                return Ok(Swapped::Lost(write.id.clone()));
            }
        }
        for write in writes {
            let (_, current, receipts) = documents.get(write.id).cloned().unwrap_or_default();
            let receipts = write.receipts.map(str::to_owned).or(receipts);
            documents.insert(
                write.id.clone(),
                (write.text.to_owned(), current + 1, receipts),
            );
            self.revisions
                .lock()
                .unwrap()
                .extend_from_slice(write.revisions);
        }
        match drop_reply {
            Some(true) => Err(dropped()),
            _ => Ok(Swapped::Landed(None)),
        }
    }
}

fn ctx() -> MemoryContext {
    MemoryContext::new(
        PersonalityId::new("ada").unwrap(),
        UserId::new("u1").unwrap(),
    )
}

fn ctx_of(user: &str) -> MemoryContext {
    MemoryContext::new(
        PersonalityId::new("ada").unwrap(),
        UserId::new(user).unwrap(),
    )
}

fn keyed(key: &str) -> MemoryContext {
    ctx().with_idempotency_key(IdempotencyKey::new(key).unwrap())
}

/// What a scripted compare-and-swap answers: `None` never answers, as behind a proxy that
/// stopped forwarding.
type CasAnswer = Option<Result<Swapped, MemoryError>>;

/// A [`FlakyStore`] whose compare-and-swap a test scripts, and whose reads may fall silent.
struct ScriptedStore {
    store: FlakyStore,
    cas: fn(&FlakyStore, &[CasWrite<'_>], Duration) -> CasAnswer,
    /// Reads after the first never answer.
    silent_after_one_read: bool,
}

impl ScriptedStore {
    fn new(cas: fn(&FlakyStore, &[CasWrite<'_>], Duration) -> CasAnswer) -> Self {
        ScriptedStore {
            store: FlakyStore::default(),
            cas,
            silent_after_one_read: false,
        }
    }

    fn silent_after_one_read(mut self) -> Self {
        self.silent_after_one_read = true;
        self
    }
}

#[async_trait]
impl CompareAndSwap for ScriptedStore {
    async fn fetch(&self, ids: &[DocumentId], receipts: bool) -> Result<Vec<Fetched>, MemoryError> {
        if self.silent_after_one_read && self.store.fetches.load(Ordering::SeqCst) > 0 {
            std::future::pending::<()>().await;
        }
        self.store.fetch(ids, receipts).await
    }

    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        lock_wait: Duration,
    ) -> Result<Swapped, MemoryError> {
        match (self.cas)(&self.store, writes, lock_wait) {
            Some(answer) => answer,
            None => std::future::pending().await,
        }
    }
}

/// A store whose reads answer with what they read only after letting other tasks run (so
/// writers not taking turns would race), and whose reads of `stalled` never answer.
#[derive(Default)]
struct SlowStore {
    store: FlakyStore,
    stalled: Option<DocumentId>,
}

#[async_trait]
impl CompareAndSwap for SlowStore {
    async fn fetch(&self, ids: &[DocumentId], receipts: bool) -> Result<Vec<Fetched>, MemoryError> {
        if self.stalled.as_ref().is_some_and(|s| ids.contains(s)) {
            std::future::pending::<()>().await;
        }
        let fetched = self.store.fetch(ids, receipts).await;
        // Lets another writer run between this read and the write that follows.
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        fetched
    }

    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        lock_wait: Duration,
    ) -> Result<Swapped, MemoryError> {
        self.store.compare_and_swap(writes, lock_wait).await
    }
}
