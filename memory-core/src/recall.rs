//! The capability a provider adds when it can rank entries by relevance.

use async_trait::async_trait;

use crate::{DocumentId, MemoryError};

/// A provider that can search a document's entries (its blank-line-separated paragraphs) by
/// relevance to a query: what an agent's `memory_search` tool needs.
///
/// Separate from [`crate::MemoryProvider`] because most providers cannot do it; callers that
/// can use it take an `Option<Arc<dyn Recall>>`.
#[async_trait]
pub trait Recall: Send + Sync {
    /// The entries of `document` that best match `query`, best first, at most `limit`.
    ///
    /// # Behavior
    /// - Returns the entries' current text as the source of truth holds it; an entry the index
    ///   still has but the document no longer holds is never returned.
    /// - Only entries of `document` are ever returned.
    async fn search(
        &self,
        document: &DocumentId,
        query: &str,
        limit: usize,
    ) -> Result<Vec<String>, MemoryError>;
}
