//! The `MemoryProvider` impl: each call the `store` (or `files`) function that does it, run off
//! the async worker threads.

use std::time::Duration;

use async_trait::async_trait;
use memory_core::raw::{Receipts, plan_sync};
use memory_core::{
    Document, DocumentId, IfMatch, MemoryContext, MemoryError, MemoryProvider, MemoryUpdate,
    NewestNotes, NoteMeta, NoteScope, Prefetch, Purged, Revision, Store, Subscription, Surface,
    SyncReport,
};

use super::{MarkdownProvider, blocking};
use crate::{files, store};

#[async_trait]
impl MemoryProvider for MarkdownProvider {
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        // No lock: writes are atomic renames, so each read sees one whole version.
        let (tree, cache) = (self.tree.clone(), self.listed_notes.clone());
        let ids = (ctx.document(Store::Memory), ctx.document(Store::User));
        let (memory, user, notes, unread) = blocking(move || {
            let mut parts = Vec::with_capacity(2);
            for (store, id) in [(Store::Memory, &ids.0), (Store::User, &ids.1)] {
                parts.push(files::newest_notes(&tree, &id.scope(), store, &cache)?);
            }
            let notes = NewestNotes::merged(&parts);
            let documents = (files::read(&tree, ids.0)?, files::read(&tree, ids.1)?);
            Ok((documents.0, documents.1, notes, tree.unread_root_user()))
        })
        .await?;
        let mut seen = Prefetch::from_documents(ctx, &memory, &user, &notes);
        if let Some(path) = unread {
            seen.warnings.push(format!(
                "{} is not read: a USER.md at the root is Ethos's first layout (~/.ethos/USER.md), and this one keeps each user's profile in users/<id>/USER.md; move it there with `memory migrate --root-user <id>`",
                path.display()
            ));
        }
        Ok(seen)
    }

    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        let batches = plan_sync(ctx, updates, if_match)?;
        let ids: Vec<DocumentId> = batches.iter().map(|b| b.document().clone()).collect();
        let _my_turn = self.local_queues.turn(&ids).await;
        let (tree, lock_timeout, retention) =
            (self.tree.clone(), self.lock_timeout, self.retention);
        // Published from the blocking task, under the locks, so that a write that lands is
        // announced even if the caller stops waiting for it.
        let (events, known_tips) = (self.events.clone(), self.known_tips.clone());
        blocking(move || {
            store::sync(
                &tree,
                &batches,
                lock_timeout,
                retention,
                &events,
                &known_tips,
            )
        })
        .await
    }

    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        let (tree, document) = (self.tree.clone(), document.clone());
        blocking(move || files::read(&tree, document)).await
    }

    /// Read without the lock: a receipt its writer has not settled yet is judged against the
    /// document as read, as the next writer will judge it.
    async fn receipts(&self, document: &DocumentId) -> Result<Receipts, MemoryError> {
        let (tree, document) = (self.tree.clone(), document.clone());
        blocking(move || store::read_receipts(&tree, document)).await
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        let tree = self.tree.clone();
        blocking(move || files::list(&tree)).await
    }

    /// Without the scope's lock, as reads: each note is read whole, so each version listed is
    /// one a read gives.
    async fn notes(&self, scope: &NoteScope, prefix: &str) -> Result<Vec<NoteMeta>, MemoryError> {
        let (tree, scope, prefix) = (self.tree.clone(), scope.clone(), prefix.to_owned());
        let cache = self.listed_notes.clone();
        blocking(move || files::notes(&tree, &scope, &prefix, &cache)).await
    }

    /// As `notes`, from the same listing.
    async fn newest_notes(
        &self,
        scope: &NoteScope,
        store: Store,
    ) -> Result<NewestNotes, MemoryError> {
        let (tree, scope) = (self.tree.clone(), scope.clone());
        let cache = self.listed_notes.clone();
        blocking(move || files::newest_notes(&tree, &scope, store, &cache)).await
    }

    /// Read without the lock, like documents, unless writes keep changing the document while it
    /// is read: see the journal in the crate's README.
    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<Vec<Revision>, MemoryError> {
        let (tree, document) = (self.tree.clone(), document.clone());
        let (retention, lock_timeout) = (self.retention, self.lock_timeout);
        blocking(move || store::history(&tree, document, retention, limit, lock_timeout)).await
    }

    /// Under the document's lock, so no write lands between the erasing and the tombstone.
    async fn purge(&self, document: &DocumentId, surface: Surface) -> Result<Purged, MemoryError> {
        let (tree, document) = (self.tree.clone(), document.clone());
        let (retention, lock_timeout) = (self.retention, self.lock_timeout);
        blocking(move || store::purge(&tree, &document, retention, surface, lock_timeout)).await
    }

    async fn redact(&self, document: &DocumentId, number: u64) -> Result<Revision, MemoryError> {
        let (tree, document) = (self.tree.clone(), document.clone());
        let (retention, lock_timeout) = (self.retention, self.lock_timeout);
        let known = self.known_tips.clone();
        blocking(move || store::redact(&tree, &document, number, retention, lock_timeout, &known))
            .await
    }

    fn subscribe(&self) -> Subscription {
        self.events.subscribe()
    }

    /// The lock timeout: the only wait a call makes that is not the disk's.
    fn deadline(&self) -> Option<Duration> {
        Some(self.lock_timeout)
    }
}
