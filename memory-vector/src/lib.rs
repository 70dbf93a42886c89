#![doc = include_str!("../README.md")]

mod embed;
mod entries;
mod index;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use memory_core::{
    Document, DocumentId, IfMatch, MemoryContext, MemoryError, MemoryProvider, MemoryUpdate,
    Prefetch, Recall, Store, Subscription, SyncReport, render,
};
use serde::Deserialize;

pub use embed::{
    DIMENSIONS, Embedder, MODEL_DIR_ENV, ModelConfig, ORT_LIBRARY_ENV, PROVISION_COMMAND,
};
pub use entries::{Entry, entries};

use index::EntryTable;

/// How a query picks entries.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecallConfig {
    /// Entries rendered for a query; default 8.
    pub k: usize,
    /// How many candidates each ranking contributes to the fusion; default 50.
    pub candidates: usize,
    /// The reciprocal-rank constant: an entry at rank `r` (from 1) of a ranking scores
    /// `weight / (rrf_k + r)`. Larger values flatten the ranks; default 5.
    pub rrf_k: f32,
    /// Weight of the vector ranking; default 1.
    pub vector_weight: f32,
    /// Weight of the full-text ranking; default 0.5. With `rrf_k` 5 this was the best point of
    /// a sweep (`rrf_k` 1 to 60 by text weight 0.2 to 1) on the tuning half of the labelled set
    /// in `tests/data/recall.json` (the crate README has the sweep): the vector ranking leads,
    /// and BM25 lifts entries that share a rare token (a ticket id, a name) with the query.
    pub text_weight: f32,
    /// Indexed entries from which vector search uses an approximate (IVF-HNSW) index, built
    /// by [`VectorProvider::optimize`]; below it, exact brute force is fast enough. Default
    /// 10,000.
    pub ann_index_rows: usize,
}

impl Default for RecallConfig {
    fn default() -> Self {
        RecallConfig {
            k: 8,
            candidates: 50,
            rrf_k: 5.0,
            vector_weight: 1.0,
            text_weight: 0.5,
            ann_index_rows: 10_000,
        }
    }
}

impl RecallConfig {
    /// Fuses two rankings of entry hashes (best first; either may be empty) by weighted
    /// reciprocal rank: an entry at rank `r` (from 1) of a ranking scores `weight / (rrf_k + r)`,
    /// summed over the rankings. Returns at most `limit` hashes, best first; ties go to the
    /// smaller hash, so the result is deterministic.
    pub fn fuse(&self, vector: &[String], text: &[String], limit: usize) -> Vec<String> {
        let mut scores: HashMap<&str, f32> = HashMap::new();
        for (weight, ranking) in [(self.vector_weight, vector), (self.text_weight, text)] {
            let mut seen = HashSet::new();
            let distinct = ranking.iter().filter(|hash| seen.insert(hash.as_str()));
            for (rank, hash) in distinct.enumerate() {
                *scores.entry(hash).or_default() += weight / (self.rrf_k + rank as f32 + 1.0);
            }
        }
        let mut ranked: Vec<(&str, f32)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        ranked
            .into_iter()
            .take(limit)
            .map(|(hash, _)| hash.to_owned())
            .collect()
    }
}

/// Which rankings a recall uses; [`Ranking::Hybrid`] is what `prefetch` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    /// Nearest vectors only.
    Vector,
    /// BM25 full-text only.
    FullText,
    /// Both, fused by weighted reciprocal rank.
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
}

/// A source-of-truth provider with a recall index beside it.
pub struct VectorProvider {
    source: Arc<dyn MemoryProvider>,
    table: EntryTable,
    embedder: Arc<Embedder>,
    recall: RecallConfig,
    /// Index updates of this process, one at a time: each is a read-diff-write of the table.
    updating: tokio::sync::Mutex<()>,
    /// Per document: refreshes asked for, and the latest ask a finished refresh covered. A
    /// refresh reads the source after every ask up to the one it starts at, so writers that
    /// queued behind it need no refresh of their own.
    asks: std::sync::Mutex<HashMap<DocumentId, (u64, u64)>>,
}

impl std::fmt::Debug for VectorProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorProvider")
            .field("embedder", &self.embedder)
            .field("recall", &self.recall)
            .finish_non_exhaustive()
    }
}

impl VectorProvider {
    /// Opens (or creates) the index in `index_dir` over `source`. Rows embedded by another model
    /// are detected and their documents re-embedded before this returns.
    ///
    /// # Errors
    /// [`MemoryError::Unavailable`] when the index directory cannot be opened.
    pub async fn open(
        source: Arc<dyn MemoryProvider>,
        index_dir: &Path,
        embedder: Arc<Embedder>,
        recall: RecallConfig,
    ) -> Result<Self, MemoryError> {
        let provider = VectorProvider {
            source,
            table: EntryTable::open(index_dir, recall.ann_index_rows).await?,
            embedder,
            recall,
            updating: tokio::sync::Mutex::new(()),
            asks: std::sync::Mutex::default(),
        };
        if provider
            .table
            .has_rows_of_other_models(provider.embedder.id())
            .await?
        {
            provider.reindex().await?;
        }
        Ok(provider)
    }

