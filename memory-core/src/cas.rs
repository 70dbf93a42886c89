//! The `sync` of backends that keep a version counter per document and write with
//! compare-and-swap (PostgreSQL, Redis): read, compute with no lock held, write only if the
//! version is unchanged, else read again, with jittered backoff, a bounded number of times.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use tokio::sync::{Mutex, MutexGuard};
use tokio::time::Instant;

use crate::{
    Backoff, Document, DocumentBatch, DocumentId, EventBus, IfMatch, MemoryContext, MemoryError,
    MemoryUpdate, Planned, Prefetch, Receipts, Revision, RevisionTip, Store, SyncReport, Version,
    plan_sync,
};

/// One document as [`CompareAndSwap::fetch`] read it.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The document; its `version` is the counter in decimal.
    pub document: Document,
    /// Its version counter: 0 for a document never written.
    pub version: u64,
    /// Its idempotency receipts as stored (see [`Receipts`]), when they were asked for; `None`
    /// when not asked for or never written.
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
    /// Its idempotency receipts to store with the text in the same step, or `None` to leave
    /// the stored ones as they are.
    pub receipts: Option<&'a str>,
    /// The revisions to record with the text in the same step, oldest first (an external one
    /// for an unrecorded hand edit, then the write's own; none when history is off). Their
    /// `time` is this process's clock: a store with a server records its own instead. The
    /// store prunes what its retention no longer keeps in the same step.
    pub revisions: &'a [Revision],
}

/// The two round trips a versioned backend provides; [`CasWriter::sync`] does the rest.
///
/// The store keeps each document's history beside it ([`crate::MemoryProvider::history`]):
/// `fetch` reads the newest revision's [`RevisionTip`] in its snapshot, `compare_and_swap`
/// records the [`CasWrite::revisions`] it is given, atomically with the text.
#[async_trait]
pub trait CompareAndSwap: Send + Sync {
    /// Reads `ids` as one consistent snapshot, in order, each with its version counter (0 and
    /// empty text for a document never written), and with its stored receipts if `receipts`.
    async fn fetch(&self, ids: &[DocumentId], receipts: bool) -> Result<Vec<Fetched>, MemoryError>;

    /// Writes every one of `writes` if each document is still at its expected version, as one
    /// atomic step. `Ok(None)` when they all landed; `Ok(Some(id))` naming a document another
    /// writer changed first, or whose lock another writer held past `lock_wait`, and then
    /// nothing was written.
    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        lock_wait: Duration,
    ) -> Result<Option<DocumentId>, MemoryError>;

    /// [`crate::MemoryProvider::prefetch`] from one [`CompareAndSwap::fetch`] of both documents.
    async fn prefetch_by_fetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        let ids = [ctx.document(Store::Memory), ctx.document(Store::User)];
        let mut documents = self.fetch(&ids, false).await?.into_iter();
        let mut next = || {
            documents
                .next()
                .expect("fetch returns one document per id")
                .document
        };
        let (memory, user) = (next(), next());
        Ok(Prefetch::from_documents(ctx, &memory, &user))
    }

    /// [`crate::MemoryProvider::receipts`] by [`CompareAndSwap::fetch`].
    async fn receipts_by_fetch(&self, document: &DocumentId) -> Result<Receipts, MemoryError> {
        let fetched = self.fetch(std::slice::from_ref(document), true).await?;
        let fetched = &fetched[0];
        Receipts::parse(&fetched.document.location, fetched.receipts.as_deref())
    }

    /// [`crate::MemoryProvider::read`] by [`CompareAndSwap::fetch`].
    async fn read_by_fetch(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        let mut documents = self.fetch(std::slice::from_ref(document), false).await?;
        Ok(documents.remove(0).document)
    }
}

/// How many queues [`CasWriter`] spreads documents over.
const LOCAL_QUEUES: usize = 64;
/// The first pause after a lost race; pauses double from here up to [`BACKOFF_CEILING`].
const BACKOFF_FIRST: Duration = Duration::from_millis(1);
/// The longest step between attempts (a pause is up to twice this).
const BACKOFF_CEILING: Duration = Duration::from_millis(32);
/// The deadline of one `sync` call unless set with [`CasWriter::with_deadline`].
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(10);
/// Kept free at the end of the deadline when waiting for a lock, so that a lock wait that runs
/// out is reported as contention before the deadline cuts the call off mid-write.
const DEADLINE_MARGIN: Duration = Duration::from_millis(250);

