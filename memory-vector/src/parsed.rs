//! Documents as queries use them (entries, where each entry is by hash, the weights of their
//! words), made once per state of a document and kept for the next queries.
//!
//! Every query still reads the source: the document it reads is what is shown, and a kept
//! parse is used only if it was made from exactly that text (same document, same version, same
//! bytes). A hand edit, a write by another process or a raw edit of a stored row that forgot to
//! bump the version all change the text, so the next query parses afresh.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use memory_core::{Document, DocumentId, Version};

use crate::entries::{Entry, entries};
use crate::terms::TermStats;

/// Documents kept: enough for the memories one process answers for at once, few enough not to
/// grow with every user it has served.
const KEPT: usize = 16;

/// Bytes of text kept over all documents (each kept document costs some five times its text
/// with its entries and their hashes); the document parsed last is kept whatever its size.
const KEPT_BYTES: usize = 32 << 20;

/// One state of a document, parsed.
pub(crate) struct Parsed {
    id: DocumentId,
    version: Version,
    /// The text the entries were split from: a later read is this state only if its text is
    /// the same.
    text: String,
    entries: Vec<Entry>,
    /// Entry hash to its position in `entries`.
    position: HashMap<String, usize>,
    /// Made by the first query that weighs words: a catch-up needs only the entries.
    stats: OnceLock<TermStats>,
}

impl std::fmt::Debug for Parsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parsed")
            .field("id", &self.id)
            .field("version", &self.version)
            .field("entries", &self.entries.len())
            .finish_non_exhaustive()
    }
}

impl Parsed {
    /// Splits `document` into its entries.
    pub fn of(document: &Document) -> Parsed {
        let entries = entries(&document.text);
        let position = entries
            .iter()
            .enumerate()
            .map(|(i, entry)| (entry.hash.clone(), i))
            .collect();
        Parsed {
            id: document.id.clone(),
            version: document.version.clone(),
            text: document.text.clone(),
            entries,
            position,
            stats: OnceLock::new(),
        }
    }

    /// Whether this was made from exactly `document` as read now.
    fn is_of(&self, document: &Document) -> bool {
        self.id == document.id && self.version == document.version && self.text == document.text
    }

    /// The document's entries, in order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Which document this is.
    pub fn id(&self) -> &DocumentId {
        &self.id
    }

    /// The position in [`Parsed::entries`] of the entry hashing to `hash`.
    pub fn position(&self, hash: &str) -> Option<usize> {
        self.position.get(hash).copied()
    }

    /// The entry hashing to `hash`.
    pub fn entry(&self, hash: &str) -> Option<&Entry> {
        self.position(hash).and_then(|i| self.entries.get(i))
    }

    /// How many entries hold each word, made on first use.
    pub fn stats(&self) -> &TermStats {
        self.stats
            .get_or_init(|| TermStats::of(self.entries.iter().map(Entry::indexed)))
    }

    fn has_stats(&self) -> bool {
        self.stats.get().is_some()
    }
}

/// The documents parsed last, most recently used last.
#[derive(Debug, Default)]
pub(crate) struct ParsedCache {
    kept: Mutex<Vec<Arc<Parsed>>>,
}

impl ParsedCache {
    /// `document` parsed: the kept parse of exactly this text, or a new one (kept in place of
    /// any older state of the document). Splitting a large document takes a while: it is done
    /// on the blocking pool, with the word statistics too when `with_stats` (a query).
    pub async fn parsed(&self, document: &Document, with_stats: bool) -> Arc<Parsed> {
        let parsed = match self.get(document) {
            Some(kept) => kept,
            None => {
                let document = document.clone();
                let parse = move || Arc::new(Parsed::of(&document));
                let parsed = match tokio::task::spawn_blocking(parse.clone()).await {
                    Ok(parsed) => parsed,
                    // The blocking pool is gone (a runtime shutting down): parse here.
                    Err(_) => parse(),
                };
                self.keep(Arc::clone(&parsed));
                parsed
            }
        };
        if with_stats {
            Self::weighed(parsed).await
        } else {
            parsed
        }
    }

    /// `parsed` with its word statistics made, on the blocking pool if not yet.
    pub async fn weighed(parsed: Arc<Parsed>) -> Arc<Parsed> {
        if !parsed.has_stats() {
            let weighing = Arc::clone(&parsed);
            let weigh = move || {
                weighing.stats();
            };
            if tokio::task::spawn_blocking(weigh).await.is_err() {
                parsed.stats();
            }
        }
        parsed
    }

    /// The kept parse of exactly `document`, marked as used last.
    fn get(&self, document: &Document) -> Option<Arc<Parsed>> {
        let mut kept = self.kept();
        let at = kept.iter().position(|parsed| parsed.is_of(document))?;
        let parsed = kept.remove(at);
        kept.push(Arc::clone(&parsed));
        Some(parsed)
    }

