//! `memory notes`: a scope's notes from the command line (list, cat, edit, move, remove, log),
//! each note named by its layout path as `memory cat` names it, and written through the same
//! write path as the agent's (surface `cli`, versions, receipts, history).

use std::io::Read;
use std::path::PathBuf;

use memory_core::{
    DocumentId, IfMatch, MemoryProvider, MemoryUpdate, NotePath, NoteScope, PersonalityId, Surface,
    SyncReport, UserId, format_utc, sync_exactly_once,
};
use memory_wiring::Memory;

use super::{history, parse_document, settle};
use crate::failure::Failure;
use crate::output::{count, describe, print_json};

/// A scope's notes: the markdown files beside a MEMORY.md or a USER.md.
///
/// A scope is named by its folder: notes (beside the global MEMORY.md),
/// personalities/<id>/notes or users/<id>/notes. A note is named by its layout path:
/// users/grace/notes/diet.md.
///
/// Example: memory notes list personalities/ada/notes --prefix trips/
#[derive(clap::Subcommand)]
pub enum NotesCommand {
    List(ListArgs),
    Cat(CatArgs),
    Edit(EditArgs),
    Move(MoveArgs),
    Remove(RemoveArgs),
    Log(history::LogArgs),
}

/// The notes of a scope, sorted by path: path, bytes, when last written, and a one-line
/// description (the front matter's description:, else the first line).
///
/// --json prints an array of notes: path, bytes, version, modified (ms since the epoch) and
/// description.
///
/// Example: memory notes list users/grace/notes
#[derive(clap::Args)]
pub struct ListArgs {
    /// The scope's folder: notes, personalities/<id>/notes or users/<id>/notes.
    scope: String,
    /// Only the notes whose path starts with this.
    #[arg(long, default_value = "")]
    prefix: String,
    /// Print the notes as JSON.
    #[arg(long)]
    json: bool,
}

/// One note: its text on stdout, its location and version on stderr.
///
/// Example: memory notes cat users/grace/notes/diet.md
#[derive(clap::Args)]
pub struct CatArgs {
    /// The note's layout path.
    note: String,
}

/// Write a note's whole text, creating it when it does not exist.
///
/// The text comes from --file (- for stdin); without it $VISUAL or $EDITOR opens the note's
/// text, and what is saved is written. Either way the write is refused (exit 3) when the note
/// changed since it was read, so nothing written meanwhile is lost; saving blank text deletes
/// the note (its history keeps it).
///
/// Example: memory notes edit personalities/ada/notes/trips/kyoto.md --file kyoto.md
#[derive(clap::Args)]
pub struct EditArgs {
    /// The note's layout path.
    note: String,
    /// Read the text from this file (- for stdin) instead of an editor.
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
}

/// Move a note to another path in its scope, atomically: refused when the note does not exist
/// or the path is taken.
///
/// TO is a path within the scope (trips/kyoto.md) or a layout path in the same scope.
///
/// Example: memory notes move personalities/ada/notes/kyoto.md trips/kyoto.md
#[derive(clap::Args)]
pub struct MoveArgs {
    /// The note's layout path.
    note: String,
    /// Where it goes.
    to: String,
}

/// Delete a note: it leaves the listing, and its history keeps it (memory notes log shows
/// it, memory revert brings it back).
///
/// Example: memory notes remove users/grace/notes/diet.md
#[derive(clap::Args)]
pub struct RemoveArgs {
    /// The note's layout path.
    note: String,
}