/// Runs `sync` over a [`CompareAndSwap`] store.
///
/// Writers in this process queue per document (striped, FIFO) instead of racing each other's
/// compare-and-swap, so only writers in other processes or hosts can make an attempt fail;
/// those are retried with jittered backoff up to `max_attempts`, then
/// [`MemoryError::Contention`]. The whole call, queueing included, ends within its deadline.
#[derive(Debug)]
pub struct CasWriter {
    local_queues: LocalQueues,
    max_attempts: u32,
    deadline: Duration,
    /// Whether writes record revisions (the store's retention keeps any).
    history: bool,
}

/// How far a call got, for the error its deadline gives.
#[derive(Default)]
struct Progress {
    writing: AtomicBool,
    lost: AtomicU32,
}

impl CasWriter {
    /// A writer that makes at most `max_attempts` attempts per call (at least 1), within
    /// [`DEFAULT_DEADLINE`].
    pub fn new(max_attempts: u32) -> Self {
        CasWriter {
            local_queues: LocalQueues::default(),
            max_attempts: max_attempts.max(1),
            deadline: DEFAULT_DEADLINE,
            history: true,
        }
    }

    /// Sets whether writes record revisions: off when the store's retention keeps none
    /// ([`crate::Retention::OFF`]), which spares computing them.
    pub fn with_history(mut self, history: bool) -> Self {
        self.history = history;
        self
    }

