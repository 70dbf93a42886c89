//! A redaction: one revision's text erased from the journal under the document's lock.

use std::time::Duration;

use memory_core::raw::{Redaction, RevisionTip, history_view, kept_revisions, plan_redaction};
use memory_core::{DocumentId, MemoryError, Retention, Revision};

use crate::files;
use crate::journal::{self, KnownTips};
use crate::layout::Tree;

/// Redacts revision `number` of the document `id` in `tree` (see `MemoryProvider::redact`),
/// planned on its whole journal read under its lock and stored there.
pub(crate) fn redact(
    tree: &Tree,
    id: &DocumentId,
    number: u64,
    retention: Retention,
    lock_timeout: Duration,
    known: &KnownTips,
) -> Result<Revision, MemoryError> {
    let document = tree.file(id)?;
    let now = journal::now();
    // No directory: nothing was ever written, and taking the lock would create one. History
    // off: nothing is recorded, whatever an earlier configuration left.
    let recorded = retention.is_on() && files::split(&document).0.is_dir();
    let _lock = match recorded {
        true => {
            files::refuse_case_twin(tree, id)?;
            Some(files::lock(&document, lock_timeout, |attempts| {
                files::contention(id, attempts)
            })?)
        }
        false => None,
    };
    let current = files::read_at(document.clone(), id.clone())?;
    let landed = match recorded {
        true => journal::read_landed(&document, id, &current)?,
        false => Vec::new(),
    };
    let tip = landed
        .last()
        .map_or_else(journal::empty_tip, RevisionTip::of);
    let stored: Vec<Revision> = landed.into_iter().rev().collect();
    let location = journal::path(&document).display().to_string();
    let kept = kept_revisions(stored.clone(), tip.number, now, &retention, &location)?;
    let shown = history_view(kept, &tip, &current, usize::MAX, now, &retention);
    match plan_redaction(id, &stored, &shown, number, now)? {
        Redaction::Done(revision) => Ok(revision),
        Redaction::Store { redacted, rebased } => {
            journal::redact(&document, id, &redacted, rebased.as_deref(), known)?;
            Ok(redacted)
        }
    }
}
