#![doc = include_str!("../README.md")]

mod coverage;
mod embed;
mod entries;
mod index;
mod parsed;
mod terms;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use memory_core::raw::{Receipts, render};
use memory_core::{
    Document, DocumentId, IfMatch, MemoryContext, MemoryError, MemoryProvider, MemoryUpdate,
    Prefetch, Recall, Recalled, Store, Subscription, SyncReport,
};
use serde::Deserialize;

pub use embed::{
    DIMENSIONS, E5_MODEL_DIR_ENV, Embedder, MODEL_DIR_ENV, ModelConfig, ModelName, ORT_LIBRARY_ENV,
    PROVISION_COMMAND, spin_briefly_when_idle,
};
pub use entries::{Entry, entries};

use coverage::{Coverage, Mark};
use index::EntryTable;
use parsed::{Parsed, ParsedCache};

/// How a query picks entries.
///
/// An entry's score is `vector_weight × similarity + (1 − vector_weight) × coverage`: its
/// cosine similarity to the query, and the share of the query's words it holds, each word
/// weighted by how rare it is in the document (BM25's inverse document frequency). Both are on
/// fixed scales, so their magnitudes add up where ranks alone would not: a close paraphrase
/// wins on similarity, an entry holding the query's rare words (a name, a ticket id, "LGBTQ")
/// wins on coverage, and an entry matching one common word stays low on both.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecallConfig {
    /// Entries rendered for a query; default 8.
    pub k: usize,
    /// How many candidates each ranking (nearest vectors, BM25) contributes; default 50.
    pub candidates: usize,
    /// The share of an entry's score that is its similarity to the query, from 0 to 1; the
    /// rest is its coverage of the query's words. Default: the model's own
    /// ([`ModelName::vector_weight`]), since each model's similarities spread differently.
    pub vector_weight: Option<f32>,
    /// Indexed entries from which vector search uses an approximate (IVF-HNSW) index, built
    /// by [`VectorProvider::optimize`]; below it, exact brute force is fast enough. Default
    /// 10,000.
    pub ann_index_rows: usize,
    /// How long a query waits for the index to catch up with its source, in milliseconds;
    /// default 2,000. Past it the query is answered with the entries the index has not
    /// covered shown unranked beside the ranked ones, and the catch-up goes on in the
    /// background.
    pub catch_up_ms: u64,
}

impl Default for RecallConfig {
    fn default() -> Self {
        RecallConfig {
            k: 8,
            candidates: 50,
            vector_weight: None,
            ann_index_rows: 10_000,
            catch_up_ms: 2_000,
        }
    }
}

impl RecallConfig {
    /// Why this configuration cannot rank, if it cannot.
    fn invalid(&self) -> Option<String> {
        if self.k == 0 {
            return Some(
                "recall.k is 0, which would show the agent no memory for a query; it must be at \
                 least 1"
                    .to_owned(),
            );
        }
        match self.vector_weight {
            Some(weight) if !(0.0..=1.0).contains(&weight) => Some(format!(
                "recall.vector_weight is {weight}; it is the share of an entry's score that is \
                 its similarity to the query, from 0 to 1"
            )),
            _ => None,
        }
    }

    /// The share of an entry's score that is its similarity, when `model` embeds: the one set,
    /// else the model's own.
    pub fn vector_weight_for(&self, model: ModelName) -> f32 {
        self.vector_weight.unwrap_or_else(|| model.vector_weight())
    }
}

