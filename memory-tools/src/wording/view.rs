//! What `memory_view` says.

use memory_core::{Caps, Prefetch, Store};

use super::names::{file_name, size};

/// A query from a caller whose memory cannot search.
pub(crate) const VIEW_CANNOT_SEARCH: &str =
    "This memory cannot search; call memory_view without a query.";

/// The rendered memory, or what to say when there is none.
fn shown(prefetch: &Prefetch) -> &str {
    prefetch
        .context
        .as_deref()
        .unwrap_or("(Your memory is empty: both MEMORY.md and USER.md are blank.)")
}

/// A view with a query: the entries most relevant to it, and the provider's warnings.
pub(crate) fn queried_view(prefetch: &Prefetch) -> String {
    format!(
        "{}\n\n(These are the MEMORY.md entries most relevant to the query, not all of \
         it: call memory_view without a query before memory_consolidate.){}",
        shown(prefetch),
        prefetch
            .warnings
            .iter()
            .map(|warning| format!("\n(Note: {warning}.)"))
            .collect::<String>()
    )
}

/// A view without a query: the memory as rendered, and each file's size (`memory`, then
/// `user`: bytes and caps).
pub(crate) fn full_view(prefetch: &Prefetch, memory: (usize, Caps), user: (usize, Caps)) -> String {
    format!(
        "{}\n\n{}: {}. {}: {}.",
        shown(prefetch),
        file_name(Store::Memory),
        size(memory.0, memory.1),
        file_name(Store::User),
        size(user.0, user.1),
    )
}

/// The view tokens a whole view shows a caller who may write.
pub(crate) fn view_tokens(memory_token: &str, user_token: &str) -> String {
    format!(
        "\nView tokens, for memory_consolidate's viewed: {} {memory_token}, {} {user_token}.",
        file_name(Store::Memory),
        file_name(Store::User),
    )
}

/// What a view cut to `max_chars` adds.
pub(crate) fn view_cut(max_chars: usize) -> String {
    format!(
        "\n(This view is cut to the last {max_chars} characters. memory_consolidate needs a \
         full view: shrink the files with memory_remove or memory_replace first.)"
    )
}
