//! The retry engine: [`CasWriter::sync`] plans a call against a snapshot, writes it with one
//! compare-and-swap, and after a lost race holds the documents or backs off, within the
//! call's deadline.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::context::MemoryContext;
use crate::document::{DocumentId, NoteScope, Version};
use crate::error::MemoryError;
use crate::history::retention::Retention;
use crate::idempotency::receipts::Receipts;
use crate::note::path::NotePath;
use crate::raw::backoff::Backoff;
use crate::raw::cas::queues::LocalQueues;
use crate::raw::cas::store::{CasWrite, CompareAndSwap, Fetched, Hold, Swapped};
use crate::raw::cas::views::{Step, View, Views};
use crate::raw::events::EventBus;
use crate::raw::notes::{Indexed, index_text, parse_index};
use crate::raw::plan::{DocumentBatch, Planned, PlannedWrite, check_scopes, plan_sync};
use crate::report::{IfMatch, SyncReport};
use crate::update::MemoryUpdate;

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
    pub(super) views: Views,
    max_attempts: u32,
    pub(super) deadline: Duration,
    /// How much history writes keep; none is recorded when it is off.
    retention: Retention,
}

/// The resolution of tokio's timers: a sleep ends up to this much after it was asked to.
const TIMER_TICK: Duration = Duration::from_millis(1);