/// Fuses the nearest entries (hashes with their cosine similarity, best first) and the
/// BM25 ranking (hashes, best first); either may be empty. Each entry found by either is
/// scored `vector_weight × similarity + (1 − vector_weight) × coverage(hash)`, where an
/// entry BM25 found but the vector search did not is given the lowest similarity the
/// vector search returned (its own is at most that). Returns at most `limit` hashes, best
/// first; ties go to the smaller hash, so the result is deterministic.
fn fuse(
    vector_weight: f32,
    nearest: &[(String, f32)],
    text: &[String],
    coverage: impl Fn(&str) -> f32,
    limit: usize,
) -> Vec<String> {
    let floor = nearest
        .iter()
        .map(|(_, similarity)| *similarity)
        .fold(None, |low: Option<f32>, s| {
            Some(low.map_or(s, |low| low.min(s)))
        })
        .unwrap_or(0.0);
    let mut similarity: HashMap<&str, f32> = HashMap::new();
    for (hash, s) in nearest {
        similarity.entry(hash).or_insert(*s);
    }
    for hash in text {
        similarity.entry(hash).or_insert(floor);
    }
    let mut ranked: Vec<(&str, f32)> = similarity
        .into_iter()
        .map(|(hash, s)| {
            let score = vector_weight * s + (1.0 - vector_weight) * coverage(hash);
            (hash, score)
        })
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    ranked
        .into_iter()
        .take(limit)
        .map(|(hash, _)| hash.to_owned())
        .collect()
}

/// Which rankings a recall uses; [`Ranking::Hybrid`] is what `prefetch` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    /// Nearest vectors only.
    Vector,
    /// BM25 full-text only.
    FullText,
    /// Both, fused by score: see [`RecallConfig`].
    Hybrid,
}

/// What [`VectorProvider::index_status`] reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexStatus {
    /// Rows per indexed document, by its path in the markdown layout.
    pub rows: std::collections::BTreeMap<String, usize>,
    /// The ids of the models that embedded them, sorted.
    pub models: Vec<String>,
    /// Whether vector search goes through the approximate index.
    pub ann_index: bool,
    /// Table versions kept on disk: every index write adds one, housekeeping drops the old.
    pub versions_kept: usize,
}

/// Table versions written (by any process sharing the index) between two housekeepings:
/// every write leaves a version and small files behind, and reads slow down with their number.
const VERSIONS_BETWEEN_HOUSEKEEPING: u64 = 16;

/// Entries embedded and written per table version by a catch-up: one cut short (a process
/// exiting, a crash) keeps what it wrote, and the next one embeds only the rest.
const ENTRIES_PER_WRITE: usize = 256;

/// Background failures kept for [`VectorProvider::settle`]; older ones are dropped.
const FAILURES_KEPT: usize = 16;

/// A source-of-truth provider with a recall index beside it.
///
/// The index follows its source, whoever writes it: before a query is answered, the index is
/// brought up to the document's current version (hand edits, other processes and hosts
/// included), embedding only entries it has not seen. A write is acknowledged once the source
/// has it; indexing follows in the background. A query that cannot wait for the index shows
/// the entries it has not covered anyway, so recall never shows less than the source holds.
pub struct VectorProvider {
    indexer: Arc<Indexer>,
}

/// What catching up needs, shared with the tasks that do it in the background.
struct Indexer {
    source: Arc<dyn MemoryProvider>,
    table: EntryTable,
    coverage: Coverage,
    embedder: Arc<Embedder>,
    recall: RecallConfig,
    /// This process's index writes, one at a time (other processes wait on the index lock).
    updating: tokio::sync::Mutex<()>,
    /// Documents with a background catch-up that has not started yet: a write while one waits
    /// needs no catch-up of its own, since that one reads the source after it.
    queued: Mutex<HashSet<DocumentId>>,
    /// Catch-ups running as tasks, and the wake-up [`VectorProvider::settle`] waits for.
    in_flight: AtomicUsize,
    idle: tokio::sync::Notify,
    /// Why catch-ups in the background failed, until [`VectorProvider::settle`] takes them.
    failures: Mutex<Vec<String>>,
    /// The documents queried or caught up last, parsed: a query reads the source every time,
    /// but splits and weighs only a text it has not seen.
    parsed: ParsedCache,
}

