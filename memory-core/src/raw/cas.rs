//! The `sync` of backends that keep a version counter per document and write with
//! compare-and-swap (PostgreSQL, Redis): read, compute with no lock held, write only if the
//! version is unchanged. A writer that lost that race reads again holding the documents, when
//! the store can hold them: other writers then wait their turn instead of racing, so many
//! writers do not collapse into retries. A hold lost too is retried with jittered backoff, a
//! bounded number of times.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use tokio::sync::{Mutex, MutexGuard};
use tokio::time::Instant;

use crate::{
    Backoff, Document, DocumentBatch, DocumentId, EventBus, IfMatch, MemoryContext, MemoryError,
    MemoryUpdate, Planned, Receipts, Retention, Revision, RevisionTip, SyncReport, Version,
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
    /// writers waited, so this loses (`Ok(Some(id))`) only if the hold itself was lost (it
    /// outlived its lock's expiry, or the store could not hold a document not yet written).
    async fn write(
        self: Box<Self>,
        writes: &[CasWrite<'_>],
    ) -> Result<Option<DocumentId>, MemoryError>;

    /// Lets the documents go unwritten: the call refused, replayed, or changed nothing.
    async fn release(self: Box<Self>);
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

    /// Writes every one of `writes` if each document is still at its expected version, and its
    /// history still ends just before the first of [`CasWrite::revisions`] (a purge restarts
    /// versions but not revision numbers, so this is what tells a write planned before one), as
    /// one atomic step. `Ok(None)` when they all landed; `Ok(Some(id))` naming a document
    /// another writer changed first, or whose lock another writer held past `lock_wait`, and
    /// then nothing was written.
    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        lock_wait: Duration,
    ) -> Result<Option<DocumentId>, MemoryError>;

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

/// How many queues [`CasWriter`] spreads documents over.
const LOCAL_QUEUES: usize = 64;
/// The first pause after a lost race; pauses double from here up to [`BACKOFF_CEILING`].
const BACKOFF_FIRST: Duration = Duration::from_millis(1);
/// The longest step between attempts (a pause is up to twice this).
const BACKOFF_CEILING: Duration = Duration::from_millis(32);
/// The deadline of one `sync` call unless set with [`CasWriter::with_deadline`].
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(10);
/// The longest deadline a call takes: longer than any call should wait, and short enough to
/// add to a clock without overflow. A longer one is cut to it.
pub const LONGEST_DEADLINE: Duration = Duration::from_secs(24 * 3600);
/// Kept free at the end of the deadline when waiting for a lock, so that a lock wait that runs
/// out is reported as contention before the deadline cuts the call off mid-write.
const DEADLINE_MARGIN: Duration = Duration::from_millis(250);

/// Runs `sync` over a [`CompareAndSwap`] store.
///
/// Writers in this process queue per document (striped, FIFO) instead of racing each other's
/// compare-and-swap, so only writers in other processes or hosts can make an attempt fail.
/// After a lost race the next attempt holds the documents ([`CompareAndSwap::hold`]) where
/// the store can, and so waits in the store's queue; lost attempts past that are retried with
/// jittered backoff up to `max_attempts`, then [`MemoryError::Contention`]. The whole call,
/// queueing included, ends within its deadline.
#[derive(Debug)]
pub struct CasWriter {
    local_queues: LocalQueues,
    views: Views,
    max_attempts: u32,
    deadline: Duration,
    /// How much history writes keep; none is recorded when it is off.
    retention: Retention,
}

/// The resolution of tokio's timers: a sleep ends up to this much after it was asked to.
const TIMER_TICK: Duration = Duration::from_millis(1);

/// Whether a pause of `pause` taken at `now` ends before `deadline`. Tokio's timers wake on
/// whole milliseconds, so the pause is counted rounded up by a tick: no sleep outlives the
/// call.
fn ends_before(now: Instant, pause: Duration, deadline: Instant) -> bool {
    now + pause + TIMER_TICK < deadline
}

/// How far a call got, for the error its deadline gives.
#[derive(Default)]
struct Progress {
    writing: AtomicBool,
    lost: AtomicU32,
    /// The document the last lost attempt lost on: what a deadline's Contention names.
    lost_on: std::sync::Mutex<Option<DocumentId>>,
}

impl CasWriter {
    /// A writer that makes at most `max_attempts` attempts per call (at least 1), within
    /// [`DEFAULT_DEADLINE`].
    pub fn new(max_attempts: u32) -> Self {
        CasWriter {
            local_queues: LocalQueues::default(),
            views: Views::default(),
            max_attempts: max_attempts.max(1),
            deadline: DEFAULT_DEADLINE,
            retention: Retention::default(),
        }
    }

    /// Sets how many attempts a call makes at most (at least 1).
    pub fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts.max(1);
        self
    }

    /// Sets how much of each document's history writes keep ([`CasWrite::retention`]);
    /// [`Retention::OFF`] records none, which spares computing revisions.
    pub fn with_retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Sets how long one call may take in all: waiting for its turn, reads, lock waits,
    /// backoff and writes. Past it the call fails with [`MemoryError::Contention`] (other
    /// writers held the document), [`MemoryError::Unavailable`] (no reply, nothing sent) or
    /// [`MemoryError::OutcomeUnknown`] (no reply to a write).
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline.min(LONGEST_DEADLINE);
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
                    let lost_on = progress
                        .lost_on
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .take();
                    MemoryError::Contention {
                        document: lost_on.unwrap_or(first),
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
        let mut backoff = Backoff::new(BACKOFF_FIRST, BACKOFF_CEILING);
        // Where other writers raced for one of the documents a moment ago, they most likely
        // still do: hold at once rather than lose a view and a read first.
        let mut mode = if self.views.contended(&ids) {
            Mode::Hold
        } else if store.checks_text() {
            Mode::View
        } else {
            Mode::Race
        };
        for attempt in 1u32.. {
            let my_turn = self.local_queues.turn(&ids).await;
            let lost_on = match self
                .attempt(store, batches, &ids, &mut mode, deadline, progress)
                .await?
            {
                Outcome::Landed(steps) => {
                    let report = SyncReport {
                        documents: steps
                            .into_iter()
                            .map(|step| match step.planned {
                                Planned::Replayed(report) => report,
                                Planned::Write(write) => {
                                    let after =
                                        step.version + u64::from(write.new_text().is_some());
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
                }
                Outcome::Lost(document) => document,
            };
            progress.lost.store(attempt, Ordering::SeqCst);
            *progress
                .lost_on
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(lost_on.clone());
            // The turn is not held while backing off: local writers of other documents in the
            // same queue go on meanwhile.
            drop(my_turn);
            // A stale view is followed at once by a read; a first lost race by an attempt that
            // holds: it waits in the store's queue, which is the backoff.
            let pause = match mode {
                Mode::View => {
                    mode = Mode::Race;
                    Duration::ZERO
                }
                Mode::Race => {
                    mode = Mode::Hold;
                    Duration::ZERO
                }
                Mode::Hold | Mode::RaceOnly => backoff.next_pause(),
            };
            if attempt < self.max_attempts && ends_before(Instant::now(), pause, deadline) {
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

    /// One attempt: read (holding the documents in [`Mode::Hold`]), plan every batch against
    /// that one snapshot, and write what changed. A refusal or a failed precondition is
    /// returned before anything is written.
    async fn attempt<S: CompareAndSwap + ?Sized>(
        &self,
        store: &S,
        batches: &[DocumentBatch],
        ids: &[DocumentId],
        mode: &mut Mode,
        deadline: Instant,
        progress: &Progress,
    ) -> Result<Outcome, MemoryError> {
        let keyed = batches.iter().any(|b| b.key().is_some());
        let lock_wait = || {
            deadline
                .saturating_duration_since(Instant::now())
                .saturating_sub(DEADLINE_MARGIN)
        };
        let held = match mode {
            Mode::Hold => store.hold(ids, keyed, lock_wait()).await?,
            Mode::View | Mode::Race | Mode::RaceOnly => None,
        };
        let fresh = |fetched: Vec<Fetched>| -> Vec<View> {
            let receipts_known = keyed;
            fetched
                .into_iter()
                .map(|fetched| View {
                    fetched,
                    receipts_known,
                })
                .collect()
        };
        let (views, turn, from_view) = match held {
            Some(Hold::Held(held)) => (fresh(held.fetched), Some(held.turn), false),
            Some(Hold::Busy(document)) => return Ok(Outcome::Lost(document)),
            None => {
                if *mode == Mode::Hold {
                    *mode = Mode::RaceOnly;
                }
                let kept = match mode {
                    Mode::View => self.views.all(ids, keyed),
                    _ => None,
                };
                match kept {
                    Some(views) => (views, None, true),
                    None => (fresh(store.fetch(ids, keyed).await?), None, false),
                }
            }
        };
        let steps = match self.plan(batches, views) {
            Ok(steps) => steps,
            Err(err) => {
                if let Some(turn) = turn {
                    turn.release().await;
                }
                return Err(err);
            }
        };
        let writes: Vec<CasWrite<'_>> = steps
            .iter()
            .filter_map(|step| match &step.planned {
                Planned::Write(write) => write.new_text().map(|text| CasWrite {
                    id: &write.before().id,
                    text,
                    expected: step.version,
                    expected_text: from_view.then_some(write.before().text.as_str()),
                    receipts: step.receipts.as_deref(),
                    revisions: &step.revisions,
                    retention: self.retention,
                }),
                Planned::Replayed(_) => None,
            })
            .collect();
        if writes.is_empty() {
            if let Some(turn) = turn {
                turn.release().await;
            }
            let replayed = |step: &Step| matches!(step.planned, Planned::Replayed(_));
            if steps.iter().any(replayed) {
                store.confirm_replay(ids).await?;
            }
            self.views.keep(&steps);
            return Ok(Outcome::Landed(steps));
        }
        // Until the outcome is known (the reply, or the read that checks for a lost one), a
        // deadline passing here leaves it unknown.
        progress.writing.store(true, Ordering::SeqCst);
        let written = match turn {
            Some(turn) => turn.write(&writes).await,
            None => store.compare_and_swap(&writes, lock_wait()).await,
        };
        let lost_on = match written {
            Ok(lost_on) => lost_on,
            // The reply was lost: if the write landed, one read shows it, and the call
            // succeeded. If that cannot be told, the caller must hear so: a retry here could
            // apply the updates twice.
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
        drop(writes);
        Ok(match lost_on {
            None => {
                self.views.keep(&steps);
                Outcome::Landed(steps)
            }
            Some(document) => {
                self.views.forget(ids);
                Outcome::Lost(document)
            }
        })
    }

    /// Each batch planned against its document as `fetched` (in the same order), with the
    /// receipts and revisions to store beside a write.
    fn plan(&self, batches: &[DocumentBatch], views: Vec<View>) -> Result<Vec<Step>, MemoryError> {
        batches
            .iter()
            .zip(views)
            .map(
                |(
                    batch,
                    View {
                        fetched,
                        receipts_known,
                    },
                )| {
                    let mut receipts =
                        Receipts::parse(&fetched.document.location, fetched.receipts.as_deref())?;
                    let receipts_before = fetched.receipts.clone();
                    let planned = batch.plan(fetched.document, &receipts)?;
                    let after = Version::new((fetched.version + 1).to_string());
                    // The receipt goes into the same compare-and-swap as the text it describes.
                    let receipts = match (&planned, batch.key()) {
                        (Planned::Write(write), Some(key)) if write.new_text().is_some() => {
                            receipts.record(key, &batch.fingerprint(), write.report(after.clone()));
                            Some(receipts.to_json())
                        }
                        _ => None,
                    };
                    let revisions = match (&planned, self.retention.is_on()) {
                        (Planned::Write(write), true) => {
                            write.revisions(&fetched.tip, after, SystemTime::now(), &self.retention)
                        }
                        _ => Vec::new(),
                    };
                    Ok(Step {
                        planned,
                        version: fetched.version,
                        receipts,
                        revisions,
                        tip: fetched.tip,
                        receipts_before,
                        receipts_known,
                    })
                },
            )
            .collect()
    }
}

/// How an attempt reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// From this writer's last view of the documents, without a read, where the store checks
    /// the text ([`CompareAndSwap::checks_text`]) and a view is kept: the first attempt.
    View,
    /// Reading without holding: the first attempt otherwise, which a writer alone always wins.
    Race,
    /// Holding the documents, after a lost race.
    Hold,
    /// Without holding, for good: the store cannot hold.
    RaceOnly,
}

/// How an attempt ended.
enum Outcome {
    /// Everything planned landed (or there was nothing to write).
    Landed(Vec<Step>),
    /// Another writer changed (or held) this document first; nothing was written.
    Lost(DocumentId),
}

/// One document's part of an attempt.
struct Step {
    planned: Planned,
    /// The version it was read at.
    version: u64,
    /// The receipts to store with the write.
    receipts: Option<String>,
    /// The revisions to record with the write.
    revisions: Vec<Revision>,
    /// Its history's tip, its receipts and whether they were read, as it was read.
    tip: RevisionTip,
    receipts_before: Option<String>,
    receipts_known: bool,
}

impl Step {
    /// The document as it is once this step landed: what the next write can be planned from.
    /// `None` for a replay, which read receipts only.
    fn view_after(&self) -> Option<(DocumentId, View)> {
        let Planned::Write(write) = &self.planned else {
            return None;
        };
        let before = write.before();
        let (document, version) = match write.new_text() {
            Some(text) => (
                Document {
                    id: before.id.clone(),
                    text: text.to_owned(),
                    version: Version::new((self.version + 1).to_string()),
                    location: before.location.clone(),
                    // Written now: no change since that anyone could have left unrecorded.
                    modified: None,
                },
                self.version + 1,
            ),
            None => (before.clone(), self.version),
        };
        let tip = self
            .revisions
            .last()
            .map_or_else(|| self.tip.clone(), RevisionTip::of);
        let view = View {
            fetched: Fetched {
                document,
                version,
                receipts: self
                    .receipts
                    .clone()
                    .or_else(|| self.receipts_before.clone()),
                tip,
            },
            receipts_known: self.receipts_known || self.receipts.is_some(),
        };
        Some((before.id.clone(), view))
    }
}

/// How many documents' views a writer keeps: past it they are dropped, and the next write of
/// each reads first.
const VIEWS_KEPT: usize = 256;

/// A document as this writer last read or wrote it.
#[derive(Debug, Clone)]
struct View {
    fetched: Fetched,
    /// Whether `fetched.receipts` are the stored ones (a read that did not ask leaves them
    /// unknown, and a keyed call must then read them).
    receipts_known: bool,
}

/// How long after a lost race a writer's calls on that document hold from their first attempt.
const CONTENDED_FOR: Duration = Duration::from_secs(1);

/// The views of one writer, by document, and when it last lost a race on each.
#[derive(Debug, Default)]
struct Views(std::sync::Mutex<Kept>);

#[derive(Debug, Default)]
struct Kept {
    views: HashMap<DocumentId, View>,
    lost: HashMap<DocumentId, Instant>,
}

impl Views {
    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The views of all `ids` in order, with their receipts if `keyed`; `None` if one is not
    /// kept.
    fn all(&self, ids: &[DocumentId], keyed: bool) -> Option<Vec<View>> {
        let kept = self.kept();
        ids.iter()
            .map(|id| {
                kept.views
                    .get(id)
                    .filter(|v| v.receipts_known || !keyed)
                    .cloned()
            })
            .collect()
    }

    /// Keeps the documents as `steps` left them.
    fn keep(&self, steps: &[Step]) {
        let mut kept = self.kept();
        for (id, view) in steps.iter().filter_map(Step::view_after) {
            if kept.views.len() >= VIEWS_KEPT && !kept.views.contains_key(&id) {
                kept.views.clear();
            }
            kept.views.insert(id, view);
        }
    }

    /// Drops the views of `ids` and notes the time: another writer changed or held one of them.
    fn forget(&self, ids: &[DocumentId]) {
        let mut kept = self.kept();
        let now = Instant::now();
        kept.lost
            .retain(|_, at| now.duration_since(*at) < CONTENDED_FOR);
        for id in ids {
            kept.views.remove(id);
            kept.lost.insert(id.clone(), now);
        }
    }

    /// Whether this writer lost a race on one of `ids` within [`CONTENDED_FOR`].
    fn contended(&self, ids: &[DocumentId]) -> bool {
        let kept = self.kept();
        ids.iter().any(|id| {
            kept.lost
                .get(id)
                .is_some_and(|at| at.elapsed() < CONTENDED_FOR)
        })
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
    use crate::{DocumentReport, PersonalityId, Store, UserId};

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
        async fn fetch(
            &self,
            ids: &[DocumentId],
            receipts: bool,
        ) -> Result<Vec<Fetched>, MemoryError> {
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
                        tip: crate::RevisionTip::empty(Version::new("0")),
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
                let (text, current, _) = documents.get(write.id).cloned().unwrap_or_default();
                let text_moved = write.expected_text.is_some_and(|expected| expected != text);
                if current != write.expected || text_moved {
                    return Ok(Some(write.id.clone()));
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

    #[tokio::test]
    async fn a_writer_alone_writes_from_its_view_without_reading() {
        let store = FlakyStore {
            checks_text: true,
            ..FlakyStore::default()
        };
        let writer = CasWriter::new(3);
        let events = EventBus::new();
        let add = |text: &str| [MemoryUpdate::add(Store::Memory, text)];
        for (i, text) in ["one", "two", "three"].into_iter().enumerate() {
            let report = writer
                .sync(&store, &events, &ctx(), &add(text), &IfMatch::NONE)
                .await
                .unwrap();
            assert_eq!(report.retries, 0);
            assert_eq!(
                report.documents[0].version_after,
                Version::new((i + 1).to_string())
            );
        }
        assert_eq!(
            store.fetches.load(Ordering::SeqCst),
            1,
            "only the first read"
        );
        let memory = store
            .read_by_fetch(&ctx().document(Store::Memory))
            .await
            .unwrap();
        assert_eq!(memory.text, "one\n\ntwo\n\nthree\n");

        // A store that does not check the text reads before every write.
        let store = FlakyStore::default();
        for text in ["one", "two"] {
            writer
                .sync(&store, &events, &ctx(), &add(text), &IfMatch::NONE)
                .await
                .unwrap();
        }
        assert_eq!(store.fetches.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_stale_view_costs_one_lost_attempt_and_loses_nothing() {
        let store = FlakyStore {
            checks_text: true,
            ..FlakyStore::default()
        };
        let writer = CasWriter::new(3);
        let events = EventBus::new();
        let memory = ctx().document(Store::Memory);
        writer
            .sync(
                &store,
                &events,
                &ctx(),
                &[MemoryUpdate::add(Store::Memory, "mine")],
                &IfMatch::NONE,
            )
            .await
            .unwrap();
        // Purged and written again elsewhere: the same version, another text.
        store
            .documents
            .lock()
            .unwrap()
            .insert(memory.clone(), ("theirs\n".to_owned(), 1, None));
        let report = writer
            .sync(
                &store,
                &events,
                &ctx(),
                &[MemoryUpdate::add(Store::Memory, "more")],
                &IfMatch::NONE,
            )
            .await
            .unwrap();
        assert_eq!(report.retries, 1, "the view lost, the read won");
        assert_eq!(report.documents[0].version_after, Version::new("2"));
        let text = store.read_by_fetch(&memory).await.unwrap().text;
        assert_eq!(
            text, "theirs\n\nmore\n",
            "planned from what the store holds"
        );
    }

    #[tokio::test]
    async fn a_keyed_call_reads_receipts_its_view_does_not_have() {
        let store = FlakyStore {
            checks_text: true,
            ..FlakyStore::default()
        };
        let writer = CasWriter::new(3);
        let events = EventBus::new();
        let add = [MemoryUpdate::add(Store::Memory, "x")];
        writer
            .sync(&store, &events, &ctx(), &add, &IfMatch::NONE)
            .await
            .unwrap();
        let keyed =
            |key: &str| ctx().with_idempotency_key(crate::IdempotencyKey::new(key).unwrap());
        // The view was left by a call without a key, which did not read the receipts.
        let first = writer
            .sync(&store, &events, &keyed("k1"), &add, &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!(
            store.fetches.load(Ordering::SeqCst),
            2,
            "read for the receipts"
        );
        // Now the view holds the receipts it wrote: a replay is answered from it.
        let again = writer
            .sync(&store, &events, &keyed("k1"), &add, &IfMatch::NONE)
            .await
            .unwrap();
        assert!(again.documents[0].replayed);
        assert_eq!(
            again.documents[0].version_after,
            first.documents[0].version_after
        );
        assert_eq!(store.fetches.load(Ordering::SeqCst), 2);
    }

    /// A [`FlakyStore`] that can hold documents: a held write cannot lose, unless `busy` says
    /// the next holds find the documents held by another writer.
    #[derive(Default)]
    struct HoldingStore {
        store: FlakyStore,
        holds: AtomicU32,
        busy: AtomicU32,
        released: AtomicU32,
        /// Written as another writer's text before the next hold reads.
        other_writer: StdMutex<Option<String>>,
    }

    struct TestTurn<'a>(&'a HoldingStore);

    #[async_trait]
    impl HeldTurn for TestTurn<'_> {
        async fn write(
            self: Box<Self>,
            writes: &[CasWrite<'_>],
        ) -> Result<Option<DocumentId>, MemoryError> {
            // Held: the races `lose` stands for cannot happen.
            let lose = self.0.store.lose.swap(0, Ordering::SeqCst);
            let result = self.0.store.compare_and_swap(writes, Duration::ZERO).await;
            self.0.store.lose.store(lose, Ordering::SeqCst);
            result
        }

        async fn release(self: Box<Self>) {
            self.0.released.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[async_trait]
    impl CompareAndSwap for HoldingStore {
        async fn fetch(
            &self,
            ids: &[DocumentId],
            receipts: bool,
        ) -> Result<Vec<Fetched>, MemoryError> {
            self.store.fetch(ids, receipts).await
        }

        async fn compare_and_swap(
            &self,
            writes: &[CasWrite<'_>],
            lock_wait: Duration,
        ) -> Result<Option<DocumentId>, MemoryError> {
            self.store.compare_and_swap(writes, lock_wait).await
        }

        async fn hold(
            &self,
            ids: &[DocumentId],
            receipts: bool,
            _lock_wait: Duration,
        ) -> Result<Option<Hold<'_>>, MemoryError> {
            self.holds.fetch_add(1, Ordering::SeqCst);
            let busy = self
                .busy
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            if busy {
                return Ok(Some(Hold::Busy(ids[0].clone())));
            }
            if let Some(text) = self.other_writer.lock().unwrap().take() {
                let mut documents = self.store.documents.lock().unwrap();
                let (_, version, receipts) = documents.get(&ids[0]).cloned().unwrap_or_default();
                documents.insert(ids[0].clone(), (text, version + 1, receipts));
            }
            Ok(Some(Hold::Held(Held {
                fetched: self.fetch(ids, receipts).await?,
                turn: Box::new(TestTurn(self)),
            })))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_lost_race_is_followed_at_once_by_a_held_attempt() {
        let store = HoldingStore::default();
        let writer = CasWriter::new(5);
        let add = [MemoryUpdate::add(Store::Memory, "queued")];
        // Every racing attempt would lose: only holding gets the write in.
        store.store.lose.store(u32::MAX, Ordering::SeqCst);
        let started = Instant::now();
        let report = writer
            .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!(
            started.elapsed(),
            Duration::ZERO,
            "no backoff before holding"
        );
        assert_eq!(report.retries, 1);
        assert_eq!(store.holds.load(Ordering::SeqCst), 1);
        assert_eq!(report.documents[0].version_after, Version::new("1"));

        // Held by another writer past the lock wait: backed off, then held again (from the
        // first attempt: the race was lost a moment ago).
        store.busy.store(2, Ordering::SeqCst);
        store.holds.store(0, Ordering::SeqCst);
        let report = writer
            .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!((report.retries, store.holds.load(Ordering::SeqCst)), (2, 3));
        assert!(started.elapsed() > Duration::ZERO, "busy holds back off");

        // Busy to the end: contention, nothing written.
        store.busy.store(u32::MAX, Ordering::SeqCst);
        let err = writer
            .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
            .await
            .unwrap_err();
        assert!(
            matches!(err, MemoryError::Contention { attempts: 5, .. }),
            "{err:?}"
        );
        let memory = store
            .store
            .read_by_fetch(&ctx().document(Store::Memory))
            .await
            .unwrap();
        assert_eq!(memory.version, Version::new("2"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_writer_that_just_lost_a_race_holds_from_its_next_first_attempt() {
        let store = HoldingStore::default();
        let writer = CasWriter::new(5);
        let events = EventBus::new();
        let add = [MemoryUpdate::add(Store::Memory, "x")];
        store.store.lose.store(1, Ordering::SeqCst);
        let report = writer
            .sync(&store, &events, &ctx(), &add, &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!((report.retries, store.holds.load(Ordering::SeqCst)), (1, 1));
        // Contended a moment ago: the next call holds at once, losing nothing first.
        store.store.lose.store(u32::MAX, Ordering::SeqCst);
        let report = writer
            .sync(&store, &events, &ctx(), &add, &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!((report.retries, store.holds.load(Ordering::SeqCst)), (0, 2));
        // A while later it races first again (and, every race lost, holds after one).
        tokio::time::advance(CONTENDED_FOR).await;
        let report = writer
            .sync(&store, &events, &ctx(), &add, &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!((report.retries, store.holds.load(Ordering::SeqCst)), (1, 3));
    }

    #[tokio::test]
    async fn a_held_attempt_that_writes_nothing_releases_its_hold() {
        let store = HoldingStore::default();
        let writer = CasWriter::new(3);
        store.store.lose.store(u32::MAX, Ordering::SeqCst);
        // Changes nothing: no write, and the hold is let go.
        let noop = [MemoryUpdate::remove(Store::Memory, "absent")];
        let report = writer
            .sync(&store, &EventBus::new(), &ctx(), &noop, &IfMatch::NONE)
            .await
            .unwrap();
        assert!(!report.documents[0].written);
        assert_eq!(
            store.holds.load(Ordering::SeqCst),
            0,
            "nothing to write, no race"
        );

        // Lost to another writer, whose text the held read then sees: the caller's if_match is
        // stale now, so the call is refused, nothing is written and the hold is let go.
        let add = [MemoryUpdate::add(Store::Memory, "x")];
        store.store.lose.store(1, Ordering::SeqCst);
        *store.other_writer.lock().unwrap() = Some("theirs\n".to_owned());
        let err = writer
            .sync(
                &store,
                &EventBus::new(),
                &ctx(),
                &add,
                &IfMatch::only(Store::Memory, Some(Version::new("0"))),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, MemoryError::Conflict { .. }), "{err:?}");
        assert_eq!(store.holds.load(Ordering::SeqCst), 1);
        assert_eq!(store.released.load(Ordering::SeqCst), 1);
        let memory = store
            .store
            .read_by_fetch(&ctx().document(Store::Memory))
            .await
            .unwrap();
        assert_eq!(
            (memory.text.as_str(), memory.version),
            ("theirs\n", Version::new("1"))
        );
    }

    #[test]
    fn a_pause_is_taken_only_when_it_ends_a_tick_before_the_deadline() {
        let now = Instant::now();
        let deadline = now + Duration::from_millis(10);
        assert!(ends_before(now, Duration::from_millis(8), deadline));
        // 9 ms and the tick reach the deadline: not before it.
        assert!(!ends_before(now, Duration::from_millis(9), deadline));
        assert!(!ends_before(now, Duration::from_millis(20), deadline));
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_ends_within_its_deadline() {
        let writer = CasWriter::new(64).with_deadline(Duration::from_secs(2));
        let add = [MemoryUpdate::add(Store::Memory, "x")];
        let started = Instant::now();
        let err = writer
            .sync(
                &ScriptedStore::new(stalled),
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
        // A pause that would end past the deadline is not taken: the call gives up before it.
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(matches!(err, MemoryError::Contention { .. }), "{err:?}");
    }

    fn ctx_of(user: &str) -> MemoryContext {
        MemoryContext::new(
            PersonalityId::new("ada").unwrap(),
            UserId::new(user).unwrap(),
        )
    }

    fn keyed(key: &str) -> MemoryContext {
        ctx().with_idempotency_key(crate::IdempotencyKey::new(key).unwrap())
    }

    #[test]
    fn attempts_are_bounded_as_asked_and_at_least_one() {
        assert_eq!(CasWriter::new(5).max_attempts(), 5);
        assert_eq!(CasWriter::new(0).max_attempts(), 1);
    }

    #[test]
    fn a_deadline_is_at_most_a_day() {
        let day = Duration::from_secs(24 * 3600);
        assert_eq!(CasWriter::new(1).deadline, DEFAULT_DEADLINE);
        let writer = CasWriter::new(1).with_deadline(Duration::MAX);
        assert_eq!(writer.deadline, day);
        let writer = CasWriter::new(1).with_deadline(Duration::from_secs(7));
        assert_eq!(writer.deadline, Duration::from_secs(7));
    }

    #[tokio::test]
    async fn a_keyed_write_stores_its_receipt_with_the_text() {
        let store = FlakyStore::default();
        let writer = CasWriter::new(1);
        let memory = ctx().document(Store::Memory);
        assert!(store.receipts_by_fetch(&memory).await.unwrap().is_empty());
        let add = [MemoryUpdate::add(Store::Memory, "x")];
        let report = writer
            .sync(&store, &EventBus::new(), &keyed("k1"), &add, &IfMatch::NONE)
            .await
            .unwrap();
        let receipts = store.receipts_by_fetch(&memory).await.unwrap();
        let batch = &plan_sync(&keyed("k1"), &add, &IfMatch::NONE).unwrap()[0];
        let key = crate::IdempotencyKey::new("k1").unwrap();
        let replayed = receipts
            .replay(&key, &batch.fingerprint(), &memory)
            .unwrap();
        assert_eq!(
            replayed.map(|r| r.version_after.clone()),
            Some(Version::new("1"))
        );
        assert_eq!(report.documents[0].version_after, Version::new("1"));
    }

    #[tokio::test]
    async fn writes_carry_their_revisions_when_history_is_on_and_none_when_off() {
        let store = FlakyStore::default();
        let add = [MemoryUpdate::add(Store::Memory, "x")];
        CasWriter::new(1)
            .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
            .await
            .unwrap();
        let revisions = std::mem::take(&mut *store.revisions.lock().unwrap());
        assert_eq!(revisions.len(), 1, "{revisions:?}");
        let revision = &revisions[0];
        assert_eq!(revision.number, 1);
        assert_eq!(revision.document, ctx().document(Store::Memory));
        assert_eq!(
            (&revision.version_before, &revision.version_after),
            (&Version::new("0"), &Version::new("1"))
        );
        // Revision 1 is no checkpoint: its change is its updates, and it carries no text.
        assert!(revision.is_change_only(), "{revision:?}");
        assert_eq!(revision.updates, add);
        assert_eq!(revision.bytes_after, 2);
        assert_eq!(revision.sha256_after, crate::raw::sha256_hex("x\n"));

        CasWriter::new(1)
            .with_retention(Retention::OFF)
            .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!(store.revisions.lock().unwrap().len(), 0, "history off");
        let memory = store.fetch(&[ctx().document(Store::Memory)], false).await;
        assert_eq!(memory.unwrap()[0].version, 2, "yet written");
    }

    #[tokio::test]
    async fn a_view_is_the_document_as_written_one_version_on() {
        let store = FlakyStore {
            checks_text: true,
            ..FlakyStore::default()
        };
        let writer = CasWriter::new(1);
        let events = EventBus::new();
        let add = |text: &str| [MemoryUpdate::add(Store::Memory, text)];
        writer
            .sync(&store, &events, &ctx(), &add("one"), &IfMatch::NONE)
            .await
            .unwrap();
        // Planned from the view: its version is the one written.
        let report = writer
            .sync(
                &store,
                &events,
                &ctx(),
                &add("two"),
                &IfMatch::only(Store::Memory, Some(Version::new("1"))),
            )
            .await
            .unwrap();
        assert_eq!(report.documents[0].version_before, Version::new("1"));
        assert_eq!(report.documents[0].version_after, Version::new("2"));
        assert_eq!(store.fetches.load(Ordering::SeqCst), 1, "from the view");
    }

    #[tokio::test]
    async fn a_keyed_call_that_changes_nothing_keeps_a_view_with_the_stored_receipts() {
        let store = FlakyStore {
            checks_text: true,
            ..FlakyStore::default()
        };
        let writer = CasWriter::new(1);
        let events = EventBus::new();
        writer
            .sync(
                &store,
                &events,
                &keyed("k1"),
                &[MemoryUpdate::add(Store::Memory, "x")],
                &IfMatch::NONE,
            )
            .await
            .unwrap();
        let noop = [MemoryUpdate::remove(Store::Memory, "absent")];
        let first = writer
            .sync(&store, &events, &keyed("k2"), &noop, &IfMatch::NONE)
            .await
            .unwrap();
        assert!(!first.documents[0].written);
        // The view still knows the receipts (a keyed call need not read them again), and holds
        // no receipt of the call that wrote nothing: the store holds none.
        let again = writer
            .sync(&store, &events, &keyed("k2"), &noop, &IfMatch::NONE)
            .await
            .unwrap();
        let fresh = CasWriter::new(1)
            .sync(&store, &events, &keyed("k2"), &noop, &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!(again, fresh, "the view answers as the store does");
        assert!(!again.documents[0].replayed);
        assert_eq!(
            store.fetches.load(Ordering::SeqCst),
            2,
            "one read each writer"
        );
        writer
            .sync(
                &store,
                &events,
                &keyed("k3"),
                &[MemoryUpdate::add(Store::Memory, "y")],
                &IfMatch::NONE,
            )
            .await
            .unwrap();
        assert_eq!(store.fetches.load(Ordering::SeqCst), 2, "receipts known");
    }

    #[tokio::test]
    async fn a_writer_keeps_at_most_views_kept_views() {
        let store = FlakyStore {
            checks_text: true,
            ..FlakyStore::default()
        };
        let writer = CasWriter::new(1);
        let events = EventBus::new();
        let add = [MemoryUpdate::add(Store::User, "x")];
        let kept = || writer.views.kept().views.len();
        for i in 0..VIEWS_KEPT {
            writer
                .sync(
                    &store,
                    &events,
                    &ctx_of(&format!("u{i}")),
                    &add,
                    &IfMatch::NONE,
                )
                .await
                .unwrap();
        }
        assert_eq!(kept(), VIEWS_KEPT);
        // Full: a document already kept is updated in place.
        writer
            .sync(&store, &events, &ctx_of("u0"), &add, &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!(kept(), VIEWS_KEPT);
        // Full: another one drops them all first.
        writer
            .sync(&store, &events, &ctx_of("another"), &add, &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!(kept(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn lost_races_are_remembered_for_contended_for_only() {
        let views = Views::default();
        let doc = |user: &str| ctx_of(user).document(Store::User);
        let lost = || {
            let mut ids: Vec<String> = views.kept().lost.keys().map(ToString::to_string).collect();
            ids.sort();
            ids
        };
        views.forget(&[doc("a")]);
        tokio::time::advance(CONTENDED_FOR / 2).await;
        views.forget(&[doc("b")]);
        assert_eq!(lost(), [doc("a").to_string(), doc("b").to_string()]);
        assert!(views.contended(&[doc("a")]));
        tokio::time::advance(CONTENDED_FOR / 2).await;
        views.forget(&[doc("c")]);
        assert_eq!(lost(), [doc("b").to_string(), doc("c").to_string()]);
        assert!(!views.contended(&[doc("a")]));
        assert!(views.contended(&[doc("b"), doc("z")]));
    }

    #[tokio::test]
    async fn a_lost_reply_is_not_a_success_when_another_text_shows() {
        let err = CasWriter::new(3)
            .sync(
                &ScriptedStore::new(overtaken),
                &EventBus::new(),
                &ctx(),
                &[MemoryUpdate::add(Store::Memory, "mine")],
                &IfMatch::NONE,
            )
            .await
            .unwrap_err();
        assert!(matches!(err, MemoryError::OutcomeUnknown { .. }), "{err:?}");
    }

    /// What a scripted compare-and-swap answers: `None` never answers, as behind a proxy that
    /// stopped forwarding.
    type CasAnswer = Option<Result<Option<DocumentId>, MemoryError>>;

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
        async fn fetch(
            &self,
            ids: &[DocumentId],
            receipts: bool,
        ) -> Result<Vec<Fetched>, MemoryError> {
            if self.silent_after_one_read && self.store.fetches.load(Ordering::SeqCst) > 0 {
                std::future::pending::<()>().await;
            }
            self.store.fetch(ids, receipts).await
        }

        async fn compare_and_swap(
            &self,
            writes: &[CasWrite<'_>],
            lock_wait: Duration,
        ) -> Result<Option<DocumentId>, MemoryError> {
            match (self.cas)(&self.store, writes, lock_wait) {
                Some(answer) => answer,
                None => std::future::pending().await,
            }
        }
    }

    /// Never answers, and is never given a lock wait past the 2 s deadline the tests set.
    fn stalled(_: &FlakyStore, _: &[CasWrite<'_>], lock_wait: Duration) -> CasAnswer {
        assert!(lock_wait < Duration::from_secs(2), "{lock_wait:?}");
        None
    }

    /// Another writer takes each document one version on, with its own text, and the reply is
    /// lost.
    fn overtaken(store: &FlakyStore, writes: &[CasWrite<'_>], _: Duration) -> CasAnswer {
        let mut documents = store.documents.lock().unwrap();
        for write in writes {
            documents.insert(
                write.id.clone(),
                ("theirs\n".to_owned(), write.expected + 1, None),
            );
        }
        Some(Err(MemoryError::unavailable("test", "connection reset")))
    }

    /// Every race is lost, on the call's last document.
    fn lost_on_the_last(_: &FlakyStore, writes: &[CasWrite<'_>], _: Duration) -> CasAnswer {
        Some(Ok(writes.last().map(|write| write.id.clone())))
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
        async fn fetch(
            &self,
            ids: &[DocumentId],
            receipts: bool,
        ) -> Result<Vec<Fetched>, MemoryError> {
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
        ) -> Result<Option<DocumentId>, MemoryError> {
            self.store.compare_and_swap(writes, lock_wait).await
        }
    }

    #[tokio::test]
    async fn writers_in_one_process_take_turns_instead_of_racing() {
        let store = SlowStore::default();
        let writer = CasWriter::new(3);
        let events = EventBus::new();
        let (one, two) = (
            [MemoryUpdate::add(Store::Memory, "one")],
            [MemoryUpdate::add(Store::Memory, "two")],
        );
        let ctx = ctx();
        let (one, two) = tokio::join!(
            writer.sync(&store, &events, &ctx, &one, &IfMatch::NONE),
            writer.sync(&store, &events, &ctx, &two, &IfMatch::NONE),
        );
        assert_eq!((one.unwrap().retries, two.unwrap().retries), (0, 0));
        assert_eq!(
            store.store.attempts.load(Ordering::SeqCst),
            2,
            "no race lost"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_document_does_not_hold_up_writers_of_others() {
        // Two documents in different local queues.
        let stalled = ctx().document(Store::Memory);
        let other = (0..)
            .take(LOCAL_QUEUES * 16)
            .map(|i| ctx_of(&format!("u{i}")).document(Store::User))
            .find(|id| queue_of(id) != queue_of(&stalled))
            .expect("documents spread over the local queues");
        let DocumentId::UserProfile { user } = &other else {
            unreachable!("a user document")
        };
        let other_ctx = ctx_of(user.as_str());
        let store = SlowStore {
            stalled: Some(stalled),
            ..SlowStore::default()
        };
        let writer = CasWriter::new(3);
        let events = EventBus::new();
        let started = Instant::now();
        let (ctx, add) = (ctx(), [MemoryUpdate::add(Store::Memory, "x")]);
        let stuck = writer.sync(&store, &events, &ctx, &add, &IfMatch::NONE);
        let free = async {
            tokio::task::yield_now().await;
            let report = writer
                .sync(
                    &store,
                    &events,
                    &other_ctx,
                    &[MemoryUpdate::add(Store::User, "y")],
                    &IfMatch::NONE,
                )
                .await;
            (report, started.elapsed())
        };
        let (stuck, (free, free_after)) = tokio::join!(stuck, free);
        assert!(free.is_ok(), "{free:?}");
        assert_eq!(
            free_after,
            Duration::ZERO,
            "not queued behind the stalled one"
        );
        let stuck = stuck.unwrap_err();
        assert!(
            matches!(stuck, MemoryError::Unavailable { .. }),
            "{stuck:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_after_lost_races_is_contention_before_any_unavailable() {
        let writer = CasWriter::new(64).with_deadline(Duration::from_secs(2));
        let add = [MemoryUpdate::add(Store::Memory, "x")];
        // Nothing lost, no reply: unavailable.
        let silent = SlowStore {
            stalled: Some(ctx().document(Store::Memory)),
            ..SlowStore::default()
        };
        let err = writer
            .sync(&silent, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
            .await
            .unwrap_err();
        assert!(matches!(err, MemoryError::Unavailable { .. }), "{err:?}");
        // One race lost, then no reply: contention, counting the lost attempt.
        let err = writer
            .sync(
                &ScriptedStore::new(lost_on_the_last).silent_after_one_read(),
                &EventBus::new(),
                &ctx(),
                &add,
                &IfMatch::NONE,
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&err, MemoryError::Contention { attempts: 1, document } if *document == ctx().document(Store::Memory)),
            "{err:?}"
        );
        // Of a call's two documents, the contention names the one the race was lost on.
        let both = [
            MemoryUpdate::add(Store::Memory, "x"),
            MemoryUpdate::add(Store::User, "y"),
        ];
        let err = writer
            .sync(
                &ScriptedStore::new(lost_on_the_last).silent_after_one_read(),
                &EventBus::new(),
                &ctx(),
                &both,
                &IfMatch::NONE,
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&err, MemoryError::Contention { attempts: 1, document } if *document == ctx().document(Store::User)),
            "{err:?}"
        );
    }
}