    /// Sets how long one call may take in all: waiting for its turn, reads, lock waits,
    /// backoff and writes. Past it the call fails with [`MemoryError::Contention`] (other
    /// writers held the document), [`MemoryError::Unavailable`] (no reply, nothing sent) or
    /// [`MemoryError::OutcomeUnknown`] (no reply to a write).
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        // Longer than any call should wait, and short enough to add to a clock without overflow.
        const LONGEST: Duration = Duration::from_secs(24 * 3600);
        self.deadline = deadline.min(LONGEST);
        self
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
        let Some(first) = batches.first().map(|b| b.document().clone()) else {
            return Ok(SyncReport::default());
        };
        let deadline = Instant::now() + self.deadline;
        let progress = Progress::default();
        let attempts = self.attempts(store, events, &batches, deadline, &progress);
        match tokio::time::timeout_at(deadline, attempts).await {
            Ok(result) => result,
            Err(_) => {
                let message = format!(
                    "no reply within the call's deadline of {} ms",
                    self.deadline.as_millis()
                );
                Err(if progress.writing.load(Ordering::SeqCst) {
                    MemoryError::OutcomeUnknown {
                        document: first,
                        message,
                        source: None,
                    }
                } else if progress.lost.load(Ordering::SeqCst) > 0 {
                    MemoryError::Contention {
                        document: first,
                        attempts: progress.lost.load(Ordering::SeqCst),
                    }
                } else {
                    MemoryError::Unavailable {
                        what: first.to_string(),
                        message,
                        source: None,
                    }
                })
            }
        }
    }

    async fn attempts<S: CompareAndSwap + ?Sized>(
        &self,
        store: &S,
        events: &EventBus,
        batches: &[DocumentBatch],
        deadline: Instant,
        progress: &Progress,
    ) -> Result<SyncReport, MemoryError> {
        let ids: Vec<DocumentId> = batches.iter().map(|b| b.document().clone()).collect();
        let keyed = batches.iter().any(|b| b.key().is_some());
        let mut backoff = Backoff::new(BACKOFF_FIRST, BACKOFF_CEILING);
        for attempt in 1u32.. {
            let my_turn = self.local_queues.turn(&ids).await;
            // Every batch is checked against one fresh snapshot before anything is written,
            // so a refusal or a failed precondition writes nothing.
            let mut steps = Vec::with_capacity(batches.len());
            for (batch, fetched) in batches.iter().zip(store.fetch(&ids, keyed).await?) {
                let mut receipts =
                    Receipts::parse(&fetched.document.location, fetched.receipts.as_deref())?;
                let planned = batch.plan(fetched.document, &receipts)?;
                // The receipt goes into the same compare-and-swap as the text it describes.
                let receipts = match (&planned, batch.key()) {
                    (Planned::Write(write), Some(key)) if write.new_text().is_some() => {
                        let after = Version::new((fetched.version + 1).to_string());
                        receipts.record(key, write.report(after));
                        Some(receipts.to_json())
                    }
                    _ => None,
                };
                let revisions = match (&planned, self.history) {
                    (Planned::Write(write), true) => {
                        let after = Version::new((fetched.version + 1).to_string());
                        write.revisions(&fetched.tip, after, SystemTime::now())
                    }
                    _ => Vec::new(),
                };
                steps.push((planned, fetched.version, receipts, revisions));
            }
            let writes: Vec<CasWrite<'_>> = steps
                .iter()
                .filter_map(|(planned, version, receipts, revisions)| match planned {
                    Planned::Write(write) => write.new_text().map(|text| CasWrite {
                        id: &write.before().id,
                        text,
                        expected: *version,
                        receipts: receipts.as_deref(),
                        revisions,
                    }),
                    Planned::Replayed(_) => None,
                })
                .collect();
            let lost_on = if writes.is_empty() {
                None
            } else {
                let lock_wait = deadline
                    .saturating_duration_since(Instant::now())
                    .saturating_sub(DEADLINE_MARGIN);
                // Until the outcome is known (the reply, or the read that checks for a lost
                // one), a deadline passing here leaves it unknown.
                progress.writing.store(true, Ordering::SeqCst);
                let lost_on = match store.compare_and_swap(&writes, lock_wait).await {
                    Ok(lost_on) => lost_on,
                    // The reply was lost: if the write landed, one read shows it, and the call
                    // succeeded. If that cannot be told, the caller must hear so: a retry here
                    // could apply the updates twice.
                    Err(MemoryError::Unavailable {
                        message, source, ..
                    }) => {
                        if landed(store, &writes).await {
                            None
                        } else {
                            return Err(MemoryError::OutcomeUnknown {
                                document: writes[0].id.clone(),
                                message,
                                source,
                            });
                        }
                    }
                    Err(err) => return Err(err),
                };
                progress.writing.store(false, Ordering::SeqCst);
                lost_on
            };
            let Some(lost_on) = lost_on else {
                let report = SyncReport {
                    documents: steps
                        .into_iter()
                        .map(|(planned, version, ..)| match planned {
                            Planned::Replayed(report) => report,
                            Planned::Write(write) => {
                                let after = version + u64::from(write.new_text().is_some());
                                write.report(Version::new(after.to_string()))
                            }
                        })
                        .collect(),
                    retries: attempt - 1,
                    ..SyncReport::default()
                };
                // Published in our turn, so events of one document come in write order.
                events.publish(&report);
                return Ok(report);
            };
            progress.lost.store(attempt, Ordering::SeqCst);
            // The turn is not held while backing off: local writers of other documents in the
            // same queue go on meanwhile.
            drop(my_turn);
            let pause = backoff.next_pause();
            if attempt < self.max_attempts && Instant::now() + pause < deadline {
                tokio::time::sleep(pause).await;
            } else {
                return Err(MemoryError::Contention {
                    document: lost_on,
                    attempts: attempt,
                });
            }
        }
        unreachable!("the attempts end only by returning")
    }
}