/// `MEMORY.md` as a query renders it: see [`VectorProvider::recalled_memory`].
#[derive(Debug, Clone)]
pub struct RecalledMemory {
    /// The document as the source holds it: its version is what `if_match` takes.
    pub document: Document,
    /// The chosen entries in document order, each under its heading (written once above the
    /// first chosen entry under it), list items under one heading one per line and everything
    /// else a blank line apart: `## Travel\n- Window seat on trains.`. The whole text when
    /// every entry is chosen (it has at most `k` entries, or the index could not rank it).
    pub text: String,
    /// Why the choice may differ from a ranking of the whole document (the index behind its
    /// source, or failing); empty when all went well.
    pub warnings: Vec<String>,
}

impl RecalledMemory {
    /// The whole of `document`, as a provider without recall renders it.
    pub fn whole(document: Document) -> Self {
        RecalledMemory {
            text: document.text.clone(),
            document,
            warnings: Vec::new(),
        }
    }

    /// The prefetch for `ctx` with this memory section and `user`'s profile in full.
    pub fn prefetch(self, ctx: &MemoryContext, user: &Document) -> Prefetch {
        Prefetch {
            context: render(&user.text, &self.text, ctx.max_chars),
            memory: self.document,
            user: user.clone(),
            warnings: self.warnings,
        }
    }
}

/// A document as the source holds it, and why the index does not cover it, if it does not.
struct Snapshot {
    document: Document,
    behind: Option<String>,
}

/// What a query picked, as positions among the document's entries.
struct Picked {
    /// Best first.
    ranked: Vec<usize>,
    /// Entries the ranking could not cover, in document order (only when the index is behind).
    unranked: Vec<usize>,
}

/// A document as a query was answered from it: its entries and the ones picked.
struct Selection {
    document: Document,
    parsed: Arc<Parsed>,
    picked: Picked,
    /// Why `picked.unranked` is not empty (the index behind, or failing); `None` when the
    /// ranking covered the whole document.
    behind: Option<String>,
}

/// How often a query is tried when the index changes under it or fails: a catch-up that
/// started meanwhile, a version dropped by housekeeping under a reader. After that, the whole
/// document is shown.
const QUERY_ATTEMPTS: usize = 2;

impl std::fmt::Debug for VectorProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorProvider")
            .field("embedder", &self.indexer.embedder)
            .field("recall", &self.indexer.recall)
            .finish_non_exhaustive()
    }
}

impl VectorProvider {
    /// Opens (or creates) the index in `index_dir` over `source`. Rows embedded by another model
    /// are detected and their documents re-embedded before this returns, and overdue
    /// housekeeping (a table left with many versions by short-lived processes) is done.
    ///
    /// # Errors
    /// [`MemoryError::Unavailable`] when the index directory cannot be opened.
    pub async fn open(
        source: Arc<dyn MemoryProvider>,
        index_dir: &Path,
        embedder: Arc<Embedder>,
        recall: RecallConfig,
    ) -> Result<Self, MemoryError> {
        if let Some(message) = recall.invalid() {
            return Err(MemoryError::Config { message });
        }
        let provider = VectorProvider {
            indexer: Arc::new(Indexer {
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
            }),
        };
        let indexer = &provider.indexer;
        if indexer
            .table
            .has_rows_of_other_models(indexer.model())
            .await?
        {
            provider.reindex().await?;
        }
        // Overdue housekeeping, unless another process is writing the index right now (it
        // will see to it): opening never waits behind a long reindex elsewhere.
        {
            let _turn = indexer.updating.lock().await;
            if let Some(_lock) = indexer.coverage.try_lock()? {
                indexer.housekeep_if_due().await;
            }
        }
        Ok(provider)
    }

    /// Brings the index in line with every document of the source, and drops what the source
    /// no longer has. Every document is diffed, whatever the index records of it. Returns how
    /// many memory documents were indexed.
    pub async fn reindex(&self) -> Result<usize, MemoryError> {
        self.reindex_with_progress(|_, _| {}).await
    }

