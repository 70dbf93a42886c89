//! The capability a provider adds when it can rank entries by relevance.

use async_trait::async_trait;

use crate::document::DocumentId;
use crate::error::MemoryError;

/// A provider that can search a document's entries (its list items, paragraphs and
/// `§`-separated notes, each as written) by relevance to a query: what an agent's
/// `memory_search` tool needs.
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
    /// - Only entries of `document` are ever returned.
    /// - Never hides an entry for lack of indexing: the index first catches up with the
    ///   document as the source holds it now (hand edits, other processes and hosts included).
    ///   When it cannot within its time budget, or fails, the entries it has not covered are
    ///   returned too, unranked, and [`Recalled::behind`] says why.
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
    /// The best entries' current text, best first, at most the limit asked for.
    pub ranked: Vec<String>,
    /// Entries the ranking could not cover (not indexed yet), in document order; empty unless
    /// [`Recalled::behind`] is set.
    pub unranked: Vec<String>,
    /// Why the ranking does not cover the whole document, for the reader; `None` when it does.
    pub behind: Option<String>,
}
