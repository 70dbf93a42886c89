//! One room per tool: what each does with the provider, as an `impl MemoryTools` block that
//! `dispatch` calls with the tool's parsed arguments. Each returns the text the model reads,
//! `Err` when the call wrote nothing; the words themselves are `wording`'s.

// `memory_view`: the memory as rendered, or the entries most relevant to a query.
mod view;
// `memory_add`: append an entry.
mod add;
// `memory_replace`: the unique-substring edit.
mod replace;
// `memory_remove`: drop the lines containing a substring.
mod remove;
// `memory_consolidate`: rewrite a whole file, guarded by the last view.
mod consolidate;
// `memory_history`: the latest revisions with their diffs, within a size the model can read.
pub(crate) mod history;
// `memory_history`'s `revert_to`: a file back to a revision's text.
mod revert;
// `memory_notes`: the notes beside the two files, listed, read and written.
mod notes;
// `memory_search`: the entries most relevant to a query.
mod search;
