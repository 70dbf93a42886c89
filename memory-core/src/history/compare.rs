//! A revision's text, to restore or compare: the diff between two states of a document.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::document::DocumentId;
use crate::error::MemoryError;
use crate::history::diff::unified_diff;
use crate::history::revision::Revision;

/// The revision numbered `number` among `history` (newest first, as
/// [`crate::MemoryProvider::history`] gives it), with text to revert to.
///
/// # Errors
/// [`MemoryError::RevisionNotFound`] when it is not kept (never made, or pruned), is a
/// purge's tombstone or was redacted.
pub fn revision_to_restore(
    document: &DocumentId,
    history: &[Revision],
    number: u64,
) -> Result<String, MemoryError> {
    let not_found = |reason: String| MemoryError::RevisionNotFound {
        document: document.clone(),
        number,
        reason,
    };
    let revision = kept_revision(document, history, number)?;
    if revision.is_redacted() {
        return Err(not_found("it was redacted: its text is erased".to_owned()));
    }
    revision.text.clone().ok_or_else(|| {
        not_found("it is the tombstone of a purge, which keeps no content".to_owned())
    })
}

/// The revision numbered `number` among `history` (newest first), or
/// [`MemoryError::RevisionNotFound`] naming the revisions kept.
pub(crate) fn kept_revision<'a>(
    document: &DocumentId,
    history: &'a [Revision],
    number: u64,
) -> Result<&'a Revision, MemoryError> {
    history
        .iter()
        .find(|revision| revision.number == number)
        .ok_or_else(|| MemoryError::RevisionNotFound {
            document: document.clone(),
            number,
            reason: match (history.last(), history.first()) {
                (Some(oldest), Some(newest)) => {
                    format!("revisions {} to {} are kept", oldest.number, newest.number)
                }
                _ => "it has no revisions".to_owned(),
            },
        })
}

/// The text `document` had after revision `number` of `history` (newest first, as
/// [`crate::MemoryProvider::history`] gives it); revision 0 is the empty document before the
/// first.
///
/// # Errors
/// As [`revision_to_restore`].
pub fn text_after(
    document: &DocumentId,
    history: &[Revision],
    number: u64,
) -> Result<String, MemoryError> {
    match number {
        0 => Ok(String::new()),
        number => revision_to_restore(document, history, number),
    }
}

/// A diff between two states of one document, as `memory diff` prints it and the HTTP API
/// returns it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevisionDiff {
    /// The revision compared from (0: the empty document before the first).
    pub from: u64,
    /// The revision compared to; `None` for the document as it is now.
    pub to: Option<u64>,
    /// The unified diff (`diff -u` form), empty when the texts are equal.
    pub diff: String,
}

impl RevisionDiff {
    /// The diff of `document` between revisions `from` and `to` of `history` (newest first):
    /// with `to` unset, from `from` to `current` (the document's text now); without `from`,
    /// revision `to` (the newest when unset) against the one before it (the empty document
    /// when that is a purge's tombstone). The diff's labels are `<path>@<number>` and
    /// `<path>@current`. Past `deadline` the diff is exact but not the smallest (see
    /// [`unified_diff`]).
    ///
    /// # Errors
    /// [`MemoryError::RevisionNotFound`] for a revision not kept or a tombstone, or when the
    /// document has no revision to compare.
    pub fn between(
        document: &DocumentId,
        history: &[Revision],
        current: &str,
        from: Option<u64>,
        to: Option<u64>,
        deadline: Instant,
    ) -> Result<RevisionDiff, MemoryError> {
        let path = document.relative_path();
        let label = |number: u64| format!("{path}@{number}");
        let (from, old, to) = match (from, to) {
            (Some(from), to) => (from, text_after(document, history, from)?, to),
            (None, to) => {
                let to = match (to, history.first()) {
                    (Some(to), _) => to,
                    (None, Some(newest)) => newest.number,
                    (None, None) => {
                        return Err(MemoryError::RevisionNotFound {
                            document: document.clone(),
                            number: 0,
                            reason: "it has no revisions to compare: it was never written, or its provider keeps no history".to_owned(),
                        });
                    }
                };
                // `to` first: a purge's tombstone has no text to compare.
                text_after(document, history, to)?;
                let before = to.saturating_sub(1);
                let old = history
                    .iter()
                    .find(|revision| revision.number == to)
                    .and_then(|revision| revision.text_before(history));
                let old = match old {
                    Some(old) => old.to_owned(),
                    // Not kept: the error names it.
                    None => text_after(document, history, before)?,
                };
                (before, old, Some(to))
            }
        };
        let (new, new_label) = match to {
            Some(to) => (text_after(document, history, to)?, label(to)),
            None => (current.to_owned(), format!("{path}@current")),
        };
        Ok(RevisionDiff {
            from,
            to,
            diff: unified_diff(&old, &new, &label(from), &new_label, deadline),
        })
    }
}