/// Runs one `memory notes` command.
pub async fn run(memory: &Memory, command: NotesCommand) -> Result<(), Failure> {
    match command {
        NotesCommand::List(args) => list(memory, args).await,
        NotesCommand::Cat(CatArgs { note }) => {
            let (note, _) = parse_note(&note)?;
            let read = memory.read(&note).await?;
            eprintln!("{}", describe(&read.meta()));
            print!("{}", read.text);
            Ok(())
        }
        NotesCommand::Edit(args) => edit(memory, args).await,
        NotesCommand::Move(MoveArgs { note, to }) => {
            let (from, path) = parse_note(&note)?;
            let to = destination(&from, &to)?;
            let update = MemoryUpdate::rename(from.store(), path, to.clone());
            write(memory, &from, update, IfMatch::NONE).await?;
            println!(
                "moved {} to {}",
                from.relative_path(),
                from.scope().note(to).relative_path()
            );
            Ok(())
        }
        NotesCommand::Remove(RemoveArgs { note }) => {
            let (id, path) = parse_note(&note)?;
            let report = write(
                memory,
                &id,
                MemoryUpdate::delete(id.store(), path),
                IfMatch::NONE,
            )
            .await?;
            let bytes = report.documents.first().map_or(0, |d| d.bytes_before);
            println!(
                "removed {} ({}); memory notes log shows it, memory revert brings it back",
                id.relative_path(),
                count(bytes, "byte", "bytes")
            );
            Ok(())
        }
        NotesCommand::Log(args) => history::log(memory, args).await,
    }
}

/// `memory notes list`: one line per note, or the listing as JSON.
async fn list(memory: &Memory, args: ListArgs) -> Result<(), Failure> {
    let ListArgs {
        scope,
        prefix,
        json,
    } = args;
    let scope = parse_scope(&scope)?;
    let notes = memory.notes(&scope, &prefix).await?;
    if json {
        return print_json(&notes);
    }
    if notes.is_empty() {
        println!(
            "{} holds no notes{}",
            scope.folder(),
            match prefix.as_str() {
                "" => String::new(),
                prefix => format!(" under {prefix:?}"),
            }
        );
    }
    let widest = notes.iter().map(|n| n.path.as_str().chars().count()).max();
    for note in &notes {
        let modified = note.modified.map_or_else(|| "never".to_owned(), format_utc);
        println!(
            "{:<width$}  {:>12}  {modified}  {}",
            note.path.as_str(),
            count(note.bytes, "byte", "bytes"),
            note.description,
            width = widest.unwrap_or(0),
        );
    }
    Ok(())
}

/// `memory notes edit`: the note's whole text from a file, stdin or an editor, guarded by the
/// version read first.
async fn edit(memory: &Memory, args: EditArgs) -> Result<(), Failure> {
    let EditArgs { note, file } = args;
    let (id, path) = parse_note(&note)?;
    let current = memory.read(&id).await?;
    let text = match file {
        Some(file) if file.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(|err| {
                Failure::invalid(format!("cannot read the text from stdin: {err}"))
            })?;
            text
        }
        Some(file) => std::fs::read_to_string(&file).map_err(|err| {
            Failure::invalid(format!(
                "cannot read the text from {}: {err}",
                file.display()
            ))
        })?,
        None => in_editor(&id, &current.text)?,
    };
    let update = MemoryUpdate::replace(id.store(), text).in_note(path);
    let guard = IfMatch::only_document(&id, Some(current.version.clone()));
    let report = write(memory, &id, update, guard).await?;
    match report.documents.first() {
        Some(written) if !written.written => println!("{note} unchanged"),
        Some(written) if written.bytes_after == 0 => {
            println!("{note} is blank now: removed (memory notes log shows it)")
        }
        Some(written) => println!(
            "{note}: {} → {} (version {})",
            count(written.bytes_before, "byte", "bytes"),
            count(written.bytes_after, "byte", "bytes"),
            written.version_after
        ),
        None => {}
    }
    Ok(())
}

/// The text after `$VISUAL` (or `$EDITOR`) edited `text` in a file of its own.
fn in_editor(note: &DocumentId, text: &str) -> Result<String, Failure> {
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .ok()
        .filter(|editor| !editor.trim().is_empty())
        .ok_or_else(|| {
            Failure::invalid(
                "no editor: set $VISUAL or $EDITOR, or give the text with --file FILE (- for stdin)",
            )
        })?;
    let name = note
        .note_path()
        .and_then(|path| path.segments().last())
        .unwrap_or("note.md")
        .to_owned();
    let dir = tempfile::tempdir()
        .map_err(|err| Failure::other(format!("cannot make a file to edit in: {err}")))?;
    let file = dir.path().join(name);
    std::fs::write(&file, text)
        .map_err(|err| Failure::other(format!("cannot write {}: {err}", file.display())))?;
    // Through the shell, as git runs an editor: $EDITOR may hold arguments (`code --wait`).
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&file)
        .status()
        .map_err(|err| Failure::other(format!("cannot run the editor {editor:?}: {err}")))?;
    if !status.success() {
        return Err(Failure::other(format!(
            "the editor {editor:?} exited with {status}; nothing was written"
        )));
    }
    std::fs::read_to_string(&file)
        .map_err(|err| Failure::other(format!("cannot read {}: {err}", file.display())))
}

