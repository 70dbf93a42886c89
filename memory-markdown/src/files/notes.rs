//! The notes a scope's folder holds: every file whose path under the folder is a note path,
//! skipping the hidden files beside each note (its lock, receipts, journal and temporary files)
//! and anything a note path refuses. An empty file is a note that does not exist (a `delete`
//! leaves one, so the note's history stays beside it); a listing leaves out blank ones too.

use std::collections::HashMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use memory_core::{
    DocumentId, MAX_NOTE_PATH_SEGMENTS, MemoryError, NewestNotes, NoteMeta, NotePath, NoteScope,
    PersonalityId, Store, UserId, is_blank,
};

use super::read::read_at;
use super::watch::{Changed, Watcher};
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

/// What listings read: each note's listing by its file and stamp, so that a listing reads only
/// the notes whose file changed since (or was too recent to trust, see [`SETTLED`]); and each
/// watched folder's whole listing, kept while its [`Watcher`] reports no change, so that
/// listing a large scope, as every prefetch does, costs a stat and an empty read of the watch.
#[derive(Debug, Default, Clone)]
pub(crate) struct ListedNotes {
    files: Arc<Mutex<HashMap<PathBuf, Listed>>>,
    folders: Arc<Mutex<Folders>>,
    /// Made at the first listing; `None` where inotify is not to be had.
    watcher: Arc<OnceLock<Option<Watcher>>>,
}

/// A note's file as a listing read it: its stamp then, and its listing (`None` when blank).
type Listed = (Stamp, Option<NoteMeta>);

/// The folders under watch, with their listings as of the last time their watch was quiet.
#[derive(Debug, Default)]
struct Folders {
    kept: HashMap<PathBuf, WatchedFolder>,
    /// How many times each folder was reported changed (and every folder, in `epoch`, when
    /// anything could have): a listing made meanwhile is not kept, since the change may have
    /// come after it read a file.
    changes: HashMap<PathBuf, u64>,
    epoch: u64,
}

impl Folders {
    /// What tells a listing of `folder` started now from one started after a change.
    fn generation(&self, folder: &Path) -> (u64, u64) {
        (self.epoch, self.changes.get(folder).copied().unwrap_or(0))
    }

    /// Forgets the folders `watcher` reports changed.
    fn forget_changed(&mut self, watcher: &Watcher) {
        match watcher.changed() {
            Changed::All => {
                self.kept.clear();
                self.changes.clear();
                self.epoch += 1;
            }
            Changed::Folders(folders) => {
                for folder in folders {
                    self.kept.remove(&folder);
                    *self.changes.entry(folder).or_default() += 1;
                }
            }
        }
    }
}

/// A listed folder, and its listing.
#[derive(Debug)]
struct WatchedFolder {
    /// The folder's device and inode when it was listed: a folder moved or replaced since (or
    /// one above it renamed) is another folder, which its path no longer names.
    identity: (u64, u64),
    listing: Arc<FolderListing>,
}

/// The notes of one scope's folder, as a listing read them.
#[derive(Debug, Default)]
pub(crate) struct FolderListing {
    /// Every note that exists, sorted by path.
    pub(crate) notes: Vec<NoteMeta>,
    /// The newest of them, labelled with their scope's own store.
    pub(crate) newest: NewestNotes,
}

impl FolderListing {
    fn of(scope: &NoteScope, notes: Vec<NoteMeta>) -> FolderListing {
        let store = scope.document().store();
        let newest = NewestNotes::of(notes.iter().map(|note| (store, note)));
        FolderListing { notes, newest }
    }
}

/// The most folders kept listed; past it they start again.
const FOLDERS_KEPT: usize = 1024;

