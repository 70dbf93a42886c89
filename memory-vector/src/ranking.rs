//! Ranking and selection: the entries of a document that best match a query, by nearest
//! vectors, BM25, or both fused by score; and which of them a query shows, beside any the
//! index has not covered yet.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use memory_core::{Document, DocumentId, MemoryError, NoteMeta, NotePath, Store};

use crate::coverage::{self, Mark};
use crate::index::Hit;
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

/// Fuses the nearest entries (keys with their cosine similarity, best first) and the BM25
/// ranking (keys, best first); either may be empty. Each entry found by either is scored
/// `vector_weight × similarity + (1 − vector_weight) × coverage(key)`, where an entry BM25
/// found but the vector search did not is given the lowest similarity the vector search
/// returned (its own is at most that). Returns at most `limit` keys, best first; ties go to
/// the smaller key, so the result is deterministic.
fn fuse<K: Ord + std::hash::Hash + Clone>(
    vector_weight: f32,
    nearest: &[(K, f32)],
    text: &[K],
    coverage: impl Fn(&K) -> f32,
    limit: usize,
) -> Vec<K> {
    let floor = nearest
        .iter()
        .map(|(_, similarity)| *similarity)
        .fold(None, |low: Option<f32>, s| {
            Some(low.map_or(s, |low| low.min(s)))
        })
        .unwrap_or(0.0);
    let mut similarity: HashMap<&K, f32> = HashMap::new();
    for (key, s) in nearest {
        similarity.entry(key).or_insert(*s);
    }
    for key in text {
        similarity.entry(key).or_insert(floor);
    }
    let mut ranked: Vec<(&K, f32)> = similarity
        .into_iter()
        .map(|(key, s)| {
            let score = vector_weight * s + (1.0 - vector_weight) * coverage(key);
            (key, score)
        })
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    ranked
        .into_iter()
        .take(limit)
        .map(|(key, _)| key.clone())
        .collect()
}

/// One document a query answered from: the document asked for, or a note of its scope.
pub(crate) struct Source {
    /// As the source holds it.
    pub document: Document,
    pub parsed: Arc<Parsed>,
}

impl Source {
    /// The note this is, or `None` for the document asked for.
    pub fn note(&self) -> Option<&NotePath> {
        self.document.id.note_path()
    }
}

/// An entry a query picked: the source (an index into [`Selection::sources`]) and its position
/// among that source's entries.
pub(crate) type At = (usize, usize);

/// What a query picked.
pub(crate) struct Picked {
    /// Best first.
    pub ranked: Vec<At>,
    /// Entries the ranking could not cover, in document order, the document asked for first
    /// (only when the index is behind).
    pub unranked: Vec<At>,
}

/// A document as a query was answered from it, with the notes of its scope that showed: their
/// entries and the ones picked.
pub(crate) struct Selection {
    /// The document asked for first, then each note with an entry picked.
    pub sources: Vec<Source>,
    pub picked: Picked,
    /// Why `picked.unranked` is not empty (the index behind, or failing); `None` when the
    /// ranking covered the whole document and its notes.
    pub behind: Option<String>,
    /// The notes of the document's scope as this query listed them (none for a document
    /// other than a `MEMORY.md`): what the prompt's index of notes names, from the same
    /// listing as the entries shown.
    pub listed: Vec<NoteMeta>,
}

impl Selection {
    /// The text of the entry at `at`.
    pub fn text(&self, (source, position): At) -> Option<&str> {
        let entry = self.sources.get(source)?.parsed.entries().get(position)?;
        Some(&entry.text)
    }
}

/// The notes of a query's scope as listed, against what the index covers of them.
struct NotesState {
    /// Notes whose rows reflect them as listed, with the mark they were listed at.
    covered: Vec<(DocumentId, Mark)>,
    /// Notes the index does not reflect (not caught up within the budget, or failing).
    behind: Vec<DocumentId>,
    /// Why `behind` is not empty.
    why: Option<String>,
}