    /// [`VectorProvider::reindex`], calling `progress(done, total)` after each memory document
    /// (and once with `done == 0` before the first), for a progress bar.
    pub async fn reindex_with_progress(
        &self,
        mut progress: impl FnMut(usize, usize) + Send,
    ) -> Result<usize, MemoryError> {
        let indexer = &self.indexer;
        let documents: Vec<DocumentId> = indexer
            .source
            .list()
            .await?
            .into_iter()
            .filter(|id| id.store() == Store::Memory)
            .collect();
        let known: HashSet<String> = documents.iter().map(DocumentId::relative_path).collect();
        {
            let _writing = indexer.writing().await?;
            // Records first, rows second: a query never trusts a record of cleared rows.
            let mut record = indexer.coverage.read();
            record.documents.retain(|scope, _| known.contains(scope));
            indexer.coverage.write(&record)?;
            for stale in indexer.table.scopes().await? {
                if !known.contains(&stale) {
                    indexer.table.clear(&stale).await?;
                }
            }
        }
        progress(0, documents.len());
        for (done, document) in documents.iter().enumerate() {
            let _writing = indexer.writing().await?;
            indexer.catch_up_locked(document, true).await?;
            progress(done + 1, documents.len());
        }
        Ok(documents.len())
    }

    /// Brings the index of `document` up to what the source holds now, waiting as long as it
    /// takes (queries wait at most [`RecallConfig::catch_up_ms`]).
    pub async fn catch_up(&self, document: &DocumentId) -> Result<(), MemoryError> {
        let _writing = self.indexer.writing().await?;
        self.indexer.catch_up_locked(document, false).await?;
        Ok(())
    }

    /// Waits until no catch-up of this provider is running in the background (writes index
    /// after their acknowledgement), and returns why any of them failed since the last call.
    /// A short-lived process calls it before exiting, so what it wrote is indexed. It waits as
    /// long as they take (one may wait for another process's index lock): bound it with a
    /// timeout where that matters, as `memory sync` does.
    pub async fn settle(&self) -> Vec<String> {
        let indexer = &self.indexer;
        loop {
            let idle = indexer.idle.notified();
            if indexer.in_flight.load(Ordering::SeqCst) == 0 {
                break;
            }
            idle.await;
        }
        std::mem::take(&mut *indexer.failures())
    }

    /// Compacts the index, builds the ANN index once there are `ann_index_rows` entries,
    /// folds new rows into the indices and drops old table versions. Runs by itself once
    /// writes (of any process) have added 16 table versions since the last time; call it after
    /// a bulk load.
    pub async fn optimize(&self) -> Result<(), MemoryError> {
        let _writing = self.indexer.writing().await?;
        self.indexer.housekeep().await
    }

    /// What the index holds: rows per document path, the models that embedded them, and the
    /// table versions kept.
    pub async fn index_status(&self) -> Result<IndexStatus, MemoryError> {
        let table = &self.indexer.table;
        let mut status = IndexStatus::default();
        for scope in table.scopes().await? {
            let rows = table.rows(&scope).await?;
            for row in &rows {
                if !status.models.contains(&row.model) {
                    status.models.push(row.model.clone());
                }
            }
            status.rows.insert(scope, rows.len());
        }
        status.models.sort();
        status.ann_index = table.has_index_on("vector").await?;
        status.versions_kept = table.versions_kept().await?;
        Ok(status)
    }

    /// The hashes of the entries of `document` that best match `query` by `ranking`, best
    /// first, at most `limit`, from the index as it is now: without catching up with the
    /// source first, and with no check that the source still holds them (the source is read
    /// only to weigh the query's words). For evaluating
    /// rankings; agents go through `prefetch` and [`Recall::search`].
    pub async fn recall(
        &self,
        document: &DocumentId,
        query: &str,
        ranking: Ranking,
        limit: usize,
    ) -> Result<Vec<String>, MemoryError> {
        let document = self.indexer.source.read(document).await?;
        let parsed = self.indexer.parsed.parsed(&document, true).await;
        self.indexer.rank(&parsed, query, ranking, limit).await
    }

