//! What `memory_history` says: its listing of revisions, and its `revert_to`.

use memory_core::{Revision, Store};

use super::names::{file_name, utc};
use crate::definitions::MAX_HISTORY_RESULTS;

/// A file without revisions.
pub(crate) fn no_revisions(store: Store) -> String {
    format!(
        "{} has no revisions: it was never written, or this memory keeps no history.",
        file_name(store)
    )
}

/// The first line of a listing of revisions.
pub(crate) fn revisions_heading(store: Store) -> String {
    format!("{}, the latest changes first:", file_name(store))
}

/// One revision's header line: number, time, surface, who, sizes and what changed.
pub(crate) fn revision_heading(revision: &Revision) -> String {
    let who = revision
        .who()
        .map_or_else(String::new, |who| format!(" ({who})"));
    format!(
        "Revision {} · {} · from {}{who} · {} → {} bytes · {}",
        revision.number,
        utc(revision.time),
        revision.surface,
        revision.bytes_before,
        revision.bytes_after,
        revision.what_changed(),
    )
}

/// In place of a purge's diff.
pub(crate) const PURGED: &str =
    "(Purged: the text and the revisions before were erased; nothing to show or revert to.)";

/// In place of a redacted revision's diff.
pub(crate) const REDACTED: &str =
    "(Redacted: its text and updates were erased; nothing to show or revert to.)";

/// In place of the diff of a revision whose predecessor was redacted.
pub(crate) const AFTER_REDACTED: &str =
    "(The revision before it was redacted, so there is no diff.)";

/// In place of the diff of a revision whose predecessor is no longer kept.
pub(crate) const NO_DIFF: &str = "(The revision before it is no longer kept, so there is no diff.)";

/// In place of an empty diff.
pub(crate) const NO_CHANGE: &str = "(No change in the text.)";

/// What follows a diff cut `more` characters short.
pub(crate) fn diff_cut(more: usize) -> String {
    format!("(diff cut: {more} more characters)")
}

/// What follows a listing that left out `left_out` of the revisions asked for.
pub(crate) fn older_not_shown(left_out: usize) -> String {
    format!(
        "\n\n({left_out} older revisions not shown, to keep this short: the diffs above are \
         long. Call with a smaller limit to see fewer.)"
    )
}

/// What follows a listing when more revisions are kept than the limit asked for.
pub(crate) fn older_kept() -> String {
    format!(
        "\n\n(Older revisions are kept too: call with a larger limit, up to \
         {MAX_HISTORY_RESULTS}, to see them.)"
    )
}

/// What ends every listing.
pub(crate) fn how_to_undo(store: Store) -> String {
    format!(
        "\n\nTo undo a change, call memory_history with file {:?} and revert_to set to \
         the revision whose text you want back (the one before the change).",
        file_name(store)
    )
}

/// A revert the provider reported no write for.
pub(crate) fn no_revert_reported(store: Store) -> String {
    format!(
        "The provider reported no write of {}; nothing was reverted.",
        file_name(store)
    )
}

/// A revert to a revision not kept.
pub(crate) fn no_revision(store: Store, number: u64, reason: &str) -> String {
    format!(
        "Not reverted: {} has no revision {number} to go back to: {reason}. Call \
         memory_history to see the revisions kept. Nothing was written.",
        file_name(store)
    )
}

/// A revert another writer raced.
pub(crate) fn changed_while_reverting(store: Store) -> String {
    format!(
        "Not reverted: {} changed while reverting it (another writer wrote it). \
         Call memory_history again to see that change, then decide. Nothing was \
         written.",
        file_name(store)
    )
}

/// A revert that changed nothing.
pub(crate) fn already_reads_as(store: Store, number: u64) -> String {
    format!(
        "{} already reads as revision {number} left it; nothing changed.",
        file_name(store)
    )
}

/// How to undo the revert that is revision `number`.
pub(crate) fn revert_undo(number: u64) -> String {
    // A revert is never the first revision: the one it restores came before it.
    format!(
        " This revert is revision {number}; to undo it, revert_to {}.",
        number.saturating_sub(1)
    )
}

/// A revert that landed; `undo` is [`revert_undo`]'s, or empty when the revert's own revision
/// is not known.
pub(crate) fn reverted(
    store: Store,
    number: u64,
    bytes_before: usize,
    bytes_after: usize,
    undo: &str,
    size_after: &str,
) -> String {
    format!(
        "Reverted {} to the text of revision {number}: {bytes_before} → {bytes_after} \
         bytes.{undo}{size_after}",
        file_name(store)
    )
}
