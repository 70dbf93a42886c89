//! The trait every backend implements.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::context::MemoryContext;
use crate::document::{Document, DocumentId, NoteScope, Store, Version};
use crate::error::MemoryError;
use crate::history::compare::revision_to_restore;
use crate::history::revision::{Purged, Revision, Surface};
use crate::idempotency::receipts::Receipts;
use crate::note::NoteMeta;
use crate::prefetch::Prefetch;
use crate::prompt::NewestNotes;
use crate::report::{IfMatch, Subscription, SyncReport};
use crate::update::MemoryUpdate;

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
    /// - Includes each of the pair written at least once (even if since cleared), and each note
    ///   while it exists.
    /// - Never includes anything that is not a document of the layout (stray files, bad ids).
    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError>;

    /// The notes of `scope` whose path starts with `prefix` (`""` for all), sorted by path
    /// (`CONTRACT.md`, Notes).
    ///
    /// # Behavior
    /// - Only notes that exist (text not blank), each with its bytes, version, `modified` and
    ///   [`crate::note_description`].
    /// - A note listed can be read at that version or a newer one; a note a write has
    ///   acknowledged is listed by any listing that starts after the acknowledgement.
    /// - A layout with no place for notes is [`MemoryError::NotInLayout`].
    async fn notes(&self, scope: &NoteScope, prefix: &str) -> Result<Vec<NoteMeta>, MemoryError>;

    /// The newest notes of `scope`, each labelled `store` (the document of a context they sit
    /// beside), and how many it has: what the prompt's `## Notes` index names of it.
    ///
    /// # Behavior
    /// - The same as [`NewestNotes::of`] over [`MemoryProvider::notes`] of the whole scope,
    ///   which the default does; a backend that keeps its listing answers without listing
    ///   every note, since a prefetch asks every turn.
    async fn newest_notes(
        &self,
        scope: &NoteScope,
        store: Store,
    ) -> Result<NewestNotes, MemoryError> {
        let notes = self.notes(scope, "").await?;
        Ok(NewestNotes::of(notes.iter().map(|note| (store, note))))
    }

    /// The revisions of `document`, newest first, at most `limit`.
    ///
    /// # Behavior
    /// - Every write that changed the document made exactly one revision, in the same atomic
    ///   step as the write; a batch that changed nothing made none.
    /// - Numbers run from 1 without gaps among the kept revisions, one per change, never
    ///   reused (a purge's tombstone is numbered too).
    /// - A change made without the provider (a hand edit) and not yet recorded heads the list
    ///   as an `external` revision with the number the next write records it under.
    /// - Only the revisions the provider's retention keeps (default the newest 100).
    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<Vec<Revision>, MemoryError>;

    /// Puts `store`'s document back to the text it had after revision `number`: a `replace`
    /// with that text through [`MemoryProvider::sync`], so it is a revision of its own (a
    /// revert can be reverted) and recall follows it like any write.
    ///
    /// # Behavior
    /// - With `if_match`, a document no longer at that version is [`MemoryError::Conflict`] and
    ///   nothing is written.
    /// - A revision not kept, or a purge's tombstone, is [`MemoryError::RevisionNotFound`].
    /// - As with `replace`, the text is stored trimmed and newline-terminated: a hand-edited
    ///   revision in another form comes back in that form.
    async fn revert(
        &self,
        ctx: &MemoryContext,
        store: Store,
        number: u64,
        if_match: Option<&Version>,
    ) -> Result<SyncReport, MemoryError> {
        revert_by_replace(self, ctx, store, number, if_match).await
    }

    /// Erases `document`, its history and its idempotency receipts (and a recall provider's
    /// index rows): the right to be forgotten.
    ///
    /// # Behavior
    /// - Afterwards the document reads as never written and `list` leaves it out.
    /// - Its history is at most one tombstone revision, with no content and nothing derived
    ///   from it (no hash, no content version), recording when and from which `surface` it
    ///   was purged; later writes number on from it.
    /// - Purging a document never written erases nothing, leaves no tombstone and succeeds;
    ///   purging one already purged replaces its tombstone with a newer one.
    async fn purge(&self, document: &DocumentId, surface: Surface) -> Result<Purged, MemoryError>;

    /// Erases the text and updates of revision `number` of `document` (a pair document or a
    /// note), and returns it as `history` now shows it.
    ///
    /// # Behavior
    /// - The revision keeps its number, time, origin, sizes and hashes, and gets `redacted_at`;
    ///   `history` shows it without text, and `revert` to it is
    ///   [`MemoryError::RevisionNotFound`]. A rename's update stays (the note's paths), so
    ///   history still follows the note across it.
    /// - The revisions after it still rebuild: the one after it is stored whole, in the same
    ///   atomic step, where it was stored as its change alone.
    /// - The revision whose text the document holds now is [`MemoryError::RevisionInUse`]:
    ///   change the document first. A revision not kept, or a purge's tombstone, is
    ///   [`MemoryError::RevisionNotFound`]. Nothing is written then.
    /// - Redacting a revision redacted already writes nothing and returns it.
    /// - The document itself, its receipts and its recall index are untouched.
    async fn redact(&self, document: &DocumentId, number: u64) -> Result<Revision, MemoryError>;

    /// Subscribes to this provider's `memory.updated` and `memory.eviction` events.
    ///
    /// # Behavior
    /// - Sees the events of writes made through this provider value after the call.
    fn subscribe(&self) -> Subscription;

    /// The longest one call waits on its backend before it fails, or `None` when the provider
    /// sets no bound (the default). [`crate::sync_exactly_once`] keeps its resends within it,
    /// so a call that is sent again still ends within one deadline. A provider that wraps
    /// another forwards its deadline.
    fn deadline(&self) -> Option<Duration> {
        None
    }
}

