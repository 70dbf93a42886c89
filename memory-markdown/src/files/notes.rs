//! The notes a scope's folder holds: every file whose path under the folder is a note path,
//! skipping the hidden files beside each note (its lock, receipts, journal and temporary files)
//! and anything a note path refuses. An empty file is a note that does not exist (a `delete`
//! leaves one, so the note's history stays beside it); a listing leaves out blank ones too.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use memory_core::{
    DocumentId, MAX_NOTE_PATH_SEGMENTS, MemoryError, NoteMeta, NotePath, NoteScope, PersonalityId,
    UserId, is_blank,
};

use super::read::read_at;
use crate::layout::Tree;

/// One note's file as the folder holds it.
pub(crate) struct NoteFile {
    /// Its path within the scope.
    pub(crate) path: NotePath,
    /// Its file.
    pub(crate) file: PathBuf,
    /// Its size in bytes.
    pub(crate) bytes: u64,
}

/// The notes of `scope` that exist, sorted by path: none where the layout has no place for
/// notes (a Metis workspace holds its two files only).
pub(crate) fn note_files(tree: &Tree, scope: &NoteScope) -> Result<Vec<NoteFile>, MemoryError> {
    let Some(folder) = tree.notes_folder(scope) else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    walk(&folder, "", 1, &mut found)?;
    found.sort_by(|a, b| a.path.as_str().cmp(b.path.as_str()));
    Ok(found)
}

/// The listing of `scope`'s notes whose path starts with `prefix`: each file read whole, so
/// the version listed is one a read gives.
pub(crate) fn notes(
    tree: &Tree,
    scope: &NoteScope,
    prefix: &str,
) -> Result<Vec<NoteMeta>, MemoryError> {
    let mut listed = Vec::new();
    for note in note_files(tree, scope)? {
        if !note.path.as_str().starts_with(prefix) {
            continue;
        }
        let document = read_at(note.file, scope.note(note.path.clone()))?;
        if !is_blank(&document.text) {
            listed.push(NoteMeta::of(note.path, &document));
        }
    }
    Ok(listed)
}

/// Every note of every scope under `tree`'s root that exists, for the provider's `list`.
pub(crate) fn all_notes(tree: &Tree) -> Result<Vec<DocumentId>, MemoryError> {
    if tree.notes_folder(&NoteScope::GlobalMemory).is_none() {
        return Ok(Vec::new());
    }
    let mut scopes = vec![NoteScope::GlobalMemory];
    for (dir, scope_of) in [
        (
            "personalities",
            (|name| {
                PersonalityId::new(name)
                    .ok()
                    .map(|personality| NoteScope::PersonalityMemory { personality })
            }) as fn(&str) -> Option<NoteScope>,
        ),
        ("users", |name| {
            UserId::new(name)
                .ok()
                .map(|user| NoteScope::UserProfile { user })
        }),
    ] {
        let dir = tree.root.join(dir);
        for name in entries(&dir)? {
            scopes.extend(scope_of(&name));
        }
    }
    let mut found = Vec::new();
    for scope in scopes {
        for note in note_files(tree, &scope)? {
            found.push(scope.note(note.path));
        }
    }
    Ok(found)
}

/// The names in `dir`, none when it is missing or not a directory.
fn entries(dir: &Path) -> Result<Vec<String>, MemoryError> {
    let read = match fs::read_dir(dir) {
        Ok(read) => read,
        Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(Vec::new());
        }
        Err(err) => return Err(MemoryError::unavailable(dir.display().to_string(), err)),
    };
    let mut names = Vec::new();
    for entry in read {
        let entry =
            entry.map_err(|err| MemoryError::unavailable(dir.display().to_string(), err))?;
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    Ok(names)
}

/// Adds the notes under `dir` (at `prefix` within the scope, `depth` segments deep) to
/// `found`. Folders behind symbolic links are not followed: a link loop cannot hang a listing.
fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    found: &mut Vec<NoteFile>,
) -> Result<(), MemoryError> {
    for name in entries(dir)? {
        if name.starts_with('.') {
            continue;
        }
        let relative = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let file = dir.join(&name);
        let unavailable = |err| MemoryError::unavailable(file.display().to_string(), err);
        let kind = fs::symlink_metadata(&file)
            .map_err(unavailable)?
            .file_type();
        if kind.is_dir() {
            if depth < MAX_NOTE_PATH_SEGMENTS {
                walk(&file, &relative, depth + 1, found)?;
            }
            continue;
        }
        let Ok(path) = NotePath::new(relative) else {
            continue;
        };
        let meta = match fs::metadata(&file) {
            Ok(meta) if meta.is_file() => meta,
            // A dangling link, or a link to a folder: not a note.
            _ => continue,
        };
        if meta.len() > 0 {
            found.push(NoteFile {
                path,
                file,
                bytes: meta.len(),
            });
        }
    }
    Ok(())
}