impl ListedNotes {
    /// The listing of `note` (`None` for a blank one), from the cache when its file is as it
    /// was, else read.
    fn listed(&self, scope: &NoteScope, note: NoteFile) -> Result<Option<NoteMeta>, MemoryError> {
        let cached = self
            .files
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
            let mut kept = self.files.lock().unwrap_or_else(PoisonError::into_inner);
            if kept.len() >= LISTED_KEPT {
                kept.clear();
            }
            kept.insert(note.file, (note.stamp, listed.clone()));
        }
        Ok(listed)
    }

    /// Every note of `scope`'s folder: as last listed when the watch has reported no change
    /// to the folder since, else listed afresh (and watched from before the listing read
    /// anything, where it can be).
    pub(crate) fn folder(
        &self,
        tree: &Tree,
        scope: &NoteScope,
    ) -> Result<Arc<FolderListing>, MemoryError> {
        let Some(folder) = tree.notes_folder(scope) else {
            return Ok(Arc::default());
        };
        let identity = match fs::metadata(&folder) {
            Ok(meta) if meta.is_dir() => folder_identity(&meta),
            Ok(_) => return Ok(Arc::default()),
            Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                return Ok(Arc::default());
            }
            Err(err) => return Err(MemoryError::unavailable(folder.display().to_string(), err)),
        };
        let watcher = self.watcher.get_or_init(Watcher::new).as_ref();
        let started = {
            let mut folders = self.folders_kept();
            if let Some(watcher) = watcher {
                folders.forget_changed(watcher);
            }
            match folders.kept.get(&folder) {
                Some(kept) if kept.identity == identity => return Ok(kept.listing.clone()),
                _ => folders.generation(&folder),
            }
        };
        let watch = watcher
            .filter(|_| Watcher::can_watch(&folder))
            .map(|watcher| (watcher, folder.as_path()));
        let mut found = Vec::new();
        let watched = walk(&folder, "", 1, &mut found, watch)?;
        let mut notes = Vec::with_capacity(found.len());
        for note in found {
            notes.extend(self.listed(scope, note)?);
        }
        let listing = Arc::new(FolderListing::of(scope, notes));
        if let Some(watcher) = watcher.filter(|_| watched) {
            let mut folders = self.folders_kept();
            folders.forget_changed(watcher);
            if folders.generation(&folder) == started {
                if folders.kept.len() >= FOLDERS_KEPT {
                    folders.kept.clear();
                }
                let listing = listing.clone();
                folders
                    .kept
                    .insert(folder, WatchedFolder { identity, listing });
            }
        }
        Ok(listing)
    }

    fn folders_kept(&self) -> std::sync::MutexGuard<'_, Folders> {
        self.folders.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A folder's device and inode.
fn folder_identity(meta: &fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (0, 0)
    }
}

/// The notes of `scope` that exist, sorted by path: none where the layout has no place for
/// notes (a Metis workspace holds its two files only).
pub(crate) fn note_files(tree: &Tree, scope: &NoteScope) -> Result<Vec<NoteFile>, MemoryError> {
    let Some(folder) = tree.notes_folder(scope) else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    walk(&folder, "", 1, &mut found, None)?;
    Ok(found)
}

/// The newest notes of `scope`, labelled `store` (see [`memory_core::MemoryProvider::newest_notes`]).
pub(crate) fn newest_notes(
    tree: &Tree,
    scope: &NoteScope,
    store: Store,
    cache: &ListedNotes,
) -> Result<NewestNotes, MemoryError> {
    let listing = cache.folder(tree, scope)?;
    Ok(if store == scope.document().store() {
        listing.newest.clone()
    } else {
        NewestNotes::of(listing.notes.iter().map(|note| (store, note)))
    })
}

/// The listing of `scope`'s notes whose path starts with `prefix`: each as a read gives it
/// (see [`ListedNotes::folder`]), so the version listed is one a read gives.
pub(crate) fn notes(
    tree: &Tree,
    scope: &NoteScope,
    prefix: &str,
    cache: &ListedNotes,
) -> Result<Vec<NoteMeta>, MemoryError> {
    let listing = cache.folder(tree, scope)?;
    Ok(listing
        .notes
        .iter()
        .filter(|note| note.path.as_str().starts_with(prefix))
        .cloned()
        .collect())
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
    Ok(typed_entries(dir)?
        .into_iter()
        .map(|(name, _)| name)
        .collect())
}