/// [`MemoryProvider::revert`] as the contract states it: the revision's text from `provider`'s
/// history, written back by a `replace` through its `sync`. For providers that override
/// `revert` to adjust the context first.
pub async fn revert_by_replace<P: MemoryProvider + ?Sized>(
    provider: &P,
    ctx: &MemoryContext,
    store: Store,
    number: u64,
    if_match: Option<&Version>,
) -> Result<SyncReport, MemoryError> {
    revert_document(provider, ctx, &ctx.document(store), number, if_match).await
}

/// Puts `document` (one of `ctx`'s pair, or a note of their scopes) back to the text it had
/// after revision `number`, as [`MemoryProvider::revert`] does for the pair: a `replace`
/// through `provider`'s `sync`, so a deleted note comes back as a revision of its own.
///
/// # Errors
/// As [`MemoryProvider::revert`].
pub async fn revert_document<P: MemoryProvider + ?Sized>(
    provider: &P,
    ctx: &MemoryContext,
    document: &DocumentId,
    number: u64,
    if_match: Option<&Version>,
) -> Result<SyncReport, MemoryError> {
    let store = document.store();
    if ctx.document(store).scope() != document.scope() {
        return Err(MemoryError::InvalidUpdate {
            index: 0,
            document: document.clone(),
            reason: format!(
                "it is not in the scopes of the context, whose {store} document is {}",
                ctx.document(store)
            ),
        });
    }
    let history = provider.history(document, usize::MAX).await?;
    let text = revision_to_restore(document, &history, number)?;
    let mut update = MemoryUpdate::replace(store, text);
    if let Some(path) = document.note_path() {
        update = update.in_note(path.clone());
    }
    let if_match = IfMatch::only_document(document, if_match.cloned());
    provider.sync(ctx, &[update], &if_match).await
}

