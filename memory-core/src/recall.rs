//! The capability a provider adds when it can rank entries by relevance.

use async_trait::async_trait;

use crate::document::DocumentId;
use crate::error::MemoryError;
use crate::note::path::NotePath;

/// A provider that can search a document's entries (its list items, paragraphs and
/// `§`-separated notes, each as written) by relevance to a query: what an agent's
/// `memory_search` tool needs. A `MEMORY.md` is searched together with the notes of its scope.
///
/// Separate from [`crate::MemoryProvider`] because most providers cannot do it; callers that
/// can use it take an `Option<Arc<dyn Recall>>`.
#[async_trait]
pub trait Recall: Send + Sync {
    /// The entries of `document` that best match `query`, best first, at most `limit`, and
    /// every entry the ranking could not cover.
    ///
    /// # Behavior
    /// - Returns the entries' current text as the source of truth holds it; an entry the index
    ///   still has but the document no longer holds is never returned.
    /// - Only entries of `document` are ever returned, and for a `MEMORY.md` those of the
    ///   notes of its scope (ranked with its own, each naming its note).
    /// - Never hides an entry for lack of indexing: the index first catches up with the
    ///   document and its notes as the source holds them now (hand edits, other processes and
    ///   hosts included). When it cannot within its time budget, or fails, the entries it has
    ///   not covered are returned too, unranked, and [`Recalled::behind`] says why.
    async fn search(
        &self,
        document: &DocumentId,
        query: &str,
        limit: usize,
    ) -> Result<Recalled, MemoryError>;
}

/// What [`Recall::search`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recalled {
    /// The best entries, best first, at most the limit asked for.
    pub ranked: Vec<RecalledEntry>,
    /// Entries the ranking could not cover (not indexed yet), in document order, the document
    /// searched first; empty unless [`Recalled::behind`] is set.
    pub unranked: Vec<RecalledEntry>,
    /// Why the ranking does not cover the whole document, for the reader; `None` when it does.
    pub behind: Option<String>,
}

/// One entry [`Recall::search`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecalledEntry {
    /// Its current text.
    pub text: String,
    /// The note it is in, or `None` for the document searched.
    pub note: Option<NotePath>,
}

impl RecalledEntry {
    /// An entry of the document searched.
    pub fn of_document(text: impl Into<String>) -> Self {
        RecalledEntry {
            text: text.into(),
            note: None,
        }
    }
}
