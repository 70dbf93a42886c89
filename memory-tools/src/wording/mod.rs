//! Every sentence the model reads back from a call, in one room so that the wording is
//! reviewed in one place: what each tool says when it worked, what it says when it wrote
//! nothing, and how files, sizes, revisions and the provider's errors are named. (What the
//! model is told about each tool before it calls one is in `definitions`.)
//!
//! These functions take what a tool found out and choose the words; they read and write
//! nothing. A new tool's sentences are a new room here, beside its body in `tools`.

// How every tool names a file, a size, a count and a time.
mod names;
// Calls refused before any tool runs: no such tool, arguments the tool does not take.
mod calls;
// The provider's refusals and failures, naming the document but never the host's paths.
mod failures;
// `memory_view`.
mod view;
// `memory_add`, `memory_replace`, `memory_remove` and `memory_consolidate`.
mod writes;
// `memory_search`.
mod search;
// `memory_history`: the listing of revisions, and `revert_to`.
mod history;
// `memory_notes`.
mod notes;

pub(crate) use calls::{
    REVERT_NEEDS_WRITE, arguments_not_an_object, invalid_arguments, no_such_tool, not_a_file,
    not_a_string, not_a_whole_number, not_one_of,
};
pub(crate) use failures::{no_write_reported, refusal};
pub(crate) use history::{
    AFTER_REDACTED, NO_CHANGE, NO_DIFF, PURGED, REDACTED, already_reads_as,
    changed_while_reverting, diff_cut, how_to_undo, no_revert_reported, no_revision, no_revisions,
    older_kept, older_not_shown, revert_undo, reverted, revision_heading, revisions_heading,
};
pub(crate) use names::{file_name, size_after};
pub(crate) use notes::{
    no_such_note, not_a_note_path, note_argument_missing, note_changed_since_token,
    note_command_not_allowed, note_rename_across, note_text, note_write_needs_a_read, note_written,
    notes_listed,
};
pub(crate) use search::{BLANK_QUERY, CANNOT_SEARCH, found};
pub(crate) use view::{VIEW_CANNOT_SEARCH, full_view, queried_view, view_cut, view_tokens};
pub(crate) use writes::{
    added, already_reads_that_way, changed_since_token, consolidated, consolidation_blank,
    consolidation_needs_a_view, removed, replaced,
};