/// `document`'s revisions newest first, at most `limit`, continued across renames: where the
/// oldest is the arrival of a note moved here, the revisions of the note it came from follow,
/// from its leaving back, and so on (`CONTRACT.md`, Notes: history follows a rename). Each
/// revision names its own document and numbers within it, as `revert` takes them.
///
/// # Errors
/// What `provider`'s [`MemoryProvider::history`] fails with.
pub async fn history_across_renames<P: MemoryProvider + ?Sized>(
    provider: &P,
    document: &DocumentId,
    limit: usize,
) -> Result<Vec<Revision>, MemoryError> {
    let mut revisions = provider.history(document, limit).await?;
    // A note renamed back and forth is followed as far as the limit, and no further than a
    // bound that no real history reaches.
    for _ in 0..MAX_RENAMES_FOLLOWED {
        let Some(arrival) = revisions.last().filter(|r| r.is_arrival()) else {
            break;
        };
        let [MemoryUpdate::Rename { note: from, .. }] = arrival.updates.as_slice() else {
            break;
        };
        let remaining = limit.saturating_sub(revisions.len());
        if remaining == 0 {
            break;
        }
        let from = arrival.document.scope().note(from.clone());
        let earlier = provider.history(&from, usize::MAX).await?;
        // Its leaving: the same rename, of the text that arrived, not after the arrival.
        let Some(leaving) = earlier.iter().position(|r| {
            r.updates == arrival.updates
                && r.sha256_before == arrival.sha256_after
                && r.time <= arrival.time
        }) else {
            break;
        };
        revisions.extend(earlier.into_iter().skip(leaving).take(remaining));
    }
    Ok(revisions)
}

/// The notes of `ctx`'s two scopes (the memory it reads, the user's profile), each with its
/// scope's store: what the prompt's `## Notes` index lists.
///
/// # Errors
/// What `provider`'s [`MemoryProvider::notes`] fails with.
pub async fn notes_of_context<P: MemoryProvider + ?Sized>(
    provider: &P,
    ctx: &MemoryContext,
) -> Result<Vec<(Store, NoteMeta)>, MemoryError> {
    let mut notes = Vec::new();
    for store in [Store::Memory, Store::User] {
        let scope = ctx.document(store).scope();
        let listed = provider.notes(&scope, "").await?;
        notes.extend(listed.into_iter().map(|note| (store, note)));
    }
    Ok(notes)
}

/// What the prompt's `## Notes` index names of `ctx`'s two scopes: the newest notes of both
/// ([`MemoryProvider::newest_notes`]), merged.
///
/// # Errors
/// What `provider`'s [`MemoryProvider::newest_notes`] fails with.
pub async fn newest_notes_of_context<P: MemoryProvider + ?Sized>(
    provider: &P,
    ctx: &MemoryContext,
) -> Result<NewestNotes, MemoryError> {
    let mut parts = Vec::with_capacity(2);
    for store in [Store::Memory, Store::User] {
        let scope = ctx.document(store).scope();
        parts.push(provider.newest_notes(&scope, store).await?);
    }
    Ok(NewestNotes::merged(&parts))
}

/// How many renames [`history_across_renames`] follows back at most.
const MAX_RENAMES_FOLLOWED: usize = 1000;

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

            async fn notes(
                &self,
                scope: &NoteScope,
                prefix: &str,
            ) -> Result<Vec<NoteMeta>, MemoryError> {
                (**self).notes(scope, prefix).await
            }

            async fn newest_notes(
                &self,
                scope: &NoteScope,
                store: Store,
            ) -> Result<NewestNotes, MemoryError> {
                (**self).newest_notes(scope, store).await
            }

            async fn history(
                &self,
                document: &DocumentId,
                limit: usize,
            ) -> Result<Vec<Revision>, MemoryError> {
                (**self).history(document, limit).await
            }

            async fn revert(
                &self,
                ctx: &MemoryContext,
                store: Store,
                number: u64,
                if_match: Option<&Version>,
            ) -> Result<SyncReport, MemoryError> {
                (**self).revert(ctx, store, number, if_match).await
            }

            async fn purge(
                &self,
                document: &DocumentId,
                surface: Surface,
            ) -> Result<Purged, MemoryError> {
                (**self).purge(document, surface).await
            }

            async fn redact(
                &self,
                document: &DocumentId,
                number: u64,
            ) -> Result<Revision, MemoryError> {
                (**self).redact(document, number).await
            }

            fn subscribe(&self) -> Subscription {
                (**self).subscribe()
            }

            fn deadline(&self) -> Option<Duration> {
                (**self).deadline()
            }
        }
    };
}

forward_provider!(Arc);
forward_provider!(Box);
