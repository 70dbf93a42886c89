//! What `memory_add`, `memory_replace`, `memory_remove` and `memory_consolidate` say.

use memory_core::Store;

use super::names::file_name;

/// An entry added; `size_after` is [`size_after`]'s.
pub(crate) fn added(store: Store, size_after: &str) -> String {
    format!("Added to {}.{size_after}", file_name(store))
}

/// A passage replaced.
pub(crate) fn replaced(store: Store, size_after: &str) -> String {
    format!("Replaced in {}.{size_after}", file_name(store))
}

/// A replacement that changed nothing.
pub(crate) fn already_reads_that_way(store: Store) -> String {
    format!(
        "{} already reads that way; nothing changed.",
        file_name(store)
    )
}

/// `lines` lines containing `substring` removed.
pub(crate) fn removed(store: Store, substring: &str, lines: usize, size_after: &str) -> String {
    match lines {
        0 => format!(
            "No line of {} contains {substring:?}; 0 lines removed, nothing changed.",
            file_name(store)
        ),
        1 => format!(
            "Removed 1 line containing {substring:?} from {}.{size_after}",
            file_name(store)
        ),
        lines => format!(
            "Removed {lines} lines containing {substring:?} from {}.{size_after}",
            file_name(store)
        ),
    }
}

/// A consolidation whose new content is blank.
pub(crate) fn consolidation_blank(store: Store) -> String {
    format!(
        "Not consolidated: the new content is blank, which would erase {}. Pass the \
         complete new text; to drop entries use memory_remove. Nothing was written.",
        file_name(store)
    )
}

/// A consolidation whose view token is not the file's now.
pub(crate) fn changed_since_token(store: Store) -> String {
    format!(
        "Not consolidated: {} changed since the view whose token you passed \
         (another writer added or changed something, or the token is not the \
         file's). Call memory_view again and consolidate what it shows now, \
         with its token. Nothing was written.",
        file_name(store)
    )
}

/// A consolidation without a token, and without a whole view of the file in this session.
pub(crate) fn consolidation_needs_a_view(store: Store) -> String {
    format!(
        "Not consolidated: memory_consolidate rewrites the whole of {} and needs a \
         full view of it first. Call memory_view (without a query), then \
         memory_consolidate with the view token it shows for the file as viewed. \
         Nothing was written.",
        file_name(store)
    )
}

/// A consolidation that landed.
pub(crate) fn consolidated(
    store: Store,
    bytes_before: usize,
    bytes_after: usize,
    size_after: &str,
) -> String {
    format!(
        "Consolidated {}: {bytes_before} → {bytes_after} bytes.{size_after}",
        file_name(store)
    )
}