/// `update` to the note `note`, with surface `cli`, exactly once.
async fn write(
    memory: &Memory,
    note: &DocumentId,
    update: MemoryUpdate,
    if_match: IfMatch,
) -> Result<SyncReport, Failure> {
    let (ctx, _) = memory.writing(note)?;
    let ctx = ctx.with_surface(Surface::Cli);
    let written = sync_exactly_once(memory, &ctx, &[update], &if_match).await;
    settle(memory).await;
    Ok(written?)
}

/// A layout path that names a note, and the note's path within its scope.
fn parse_note(path: &str) -> Result<(DocumentId, NotePath), Failure> {
    let id = parse_document(path)?;
    match id.note_path().cloned() {
        Some(within) => Ok((id, within)),
        None => Err(Failure::invalid(format!(
            "{path} is one of the pair, not a note: memory cat reads it; a note is under notes/, personalities/<id>/notes/ or users/<id>/notes/"
        ))),
    }
}

/// Where `memory notes move` sends `from`: `to` as a layout path in the same scope, or as a
/// path within the scope.
fn destination(from: &DocumentId, to: &str) -> Result<NotePath, Failure> {
    let scope = from.scope();
    if let Some(within) = to
        .strip_prefix(&scope.folder())
        .and_then(|rest| rest.strip_prefix('/'))
    {
        return Ok(NotePath::new(within)?);
    }
    if let Ok(Some(elsewhere)) = DocumentId::parse_relative_path(to)
        && elsewhere.note_path().is_some()
    {
        return Err(Failure::invalid(format!(
            "{to} is a note of another scope: a note moves within {}; copy it with memory notes cat and edit",
            scope.folder()
        )));
    }
    Ok(NotePath::new(to)?)
}

/// A scope named by its folder: `notes`, `personalities/<id>/notes` or `users/<id>/notes`.
fn parse_scope(folder: &str) -> Result<NoteScope, Failure> {
    let parts: Vec<&str> = folder.trim_end_matches('/').split('/').collect();
    match parts.as_slice() {
        ["notes"] => Ok(NoteScope::GlobalMemory),
        ["personalities", id, "notes"] => Ok(NoteScope::PersonalityMemory {
            personality: PersonalityId::new(*id)?,
        }),
        ["users", id, "notes"] => Ok(NoteScope::UserProfile {
            user: UserId::new(*id)?,
        }),
        _ => Err(Failure::invalid(format!(
            "{folder:?} is not a scope of notes: expected notes, personalities/<id>/notes or users/<id>/notes"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_are_named_by_their_folders() {
        assert_eq!(parse_scope("notes").ok(), Some(NoteScope::GlobalMemory));
        assert_eq!(
            parse_scope("users/grace/notes/").ok(),
            Some(NoteScope::UserProfile {
                user: UserId::new("grace").expect("an id")
            })
        );
        for wrong in [
            "",
            "users/grace",
            "personalities/../notes",
            "users/grace/notes/x",
        ] {
            assert!(parse_scope(wrong).is_err(), "{wrong}");
        }
    }

    #[test]
    fn a_move_stays_in_its_scope() {
        let Ok((from, _)) = parse_note("users/grace/notes/a.md") else {
            panic!("a note's layout path");
        };
        for to in ["b/c.md", "users/grace/notes/b/c.md"] {
            let moved = destination(&from, to).ok();
            assert_eq!(moved.as_ref().map(NotePath::as_str), Some("b/c.md"), "{to}");
        }
        for wrong in ["../x.md", "users/bob/notes/x.md", "users/grace/notes/"] {
            assert!(destination(&from, wrong).is_err(), "{wrong}");
        }
        assert!(parse_note("users/grace/USER.md").is_err());
    }
}
