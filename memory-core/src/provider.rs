//! The trait every backend implements.

use std::sync::Arc;

use async_trait::async_trait;

use crate::{
    Document, DocumentId, IfMatch, MemoryContext, MemoryError, MemoryUpdate, Prefetch, Receipts,
    Subscription, SyncReport,
};

/// Durable memory for agents: two markdown documents per conversation, read before a turn
/// and updated after it. Object safe: hold it as `Arc<dyn MemoryProvider>`.
///
/// The full contract is `CONTRACT.md`; the conformance suite checks every backend against it.
#[async_trait]
pub trait MemoryProvider: Send + Sync {
    /// The memory context for the top of the agent's prompt.
    ///
    /// # Behavior
    /// - Renders `## About You` (the user's USER.md) then `## Memory` (the MEMORY.md of the
    ///   context's personality, or the global one under global scope).
    /// - A blank or missing document drops its section; both blank gives `context: None`, not an
    ///   error.
    /// - Over `ctx.max_chars` chars the tail is kept behind `[...truncated N chars]`.
    /// - The versions and locations of both documents are returned, blank or not, for use as
    ///   `if_match`.
    /// - With `ctx.query` set a recall provider may render only the entries of MEMORY.md most
    ///   relevant to it; without one every provider renders exactly what its source holds.
    /// - A recall provider never renders fewer entries than its source holds for lack of
    ///   indexing: its index catches up with the source first, or the entries it has not
    ///   covered are rendered too, and `warnings` says so.
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError>;

    /// Applies `updates` to the context's documents.
    ///
    /// # Behavior
    /// - The updates to one document apply in order as one atomic step; refusals are checked for
    ///   both documents before anything is written, so a refused update writes nothing and the
    ///   error names it by position.
    /// - Without a precondition the batch applies to the latest content: concurrent writers lose
    ///   no acknowledged update and readers never see a torn document.
    /// - With `if_match`, a touched document not at that version is [`MemoryError::Conflict`]
    ///   and nothing is written.
    /// - Waiting on other writers is bounded (compare-and-swap retries, a lock wait): past the
    ///   bound the call is [`MemoryError::Contention`], never a silent drop.
    /// - A batch that leaves a text unchanged writes nothing and keeps its version.
    /// - Over a hard cap: [`MemoryError::HardCapExceeded`]; over a soft cap: written, reported,
    ///   and a `memory.eviction` event.
    /// - Each written document emits `memory.updated`; subscribers never slow or fail a write.
    /// - Returns one report per touched document, memory first.
    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError>;

    /// One document's text, version and location, read in one consistent step.
    ///
    /// # Behavior
    /// - A document never written reads as empty text, with a version that a first write can be
    ///   guarded by.
    /// - Stored bytes that are not valid UTF-8 or not ours are [`MemoryError::Corrupt`].
    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError>;

    /// The idempotency receipts of `document`: which keyed calls wrote it lately (see
    /// [`MemoryContext::with_idempotency_key`]). For a caller that splits one call over
    /// several providers and checks the parts before sending them.
    ///
    /// # Behavior
    /// - Every provider that honours idempotency keys returns what its `sync` checks; the
    ///   default, an empty log, is for providers that keep none.
    async fn receipts(&self, document: &DocumentId) -> Result<Receipts, MemoryError> {
        let _ = document;
        Ok(Receipts::default())
    }

    /// Every document this provider holds, sorted.
    ///
    /// # Behavior
    /// - Includes each document written at least once (even if since cleared).
    /// - Never includes anything that is not a document of the layout (stray files, bad ids).
    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError>;

    /// Subscribes to this provider's `memory.updated` and `memory.eviction` events.
    ///
    /// # Behavior
    /// - Sees the events of writes made through this provider value after the call.
    fn subscribe(&self) -> Subscription;
}

macro_rules! forward_provider {
    ($ptr:ident) => {
        #[async_trait]
        impl<P: MemoryProvider + ?Sized> MemoryProvider for $ptr<P> {
            async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
                (**self).prefetch(ctx).await
            }

            async fn sync(
                &self,
                ctx: &MemoryContext,
                updates: &[MemoryUpdate],
                if_match: &IfMatch,
            ) -> Result<SyncReport, MemoryError> {
                (**self).sync(ctx, updates, if_match).await
            }

            async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
                (**self).read(document).await
            }

            async fn receipts(&self, document: &DocumentId) -> Result<Receipts, MemoryError> {
                (**self).receipts(document).await
            }

            async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
                (**self).list().await
            }

            fn subscribe(&self) -> Subscription {
                (**self).subscribe()
            }
        }
    };
}

forward_provider!(Arc);
forward_provider!(Box);