/// Whether each of `writes` is what its document holds now, exactly one version on: then the
/// compare-and-swap whose reply was lost landed. (Another writer making that same step with the
/// same text would leave the same document, which is the outcome the caller asked for.)
async fn landed<S: CompareAndSwap + ?Sized>(store: &S, writes: &[CasWrite<'_>]) -> bool {
    let ids: Vec<DocumentId> = writes.iter().map(|write| write.id.clone()).collect();
    store.fetch(&ids, false).await.is_ok_and(|current| {
        current.iter().zip(writes).all(|(fetched, write)| {
            fetched.version == write.expected + 1 && fetched.document.text == write.text
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
    use crate::{DocumentReport, PersonalityId, UserId};

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
    }

    #[async_trait]
    impl CompareAndSwap for FlakyStore {
        async fn fetch(
            &self,
            ids: &[DocumentId],
            receipts: bool,
        ) -> Result<Vec<Fetched>, MemoryError> {
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
                        tip: crate::RevisionTip::empty(Version::new("0")),
                    }
                })
                .collect())
        }

        async fn compare_and_swap(
            &self,
            writes: &[CasWrite<'_>],
            _lock_wait: Duration,
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
                let (_, current, receipts) = documents.get(write.id).cloned().unwrap_or_default();
                assert_eq!(current, write.expected, "fetched under the same queue");
                let receipts = write.receipts.map(str::to_owned).or(receipts);
                documents.insert(
                    write.id.clone(),
                    (write.text.to_owned(), current + 1, receipts),
                );
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
        let fetched = store
            .fetch(&[ctx().document(Store::Memory)], false)
            .await
            .unwrap()
            .remove(0);
        assert_eq!(
            (fetched.document.text.as_str(), fetched.version),
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
        assert!(matches!(err, MemoryError::OutcomeUnknown { .. }), "{err:?}");
        assert!(
            err.to_string().contains("may or may not have landed"),
            "{err}"
        );
        let memory = store
            .read_by_fetch(&ctx().document(Store::Memory))
            .await
            .unwrap();
        assert_eq!(
            memory.text, "landed\n",
            "no retry applied it behind the caller's back"
        );
    }

    #[tokio::test]
    async fn a_keyed_call_repeated_after_a_lost_reply_applies_once() {
        let store = FlakyStore::default();
        let writer = CasWriter::new(3);
        let events = EventBus::new();
        let keyed = ctx().with_idempotency_key(crate::IdempotencyKey::new("turn-1").unwrap());
        let add = [
            MemoryUpdate::add(Store::Memory, "once"),
            MemoryUpdate::add(Store::User, "also once"),
        ];

        // The write lands and its reply is lost; the caller repeats the call all the same.
        *store.drop_reply.lock().unwrap() = Some(true);
        let first = writer
            .sync(&store, &events, &keyed, &add, &IfMatch::NONE)
            .await;
        let first = match first {
            Ok(report) => report,
            Err(err) => panic!("the re-read shows the write: {err:?}"),
        };
        let mut seen = events.subscribe();
        let again = writer
            .sync(&store, &events, &keyed, &add, &IfMatch::NONE)
            .await
            .unwrap();
        assert!(again.documents.iter().all(|d| d.replayed));
        let as_first: Vec<_> = again
            .documents
            .iter()
            .map(|d| DocumentReport {
                replayed: false,
                ..d.clone()
            })
            .collect();
        assert_eq!(as_first, first.documents, "the first call's report");
        assert!(seen.try_recv().is_none(), "a replay announces nothing");
        for store_ in [Store::Memory, Store::User] {
            let (text, version, _) =
                store.documents.lock().unwrap()[&ctx().document(store_)].clone();
            assert_eq!(version, 1, "written once");
            assert_eq!(text.matches("once").count(), 1, "{text}");
        }

        // Another key is another call.
        let other = ctx().with_idempotency_key(crate::IdempotencyKey::new("turn-2").unwrap());
        let report = writer
            .sync(&store, &events, &other, &add[..1], &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!(report.documents[0].version_after, Version::new("2"));
    }

    /// A store whose compare-and-swap never answers, as behind a proxy that stopped forwarding.
    struct StalledStore(FlakyStore);

    #[async_trait]
    impl CompareAndSwap for StalledStore {
        async fn fetch(
            &self,
            ids: &[DocumentId],
            receipts: bool,
        ) -> Result<Vec<Fetched>, MemoryError> {
            self.0.fetch(ids, receipts).await
        }

        async fn compare_and_swap(
            &self,
            _writes: &[CasWrite<'_>],
            lock_wait: Duration,
        ) -> Result<Option<DocumentId>, MemoryError> {
            assert!(lock_wait < Duration::from_secs(2), "{lock_wait:?}");
            std::future::pending().await
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_ends_within_its_deadline() {
        let writer = CasWriter::new(64).with_deadline(Duration::from_secs(2));
        let add = [MemoryUpdate::add(Store::Memory, "x")];
        let started = Instant::now();
        let err = writer
            .sync(
                &StalledStore(FlakyStore::default()),
                &EventBus::new(),
                &ctx(),
                &add,
                &IfMatch::NONE,
            )
            .await
            .unwrap_err();
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        assert!(matches!(err, MemoryError::OutcomeUnknown { .. }), "{err:?}");

        // Lost races are retried only while the deadline allows, then reported as contention.
        let store = FlakyStore::default();
        store.lose.store(u32::MAX, Ordering::SeqCst);
        let started = Instant::now();
        let err = writer
            .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
            .await
            .unwrap_err();
        assert!(started.elapsed() <= Duration::from_secs(2));
        assert!(matches!(err, MemoryError::Contention { .. }), "{err:?}");
    }
}
