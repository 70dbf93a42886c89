//! History: every write a revision, recorded in the same atomic step as the write, so a bad
//! rewrite can be seen, compared and undone. The rules are here, pure; backends only store them.
//!
//! A document's revisions are numbered from 1, one more per revision, never reused (a purge
//! leaves a tombstone that the numbering continues from). Each revision holds the text the
//! document had after it, so any kept revision can be shown, compared and reverted to.
//!
//! ```
//! # use memory_core::*;
//! # async fn demo() -> Result<(), MemoryError> {
//! let memory = InMemoryProvider::new();
//! let ctx = MemoryContext::new(PersonalityId::new("ada")?, UserId::new("u1")?)
//!     .with_surface(Surface::Tool);
//! memory.sync(&ctx, &[MemoryUpdate::add(Store::Memory, "Likes tea.")], &IfMatch::NONE).await?;
//! memory.sync(&ctx, &[MemoryUpdate::replace(Store::Memory, "")], &IfMatch::NONE).await?;
//! let log = memory.history(&ctx.document(Store::Memory), 10).await?;
//! assert_eq!(log[0].number, 2, "newest first");
//! // Undo the bad rewrite: itself a revision, so it can be undone too.
//! memory.revert(&ctx, Store::Memory, 1, None).await?;
//! assert_eq!(memory.read(&ctx.document(Store::Memory)).await?.text, "Likes tea.\n");
//! # Ok(()) }
//! ```
//!
//! [`revision`] holds what a revision is and the tip that tells the next one; [`retention`] how
//! many a provider keeps; [`compare`] a revision's text to restore or compare, over [`diff`]'s
//! unified diffs; [`entry`] a revision as lists show it; [`redaction`] erasing one revision's
//! text. What a store may drop, how a revision
//! stored as its change is rebuilt, and what a reader sees are the backend kit's
//! (`raw::kept`): they are how a store keeps these rules, not the rules.

pub(crate) mod compare;
pub(crate) mod diff;
pub(crate) mod entry;
pub(crate) mod redaction;
pub(crate) mod retention;
pub(crate) mod revision;

#[cfg(test)]
pub(crate) mod tests;
