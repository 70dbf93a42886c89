//! Redaction: erasing the text and updates of one kept revision, as the contract's rules say,
//! and what a store must write for the revisions after it to stay readable.

use std::time::SystemTime;

use crate::document::DocumentId;
use crate::error::MemoryError;
use crate::history::compare::kept_revision;
use crate::history::revision::Revision;
use crate::time::{from_signed_unix_millis, signed_unix_millis};

/// What redacting one revision takes, as [`plan_redaction`] works it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redaction {
    /// The revision was redacted already: nothing to write, and this is it.
    Done(Revision),
    /// What to store, in one atomic step, where the tip is still the one planned on.
    Store {
        /// The revision as it is to be kept: no text, no updates but a rename's,
        /// `redacted_at` set.
        redacted: Revision,
        /// The revision after it, with its whole text, where the store kept it as its change
        /// alone: it was rebuilt from the text being erased, so it must now stand alone.
        rebased: Option<Box<Revision>>,
    },
}

/// Revision `number` of `history` (newest first, as
/// [`MemoryProvider::history`](crate::MemoryProvider::history) gives it: headed by a hand
/// edit not yet recorded) if a redaction may take it, redacted already or not.
///
/// # Errors
/// - [`MemoryError::RevisionNotFound`] for a revision not kept (never made, or pruned) or a
///   purge's tombstone.
/// - [`MemoryError::RevisionInUse`] for the newest, whose text the document holds now: the
///   newest recorded, or a hand edit since, which heads history until a write records it.
pub fn redactable<'a>(
    document: &DocumentId,
    history: &'a [Revision],
    number: u64,
) -> Result<&'a Revision, MemoryError> {
    let revision = kept_revision(document, history, number)?;
    if revision.is_redacted() {
        return Ok(revision);
    }
    if revision.is_tombstone() {
        return Err(MemoryError::RevisionNotFound {
            document: document.clone(),
            number,
            reason: "it is the tombstone of a purge, which keeps no content".to_owned(),
        });
    }
    if history
        .first()
        .is_some_and(|newest| newest.number == number)
    {
        return Err(MemoryError::RevisionInUse {
            document: document.clone(),
            number,
        });
    }
    Ok(revision)
}

/// How to redact revision `number` of `document`, at `at`, given its revisions as the store
/// keeps them (`stored`, newest first, changes without their text) and as `history` shows
/// them (`history`, every text rebuilt, headed by a hand edit not yet recorded).
///
/// # Errors
/// As [`redactable`].
pub fn plan_redaction(
    document: &DocumentId,
    stored: &[Revision],
    history: &[Revision],
    number: u64,
    at: SystemTime,
) -> Result<Redaction, MemoryError> {
    let revision = redactable(document, history, number)?;
    if revision.is_redacted() {
        return Ok(Redaction::Done(revision.clone()));
    }
    // Whole milliseconds, as every store keeps its times: what is returned is what `history`
    // reads back.
    let at = from_signed_unix_millis(signed_unix_millis(at));
    let next = number.saturating_add(1);
    let stored_as_change = stored
        .iter()
        .any(|revision| revision.number == next && revision.is_change_only());
    let rebased = stored_as_change
        .then(|| history.iter().find(|revision| revision.number == next))
        .flatten()
        .map(|revision| Box::new(revision.clone()));
    Ok(Redaction::Store {
        redacted: revision.redacted(at),
        rebased,
    })
}
