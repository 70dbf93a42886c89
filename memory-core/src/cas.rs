//! The `sync` of backends that keep a version counter per document and write with
//! compare-and-swap (PostgreSQL, Redis): read, compute with no lock held, write only if the
//! version is unchanged, else read again, with jittered backoff, a bounded number of times.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Mutex;

use crate::{
    Backoff, Document, DocumentId, EventBus, IfMatch, MemoryContext, MemoryError, MemoryUpdate,
    SyncReport, Version, plan_sync,
};

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
}

/// The two round trips a versioned backend provides; [`CasWriter::sync`] does the rest.
#[async_trait]
pub trait CompareAndSwap: Send + Sync {
    /// Reads `ids` as one consistent snapshot, in order, each with its version counter (0 and
    /// empty text for a document never written). The document's `version` is the counter in
    /// decimal.
    async fn fetch(&self, ids: &[DocumentId]) -> Result<Vec<(Document, u64)>, MemoryError>;

    /// Writes every one of `writes` if each document is still at its expected version, as one
    /// atomic step. `Ok(None)` when they all landed; `Ok(Some(id))` naming a document another
    /// writer changed first, and then nothing was written.
    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
    ) -> Result<Option<DocumentId>, MemoryError>;
}

/// How many queues [`CasWriter`] spreads documents over.
const LOCAL_QUEUES: usize = 64;
/// The first pause after a lost race; pauses double from here up to [`BACKOFF_CEILING`].
const BACKOFF_FIRST: Duration = Duration::from_millis(1);
/// The longest step between attempts (a pause is up to twice this).
const BACKOFF_CEILING: Duration = Duration::from_millis(32);

/// Runs `sync` over a [`CompareAndSwap`] store.
///
/// Writers in this process queue per document (striped, FIFO) instead of racing each other's
/// compare-and-swap, so only writers in other processes or hosts can make an attempt fail;
/// those are retried with jittered backoff up to `max_attempts`, then
/// [`MemoryError::Contention`].
#[derive(Debug)]
pub struct CasWriter {
    local_queues: Vec<Mutex<()>>,
    max_attempts: u32,
}

impl CasWriter {
    /// A writer that makes at most `max_attempts` attempts per call (at least 1).
    pub fn new(max_attempts: u32) -> Self {
        CasWriter {
            local_queues: (0..LOCAL_QUEUES).map(|_| Mutex::new(())).collect(),
            max_attempts: max_attempts.max(1),
        }
    }

    /// The bound on attempts per call.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// [`crate::MemoryProvider::sync`] on `store`, publishing the events of what landed on
    /// `events`.
    pub async fn sync<S: CompareAndSwap + ?Sized>(
        &self,
        store: &S,
        events: &EventBus,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        let batches = plan_sync(ctx, updates, if_match)?;
        let ids: Vec<DocumentId> = batches.iter().map(|b| b.document().clone()).collect();
        let Some(first) = ids.first() else {
            return Ok(SyncReport::default());
        };
        // Queues are taken in index order, so two calls cannot each hold one the other needs.
        let mut queues: Vec<usize> = ids.iter().map(queue_of).collect();
        queues.sort_unstable();
        queues.dedup();
        let mut my_turn = Vec::with_capacity(queues.len());
        for queue in queues {
            my_turn.push(self.local_queues[queue].lock().await);
        }

        let mut backoff = Backoff::new(BACKOFF_FIRST, BACKOFF_CEILING);
        let mut busy = first.clone();
        for _ in 0..self.max_attempts {
            // Every batch is checked against one fresh snapshot before anything is written,
            // so a refusal or a failed precondition writes nothing.
            let planned = batches
                .iter()
                .zip(store.fetch(&ids).await?)
                .map(|(batch, (current, version))| Ok((batch.apply(current)?, version)))
                .collect::<Result<Vec<_>, MemoryError>>()?;
            let writes: Vec<CasWrite<'_>> = planned
                .iter()
                .filter_map(|(write, expected)| {
                    write.new_text().map(|text| CasWrite {
                        id: &write.before().id,
                        text,
                        expected: *expected,
                    })
                })
                .collect();
            let lost_on = if writes.is_empty() {
                None
            } else {
                store.compare_and_swap(&writes).await?
            };
            match lost_on {
                None => {
                    let report = SyncReport {
                        documents: planned
                            .iter()
                            .map(|(write, version)| {
                                let after = version + u64::from(write.new_text().is_some());
                                write.report(Version::new(after.to_string()))
                            })
                            .collect(),
                    };
                    // Published in our turn, so events of one document come in write order.
                    events.publish(&report);
                    return Ok(report);
                }
                Some(id) => busy = id,
            }
            tokio::time::sleep(backoff.next_pause()).await;
        }
        Err(MemoryError::Contention {
            document: busy,
            attempts: self.max_attempts,
        })
    }
}

