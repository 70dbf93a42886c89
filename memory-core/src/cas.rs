//! The `sync` of backends that keep a version counter per document and write with
//! compare-and-swap (PostgreSQL, Redis): read, compute with no lock held, write only if the
//! version is unchanged, else read again, with jittered backoff, a bounded number of times.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{Mutex, MutexGuard};

use crate::{
    Backoff, Document, DocumentId, EventBus, IfMatch, MemoryContext, MemoryError, MemoryUpdate,
    Prefetch, Store, SyncReport, Version, plan_sync,
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

    /// [`crate::MemoryProvider::prefetch`] from one [`CompareAndSwap::fetch`] of both documents.
    async fn prefetch_by_fetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        let ids = [ctx.document(Store::Memory), ctx.document(Store::User)];
        let mut documents = self.fetch(&ids).await?.into_iter().map(|(doc, _)| doc);
        let mut next = || documents.next().expect("fetch returns one document per id");
        let (memory, user) = (next(), next());
        Ok(Prefetch::from_documents(ctx, &memory, &user))
    }

    /// [`crate::MemoryProvider::read`] by [`CompareAndSwap::fetch`].
    async fn read_by_fetch(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        let mut documents = self.fetch(std::slice::from_ref(document)).await?;
        Ok(documents.remove(0).0)
    }
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
    local_queues: LocalQueues,
    max_attempts: u32,
}

impl CasWriter {
    /// A writer that makes at most `max_attempts` attempts per call (at least 1).
    pub fn new(max_attempts: u32) -> Self {
        CasWriter {
            local_queues: LocalQueues::default(),
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
        let mut backoff = Backoff::new(BACKOFF_FIRST, BACKOFF_CEILING);
        let mut busy = first.clone();
        for attempt in 1..=self.max_attempts {
            let my_turn = self.local_queues.turn(&ids).await;
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
                match store.compare_and_swap(&writes).await {
                    Ok(lost_on) => lost_on,
                    // The reply was lost: if the write landed, one read shows it, and the call
                    // succeeded. If that cannot be told, the caller must hear the error: a
                    // retry here could apply the updates twice.
                    Err(err @ MemoryError::Unavailable { .. }) => {
                        if landed(store, &writes).await {
                            None
                        } else {
                            return Err(err);
                        }
                    }
                    Err(err) => return Err(err),
                }
            };
            let Some(lost_on) = lost_on else {
                let report = SyncReport {
                    documents: planned
                        .iter()
                        .map(|(write, version)| {
                            let after = version + u64::from(write.new_text().is_some());
                            write.report(Version::new(after.to_string()))
                        })
                        .collect(),
                    retries: attempt - 1,
                    ..SyncReport::default()
                };
                // Published in our turn, so events of one document come in write order.
                events.publish(&report);
                return Ok(report);
            };
            busy = lost_on;
            // The turn is not held while backing off: local writers of other documents in the
            // same queue go on meanwhile.
            drop(my_turn);
            if attempt < self.max_attempts {
                tokio::time::sleep(backoff.next_pause()).await;
            }
        }
        Err(MemoryError::Contention {
            document: busy,
            attempts: self.max_attempts,
        })
    }
}

/// Whether each of `writes` is what its document holds now, exactly one version on: then the
/// compare-and-swap whose reply was lost landed. (Another writer making that same step with the
/// same text would leave the same document, which is the outcome the caller asked for.)
async fn landed<S: CompareAndSwap + ?Sized>(store: &S, writes: &[CasWrite<'_>]) -> bool {
    let ids: Vec<DocumentId> = writes.iter().map(|write| write.id.clone()).collect();
    store.fetch(&ids).await.is_ok_and(|current| {
        current
            .iter()
            .zip(writes)
            .all(|((document, version), write)| {
                *version == write.expected + 1 && document.text == write.text
            })
    })
}

/// Per-document FIFO queues for the writers of one provider value, so that they take turns
/// instead of racing each other (for a compare-and-swap, or a polled file lock). Striped: 64
/// queues, shared by documents whose hashes collide.
#[derive(Debug)]
pub struct LocalQueues {
    queues: Vec<Mutex<()>>,
}

impl Default for LocalQueues {
    fn default() -> Self {
        LocalQueues {
            queues: (0..LOCAL_QUEUES).map(|_| Mutex::new(())).collect(),
        }
    }
}

impl LocalQueues {
    /// Waits for a turn on every queue `ids` map to, taken in index order so that two calls
    /// cannot each hold one the other needs. The turn lasts as long as the guards.
    pub async fn turn(&self, ids: &[DocumentId]) -> Vec<MutexGuard<'_, ()>> {
        let mut queues: Vec<usize> = ids.iter().map(queue_of).collect();
        queues.sort_unstable();
        queues.dedup();
        let mut turn = Vec::with_capacity(queues.len());
        for queue in queues {
            turn.push(self.queues[queue].lock().await);
        }
        turn
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
    use crate::{PersonalityId, UserId};

    /// An in-memory versioned store whose next `lose` compare-and-swaps fail, as if another
    /// host had written first.
    #[derive(Default)]
    struct FlakyStore {
        documents: StdMutex<BTreeMap<DocumentId, (String, u64)>>,
        lose: AtomicU32,
        attempts: AtomicU32,
        /// Reply `Unavailable` to the next compare-and-swap, after writing (true) or before.
        drop_reply: StdMutex<Option<bool>>,
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
                        modified: None,
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
            let drop_reply = self.drop_reply.lock().unwrap().take();
            let dropped = || MemoryError::unavailable("test", "connection reset");
            if drop_reply == Some(false) {
                return Err(dropped());
            }
            let mut documents = self.documents.lock().unwrap();
            for write in writes {
                let current = documents.get(write.id).map_or(0, |(_, v)| *v);
                assert_eq!(current, write.expected, "fetched under the same queue");
                documents.insert(write.id.clone(), (write.text.to_owned(), current + 1));
            }
            match drop_reply {
                Some(true) => Err(dropped()),
                _ => Ok(None),
            }
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
        assert_eq!(report.retries, 4, "the report counts the lost attempts");

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

    #[tokio::test]
    async fn a_lost_reply_is_a_success_only_if_the_write_shows() {
        let store = FlakyStore::default();
        let writer = CasWriter::new(3);
        let add = |text: &str| [MemoryUpdate::add(Store::Memory, text)];
        let events = EventBus::new();

        *store.drop_reply.lock().unwrap() = Some(true);
        let report = writer
            .sync(&store, &events, &ctx(), &add("landed"), &IfMatch::NONE)
            .await
            .expect("the write shows, so the call succeeded");
        assert_eq!(report.documents[0].version_after, Version::new("1"));

        *store.drop_reply.lock().unwrap() = Some(false);
        let err = writer
            .sync(&store, &events, &ctx(), &add("lost"), &IfMatch::NONE)
            .await
            .unwrap_err();
        assert!(matches!(err, MemoryError::Unavailable { .. }), "{err:?}");
        let (document, _) = store
            .fetch(&[ctx().document(Store::Memory)])
            .await
            .unwrap()
            .remove(0);
        assert_eq!(
            document.text, "landed\n",
            "no retry applied it behind the caller's back"
        );
    }
}