    /// Brings the index in line with every document of the source, and drops what the source
    /// no longer has. Returns how many memory documents were indexed.
    pub async fn reindex(&self) -> Result<usize, MemoryError> {
        self.reindex_with_progress(|_, _| {}).await
    }

    /// [`VectorProvider::reindex`], calling `progress(done, total)` after each memory document
    /// (and once with `done == 0` before the first), for a progress bar.
    pub async fn reindex_with_progress(
        &self,
        mut progress: impl FnMut(usize, usize) + Send,
    ) -> Result<usize, MemoryError> {
        let documents: Vec<DocumentId> = self
            .source
            .list()
            .await?
            .into_iter()
            .filter(|id| id.store() == Store::Memory)
            .collect();
        let known: HashSet<String> = documents.iter().map(DocumentId::relative_path).collect();
        for stale in self.table.scopes().await? {
            if !known.contains(&stale) {
                self.table.clear(&stale).await?;
            }
        }
        progress(0, documents.len());
        for (done, document) in documents.iter().enumerate() {
            self.refresh(document).await?;
            progress(done + 1, documents.len());
        }
        Ok(documents.len())
    }

    fn asks(&self) -> std::sync::MutexGuard<'_, HashMap<DocumentId, (u64, u64)>> {
        self.asks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Brings the index of `document` up to what the source holds now, unless a refresh that
    /// started after this call already did.
    async fn refresh(&self, document: &DocumentId) -> Result<(), MemoryError> {
        let ask = {
            let mut asks = self.asks();
            let (asked, _) = asks.entry(document.clone()).or_default();
            *asked += 1;
            *asked
        };
        let _one_at_a_time = self.updating.lock().await;
        let covers = {
            let asks = self.asks();
            let (asked, covered) = asks.get(document).copied().unwrap_or_default();
            if covered >= ask {
                return Ok(());
            }
            asked
        };
        self.diff_and_apply(document).await?;
        let mut asks = self.asks();
        let (_, covered) = asks.entry(document.clone()).or_default();
        *covered = (*covered).max(covers);
        Ok(())
    }

    /// Compacts the index, drops old versions, builds the ANN index once there are
    /// `ann_index_rows` entries, and folds new rows into the indices. Runs by itself every 32
    /// index writes; call it after a bulk load.
    pub async fn optimize(&self) -> Result<(), MemoryError> {
        self.table.optimize().await
    }

    /// What the index holds: rows per document path, and the models that embedded them.
    pub async fn index_status(&self) -> Result<IndexStatus, MemoryError> {
        let mut status = IndexStatus::default();
        for scope in self.table.scopes().await? {
            let rows = self.table.rows(&scope).await?;
            for row in &rows {
                if !status.models.contains(&row.model) {
                    status.models.push(row.model.clone());
                }
            }
            status.rows.insert(scope, rows.len());
        }
        status.models.sort();
        status.ann_index = self.table.has_index_on("vector").await?;
        Ok(status)
    }

