//! What the model reads when the provider refused or failed a call: which document and why,
//! never where the host keeps it.

use memory_core::{DocumentId, MemoryError, Store};

use super::names::file_name;

/// A write the provider reported nothing for.
pub(crate) fn no_write_reported(store: Store) -> String {
    format!("The provider reported no write of {}.", file_name(store))
}

/// What the model reads when the provider refused or failed a call.
pub(crate) fn refusal(error: &MemoryError) -> String {
    match error {
        MemoryError::NoMatch { document, .. } => format!(
            "Not replaced: the text to replace occurs 0 times in {}. {} and quote text the \
             file contains. Nothing was written.",
            document_name(document),
            how_to_look(document)
        ),
        MemoryError::AmbiguousMatch {
            document, count, ..
        } => format!(
            "Not replaced: the text to replace occurs {count} times in {}. Quote more of it so \
             that it occurs exactly once. Nothing was written.",
            document_name(document)
        ),
        MemoryError::HardCapExceeded {
            document,
            bytes,
            hard_cap,
        } if document.note_path().is_some() => format!(
            "Not written: {} would be {bytes} bytes, over the largest a note may be \
             ({hard_cap}). Split it into smaller notes. Nothing was written.",
            document_name(document)
        ),
        MemoryError::HardCapExceeded {
            document,
            bytes,
            hard_cap,
        } => format!(
            "Not written: {} would be {bytes} bytes, over its hard cap of {hard_cap}. \
             Consolidate it first (memory_view, then memory_consolidate with a shorter \
             version). Nothing was written.",
            file_name(document.store())
        ),
        MemoryError::NoteNotFound { scope, path, .. } => {
            super::notes::no_such_note(&format!("{}/{path}", scope.store()))
        }
        MemoryError::NoteExists { scope, path, .. } => format!(
            "{}/{path} exists already: read it and change it, or choose another name. Nothing \
             was written.",
            scope.store()
        ),
        MemoryError::NoteCollision {
            scope,
            path,
            existing,
            ..
        } => format!(
            "Not written: {store}/{path} differs from the note {store}/{existing} only by case \
             or spelling, or one would be a folder of the other. Use {store}/{existing} or \
             another name. Nothing was written.",
            store = scope.store()
        ),
        MemoryError::NotesCapExceeded {
            cap,
            limit,
            would_be,
            ..
        } => format!(
            "Not written: your notes would be {would_be} by {cap}, over the limit of {limit}. \
             Delete or shorten notes you no longer need first. Nothing was written."
        ),
        MemoryError::Conflict { document, .. } if document.note_path().is_some() => format!(
            "Not written: {} changed since you last read it (another writer added or changed \
             something). Read it again and write what it shows now. Nothing was written.",
            document_name(document)
        ),
        MemoryError::Conflict { document, .. } => format!(
            "Not consolidated: {} changed since you last viewed it (another writer added or \
             changed something). Call memory_view again and consolidate what it shows now. \
             Nothing was written.",
            file_name(document.store())
        ),
        MemoryError::InvalidUpdate { reason, .. } => {
            format!("Not written: {reason}. Nothing was written.")
        }
        other => format!(
            "The memory call failed ({}): {}.",
            other.kind(),
            without_paths(&other.to_string())
        ),
    }
}

/// A document as the tools name it: `MEMORY.md`, `USER.md`, or a note as `memory/<path>` or
/// `user/<path>`.
fn document_name(document: &DocumentId) -> String {
    match document.note_path() {
        Some(path) => format!("{}/{path}", document.store()),
        None => file_name(document.store()).to_owned(),
    }
}

/// How the model sees a document's text: memory_view for the two files, a read for a note.
fn how_to_look(document: &DocumentId) -> &'static str {
    match document.note_path() {
        Some(_) => "Read the note (memory_notes with command read)",
        None => "Call memory_view",
    }
}

/// `text` with every absolute path cut to its place in the memory layout
/// (`personalities/ada/MEMORY.md`), or to "(a file of the memory)" outside it: the model needs
/// to know which document, never where the host keeps it.
fn without_paths(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('/') {
        let at_word_start = rest[..start]
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || "\"'(`".contains(c));
        let end = rest[start..]
            .find(|c: char| c.is_whitespace() || "\"'`);,".contains(c))
            .map_or(rest.len(), |len| start + len);
        out.push_str(&rest[..start]);
        let token = &rest[start..end];
        if at_word_start && token.len() > 1 {
            out.push_str(in_layout(token));
        } else {
            out.push_str(token);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The layout part of an absolute path.
fn in_layout(path: &str) -> &str {
    for dir in ["/personalities/", "/users/"] {
        if let Some(at) = path.rfind(dir) {
            return &path[at + 1..];
        }
    }
    match path.rsplit_once('/') {
        Some((_, "MEMORY.md")) => "MEMORY.md",
        _ => "(a file of the memory)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_told_which_document_never_where_the_host_keeps_it() {
        let err = MemoryError::unavailable(
            "/home/grace/.agent-memory/personalities/ada/MEMORY.md",
            std::io::Error::other("Permission denied (os error 13)"),
        );
        let text = refusal(&err);
        assert_eq!(
            text,
            "The memory call failed (unavailable): personalities/ada/MEMORY.md is unavailable: \
             Permission denied (os error 13); retry later."
        );
        let corrupt = MemoryError::Corrupt {
            location: "/srv/memory/users/u1/USER.md".into(),
            reason: "/srv/memory/users is a file, where a directory should be".into(),
        };
        let text = refusal(&corrupt);
        assert!(!text.contains("/srv"), "{text}");
        assert!(
            text.contains("(corrupt): users/u1/USER.md is corrupt"),
            "{text}"
        );
        assert_eq!(
            without_paths("and/or /etc/passwd"),
            "and/or (a file of the memory)"
        );
        // A lone slash is no path; a global MEMORY.md at the root is named by its name.
        assert_eq!(without_paths("a / b"), "a / b");
        assert_eq!(
            without_paths("/srv/memory/MEMORY.md is corrupt"),
            "MEMORY.md is corrupt"
        );
    }
}