/// The names in `dir` with their kind (as the directory tells it, without a stat), none when
/// it is missing or not a directory.
fn typed_entries(dir: &Path) -> Result<Vec<(String, fs::FileType)>, MemoryError> {
    let read = match fs::read_dir(dir) {
        Ok(read) => read,
        Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(Vec::new());
        }
        Err(err) => return Err(MemoryError::unavailable(dir.display().to_string(), err)),
    };
    let mut names = Vec::new();
    for entry in read {
        let unavailable = |err| MemoryError::unavailable(dir.display().to_string(), err);
        let entry = entry.map_err(unavailable)?;
        let kind = entry.file_type().map_err(unavailable)?;
        if let Ok(name) = entry.file_name().into_string() {
            names.push((name, kind));
        }
    }
    Ok(names)
}

/// Adds the notes under `dir` (at `prefix` within the scope, `depth` segments deep) to
/// `found`, sorted by path; with `watch` (a watcher, and the notes folder it watches for),
/// watches each folder and note before reading it. Folders behind symbolic links are not
/// followed: a link loop cannot hang a listing. Whether `watch` watches all that was found.
fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    found: &mut Vec<NoteFile>,
    watch: Option<(&Watcher, &Path)>,
) -> Result<bool, MemoryError> {
    let watched = |path: &Path| watch.is_some_and(|(watcher, folder)| watcher.watch(path, folder));
    let mut trusted = watched(dir);
    let mut within = Vec::new();
    for (name, kind) in typed_entries(dir)? {
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
        if kind.is_dir() {
            if depth < MAX_NOTE_PATH_SEGMENTS {
                trusted &= walk(&file, &relative, depth + 1, &mut within, watch)?;
            }
            continue;
        }
        let Ok(path) = NotePath::new(relative) else {
            continue;
        };
        // Watched before its stamp is taken: a change after that is reported.
        let armed = watched(&file);
        let meta = match fs::metadata(&file) {
            Ok(meta) if meta.is_file() => meta,
            // A dangling link, or a link to a folder: not a note.
            _ => continue,
        };
        trusted &= armed;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        if meta.len() > 0 {
            let modified = meta.modified().map_err(unavailable)?;
            within.push(NoteFile {
                path,
                file,
                bytes: meta.len(),
                stamp: (modified, meta.len(), inode),
            });
        }
    }
    within.sort_by(|a, b| a.path.as_str().cmp(b.path.as_str()));
    found.append(&mut within);
    Ok(trusted)
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::sync::Arc;

    use memory_core::{NoteScope, PersonalityId};

    use super::ListedNotes;
    use crate::layout::{Layout, Tree};

    /// A listing with nothing changed since the last is that listing, on a local file system
    /// (every temporary directory here is one), and a change gives a new one.
    #[test]
    fn a_quiet_folder_is_listed_once() {
        let dir = tempfile::tempdir().unwrap();
        let tree = Tree {
            root: dir.path().to_owned(),
            layout: Layout::Ethos,
        };
        let scope = NoteScope::PersonalityMemory {
            personality: PersonalityId::new("ada").unwrap(),
        };
        let folder = dir.path().join("personalities/ada/notes/trips");
        fs::create_dir_all(&folder).unwrap();
        fs::write(folder.join("kyoto.md"), "Kyoto.\n").unwrap();
        let listed = ListedNotes::default();
        let first = listed.folder(&tree, &scope).unwrap();
        let again = listed.folder(&tree, &scope).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "kept while quiet");
        fs::write(folder.join("kyoto.md"), "Kyoto, in May.\n").unwrap();
        let after = listed.folder(&tree, &scope).unwrap();
        assert!(!Arc::ptr_eq(&first, &after));
        assert_eq!(after.notes[0].description, "Kyoto, in May.");
        assert!(Arc::ptr_eq(&after, &listed.folder(&tree, &scope).unwrap()));
    }
}