    /// `document` (a `MEMORY.md`) cut to the `k` entries that best match `query`, in document
    /// order under their headings (see [`RecalledMemory::text`]), after the index has caught up
    /// with the source. When the index is behind past its time budget, the entries it has not
    /// covered are kept too; when it fails, the whole text is. Either way `warnings` says so.
    ///
    /// # Errors
    /// Whatever reading the source fails with; never an index failure.
    pub async fn recalled_memory(
        &self,
        document: &DocumentId,
        query: &str,
    ) -> Result<RecalledMemory, MemoryError> {
        let k = self.indexer.recall.k;
        let Selection {
            document,
            parsed,
            picked,
            behind,
        } = self.indexer.select(document, query, k, true).await?;
        let all = parsed.entries();
        let warnings = behind
            .iter()
            .map(|behind| {
                format!(
                    "{behind}; {} of its {} entries are shown unranked",
                    picked.unranked.len(),
                    all.len()
                )
            })
            .collect();
        let shown: BTreeSet<usize> = picked.ranked.into_iter().chain(picked.unranked).collect();
        let text = if shown.len() == all.len() {
            document.text.clone()
        } else {
            entries::render_selection(all, &shown)
        };
        Ok(RecalledMemory {
            document,
            text,
            warnings,
        })
    }
}

/// What every index write holds: this process's turn, then the lock every process takes, always
/// in that order, so writers within and across processes never wait on each other in a cycle.
struct Writing<'a> {
    _turn: tokio::sync::MutexGuard<'a, ()>,
    _lock: coverage::IndexLock,
}