/// How often a query waiting for notes that other catch-ups are indexing looks at the record.
const RECORD_POLL: Duration = Duration::from_millis(20);

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

    /// The candidates of `scopes` for `query` by `ranking`, from the index as it is now: the
    /// nearest by vector with their similarity, and the best by BM25, `candidates` each.
    async fn candidates(
        &self,
        scopes: &[String],
        query: &str,
        ranking: Ranking,
        candidates: usize,
    ) -> Result<(Vec<(Hit, f32)>, Vec<Hit>), MemoryError> {
        // The two searches run side by side: the query's embedding is made on the blocking
        // pool while the full-text search runs.
        let nearest = async {
            match ranking {
                Ranking::FullText => Ok(Vec::new()),
                _ => {
                    let vector = self.embed_query(query).await?;
                    self.table
                        .nearest(scopes, self.model(), &vector, candidates)
                        .await
                }
            }
        };
        let text = async {
            match ranking {
                Ranking::Vector => Ok(Vec::new()),
                _ => self.table.full_text(scopes, query, candidates).await,
            }
        };
        tokio::try_join!(nearest, text)
    }

    /// The best of `candidates` by `ranking`, at most `limit`, best first; each source's
    /// entries (`parsed`, by scope) weigh the query's words for its own.
    fn fused(
        &self,
        (nearest, text): (Vec<(Hit, f32)>, Vec<Hit>),
        parsed: &HashMap<String, Arc<Parsed>>,
        query: &str,
        ranking: Ranking,
        limit: usize,
    ) -> Vec<Hit> {
        let mut ranked: Vec<Hit> = match ranking {
            Ranking::Vector => nearest.into_iter().map(|(hit, _)| hit).collect(),
            Ranking::FullText => text,
            Ranking::Hybrid => {
                let query = terms::terms(query);
                let coverage = |(scope, hash): &Hit| {
                    parsed
                        .get(scope)
                        .and_then(|parsed| {
                            let entry = parsed.entry(hash)?;
                            Some(
                                parsed
                                    .stats()
                                    .coverage(&query, &terms::terms(&entry.indexed())),
                            )
                        })
                        .unwrap_or(0.0)
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
        ranked
    }

    /// The hashes of the best entries of `parsed` for `query` by `ranking`, from the index as
    /// it is now; the document's entries weigh the query's words.
    pub async fn rank(
        &self,
        parsed: &Arc<Parsed>,
        query: &str,
        ranking: Ranking,
        limit: usize,
    ) -> Result<Vec<String>, MemoryError> {
        let scope = parsed.id().relative_path();
        let candidates = self
            .candidates(
                std::slice::from_ref(&scope),
                query,
                ranking,
                self.recall.candidates.max(limit),
            )
            .await?;
        let parsed = HashMap::from([(scope, Arc::clone(parsed))]);
        Ok(self
            .fused(candidates, &parsed, query, ranking, limit)
            .into_iter()
            .map(|(_, hash)| hash)
            .collect())
    }

    /// `document` as the source holds it and up to `limit` of its entries for `query`, best
    /// first, with every entry the index did not cover; for a `MEMORY.md`, the notes of its
    /// scope are ranked with it, and each note an entry is picked from comes along.
    /// `whole_if_within`: a document of at most `limit` entries, in a scope without notes, is
    /// taken whole, unranked. A query the index changed under, or failed, is tried again; then
    /// the whole document and every note is taken, with the reason.
    pub async fn select(
        self: &Arc<Self>,
        document: &DocumentId,
        query: &str,
        limit: usize,
        whole_if_within: bool,
    ) -> Result<Selection, MemoryError> {
        let mut why = String::new();
        let listed = self.listed_beside(document).await?;
        let beside = self.marked(document, &listed);
        for _ in 0..QUERY_ATTEMPTS {
            let snapshot = self.current(document).await?;
            let notes = self.current_notes(document, &beside).await?;
            let parsed = self
                .parsed
                .parsed(&snapshot.document, !whole_if_within)
                .await;
            let count = parsed.entries().len();
            let no_notes = notes.covered.is_empty() && notes.behind.is_empty();
            if whole_if_within && no_notes && count <= limit {
                let picked = Picked {
                    ranked: (0..count).map(|i| (0, i)).collect(),
                    unranked: Vec::new(),
                };
                return Ok(Selection {
                    sources: vec![Source {
                        document: snapshot.document,
                        parsed,
                    }],
                    picked,
                    behind: None,
                    listed,
                });
            }
            // Ranked: the words' weights are wanted too (made once per state of the text).
            let parsed = ParsedCache::weighed(parsed).await;
            match self.pick(snapshot, parsed, &notes, query, limit).await {
                Ok(Some(selection)) => {
                    return Ok(Selection {
                        listed,
                        ..selection
                    });
                }
                Ok(None) => why = "the recall index kept changing while it was read".to_owned(),
                Err(err) => why = format!("the recall index failed ({err})"),
            }
        }
        let document = self.source.read(document).await?;
        let mut sources = vec![self.source_of(document).await];
        for (note, _) in &beside {
            let read = self.source.read(note).await?;
            sources.push(self.source_of(read).await);
        }
        let unranked = every_entry(&sources);
        Ok(Selection {
            sources,
            picked: Picked {
                ranked: Vec::new(),
                unranked,
            },
            behind: Some(why),
            listed,
        })
    }

    /// `document` parsed and weighed. A note's parse is not kept: a query may read a hundred
    /// notes, which would push MEMORY.md's (the one worth keeping) out of the few kept, and a
    /// note is small.
    async fn source_of(&self, document: Document) -> Source {
        let parsed = if document.id.note_path().is_some() {
            ParsedCache::weighed(Arc::new(Parsed::of(&document))).await
        } else {
            self.parsed.parsed(&document, true).await
        };
        Source { document, parsed }
    }

    /// The notes ranked with `document`, as the source lists them now: those of its scope
    /// for a `MEMORY.md`, else none.
    async fn listed_beside(&self, document: &DocumentId) -> Result<Vec<NoteMeta>, MemoryError> {
        if document.store() != Store::Memory || document.note_path().is_some() {
            return Ok(Vec::new());
        }
        self.source.notes(&document.scope(), "").await
    }

    /// Each of `listed` (notes beside `document`) with the mark of its listing.
    fn marked(&self, document: &DocumentId, listed: &[NoteMeta]) -> Vec<(DocumentId, Mark)> {
        let scope = document.scope();
        listed
            .iter()
            .map(|note| {
                let mark = Mark::listed(note, self.model());
                (scope.note(note.path.clone()), mark)
            })
            .collect()
    }

    /// The notes ranked with `document` (`listed`, each with its mark), with the index
    /// brought up to each one that is behind first, waited for up to the time budget (the
    /// catch-ups go on in the background after it).
    async fn current_notes(
        self: &Arc<Self>,
        document: &DocumentId,
        listed: &[(DocumentId, Mark)],
    ) -> Result<NotesState, MemoryError> {
        let mut state = NotesState {
            covered: Vec::new(),
            behind: Vec::new(),
            why: None,
        };
        let is_covered = |record: &coverage::Record, (id, mark): &(DocumentId, Mark)| {
            record.documents.get(&id.relative_path()) == Some(mark)
        };
        let mut record = self.coverage.read();
        if listed.iter().any(|note| !is_covered(&record, note)) {
            let budget = Duration::from_millis(self.recall.catch_up_ms);
            let until = tokio::time::Instant::now() + budget;
            // Queued, so that queries while a scope's notes are indexed do not pile up
            // catch-ups of the same notes. Those this query queued are waited for; one queued
            // earlier is watched for in the record, within the same budget.
            let catching_up: Vec<_> = listed
                .iter()
                .filter(|note| !is_covered(&record, note))
                .filter_map(|(id, _)| self.queue(id.clone()))
                .collect();
            let _ = tokio::time::timeout_at(until, futures::future::join_all(catching_up)).await;
            record = self.coverage.read();
            while listed.iter().any(|note| !is_covered(&record, note))
                && tokio::time::Instant::now() < until
            {
                tokio::time::sleep(RECORD_POLL).await;
                record = self.coverage.read();
            }
        }
        for note in listed {
            if is_covered(&record, note) {
                state.covered.push(note.clone());
            } else {
                state.behind.push(note.0.clone());
            }
        }
        if !state.behind.is_empty() {
            state.why = Some(format!(
                "the recall index is still catching up with {} note{} beside {document} (past its {} ms budget, or failing: see `memory reindex`)",
                state.behind.len(),
                if state.behind.len() == 1 { "" } else { "s" },
                self.recall.catch_up_ms
            ));
        }
        Ok(state)
    }

    /// Up to `limit` entries of the snapshot (`parsed`) and its covered notes for `query`,
    /// best first; and every entry the index has not covered: of the document when it is
    /// behind, of each note behind. `None` when the ranking trusted the coverage record and a
    /// catch-up changed the table meanwhile: ask again.
    async fn pick(
        &self,
        snapshot: Snapshot,
        parsed: Arc<Parsed>,
        notes: &NotesState,
        query: &str,
        limit: usize,
    ) -> Result<Option<Selection>, MemoryError> {
        let scope = snapshot.document.id.relative_path();
        let before = match snapshot.behind {
            Some(_) => Some(self.indexed(&scope).await?),
            None => None,
        };
        let mut scopes = vec![scope.clone()];
        scopes.extend(notes.covered.iter().map(|(id, _)| id.relative_path()));
        // Ask for more than `limit`: the index may still hold entries the source has lost.
        let wanted = limit.saturating_mul(2);
        let candidates = self
            .candidates(
                &scopes,
                query,
                Ranking::Hybrid,
                self.recall.candidates.max(wanted),
            )
            .await?;
        // The notes among the candidates, read: what they hold now is what is shown.
        let mut sources = vec![Source {
            document: snapshot.document,
            parsed,
        }];
        let mut source_of_scope = HashMap::from([(scope.clone(), 0)]);
        let mut changed_notes = Vec::new();
        let found: BTreeSet<&String> = candidates
            .0
            .iter()
            .map(|((scope, _), _)| scope)
            .chain(candidates.1.iter().map(|(scope, _)| scope))
            .collect();
        for (id, mark) in &notes.covered {
            let note_scope = id.relative_path();
            if !found.contains(&note_scope) {
                continue;
            }
            let read = self.source.read(id).await?;
            if Mark::of(&read, self.model()) != *mark {
                // Written since it was listed: its entries are shown unranked below.
                changed_notes.push(read);
                continue;
            }
            source_of_scope.insert(note_scope, sources.len());
            sources.push(self.source_of(read).await);
        }
        let parsed: HashMap<String, Arc<Parsed>> = source_of_scope
            .iter()
            .map(|(scope, at)| (scope.clone(), Arc::clone(&sources[*at].parsed)))
            .collect();
        let hits = self.fused(candidates, &parsed, query, Ranking::Hybrid, wanted);
        let ranked: Vec<At> = hits
            .iter()
            .filter_map(|(scope, hash)| {
                let at = *source_of_scope.get(scope)?;
                Some((at, sources[at].parsed.position(hash)?))
            })
            .take(limit)
            .collect();
        let mut unranked: Vec<At> = match before {
            None => {
                // A catch-up withdraws the record before it changes the table: if it is still
                // the one trusted, the ranking saw the rows of exactly this document.
                let mark = Mark::of(&sources[0].document, self.model());
                if self.coverage.read().documents.get(&scope) != Some(&mark) {
                    return Ok(None);
                }
                Vec::new()
            }
            Some(before) => {
                // Rows a catch-up adds or deletes while the ranking runs may not have been
                // ranked: only rows there before and after count as covered.
                let after = self.indexed(&scope).await?;
                let all = sources[0].parsed.entries();
                (0..all.len())
                    .filter(|i| {
                        let hash = &all[*i].hash;
                        let covered = before.contains(hash) && after.contains(hash);
                        !covered && !ranked.contains(&(0, *i))
                    })
                    .map(|i| (0, i))
                    .collect()
            }
        };
        // The same for the notes: each covered note's record still the one trusted.
        let record = self.coverage.read();
        if notes
            .covered
            .iter()
            .any(|(id, mark)| record.documents.get(&id.relative_path()) != Some(mark))
        {
            return Ok(None);
        }
        // The notes the index does not reflect: every entry of each, unranked.
        let mut behind = snapshot.behind.or_else(|| notes.why.clone());
        for id in &notes.behind {
            changed_notes.push(self.source.read(id).await?);
        }
        for read in changed_notes {
            behind.get_or_insert_with(|| {
                format!("{} was written while the recall index was read", read.id)
            });
            let at = sources.len();
            sources.push(self.source_of(read).await);
            unranked.extend((0..sources[at].parsed.entries().len()).map(|i| (at, i)));
        }
        // Only the notes something was picked from come along.
        let shown: BTreeSet<usize> = ranked.iter().chain(&unranked).map(|(at, _)| *at).collect();
        let renumbered: HashMap<usize, usize> = std::iter::once(0)
            .chain(shown.iter().copied().filter(|at| *at != 0))
            .enumerate()
            .map(|(new, old)| (old, new))
            .collect();
        let renumber = |picked: Vec<At>| -> Vec<At> {
            picked
                .into_iter()
                .filter_map(|(at, i)| Some((*renumbered.get(&at)?, i)))
                .collect()
        };
        let (ranked, unranked) = (renumber(ranked), renumber(unranked));
        let sources = sources
            .into_iter()
            .enumerate()
            .filter(|(at, _)| renumbered.contains_key(at))
            .map(|(_, source)| source)
            .collect();
        Ok(Some(Selection {
            sources,
            picked: Picked { ranked, unranked },
            behind,
            listed: Vec::new(),
        }))
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

/// Every entry of `sources`, in order.
fn every_entry(sources: &[Source]) -> Vec<At> {
    sources
        .iter()
        .enumerate()
        .flat_map(|(at, source)| (0..source.parsed.entries().len()).map(move |i| (at, i)))
        .collect()
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

    fn covering(of: &[(&str, f32)]) -> impl Fn(&String) -> f32 {
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
