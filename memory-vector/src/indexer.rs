//! The background indexer: what keeps the index in line with its source. A write schedules a
//! catch-up of its document; a query waits for one up to its time budget; every index write
//! holds this process's turn and the lock shared with other processes; and housekeeping
//! compacts the table once writes have piled up versions.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use memory_core::{Document, DocumentId, MemoryError, MemoryProvider};

use crate::config::RecallConfig;
use crate::coverage::{self, Coverage, Mark};
use crate::embed::Embedder;
use crate::entries::Entry;
use crate::index::EntryTable;
use crate::parsed::ParsedCache;

/// Table versions written (by any process sharing the index) between two housekeepings:
/// every write leaves a version and small files behind, and reads slow down with their number.
const VERSIONS_BETWEEN_HOUSEKEEPING: u64 = 16;

/// Entries embedded and written per table version by a catch-up: one cut short (a process
/// exiting, a crash) keeps what it wrote, and the next one embeds only the rest.
const ENTRIES_PER_WRITE: usize = 256;

/// Background failures kept for [`VectorProvider::settle`]; older ones are dropped.
///
/// [`VectorProvider::settle`]: crate::VectorProvider::settle
const FAILURES_KEPT: usize = 16;

/// What catching up needs, shared with the tasks that do it in the background.
pub(crate) struct Indexer {
    pub source: Arc<dyn MemoryProvider>,
    pub table: EntryTable,
    pub coverage: Coverage,
    pub embedder: Arc<Embedder>,
    pub recall: RecallConfig,
    /// This process's index writes, one at a time (other processes wait on the index lock).
    updating: tokio::sync::Mutex<()>,
    /// Documents with a background catch-up that has not started yet: a write while one waits
    /// needs no catch-up of its own, since that one reads the source after it.
    queued: Mutex<HashSet<DocumentId>>,
    /// Catch-ups running as tasks, and the wake-up [`Indexer::settle`] waits for.
    in_flight: AtomicUsize,
    idle: tokio::sync::Notify,
    /// Why catch-ups in the background failed, until [`Indexer::settle`] takes them.
    failures: Mutex<Vec<String>>,
    /// The documents queried or caught up last, parsed: a query reads the source every time,
    /// but splits and weighs only a text it has not seen.
    pub parsed: ParsedCache,
}

/// A document as the source holds it, and why the index does not cover it, if it does not.
pub(crate) struct Snapshot {
    pub document: Document,
    pub behind: Option<String>,
}

/// What every index write holds: this process's turn, then the lock every process takes, always
/// in that order, so writers within and across processes never wait on each other in a cycle.
pub(crate) struct Writing<'a> {
    _turn: tokio::sync::MutexGuard<'a, ()>,
    _lock: coverage::IndexLock,
}

/// Counts a catch-up task for [`Indexer::settle`] from its spawning to its end, however it ends
/// (done, failed, or dropped with its runtime), and takes its document off the queue if it never
/// got to start.
struct Running {
    indexer: Arc<Indexer>,
    queued: Option<DocumentId>,
}

impl Running {
    fn start(indexer: &Arc<Indexer>, queued: Option<DocumentId>) -> Running {
        indexer.in_flight.fetch_add(1, Ordering::SeqCst);
        Running {
            indexer: Arc::clone(indexer),
            queued,
        }
    }

    /// The task holds the index and reads the source from here on, after any write that lands:
    /// later writes need a catch-up of their own.
    fn started(&mut self) {
        if let Some(document) = self.queued.take() {
            self.indexer.queued().remove(&document);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.started();
        if self.indexer.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.indexer.idle.notify_waiters();
        }
    }
}

impl Indexer {
    /// Opens (or creates) the index in `index_dir` over `source`, with nothing in flight.
    pub async fn open(
        source: Arc<dyn MemoryProvider>,
        index_dir: &Path,
        embedder: Arc<Embedder>,
        recall: RecallConfig,
    ) -> Result<Indexer, MemoryError> {
        Ok(Indexer {
            source,
            table: EntryTable::open(index_dir, recall.ann_index_rows).await?,
            coverage: Coverage::new(index_dir),
            embedder,
            recall,
            updating: tokio::sync::Mutex::new(()),
            queued: Mutex::default(),
            in_flight: AtomicUsize::new(0),
            idle: tokio::sync::Notify::new(),
            failures: Mutex::default(),
            parsed: ParsedCache::default(),
        })
    }

    /// The id of the model that embeds this index's rows.
    pub fn model(&self) -> &str {
        self.embedder.id()
    }