/// Counts a catch-up task for [`VectorProvider::settle`] from its spawning to its end, however
/// it ends (done, failed, or dropped with its runtime), and takes its document off the queue if
/// it never got to start.
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
    fn model(&self) -> &str {
        self.embedder.id()
    }

    /// Waits for this process's turn at the index, then for the index lock.
    async fn writing(&self) -> Result<Writing<'_>, MemoryError> {
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

    /// Catches `document` up in the background after a write, unless a catch-up that has not
    /// started yet will cover it.
    fn schedule(self: &Arc<Self>, document: DocumentId) {
        if self.queued().insert(document.clone()) {
            drop(self.spawn_catch_up(document, true));
        }
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

    /// Keeps `failure` for [`VectorProvider::settle`], dropping the oldest past a few.
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
    async fn current(self: &Arc<Self>, document: &DocumentId) -> Result<Snapshot, MemoryError> {
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
    async fn catch_up_locked(
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

    /// [`Indexer::housekeep`] once the table has piled up enough versions since the last time,
    /// whichever processes wrote them. Call it with the index lock held. A failure is kept for
    /// [`VectorProvider::settle`], never returned: the index is current, only untidy.
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
    async fn housekeep(&self) -> Result<(), MemoryError> {
        self.table.optimize().await?;
        let mut record = self.coverage.read();
        record.cleaned_at = self.table.version().await?;
        self.coverage.write(&record)
    }

    /// The vector of `query`, made on the blocking pool ahead of any catch-up's next batch.
    async fn embed_query(&self, query: &str) -> Result<Vec<f32>, MemoryError> {
        let embedder = Arc::clone(&self.embedder);
        let query = query.to_owned();
        tokio::task::spawn_blocking(move || embedder.embed_query(&query))
            .await
            .map_err(|err| MemoryError::unavailable("the embedding task", err))?
    }

    /// The hashes of the best entries of `parsed` for `query` by `ranking`, from the index as
    /// it is now; the document's entries weigh the query's words.
    async fn rank(
        &self,
        parsed: &Parsed,
        query: &str,
        ranking: Ranking,
        limit: usize,
    ) -> Result<Vec<String>, MemoryError> {
        let scope = parsed.id().relative_path();
        let candidates = self.recall.candidates.max(limit);
        // The two searches run side by side: the query's embedding is made on the blocking
        // pool while the full-text search runs.
        let nearest = async {
            match ranking {
                Ranking::FullText => Ok(Vec::new()),
                _ => {
                    let vector = self.embed_query(query).await?;
                    self.table
                        .nearest(&scope, self.model(), &vector, candidates)
                        .await
                }
            }
        };
        let text = async {
            match ranking {
                Ranking::Vector => Ok(Vec::new()),
                _ => self.table.full_text(&scope, query, candidates).await,
            }
        };
        let (nearest, text) = tokio::try_join!(nearest, text)?;
        let mut ranked: Vec<String> = match ranking {
            Ranking::Vector => nearest.into_iter().map(|(hash, _)| hash).collect(),
            Ranking::FullText => text,
            Ranking::Hybrid => {
                let stats = parsed.stats();
                let query = terms::terms(query);
                let coverage = |hash: &str| {
                    parsed.entry(hash).map_or(0.0, |entry| {
                        stats.coverage(&query, &terms::terms(&entry.indexed()))
                    })
                };
                fuse(
                    self.recall.vector_weight_for(self.embedder.model()),
                    &nearest,
                    &text,
                    coverage,
                    limit,
                )
            }
        };
        ranked.truncate(limit);
        Ok(ranked)
    }

    /// `document` as the source holds it, and up to `limit` of its entries for `query`, best
    /// first, with every entry the index did not cover; `whole_if_within`: a document of at
    /// most `limit` entries is taken whole, unranked. A query the index changed under, or
    /// failed, is tried again; then the whole document is taken, with the reason.
    async fn select(
        self: &Arc<Self>,
        document: &DocumentId,
        query: &str,
        limit: usize,
        whole_if_within: bool,
    ) -> Result<Selection, MemoryError> {
        let mut why = String::new();
        for _ in 0..QUERY_ATTEMPTS {
            let snapshot = self.current(document).await?;
            let parsed = self
                .parsed
                .parsed(&snapshot.document, !whole_if_within)
                .await;
            let count = parsed.entries().len();
            if whole_if_within && count <= limit {
                let picked = Picked {
                    ranked: (0..count).collect(),
                    unranked: Vec::new(),
                };
                return Ok(Selection {
                    document: snapshot.document,
                    parsed,
                    picked,
                    behind: None,
                });
            }
            // Ranked: the words' weights are wanted too (made once per state of the text).
            let parsed = ParsedCache::weighed(parsed).await;
            match self.pick(&snapshot, &parsed, query, limit).await {
                Ok(Some(picked)) => {
                    return Ok(Selection {
                        document: snapshot.document,
                        parsed,
                        picked,
                        behind: snapshot.behind,
                    });
                }
                Ok(None) => why = "the recall index kept changing while it was read".to_owned(),
                Err(err) => why = format!("the recall index failed ({err})"),
            }
        }
        let document = self.source.read(document).await?;
        let parsed = self.parsed.parsed(&document, false).await;
        let picked = Picked {
            ranked: Vec::new(),
            unranked: (0..parsed.entries().len()).collect(),
        };
        Ok(Selection {
            document,
            parsed,
            picked,
            behind: Some(why),
        })
    }

    /// Up to `limit` of the snapshot's entries (`parsed`) for `query`, best first; and when the
    /// index is behind, every entry it has not covered. `None` when the ranking trusted the
    /// coverage record and a catch-up changed the table meanwhile: ask again.
    async fn pick(
        &self,
        snapshot: &Snapshot,
        parsed: &Parsed,
        query: &str,
        limit: usize,
    ) -> Result<Option<Picked>, MemoryError> {
        let scope = snapshot.document.id.relative_path();
        let before = match snapshot.behind {
            Some(_) => Some(self.indexed(&scope).await?),
            None => None,
        };
        // Ask for more than `limit`: the index may still hold entries the source has lost.
        let hashes = self
            .rank(parsed, query, Ranking::Hybrid, limit.saturating_mul(2))
            .await?;
        let all = parsed.entries();
        let ranked: Vec<usize> = hashes
            .iter()
            .filter_map(|hash| parsed.position(hash))
            .take(limit)
            .collect();
        let unranked = match before {
            None => {
                // A catch-up withdraws the record before it changes the table: if it is still
                // the one trusted, the ranking saw the rows of exactly this document.
                let mark = Mark::of(&snapshot.document, self.model());
                if self.coverage.read().documents.get(&scope) != Some(&mark) {
                    return Ok(None);
                }
                Vec::new()
            }
            Some(before) => {
                // Rows a catch-up adds or deletes while the ranking runs may not have been
                // ranked: only rows there before and after count as covered.
                let after = self.indexed(&scope).await?;
                (0..all.len())
                    .filter(|i| {
                        let hash = &all[*i].hash;
                        let covered = before.contains(hash) && after.contains(hash);
                        !covered && !ranked.contains(i)
                    })
                    .collect()
            }
        };
        Ok(Some(Picked { ranked, unranked }))
    }

    /// The hashes of `scope`'s rows embedded by this model.
    async fn indexed(&self, scope: &str) -> Result<HashSet<String>, MemoryError> {
        Ok(self
            .table
            .rows(scope)
            .await?
            .into_iter()
            .filter(|row| row.model == self.model())
            .map(|row| row.hash)
            .collect())
    }
}

#[async_trait]
impl Recall for VectorProvider {
    async fn search(
        &self,
        document: &DocumentId,
        query: &str,
        limit: usize,
    ) -> Result<Recalled, MemoryError> {
        let selection = self.indexer.select(document, query, limit, false).await?;
        let texts = |positions: Vec<usize>| -> Vec<String> {
            positions
                .into_iter()
                .filter_map(|i| selection.parsed.entries().get(i))
                .map(|entry| entry.text.clone())
                .collect()
        };
        Ok(Recalled {
            ranked: texts(selection.picked.ranked),
            unranked: texts(selection.picked.unranked),
            behind: selection.behind,
        })
    }
}

#[async_trait]
impl MemoryProvider for VectorProvider {
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        let Some(query) = ctx.query.as_deref().filter(|q| !q.trim().is_empty()) else {
            return self.indexer.source.prefetch(ctx).await;
        };
        let (memory, user) = (ctx.document(Store::Memory), ctx.document(Store::User));
        let (memory, user) = tokio::try_join!(
            self.recalled_memory(&memory, query),
            self.indexer.source.read(&user),
        )?;
        Ok(memory.prefetch(ctx, &user))
    }

    /// Writes through the source; the write is acknowledged once the source has it, and the
    /// index of each written `MEMORY.md` catches up in the background (or at the next query).
    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        let report = self.indexer.source.sync(ctx, updates, if_match).await?;
        for written in &report.documents {
            if written.written && written.store == Store::Memory {
                self.indexer.schedule(written.document.clone());
            }
        }
        Ok(report)
    }

    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        self.indexer.source.read(document).await
    }

    async fn receipts(&self, document: &DocumentId) -> Result<Receipts, MemoryError> {
        self.indexer.source.receipts(document).await
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        self.indexer.source.list().await
    }

    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<Vec<memory_core::Revision>, MemoryError> {
        self.indexer.source.history(document, limit).await
    }

    /// The index rows go first, then the source's document and history, with the index held
    /// so no catch-up re-indexes the text in between; the table is then compacted and its
    /// old versions dropped, so the erased entries leave the disk too. A failure after the
    /// rows went leaves the source whole and is caught up at the next query: nothing is lost.
    async fn purge(
        &self,
        document: &DocumentId,
        surface: memory_core::Surface,
    ) -> Result<memory_core::Purged, MemoryError> {
        let indexer = &self.indexer;
        if document.store() != Store::Memory {
            return indexer.source.purge(document, surface).await;
        }
        let _writing = indexer.writing().await?;
        let scope = document.relative_path();
        // Records first, rows second: a query never trusts a record of cleared rows.
        let mut record = indexer.coverage.read();
        record.documents.remove(&scope);
        indexer.coverage.write(&record)?;
        indexer.table.clear(&scope).await?;
        indexer.table.optimize().await?;
        indexer.source.purge(document, surface).await
    }

    fn subscribe(&self) -> Subscription {
        self.indexer.source.subscribe()
    }

    /// The source's: writes and plain reads are the source's calls.
    fn deadline(&self) -> Option<Duration> {
        self.indexer.source.deadline()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    fn near(found: &[(&str, f32)]) -> Vec<(String, f32)> {
        found.iter().map(|(h, s)| ((*h).to_owned(), *s)).collect()
    }

    fn covering(of: &[(&str, f32)]) -> impl Fn(&str) -> f32 {
        let of: HashMap<String, f32> = of.iter().map(|(h, c)| ((*h).to_owned(), *c)).collect();
        move |hash| of.get(hash).copied().unwrap_or(0.0)
    }

    #[test]
    fn fusion_adds_similarity_and_coverage_by_the_weight() {
        let nearest = near(&[("close", 0.8), ("paraphrase", 0.7), ("far", 0.2)]);
        let text = hashes(&["names-it", "paraphrase"]);
        // close .4, paraphrase .35 + .15, far .1, names-it (similarity floor .2) .1 + .5.
        let coverage = covering(&[("paraphrase", 0.3), ("names-it", 1.0)]);
        assert_eq!(
            fuse(0.5, &nearest, &text, &coverage, 10),
            hashes(&["names-it", "paraphrase", "close", "far"])
        );
        assert_eq!(
            fuse(0.5, &nearest, &text, &coverage, 2),
            hashes(&["names-it", "paraphrase"])
        );
        assert_eq!(
            fuse(1.0, &nearest, &text, &coverage, 3),
            hashes(&["close", "paraphrase", "far"])
        );
        assert_eq!(
            fuse(0.0, &nearest, &text, &coverage, 2),
            hashes(&["names-it", "paraphrase"])
        );
    }

    #[test]
    fn fusion_counts_a_repeated_hash_once_and_breaks_ties_by_hash() {
        let none = covering(&[]);
        assert_eq!(
            fuse(
                0.7,
                &near(&[("x", 0.9), ("x", 0.1), ("y", 0.5)]),
                &[],
                &none,
                10
            ),
            hashes(&["x", "y"])
        );
        assert_eq!(
            fuse(0.7, &[], &hashes(&["q", "p", "p"]), &none, 10),
            hashes(&["p", "q"]),
            "without similarities or coverage every entry ties"
        );
        assert!(fuse(0.7, &[], &[], &none, 10).is_empty());
    }

    #[test]
    fn the_vector_weight_is_the_models_own_unless_set() {
        let default = RecallConfig::default();
        assert_eq!(default.vector_weight_for(ModelName::E5Small), 0.8);
        assert_eq!(default.vector_weight_for(ModelName::MiniLm), 0.7);
        let set = RecallConfig {
            vector_weight: Some(0.5),
            ..default
        };
        for model in ModelName::ALL {
            assert_eq!(set.vector_weight_for(model), 0.5);
        }
    }

    #[test]
    fn a_weight_outside_zero_to_one_or_no_k_is_refused() {
        assert_eq!(RecallConfig::default().invalid(), None);
        for vector_weight in [-0.1, 1.5, f32::NAN] {
            let config = RecallConfig {
                vector_weight: Some(vector_weight),
                ..RecallConfig::default()
            };
            assert!(config.invalid().unwrap().contains("vector_weight"));
        }
        let no_k = RecallConfig {
            k: 0,
            ..RecallConfig::default()
        };
        assert!(no_k.invalid().unwrap().contains("recall.k is 0"));
    }
}
