//! The notes a scope's folder holds: every file whose path under the folder is a note path,
//! skipping the hidden files beside each note (its lock, receipts, journal and temporary files)
//! and anything a note path refuses. An empty file is a note that does not exist (a `delete`
//! leaves one, so the note's history stays beside it); a listing leaves out blank ones too.

use std::collections::HashMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

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
    /// What tells this version of the file from the next: its time, size and inode.
    stamp: Stamp,
}

/// A file's modification time, size and inode: a write renames a new file in (a new inode),
/// a hand edit changes its time (or size).
type Stamp = (SystemTime, u64, u64);

/// How recently written a file may be and still have its listing kept: a change within a file
/// system's time granularity (up to 2 s on some) need not move the file's time, so a note
/// written as recently as this is read again by the next listing.
const SETTLED: Duration = Duration::from_secs(2);

/// The most listed notes kept; past it the cache starts again, and the next listings read.
const LISTED_KEPT: usize = 100_000;

/// What listings read of each note, by its file and stamp: a listing reads only the notes whose
/// file changed since (or was too recent to trust, see [`SETTLED`]), so listing a large scope,
/// as every prefetch does, costs a directory walk and a stat per note.
#[derive(Debug, Default, Clone)]
pub(crate) struct ListedNotes(Arc<Mutex<HashMap<PathBuf, Listed>>>);

/// A note's file as a listing read it: its stamp then, and its listing (`None` when blank).
type Listed = (Stamp, Option<NoteMeta>);

impl ListedNotes {
    /// The listing of `note` (`None` for a blank one), from the cache when its file is as it
    /// was, else read.
    fn listed(&self, scope: &NoteScope, note: NoteFile) -> Result<Option<NoteMeta>, MemoryError> {
        let cached = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&note.file)
            .filter(|(stamp, _)| *stamp == note.stamp)
            .map(|(_, listed)| listed.clone());
        if let Some(listed) = cached {
            return Ok(listed);
        }
        let read_at_time = SystemTime::now();
        let document = read_at(note.file.clone(), scope.note(note.path.clone()))?;
        let listed = (!is_blank(&document.text)).then(|| NoteMeta::of(note.path, &document));
        let settled = read_at_time
            .duration_since(note.stamp.0)
            .is_ok_and(|age| age > SETTLED);
        // The stamp was taken before the read: a write in between shows as a new stamp next
        // time, so the text read is never kept under the older one for long.
        if settled && document.modified == Some(note.stamp.0) {
            let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            if kept.len() >= LISTED_KEPT {
                kept.clear();
            }
            kept.insert(note.file, (note.stamp, listed.clone()));
        }
        Ok(listed)
    }
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

/// The listing of `scope`'s notes whose path starts with `prefix`: each file read whole (or
/// as `cache` last read it, when its file has not changed since), so the version listed is one
/// a read gives.
pub(crate) fn notes(
    tree: &Tree,
    scope: &NoteScope,
    prefix: &str,
    cache: &ListedNotes,
) -> Result<Vec<NoteMeta>, MemoryError> {
    let mut listed = Vec::new();
    for note in note_files(tree, scope)? {
        if note.path.as_str().starts_with(prefix) {
            listed.extend(cache.listed(scope, note)?);
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
            #[cfg(unix)]
            let inode = std::os::unix::fs::MetadataExt::ino(&meta);
            #[cfg(not(unix))]
            let inode = 0;
            let modified = meta.modified().map_err(unavailable)?;
            found.push(NoteFile {
                path,
                file,
                bytes: meta.len(),
                stamp: (modified, meta.len(), inode),
            });
        }
    }
    Ok(())
}
