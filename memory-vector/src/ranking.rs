//! Ranking and selection: the entries of a document that best match a query, by nearest
//! vectors, BM25, or both fused by score; and which of them a query shows, beside any the
//! index has not covered yet.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use memory_core::{Document, DocumentId, MemoryError};

use crate::coverage::Mark;
use crate::indexer::{Indexer, Snapshot};
use crate::parsed::{Parsed, ParsedCache};
use crate::terms;

/// Which rankings a recall uses; [`Ranking::Hybrid`] is what `prefetch` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    /// Nearest vectors only.
    Vector,
    /// BM25 full-text only.
    FullText,
    /// Both, fused by score: see [`RecallConfig`].
    ///
    /// [`RecallConfig`]: crate::RecallConfig
    Hybrid,
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

/// What a query picked, as positions among the document's entries.
pub(crate) struct Picked {
    /// Best first.
    pub ranked: Vec<usize>,
    /// Entries the ranking could not cover, in document order (only when the index is behind).
    pub unranked: Vec<usize>,
}

/// A document as a query was answered from it: its entries and the ones picked.
pub(crate) struct Selection {
    pub document: Document,
    pub parsed: Arc<Parsed>,
    pub picked: Picked,
    /// Why `picked.unranked` is not empty (the index behind, or failing); `None` when the
    /// ranking covered the whole document.
    pub behind: Option<String>,
}

/// How often a query is tried when the index changes under it or fails: a catch-up that
/// started meanwhile, a version dropped by housekeeping under a reader. After that, the whole
/// document is shown.
const QUERY_ATTEMPTS: usize = 2;

impl Indexer {
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
    pub async fn rank(
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
    pub async fn select(
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
}
