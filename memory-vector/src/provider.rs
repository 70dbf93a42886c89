//! The public face of the crate: [`VectorProvider`], a source-of-truth provider with a recall
//! index beside it, what it reports ([`IndexStatus`], [`RecalledMemory`]), and its
//! `MemoryProvider` and `Recall` impls, which pass writes and plain reads to the source.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use memory_core::raw::{Receipts, render_with_notes};
use memory_core::{
    Document, DocumentId, IfMatch, MemoryContext, MemoryError, MemoryProvider, MemoryUpdate,
    NewestNotes, NoteMeta, NoteScope, Prefetch, Recall, Recalled, RecalledEntry, Store,
    Subscription, SyncReport,
};

use crate::config::RecallConfig;
use crate::embed::Embedder;
use crate::entries;
use crate::indexer::Indexer;
use crate::ranking::{At, Ranking, Selection};

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
            indexer: Arc::new(Indexer::open(source, index_dir, embedder, recall).await?),
        };
        let indexer = &provider.indexer;
        if indexer
            .table
            .has_rows_of_other_models(indexer.model())
            .await?
        {
            provider.reindex().await?;
        }
        indexer.housekeep_if_due_unless_busy().await?;
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
        self.indexer.settle().await
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

    /// `document` (a `MEMORY.md`) cut to the `k` entries that best match `query` among its own
    /// and its scope's notes', in document order under their headings, each note's after it
    /// under a line naming the note (see [`RecalledMemory::text`]), after the index has caught
    /// up with the source. When the index is behind past its time budget, the entries it has
    /// not covered are kept too; when it fails, the whole text and every note's are. Either
    /// way `warnings` says so.
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
            sources,
            picked,
            behind,
            listed,
        } = self.indexer.select(document, query, k, true).await?;
        let all: usize = sources
            .iter()
            .map(|source| source.parsed.entries().len())
            .sum();
        let warnings = behind
            .iter()
            .map(|behind| {
                format!(
                    "{behind}; {} of its {all} entries are shown unranked",
                    picked.unranked.len(),
                )
            })
            .collect();
        let mut shown: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); sources.len()];
        for (at, position) in picked.ranked.into_iter().chain(picked.unranked) {
            shown[at].insert(position);
        }
        let mut sections = Vec::with_capacity(sources.len());
        for (source, shown) in sources.iter().zip(&shown) {
            let entries = source.parsed.entries();
            let text = if shown.len() == entries.len() && source.note().is_none() {
                source.document.text.clone()
            } else {
                entries::render_selection(entries, shown)
            };
            sections.push(match source.note() {
                None => text,
                Some(note) => format!("From {}/{note}:\n{text}", Store::Memory),
            });
        }
        let text = sections
            .into_iter()
            .filter(|section| !section.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        let document = sources
            .into_iter()
            .next()
            .map(|source| source.document)
            .ok_or_else(|| MemoryError::unavailable("the recall index", "no document selected"))?;
        Ok(RecalledMemory {
            document,
            text,
            warnings,
            notes: NewestNotes::of(listed.iter().map(|note| (Store::Memory, note))),
        })
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
        let found = |picked: &[At]| -> Vec<RecalledEntry> {
            picked
                .iter()
                .filter_map(|at| {
                    Some(RecalledEntry {
                        text: selection.text(*at)?.to_owned(),
                        note: selection.sources.get(at.0)?.note().cloned(),
                    })
                })
                .collect()
        };
        Ok(Recalled {
            ranked: found(&selection.picked.ranked),
            unranked: found(&selection.picked.unranked),
            behind: selection.behind.clone(),
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
        // The memory scope's notes come with the recall, from the listing it ranked them from.
        let user_scope = user.scope();
        let (memory, user, user_notes) = tokio::try_join!(
            self.recalled_memory(&memory, query),
            self.indexer.source.read(&user),
            self.indexer.source.newest_notes(&user_scope, Store::User),
        )?;
        Ok(memory.prefetch(ctx, &user, &user_notes))
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
            // MEMORY.md and the notes of a memory scope, which recall ranks with it.
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

    async fn notes(&self, scope: &NoteScope, prefix: &str) -> Result<Vec<NoteMeta>, MemoryError> {
        self.indexer.source.notes(scope, prefix).await
    }

    async fn newest_notes(
        &self,
        scope: &NoteScope,
        store: Store,
    ) -> Result<NewestNotes, MemoryError> {
        self.indexer.source.newest_notes(scope, store).await
    }

    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<Vec<memory_core::Revision>, MemoryError> {
        self.indexer.source.history(document, limit).await
    }

    /// The source's history alone: the index holds the document's text now, never a
    /// revision's.
    async fn redact(
        &self,
        document: &DocumentId,
        number: u64,
    ) -> Result<memory_core::Revision, MemoryError> {
        self.indexer.source.redact(document, number).await
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
    /// The newest notes of the document's scope, from the listing the query ranked them from
    /// (one listing for both, as the prompt shows them together).
    pub notes: NewestNotes,
}

impl RecalledMemory {
    /// The whole of `document`, with the newest `notes` of its scope, as a provider without
    /// recall renders it.
    pub fn whole(document: Document, notes: NewestNotes) -> Self {
        RecalledMemory {
            text: document.text.clone(),
            document,
            warnings: Vec::new(),
            notes,
        }
    }

    /// The prefetch for `ctx` with this memory section, `user`'s profile in full and the
    /// index of this memory's notes with `user_notes` (the newest of the user's profile's).
    pub fn prefetch(
        self,
        ctx: &MemoryContext,
        user: &Document,
        user_notes: &NewestNotes,
    ) -> Prefetch {
        let notes = NewestNotes::merged([&self.notes, user_notes]);
        Prefetch {
            context: render_with_notes(&user.text, &self.text, &notes, ctx.max_chars),
            memory: self.document,
            user: user.clone(),
            warnings: self.warnings,
        }
    }
}