    /// Diffs `document`'s entries in the source against the index and applies the difference.
    async fn diff_and_apply(&self, document: &DocumentId) -> Result<(), MemoryError> {
        let scope = document.relative_path();
        let current = entries(&self.source.read(document).await?.text);
        let model = self.embedder.id().to_owned();
        let rows = self.table.rows(&scope).await?;
        let indexed: HashSet<&str> = rows
            .iter()
            .filter(|row| row.model == model)
            .map(|row| row.hash.as_str())
            .collect();
        let wanted: HashSet<&str> = current.iter().map(|e| e.hash.as_str()).collect();
        // Rows of another model go too: a document's vectors all come from one model.
        let removed: Vec<String> = rows
            .iter()
            .filter(|row| row.model != model || !wanted.contains(row.hash.as_str()))
            .map(|row| row.hash.clone())
            .collect();
        let new: Vec<Entry> = current
            .into_iter()
            .filter(|entry| !indexed.contains(entry.hash.as_str()))
            .collect();
        let vectors = self
            .embed(new.iter().map(|e| e.text.clone()).collect())
            .await?;
        let added: Vec<(Entry, Vec<f32>)> = new.into_iter().zip(vectors).collect();
        self.table
            .apply(&scope, "memory", &model, &added, &removed)
            .await
    }

    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, MemoryError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let embedder = Arc::clone(&self.embedder);
        tokio::task::spawn_blocking(move || embedder.embed(&texts))
            .await
            .map_err(|err| MemoryError::unavailable("the embedding task", err))?
    }

    /// The hashes of the entries of `document` that best match `query` by `ranking`, best
    /// first, at most `limit`.
    pub async fn recall(
        &self,
        document: &DocumentId,
        query: &str,
        ranking: Ranking,
        limit: usize,
    ) -> Result<Vec<String>, MemoryError> {
        let scope = document.relative_path();
        let candidates = self.recall.candidates.max(limit);
        let vector = match ranking {
            Ranking::FullText => Vec::new(),
            _ => {
                let query = self.embed(vec![query.to_owned()]).await?.remove(0);
                self.table.nearest(&scope, &query, candidates).await?
            }
        };
        let text = match ranking {
            Ranking::Vector => Vec::new(),
            _ => self.table.full_text(&scope, query, candidates).await?,
        };
        Ok(self.recall.fuse(&vector, &text, limit))
    }

    /// `memory` cut to the `k` entries that best match `query`, in document order.
    async fn recalled(&self, memory: &Document, query: &str) -> Result<String, MemoryError> {
        let all = entries(&memory.text);
        if all.len() <= self.recall.k {
            return Ok(memory.text.clone());
        }
        // Ask for a few more than k: the index may still hold entries the source has lost.
        let ranked = self
            .recall(&memory.id, query, Ranking::Hybrid, self.recall.k * 2)
            .await?;
        let present: HashSet<&str> = all.iter().map(|e| e.hash.as_str()).collect();
        let chosen: HashSet<&String> = ranked
            .iter()
            .filter(|hash| present.contains(hash.as_str()))
            .take(self.recall.k)
            .collect();
        Ok(all
            .iter()
            .filter(|entry| chosen.contains(&entry.hash))
            .map(|entry| entry.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n"))
    }
}

#[async_trait]
impl Recall for VectorProvider {
    async fn search(
        &self,
        document: &DocumentId,
        query: &str,
        limit: usize,
    ) -> Result<Vec<String>, MemoryError> {
        // Ask for a few more than `limit`: the index may still hold entries the source has lost.
        let ranked = self
            .recall(document, query, Ranking::Hybrid, limit * 2)
            .await?;
        let current = entries(&self.source.read(document).await?.text);
        let by_hash: HashMap<&str, &str> = current
            .iter()
            .map(|entry| (entry.hash.as_str(), entry.text.as_str()))
            .collect();
        Ok(ranked
            .iter()
            .filter_map(|hash| by_hash.get(hash.as_str()))
            .take(limit)
            .map(|text| (*text).to_owned())
            .collect())
    }
}

#[async_trait]
impl MemoryProvider for VectorProvider {
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        let Some(query) = ctx.query.as_deref().filter(|q| !q.trim().is_empty()) else {
            return self.source.prefetch(ctx).await;
        };
        let memory = self.source.read(&ctx.document(Store::Memory)).await?;
        let user = self.source.read(&ctx.document(Store::User)).await?;
        // Recall is an aid: if the index fails, the agent still gets its whole memory.
        let text = match self.recalled(&memory, query).await {
            Ok(text) => text,
            Err(_) => memory.text.clone(),
        };
        Ok(Prefetch {
            context: render(&user.text, &text, ctx.max_chars),
            memory: memory.meta(),
            user: user.meta(),
        })
    }

    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        let mut report = self.source.sync(ctx, updates, if_match).await?;
        let written: Vec<DocumentId> = report
            .documents
            .iter()
            .filter(|d| d.written && d.store == Store::Memory)
            .map(|d| d.document.clone())
            .collect();
        for document in written {
            if let Err(err) = self.refresh(&document).await {
                report.warnings.push(format!(
                    "the recall index of {document} is stale ({err}); the next sync or reindex repairs it"
                ));
            }
        }
        Ok(report)
    }

    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        self.source.read(document).await
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        self.source.list().await
    }

    fn subscribe(&self) -> Subscription {
        self.source.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn fusion_rewards_agreement_and_respects_the_weights() {
        let equal = RecallConfig {
            rrf_k: 5.0,
            vector_weight: 1.0,
            text_weight: 1.0,
            ..RecallConfig::default()
        };
        let vector = hashes(&["a", "b", "c"]);
        let text = hashes(&["c", "d", "b"]);
        // b: 1/7 + 1/8, c: 1/8 + 1/6, a: 1/6, d: 1/7.
        assert_eq!(
            equal.fuse(&vector, &text, 10),
            hashes(&["c", "b", "a", "d"])
        );
        assert_eq!(equal.fuse(&vector, &text, 2), hashes(&["c", "b"]));

        let text_ignored = RecallConfig {
            text_weight: 0.0,
            ..equal
        };
        assert_eq!(
            text_ignored.fuse(&vector, &text, 3),
            hashes(&["a", "b", "c"])
        );
        assert_eq!(
            equal.fuse(&[], &text, 10),
            text,
            "one ranking alone is kept"
        );
    }

    #[test]
    fn fusion_counts_a_repeated_hash_once_and_breaks_ties_by_hash() {
        let default = RecallConfig::default();
        assert_eq!(
            default.fuse(&hashes(&["x", "x", "y"]), &[], 10),
            hashes(&["x", "y"])
        );
        let (vector, text) = (hashes(&["q"]), hashes(&["p"]));
        assert_eq!(
            default.fuse(&vector, &text, 10),
            hashes(&["q", "p"]),
            "the vector ranking weighs more by default"
        );
        let equal = RecallConfig {
            text_weight: default.vector_weight,
            ..default
        };
        assert_eq!(equal.fuse(&vector, &text, 10), hashes(&["p", "q"]));
    }
}