/// Whether a pause of `pause` taken at `now` ends before `deadline`. Tokio's timers wake on
/// whole milliseconds, so the pause is counted rounded up by a tick: no sleep outlives the
/// call.
pub(super) fn ends_before(now: Instant, pause: Duration, deadline: Instant) -> bool {
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

    /// Takes the note `note` out of its scope's index, after a purge erased it: its path must
    /// not outlive it. Retried like a write when another writer of the scope wins a race.
    ///
    /// # Errors
    /// What `store` fails with, or [`MemoryError::Contention`] past the attempts.
    pub async fn unlist<S: CompareAndSwap + ?Sized>(
        &self,
        store: &S,
        note: &DocumentId,
    ) -> Result<(), MemoryError> {
        let Some(path) = note.note_path() else {
            return Ok(());
        };
        let ids = [note.scope().index()];
        let mut backoff = Backoff::new(BACKOFF_FIRST, BACKOFF_CEILING);
        for attempt in 1..=self.max_attempts {
            let _my_turn = self.local_queues.turn(&ids).await;
            let fetched = store.fetch(&ids, false).await?;
            let Some(index) = fetched.into_iter().next() else {
                return Ok(());
            };
            let mut listed = parse_index(&index.document)?;
            if !listed.iter().any(|note| note.path == *path) {
                return Ok(());
            }
            listed.retain(|note| note.path != *path);
            let text = index_text(&listed);
            let write = CasWrite {
                id: &ids[0],
                text: &text,
                expected: index.version,
                expected_text: None,
                receipts: None,
                revisions: &[],
                retention: self.retention,
            };
            self.views.forget(&ids);
            let swapped = store.compare_and_swap(&[write], DEFAULT_DEADLINE).await?;
            if matches!(swapped, Swapped::Landed(_)) {
                return Ok(());
            }
            if attempt < self.max_attempts {
                tokio::time::sleep(backoff.next_pause()).await;
            }
        }
        Err(MemoryError::Contention {
            document: note.scope().document(),
            attempts: self.max_attempts,
        })
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
        // The index of each scope whose notes the call writes is read and written in the same
        // compare-and-swap as the notes: writers of one scope's notes take turns on it, and the
        // scope's rules are checked against the listing it holds (see `plan`).
        let scopes: BTreeSet<NoteScope> = batches
            .iter()
            .filter(|batch| batch.document().note_path().is_some())
            .map(|batch| batch.document().scope())
            .collect();
        let scopes: Vec<NoteScope> = scopes.into_iter().collect();
        let ids: Vec<DocumentId> = batches
            .iter()
            .map(|b| b.document().clone())
            .chain(scopes.iter().map(NoteScope::index))
            .collect();
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
                .attempt(store, batches, &scopes, &ids, &mut mode, deadline, progress)
                .await?
            {
                Outcome::Landed(steps) => {
                    let report = SyncReport {
                        documents: steps
                            .into_iter()
                            .take(batches.len())
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
                // Another writer of the scope's notes: the scope is what was contended.
                Outcome::Lost(document) if document.is_scope_index() => document.scope().document(),
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
    #[allow(clippy::too_many_arguments)]
    async fn attempt<S: CompareAndSwap + ?Sized>(
        &self,
        store: &S,
        batches: &[DocumentBatch],
        scopes: &[NoteScope],
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
        let steps = match self.plan(batches, scopes, views) {
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
                    // A scope's index is ours alone and never purged: no hand edit to catch,
                    // a version that never repeats, and on a scope of many notes a text that
                    // would be most of what the write sends.
                    expected_text: (from_view && !write.before().id.is_scope_index())
                        .then_some(write.before().text.as_str()),
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
            self.views.keep(&steps, None);
            return Ok(Outcome::Landed(steps));
        }
        // Until the outcome is known (the reply, or the read that checks for a lost one), a
        // deadline passing here leaves it unknown.
        progress.writing.store(true, Ordering::SeqCst);
        let written = match turn {
            Some(turn) => turn.write(&writes).await,
            None => store.compare_and_swap(&writes, lock_wait()).await,
        };
        let swapped = match written {
            Ok(swapped) => swapped,
            // The reply was lost: if the write landed, one read shows it, and the call
            // succeeded. If that cannot be told, the caller must hear so: a retry here could
            // apply the updates twice.
            Err(MemoryError::Unavailable {
                message, source, ..
            }) => match landed(store, &writes).await {
                Some(at) => Swapped::Landed(at),
                None => {
                    return Err(MemoryError::OutcomeUnknown {
                        document: writes[0].id.clone(),
                        message,
                        source,
                    });
                }
            },
            Err(err) => return Err(err),
        };
        progress.writing.store(false, Ordering::SeqCst);
        drop(writes);
        Ok(match swapped {
            Swapped::Landed(at) => {
                self.views.keep(&steps, at);
                Outcome::Landed(steps)
            }
            Swapped::Lost(document) => {
                self.views.forget(ids);
                Outcome::Lost(document)
            }
        })
    }

    /// Each batch planned against its document as `fetched` (in the same order), with the
    /// receipts and revisions to store beside a write; then the index of each of `scopes`
    /// (their views follow the batches'), checked and rewritten for the notes written.
    fn plan(
        &self,
        batches: &[DocumentBatch],
        scopes: &[NoteScope],
        mut views: Vec<View>,
    ) -> Result<Vec<Step>, MemoryError> {
        let index_views = views.split_off(batches.len().min(views.len()));
        let mut planned = Vec::with_capacity(batches.len());
        let mut read = Vec::with_capacity(batches.len());
        for (batch, view) in batches.iter().zip(views) {
            let View {
                fetched,
                receipts_known,
            } = view;
            let receipts =
                Receipts::parse(&fetched.document.location, fetched.receipts.as_deref())?;
            planned.push(batch.plan(fetched.document, &receipts, &planned)?);
            read.push((
                receipts,
                fetched.version,
                fetched.receipts,
                fetched.tip,
                receipts_known,
            ));
        }
        let mut listed = BTreeMap::new();
        for (scope, view) in scopes.iter().zip(&index_views) {
            listed.insert(scope.clone(), parse_index(&view.fetched.document)?);
        }
        let after = check_scopes(&mut planned, |scope| {
            Ok(listed.get(scope).map_or_else(Vec::new, |notes| {
                notes
                    .iter()
                    .map(|note| (note.path.clone(), note.bytes))
                    .collect()
            }))
        })?;
        // The notes this call changes, as the index lists them once it lands.
        let mut written: BTreeMap<DocumentId, Indexed> = BTreeMap::new();
        for (planned, (_, version, ..)) in planned.iter().zip(&read) {
            if let Planned::Write(write) = planned
                && let Some(path) = write.before().id.note_path()
                && let Some(text) = write.new_text()
            {
                let indexed = Indexed::written(path.clone(), text, version + 1);
                written.insert(write.before().id.clone(), indexed);
            }
        }
        let indexes = scopes.iter().zip(index_views).map(|(scope, view)| {
            let text = after.get(scope).map_or_else(
                || view.fetched.document.text.clone(),
                |notes| {
                    let mut kept: BTreeMap<NotePath, Indexed> = listed
                        .remove(scope)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|note| (note.path.clone(), note))
                        .collect();
                    let notes: Vec<Indexed> = notes
                        .iter()
                        .map(|(path, bytes)| {
                            written
                                .remove(&scope.note(path.clone()))
                                .or_else(|| kept.remove(path))
                                .unwrap_or_else(|| Indexed {
                                    path: path.clone(),
                                    bytes: *bytes,
                                    listed: None,
                                })
                        })
                        .collect();
                    index_text(&notes)
                },
            );
            Step {
                planned: Planned::Write(PlannedWrite::scope_index(view.fetched.document, text)),
                version: view.fetched.version,
                receipts: None,
                revisions: Vec::new(),
                tip: view.fetched.tip,
                receipts_before: view.fetched.receipts,
                receipts_known: view.receipts_known,
            }
        });
        let steps = batches.iter().zip(planned).zip(read);
        Ok(steps
            .map(
                |(
                    (batch, planned),
                    (mut receipts, version, receipts_before, tip, receipts_known),
                )| {
                    let after = Version::new((version + 1).to_string());
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
                            write.revisions(&tip, after, SystemTime::now(), &self.retention)
                        }
                        _ => Vec::new(),
                    };
                    Step {
                        planned,
                        version,
                        receipts,
                        revisions,
                        tip,
                        receipts_before,
                        receipts_known,
                    }
                },
            )
            .chain(indexes)
            .collect())
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

/// Whether each of `writes` is what its document holds now, exactly one version on: then the
/// compare-and-swap whose reply was lost landed (`Some`, with the time the store dated it).
/// (Another writer making that same step with the same text would leave the same document,
/// which is the outcome the caller asked for.)
async fn landed<S: CompareAndSwap + ?Sized>(
    store: &S,
    writes: &[CasWrite<'_>],
) -> Option<Option<SystemTime>> {
    let ids: Vec<DocumentId> = writes.iter().map(|write| write.id.clone()).collect();
    let current = store.fetch(&ids, false).await.ok()?;
    let all = current.iter().zip(writes).all(|(fetched, write)| {
        fetched.version == write.expected + 1 && fetched.document.text == write.text
    });
    all.then(|| {
        current
            .first()
            .and_then(|fetched| fetched.document.modified)
    })
}