    /// Keeps `parsed` as used last, in place of any other state of its document, dropping
    /// the least recently used documents past [`KEPT`] or [`KEPT_BYTES`].
    fn keep(&self, parsed: Arc<Parsed>) {
        let mut kept = self.kept();
        kept.retain(|other| other.id != parsed.id);
        kept.push(parsed);
        while kept.len() > KEPT
            || (kept.len() > 1 && kept.iter().map(|p| p.text.len()).sum::<usize>() > KEPT_BYTES)
        {
            kept.remove(0);
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Parsed>>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::PersonalityId;

    fn id(personality: &str) -> DocumentId {
        DocumentId::PersonalityMemory {
            personality: PersonalityId::new(personality).unwrap(),
        }
    }

    fn document(id: &DocumentId, version: &str, text: &str) -> Document {
        Document {
            id: id.clone(),
            text: text.to_owned(),
            version: Version::new(version),
            location: String::new(),
            modified: None,
        }
    }

    fn texts(parsed: &Parsed) -> Vec<&str> {
        parsed.entries().iter().map(|e| e.text.as_str()).collect()
    }

    #[tokio::test]
    async fn the_same_text_is_parsed_once_and_a_new_version_afresh() {
        let cache = ParsedCache::default();
        let a = id("a");
        let v1 = document(&a, "1", "- one\n- two\n");
        let first = cache.parsed(&v1, false).await;
        let again = cache.parsed(&v1, true).await;
        assert!(Arc::ptr_eq(&first, &again), "a hit");
        assert!(again.has_stats(), "a query's hit gets its word statistics");
        assert_eq!(again.position(&again.entries()[1].hash), Some(1));
        assert_eq!(again.entry(&again.entries()[0].hash).unwrap().text, "- one");
        let v2 = document(&a, "2", "- one\n- two\n- three\n");
        let second = cache.parsed(&v2, true).await;
        assert!(!Arc::ptr_eq(&first, &second), "a new version is no hit");
        assert_eq!(texts(&second), ["- one", "- two", "- three"]);
        assert_eq!(
            cache.kept().len(),
            1,
            "the old state of the document is dropped"
        );
        // Back to the old text (a revert): parsed again, never a stale state.
        let reverted = cache.parsed(&v1, true).await;
        assert_eq!(texts(&reverted), ["- one", "- two"]);
    }

    #[tokio::test]
    async fn an_edit_that_kept_the_version_is_seen() {
        let cache = ParsedCache::default();
        let a = id("a");
        cache.parsed(&document(&a, "7", "- one\n"), true).await;
        // A raw edit of a stored row that did not bump the version: the text tells.
        let edited = cache
            .parsed(&document(&a, "7", "- one\n- added by hand\n"), true)
            .await;
        assert_eq!(texts(&edited), ["- one", "- added by hand"]);
        // Same length, other bytes.
        let same_length = cache.parsed(&document(&a, "7", "- uno\n"), false).await;
        assert_eq!(texts(&same_length), ["- uno"]);
    }

    #[tokio::test]
    async fn documents_are_kept_apart_and_the_least_recently_used_goes() {
        let cache = ParsedCache::default();
        let docs: Vec<Document> = (0..=KEPT)
            .map(|i| document(&id(&format!("p{i}")), "1", &format!("- note {i}\n")))
            .collect();
        let first = cache.parsed(&docs[0], false).await;
        let other = cache.parsed(&docs[1], false).await;
        assert_eq!(texts(&other), ["- note 1"], "same version, other document");
        for doc in &docs[2..] {
            cache.parsed(doc, false).await;
        }
        assert_eq!(cache.kept().len(), KEPT);
        assert!(
            cache.get(&docs[0]).is_none(),
            "the least recently used went"
        );
        assert!(!Arc::ptr_eq(&first, &cache.parsed(&docs[0], false).await));
    }

    #[tokio::test]
    async fn a_large_document_is_kept_alone() {
        let cache = ParsedCache::default();
        let small = document(&id("small"), "1", "- small\n");
        cache.parsed(&small, false).await;
        // One long entry, not millions of short ones: the size is what counts, and a debug
        // build takes a minute to split 32 MiB of one-word items.
        let large_text = format!("- {}\n", "x".repeat(KEPT_BYTES));
        let large = document(&id("large"), "1", &large_text);
        let parsed = cache.parsed(&large, false).await;
        assert!(Arc::ptr_eq(&parsed, &cache.parsed(&large, false).await));
        assert_eq!(cache.kept().len(), 1, "the small one made room");
    }
}
