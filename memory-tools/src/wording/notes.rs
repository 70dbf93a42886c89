//! What `memory_notes` says.

use memory_core::{DocumentReport, NoteMeta, Store};

use super::names::utc;

/// A command the caller's access does not allow.
pub(crate) fn note_command_not_allowed(command: &str) -> String {
    format!("memory_notes {command} is not allowed to this caller. Nothing was written.")
}

/// A command called without an argument it needs.
pub(crate) fn note_argument_missing(command: &str, argument: &str) -> String {
    format!("memory_notes {command} needs `{argument}`. Nothing was written.")
}

/// A name that is not `memory/<path>` or `user/<path>`.
pub(crate) fn not_a_note_path(path: &str) -> String {
    format!(
        "{path:?} names no note: a note is memory/<path> (yours) or user/<path> (about the \
         user), as the ## Notes list at the top of your prompt shows them, e.g. \
         memory/projects/kyoto.md. Nothing was written."
    )
}

/// A note that does not exist.
pub(crate) fn no_such_note(path: &str) -> String {
    format!(
        "There is no note {path}. Call memory_notes with command list to see which exist, or \
         create it."
    )
}

/// A note's text, as `read` shows it, with the view token a `write` of it takes.
pub(crate) fn note_text(path: &str, text: &str, token: &str) -> String {
    format!(
        "{path} ({} bytes; view token, for write's viewed: {token}):\n\n{text}",
        text.len()
    )
}

/// A `write` whose view token is not the note's now.
pub(crate) fn note_changed_since_token(path: &str) -> String {
    format!(
        "Not written: {path} changed since the read whose token you passed (another writer \
         changed it, or the token is not this note's). Read it again and write what it shows \
         now, with its token. Nothing was written."
    )
}

/// A whole rewrite of a note the model has not read in this conversation.
pub(crate) fn note_write_needs_a_read(path: &str) -> String {
    format!(
        "Not written: write replaces the whole of {path}, which exists and which you have not \
         read. Call memory_notes with command read first and pass its view token as viewed \
         (or append, or replace one passage). Nothing was written."
    )
}

/// A rename from one scope to the other.
pub(crate) fn note_rename_across(path: &str, to: &str) -> String {
    format!(
        "Not renamed: {path} and {to} are in different scopes (memory/ and user/); a note moves \
         within its scope. Nothing was written."
    )
}

/// What a write did to the note `path` (for `rename`, moved to `to`).
pub(crate) fn note_written(
    command: &str,
    path: &str,
    to: Option<&str>,
    written: &DocumentReport,
) -> String {
    let totals = written.scope.map_or_else(String::new, |scope| {
        format!(
            " Its scope holds {} now ({} bytes).",
            match scope.notes {
                1 => "1 note".to_owned(),
                n => format!("{n} notes"),
            },
            scope.bytes
        )
    });
    let done = match (command, to) {
        _ if !written.written => format!("{path} already reads that way; nothing changed."),
        ("create", _) => format!("Created {path} ({} bytes).", written.bytes_after),
        ("delete", _) => format!(
            "Deleted {path} ({} bytes); its history keeps it.",
            written.bytes_before
        ),
        ("rename", Some(to)) => format!("Renamed {path} to {to}."),
        _ => format!(
            "{path} is now {} bytes (was {}).",
            written.bytes_after, written.bytes_before
        ),
    };
    format!("{done}{totals}")
}

/// The notes `list` found under `prefix`, each as the prompt's index names it.
pub(crate) fn notes_listed(prefix: &str, notes: &[&(Store, NoteMeta)]) -> String {
    if notes.is_empty() {
        return match prefix {
            "" => "You have no notes yet. Create one with memory_notes create.".to_owned(),
            prefix => format!("No note's name starts with {prefix:?}."),
        };
    }
    let mut text = format!(
        "{} note{}:",
        notes.len(),
        if notes.len() == 1 { "" } else { "s" }
    );
    for (store, note) in notes {
        text.push_str(&format!("\n- {store}/{} ({} bytes", note.path, note.bytes));
        if let Some(modified) = note.modified {
            text.push_str(&format!(", updated {}", utc(modified)));
        }
        text.push(')');
        if !note.description.is_empty() {
            text.push_str(": ");
            text.push_str(&note.description);
        }
    }
    text
}