    /// Waits for this process's turn at the index, then for the index lock.
    pub async fn writing(&self) -> Result<Writing<'_>, MemoryError> {
        let turn = self.updating.lock().await;
        let lock = self.coverage.lock().await?;
        Ok(Writing {
            _turn: turn,
            _lock: lock,
        })
    }

    fn queued(&self) -> MutexGuard<'_, HashSet<DocumentId>> {
        self.queued.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn failures(&self) -> MutexGuard<'_, Vec<String>> {
        self.failures.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until no catch-up is running in the background, and returns why any of them
    /// failed since the last call: see [`VectorProvider::settle`].
    ///
    /// [`VectorProvider::settle`]: crate::VectorProvider::settle
    pub async fn settle(&self) -> Vec<String> {
        loop {
            let idle = self.idle.notified();
            if self.in_flight.load(Ordering::SeqCst) == 0 {
                break;
            }
            idle.await;
        }
        std::mem::take(&mut *self.failures())
    }

    /// Catches `document` up in the background after a write, unless a catch-up that has not
    /// started yet will cover it.
    pub fn schedule(self: &Arc<Self>, document: DocumentId) {
        drop(self.queue(document));
    }

    /// [`Indexer::schedule`], returning the catch-up's task when this call queued it; `None`
    /// when one queued before, not started yet, covers it.
    pub(crate) fn queue(
        self: &Arc<Self>,
        document: DocumentId,
    ) -> Option<tokio::task::JoinHandle<Result<Document, MemoryError>>> {
        self.queued()
            .insert(document.clone())
            .then(|| self.spawn_catch_up(document, true))
    }

    /// Runs a catch-up of `document` as a task of its own, so that it goes on when the caller
    /// stops waiting for it. `queued`: it is the queued one of [`Indexer::schedule`].
    fn spawn_catch_up(
        self: &Arc<Self>,
        document: DocumentId,
        queued: bool,
    ) -> tokio::task::JoinHandle<Result<Document, MemoryError>> {
        let mut running = Running::start(self, queued.then(|| document.clone()));
        let indexer = Arc::clone(self);
        tokio::spawn(async move {
            let result = async {
                let _writing = indexer.writing().await?;
                running.started();
                indexer.catch_up_locked(&document, false).await
            }
            .await;
            if let Err(err) = &result {
                indexer.remember(format!(
                    "the recall index of {document} could not catch up with its source ({err}); the next query retries, or run `memory reindex`"
                ));
            }
            result
        })
    }

    /// Keeps `failure` for [`Indexer::settle`], dropping the oldest past a few.
    fn remember(&self, failure: String) {
        let mut failures = self.failures();
        if failures.len() == FAILURES_KEPT {
            failures.remove(0);
        }
        failures.push(failure);
    }

    /// `document` as the source holds it now, with the index brought up to it first when it
    /// is behind: waited for up to the time budget, after which the catch-up goes on in the
    /// background and the snapshot says the index is behind.
    pub async fn current(self: &Arc<Self>, document: &DocumentId) -> Result<Snapshot, MemoryError> {
        let read = self.source.read(document).await?;
        let mark = Mark::of(&read, self.model());
        if self
            .coverage
            .read()
            .documents
            .get(&document.relative_path())
            == Some(&mark)
        {
            return Ok(Snapshot {
                document: read,
                behind: None,
            });
        }
        let budget = Duration::from_millis(self.recall.catch_up_ms);
        let catching_up = self.spawn_catch_up(document.clone(), false);
        let behind = match tokio::time::timeout(budget, catching_up).await {
            // Finished: caught up, failed, or its task did (a panic, a runtime shutting down).
            Ok(joined) => match joined
                .map_err(|err| err.to_string())
                .and_then(|caught_up| caught_up.map_err(|err| err.to_string()))
            {
                Ok(caught_up) => {
                    return Ok(Snapshot {
                        document: caught_up,
                        behind: None,
                    });
                }
                Err(err) => format!("the recall index could not catch up with {document} ({err})"),
            },
            Err(_) => format!(
                "the recall index is still catching up with {document} (past its {} ms budget)",
                self.recall.catch_up_ms
            ),
        };
        Ok(Snapshot {
            document: read,
            behind: Some(behind),
        })
    }

    /// Brings the index of `document` up to what the source holds now, unless the coverage
    /// record says it is already there (`force` diffs anyway). Returns the document as the
    /// index now reflects it. Call it with this process's turn and the index lock held.
    pub async fn catch_up_locked(
        &self,
        document: &DocumentId,
        force: bool,
    ) -> Result<Document, MemoryError> {
        let current = self.source.read(document).await?;
        let scope = document.relative_path();
        let mark = Mark::of(&current, self.model());
        let mut record = self.coverage.read();
        if !force && record.documents.get(&scope) == Some(&mark) {
            return Ok(current);
        }
        // The record is withdrawn before the table changes: a query that ranked trusting it
        // sees it gone afterwards, and asks again (see `Indexer::pick`).
        if record.documents.remove(&scope).is_some() {
            self.coverage.write(&record)?;
        }
        self.diff_and_apply(&scope, &current).await?;
        self.table.ensure_text_index().await?;
        record.documents.insert(scope, mark);
        self.coverage.write(&record)?;
        self.housekeep_if_due().await;
        Ok(current)
    }

    /// Diffs the entries of `document` against the rows of `scope` and applies the
    /// difference: removed entries deleted, new ones embedded and added, a few hundred per
    /// table write.
    async fn diff_and_apply(&self, scope: &str, document: &Document) -> Result<(), MemoryError> {
        // Parsed through the cache: the query that follows a write finds it split already.
        let parsed = self.parsed.parsed(document, false).await;
        let current = parsed.entries();
        let model = self.model();
        let rows = self.table.rows(scope).await?;
        let wanted: HashSet<&str> = current.iter().map(|e| e.hash.as_str()).collect();
        let stale: Vec<String> = rows
            .iter()
            .filter(|row| row.model == model && !wanted.contains(row.hash.as_str()))
            .map(|row| row.hash.clone())
            .collect();
        self.table.delete(scope, model, &stale).await?;
        // Rows of another model go too: a document's vectors all come from one model.
        if rows.iter().any(|row| row.model != model) {
            self.table.delete_other_models(scope, model).await?;
        }
        let indexed: HashSet<&str> = rows
            .iter()
            .filter(|row| row.model == model)
            .map(|row| row.hash.as_str())
            .collect();
        let new: Vec<Entry> = current
            .iter()
            .filter(|entry| !indexed.contains(entry.hash.as_str()))
            .cloned()
            .collect();
        // The next chunk is embedded (on the blocking pool) while this one is written: the
        // table write's own work overlaps the model's instead of adding to it.
        let embedding = |chunk: &[Entry]| {
            let texts: Vec<String> = chunk.iter().map(Entry::indexed).collect();
            let embedder = Arc::clone(&self.embedder);
            tokio::task::spawn_blocking(move || embedder.embed(&texts))
        };
        let mut chunks = new.chunks(ENTRIES_PER_WRITE);
        let mut next = chunks.next().map(|chunk| (chunk, embedding(chunk)));
        while let Some((chunk, embedded)) = next.take() {
            let vectors = embedded
                .await
                .map_err(|err| MemoryError::unavailable("the embedding task", err))??;
            next = chunks.next().map(|chunk| (chunk, embedding(chunk)));
            let added: Vec<(Entry, Vec<f32>)> = chunk.iter().cloned().zip(vectors).collect();
            self.table.add(scope, "memory", model, &added).await?;
        }
        Ok(())
    }

    /// [`Indexer::housekeep_if_due`] at open, unless another process is writing the index right
    /// now (it will see to it): opening never waits behind a long reindex elsewhere.
    pub async fn housekeep_if_due_unless_busy(&self) -> Result<(), MemoryError> {
        let _turn = self.updating.lock().await;
        if let Some(_lock) = self.coverage.try_lock()? {
            self.housekeep_if_due().await;
        }
        Ok(())
    }

    /// [`Indexer::housekeep`] once the table has piled up enough versions since the last time,
    /// whichever processes wrote them. Call it with the index lock held. A failure is kept for
    /// [`Indexer::settle`], never returned: the index is current, only untidy.
    async fn housekeep_if_due(&self) {
        let due = match self.table.version().await {
            Ok(version) => {
                version.saturating_sub(self.coverage.read().cleaned_at)
                    >= VERSIONS_BETWEEN_HOUSEKEEPING
            }
            Err(err) => {
                self.remember(format!(
                    "the recall index's version could not be read ({err})"
                ));
                false
            }
        };
        if due && let Err(err) = self.housekeep().await {
            self.remember(format!(
                "housekeeping of the recall index failed ({err}); it is retried after the next writes"
            ));
        }
    }

    /// Optimises the table and records when. Call it with the index lock held.
    pub async fn housekeep(&self) -> Result<(), MemoryError> {
        self.table.optimize().await?;
        let mut record = self.coverage.read();
        record.cleaned_at = self.table.version().await?;
        self.coverage.write(&record)
    }
}