fn queue_of(id: &DocumentId) -> usize {
    // A fixed-key hasher: the same document maps to the same queue for the process's life.
    (BuildHasherDefault::<DefaultHasher>::default().hash_one(id) % LOCAL_QUEUES as u64) as usize
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex as StdMutex;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::{PersonalityId, Store, UserId};

    /// An in-memory versioned store whose next `lose` compare-and-swaps fail, as if another
    /// host had written first.
    #[derive(Default)]
    struct FlakyStore {
        documents: StdMutex<BTreeMap<DocumentId, (String, u64)>>,
        lose: AtomicU32,
        attempts: AtomicU32,
    }

    #[async_trait]
    impl CompareAndSwap for FlakyStore {
        async fn fetch(&self, ids: &[DocumentId]) -> Result<Vec<(Document, u64)>, MemoryError> {
            let documents = self.documents.lock().unwrap();
            Ok(ids
                .iter()
                .map(|id| {
                    let (text, version) = documents.get(id).cloned().unwrap_or_default();
                    let document = Document {
                        id: id.clone(),
                        text,
                        version: Version::new(version.to_string()),
                        location: String::new(),
                    };
                    (document, version)
                })
                .collect())
        }

        async fn compare_and_swap(
            &self,
            writes: &[CasWrite<'_>],
        ) -> Result<Option<DocumentId>, MemoryError> {
            self.attempts.fetch_add(1, Ordering::SeqCst);
            let lost = self
                .lose
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            if lost {
                return Ok(Some(writes[0].id.clone()));
            }
            let mut documents = self.documents.lock().unwrap();
            for write in writes {
                let current = documents.get(write.id).map_or(0, |(_, v)| *v);
                assert_eq!(current, write.expected, "fetched under the same queue");
                documents.insert(write.id.clone(), (write.text.to_owned(), current + 1));
            }
            Ok(None)
        }
    }

    fn ctx() -> MemoryContext {
        MemoryContext::new(
            PersonalityId::new("ada").unwrap(),
            UserId::new("u1").unwrap(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn lost_races_are_retried_then_reported_as_contention() {
        let store = FlakyStore::default();
        let writer = CasWriter::new(5);
        let add = [MemoryUpdate::add(Store::Memory, "kept")];

        store.lose.store(4, Ordering::SeqCst);
        let report = writer
            .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!(
            store.attempts.load(Ordering::SeqCst),
            5,
            "four lost, the fifth lands"
        );
        assert_eq!(report.documents[0].version_after, Version::new("1"));

        store.lose.store(5, Ordering::SeqCst);
        store.attempts.store(0, Ordering::SeqCst);
        let err = writer
            .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, MemoryError::Contention { attempts: 5, document } if *document == ctx().document(Store::Memory)),
            "{err:?}"
        );
        assert_eq!(store.attempts.load(Ordering::SeqCst), 5);
        let (document, version) = store
            .fetch(&[ctx().document(Store::Memory)])
            .await
            .unwrap()
            .remove(0);
        assert_eq!(
            (document.text.as_str(), version),
            ("kept\n", 1),
            "nothing more landed"
        );
    }

    #[tokio::test]
    async fn a_call_that_changes_nothing_makes_no_write() {
        let store = FlakyStore::default();
        let writer = CasWriter::new(1);
        let noop = [MemoryUpdate::remove(Store::Memory, "absent")];
        let report = writer
            .sync(&store, &EventBus::new(), &ctx(), &noop, &IfMatch::NONE)
            .await
            .unwrap();
        assert!(!report.documents[0].written);
        assert_eq!(store.attempts.load(Ordering::SeqCst), 0);
    }
}
