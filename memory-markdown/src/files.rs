//! The bottom layer: the blocking file work behind the provider, knowing nothing of journals,
//! receipts or what a write does with them. Document paths, reading, locking, atomic
//! replacement, removal, listing, and the mapping of I/O errors to `MemoryError`s. It uses only
//! `layout` (which file holds which document); the journal, the receipts, the identity map
//! (the middle layer) and `store` (the top) are built on it.

use std::collections::hash_map::RandomState;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, ErrorKind, Read, Write};
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use memory_core::raw::{Backoff, sha256_hex};
use memory_core::{Document, DocumentId, IdKind, MemoryError, PersonalityId, UserId, Version};

use crate::layout::{Layout, Tree};

/// The document as stored now; a missing file is the empty document.
pub(crate) fn read(tree: &Tree, id: DocumentId) -> Result<Document, MemoryError> {
    read_at(tree.file(&id)?, id)
}

pub(crate) fn read_at(path: PathBuf, id: DocumentId) -> Result<Document, MemoryError> {
    let location = path.display().to_string();
    let (bytes, modified) = read_bytes(&path)?.map_or((Vec::new(), None), |(bytes, modified)| {
        (bytes, Some(modified))
    });
    let text = String::from_utf8(bytes).map_err(|err| MemoryError::Corrupt {
        location: location.clone(),
        reason: format!(
            "not valid UTF-8 (byte offset {})",
            err.utf8_error().valid_up_to()
        ),
    })?;
    Ok(Document {
        id,
        version: Version::new(sha256_hex(&text)),
        text,
        location,
        modified,
    })
}

/// The bytes of the file at `path` and when they were last modified; `None` when it does not
/// exist. The time comes from the same open file as the bytes: a rename between reading one and
/// stat-ing the path could pair this text with the next version's time.
pub(crate) fn read_bytes(path: &Path) -> Result<Option<(Vec<u8>, SystemTime)>, MemoryError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(read_error(path, err)),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|err| io_error(path, err))?;
    let modified = file
        .metadata()
        .and_then(|meta| meta.modified())
        .map_err(|err| io_error(path, err))?;
    Ok(Some((bytes, modified)))
}
/// An exclusive lock on `.<FILE>.lock` beside `target` (a document, the identity map),
/// creating its directory if needed. The lock file is beside the path as given, even when that
/// is a symbolic link, so that every writer of the document agrees on one lock.
///
/// The lock is on a file of its own because the target itself is replaced by rename on every
/// write: a lock on it would stay with the old, unlinked file. flock locks belong to the open
/// file description, so separate opens in one process exclude each other just like processes
/// do. Dropping the returned file releases the lock.
///
/// The wait is bounded: a writer that holds the lock longer than `timeout` (a stopped process,
/// a hung disk) gives the others the error `busy` makes of the attempt count instead of hanging
/// them. flock cannot be waited on with a timeout, so the lock is polled with jittered, growing
/// pauses.
pub(crate) fn lock(
    target: &Path,
    timeout: Duration,
    busy: impl FnOnce(u32) -> MemoryError,
) -> Result<File, MemoryError> {
    create_dirs(split(target).0).map_err(|err| io_error(target, err))?;
    let path = beside(target, "lock");
    let file = open_lock(&path)?;
    let deadline = Instant::now() + timeout;
    let mut backoff = Backoff::new(Duration::from_micros(100), Duration::from_millis(5));
    for attempt in 1u32.. {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(backoff.next_pause());
            }
            Err(TryLockError::WouldBlock) => return Err(busy(attempt)),
            Err(TryLockError::Error(err)) => {
                return Err(MemoryError::unavailable(path.display().to_string(), err));
            }
        }
    }
    unreachable!("the attempt counter ends only by returning")
}

/// Opens the lock file, creating it (empty, 0600) if it is missing.
///
/// Write access is asked for because some network file systems (NFSv4) grant an exclusive
/// flock only on a file open for writing; where it is refused (a lock file root created), the
/// file is opened read-only, which local flock accepts, rather than locking out every user who
/// may write the document itself.
fn open_lock(path: &Path) -> Result<File, MemoryError> {
    let opened = private_file()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path);
    let opened = match opened {
        Err(err) if err.kind() == ErrorKind::PermissionDenied => File::open(path).map_err(|_| err),
        opened => opened,
    };
    opened.map_err(|err| match err.kind() {
        ErrorKind::PermissionDenied => MemoryError::Unavailable {
            what: path.display().to_string(),
            message: format!(
                "{err}: this user may neither read the lock file nor create it; make it (or its directory) accessible to this user, or remove it while no writer runs; nothing was written"
            ),
            source: Some(err.into()),
        },
        _ => io_error(path, err),
    })
}

pub(crate) fn contention(document: &DocumentId, attempts: u32) -> MemoryError {
    MemoryError::Contention {
        document: document.clone(),
        attempts,
    }
}

/// Replaces the file `document` (a document, the identity map) with `text`, writing through
/// symbolic links (see [`write_target`]) and otherwise as [`replace_target`] does.
pub(crate) fn replace(document: &Path, text: &str) -> Result<(), MemoryError> {
    replace_target(&write_target(document)?, text)
}

/// The file a write to `document` must replace: `document` itself, or, when it is a symbolic
/// link (into a dotfiles repository, say), the file at the end of its chain of links. Renaming
/// over the link would turn it into a plain file and leave its target silently behind.
///
/// A link to nothing, or a loop, is `Corrupt`: writing a new file where the link points could
/// create it in a place nobody chose.
pub(crate) fn write_target(document: &Path) -> Result<PathBuf, MemoryError> {
    // Linux gives up on a path after 40 links; so does this.
    const MAX_LINKS: usize = 40;
    let corrupt = |reason: String| MemoryError::Corrupt {
        location: document.display().to_string(),
        reason,
    };
    let mut target = document.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&target) {
            Ok(meta) if meta.file_type().is_symlink() => {}
            Ok(_) => return Ok(target),
            // A new document: it is created where it belongs.
            Err(err) if err.kind() == ErrorKind::NotFound && target == document => {
                return Ok(target);
            }
            Err(err) if err.kind() == ErrorKind::NotFound => {
                return Err(corrupt(format!(
                    "it is a symbolic link to {}, which does not exist; point the link at a file or remove it; nothing was written",
                    target.display()
                )));
            }
            Err(err) => return Err(io_error(&target, err)),
        }
        let next = fs::read_link(&target).map_err(|err| io_error(&target, err))?;
        // A relative link is relative to the directory that holds it.
        target = split(&target).0.join(next);
    }
    Err(corrupt(format!(
        "it is a symbolic link that leads to itself (or through more than {MAX_LINKS} links); point it at a file; nothing was written"
    )))
}

/// Replaces the file `target` (no symbolic link) with `text` so that readers, and the disk
/// after a crash, see either the old text or the new one, never a mix: write a temporary file
/// beside it, flush it, rename it over the file, then flush the directory so the rename itself
/// is durable. The caller holds the document's lock.
pub(crate) fn replace_target(target: &Path, text: &str) -> Result<(), MemoryError> {
    let (dir, name) = split(target);
    remove_stale_temps(dir, &name)?;
    let temp = dir.join(temp_name(&name));

    let written = (|| {
        let mut file = private_file().write(true).create_new(true).open(&temp)?;
        // A mode set by hand (a USER.md shared with a group) must survive the replacement.
        match fs::metadata(target) {
            Ok(meta) => file.set_permissions(meta.permissions())?,
            Err(err) if err.kind() == ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::rename(&temp, target)
    })();
    if let Err(err) = written {
        let _ = fs::remove_file(&temp);
        return Err(MemoryError::unavailable(target.display().to_string(), err));
    }
    sync_dir(dir).map_err(|err| MemoryError::Unavailable {
        what: target.display().to_string(),
        message: format!("{err} (its new text is in place but may not survive a crash)"),
        source: Some(err.into()),
    })
}

/// `.<name>.<pid>.<nanos>.<n>.<random>.tmp`: no other writer, in this process or any other,
/// uses the same name, not even a process with the same pid as one killed mid-write (pid 1 in
/// containers) whose file was left behind.
fn temp_name(name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    // Hashing nothing with fresh random keys: a random number without a dependency.
    let random = RandomState::new().build_hasher().finish();
    format!(
        ".{name}.{}.{nanos}.{n}.{random:016x}.tmp",
        std::process::id()
    )
}

/// Removes the temporary files of `name` in `dir` that writers killed mid-write left behind:
/// each is a whole copy of some earlier text, perhaps of entries removed since. Under the
/// document's lock no writer of it is using one.
pub(crate) fn remove_stale_temps(dir: &Path, name: &str) -> Result<(), MemoryError> {
    let prefix = format!(".{name}.");
    let entries = fs::read_dir(dir).map_err(|err| io_error(dir, err))?;
    for entry in entries {
        let entry = entry.map_err(|err| io_error(dir, err))?;
        let file = entry.file_name();
        let is_temp = file
            .to_str()
            .is_some_and(|file| file.starts_with(&prefix) && file.ends_with(".tmp"));
        if is_temp && entry.file_type().is_ok_and(|kind| !kind.is_dir()) {
            match fs::remove_file(entry.path()) {
                Err(err) if err.kind() != ErrorKind::NotFound => {
                    return Err(io_error(&entry.path(), err));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Options for a new file only its owner may read or write: memory is personal.
pub(crate) fn private_file() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    options.mode(0o600);
    options
}

/// Refuses a write to a personality's or user's document when it has no directory under its
/// exact id but one differs from it only in case (`ada` beside `Ada`): on a case-insensitive
/// file system (macOS, Windows) the two ids would share one file.
pub(crate) fn refuse_case_twin(tree: &Tree, document: &DocumentId) -> Result<(), MemoryError> {
    if tree.layout != Layout::Ethos {
        // One file per document, named by the layout rather than by an id.
        return Ok(());
    }
    let (kind, noun, dir, id) = match document {
        DocumentId::GlobalMemory => return Ok(()),
        DocumentId::PersonalityMemory { personality } => (
            IdKind::Personality,
            "personality",
            "personalities",
            personality.as_str(),
        ),
        DocumentId::UserProfile { user } => (IdKind::User, "user", "users", user.as_str()),
    };
    let parent = tree.root.join(dir);
    // The directory listing is needed only when the id's directory is missing (a case-sensitive
    // file system may hold a twin) or when the file system finds it under another case too
    // (a case-insensitive one finds the twin under either name). Otherwise two stats do.
    let swapped: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_uppercase() {
                c.to_ascii_lowercase()
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect();
    if parent.join(id).exists() && (swapped == id || !parent.join(&swapped).exists()) {
        return Ok(());
    }
    let entries = match fs::read_dir(&parent) {
        Ok(entries) => entries,
        Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(());
        }
        Err(err) => return Err(io_error(&parent, err)),
    };
    let mut twin = None;
    for entry in entries {
        let file = entry.map_err(|err| io_error(&parent, err))?.file_name();
        match file.to_str() {
            // Its own directory exists under exactly its name: it is the one it always used.
            Some(file) if file == id => return Ok(()),
            Some(file) if file.eq_ignore_ascii_case(id) => twin = Some(file.to_owned()),
            _ => {}
        }
    }
    match twin {
        None => Ok(()),
        Some(twin) => Err(MemoryError::InvalidId {
            kind,
            value: id.to_owned(),
            reason: format!(
                "it differs only in case from the existing {noun} '{twin}' in {}; on a case-insensitive file system they would share one file; nothing was written",
                parent.display()
            ),
        }),
    }
}

/// Every document of the layout in `tree`, sorted; stray files and bad ids are skipped.
pub(crate) fn list(tree: &Tree) -> Result<Vec<DocumentId>, MemoryError> {
    if let Some(documents) = tree.metis_documents() {
        let mut found = Vec::new();
        for document in documents {
            if is_file(&tree.file(&document)?)? {
                found.push(document);
            }
        }
        return Ok(found);
    }
    let root = &tree.root;
    type IdOf = fn(&str) -> Option<DocumentId>;
    let kinds: [(&str, &str, IdOf); 2] = [
        ("personalities", "MEMORY.md", |name| {
            let personality = PersonalityId::new(name).ok()?;
            Some(DocumentId::PersonalityMemory { personality })
        }),
        ("users", "USER.md", |name| {
            Some(DocumentId::user(&UserId::new(name).ok()?))
        }),
    ];

    let mut found = Vec::new();
    if is_file(&tree.file(&DocumentId::GlobalMemory)?)? {
        found.push(DocumentId::GlobalMemory);
    }
    for (dir, file, id_of) in kinds {
        let dir = root.join(dir);
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            // No such directory, or a stray file by that name: no documents of this kind.
            Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                continue;
            }
            Err(err) => return Err(MemoryError::unavailable(dir.display().to_string(), err)),
        };
        for entry in entries {
            let entry =
                entry.map_err(|err| MemoryError::unavailable(dir.display().to_string(), err))?;
            let Some(id) = entry.file_name().to_str().and_then(id_of) else {
                continue;
            };
            if is_file(&entry.path().join(file))? {
                found.push(id);
            }
        }
    }
    found.sort();
    Ok(found)
}

fn is_file(path: &Path) -> Result<bool, MemoryError> {
    match fs::metadata(path) {
        Ok(meta) => Ok(meta.is_file()),
        Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            Ok(false)
        }
        Err(err) => Err(MemoryError::unavailable(path.display().to_string(), err)),
    }
}

/// Creates `dir` and its missing parents, flushing each parent that gained an entry so that a
/// first document survives a crash along with the directories that lead to it.
fn create_dirs(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent {
        create_dirs(parent)?;
    }
    // Private, like the files: memory is personal.
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    builder.mode(0o700);
    match builder.create(dir) {
        Ok(()) => sync_dir(parent.unwrap_or(Path::new("."))),
        // Another writer created it first.
        Err(err) if err.kind() == ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(err) => Err(err),
    }
}

pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The hidden file `.<NAME>.<suffix>` beside `document` (its lock, its receipts): one place
/// names them, so every writer finds the same file and `list` never takes one for a document.
pub(crate) fn beside(document: &Path, suffix: &str) -> PathBuf {
    let (dir, name) = split(document);
    dir.join(format!(".{name}.{suffix}"))
}

/// The document's directory and file name. Document paths always have both: they are the
/// root joined with at least one name.
pub(crate) fn split(document: &Path) -> (&Path, String) {
    let dir = document.parent().unwrap_or(Path::new("."));
    let name = document
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    (dir, name)
}

/// Maps an error opening `path` to read it: a loop of symbolic links is `Corrupt`, as a write
/// would find (the kind of error that says so is not stable Rust), the rest as [`io_error`].
pub(crate) fn read_error(path: &Path, err: io::Error) -> MemoryError {
    write_target(path)
        .err()
        .unwrap_or_else(|| io_error(path, err))
}

/// Maps an I/O error on `path`: something of the wrong type where the layout needs a file or a
/// directory is `Corrupt` (retrying cannot help, a person must move it); anything else is
/// `Unavailable`.
pub(crate) fn io_error(path: &Path, err: io::Error) -> MemoryError {
    let location = path.display().to_string();
    match err.kind() {
        ErrorKind::IsADirectory => MemoryError::Corrupt {
            location,
            reason: "it is a directory, where a file should be".to_owned(),
        },
        ErrorKind::NotADirectory | ErrorKind::AlreadyExists => {
            match path
                .ancestors()
                .skip(1)
                .find(|dir| fs::metadata(dir).is_ok_and(|meta| !meta.is_dir()))
            {
                Some(blocker) => MemoryError::Corrupt {
                    location,
                    reason: format!(
                        "{} is a file, where a directory should be",
                        blocker.display()
                    ),
                },
                None => MemoryError::unavailable(location, err),
            }
        }
        _ => MemoryError::unavailable(location, err),
    }
}

/// What identifies one version of a file: a write renames a new file in (a new inode), a hand
/// edit changes its time or size.
pub(crate) fn stamp(path: &Path) -> Result<Option<(SystemTime, u64, u64)>, MemoryError> {
    match fs::metadata(path) {
        Ok(meta) => {
            #[cfg(unix)]
            let inode = std::os::unix::fs::MetadataExt::ino(&meta);
            #[cfg(not(unix))]
            let inode = 0;
            let modified = meta.modified().map_err(|err| io_error(path, err))?;
            Ok(Some((modified, meta.len(), inode)))
        }
        Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            Ok(None)
        }
        Err(err) => Err(read_error(path, err)),
    }
}

/// Removes the file at `path`; when it is a symbolic link (into a dotfiles repository, say),
/// the file it leads to as well, with that file's temporary files: removing only the link
/// would leave the text in place.
pub(crate) fn erase(path: &Path) -> Result<(), MemoryError> {
    let is_link = fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
    if is_link && let Ok(target) = write_target(path) {
        remove(&target)?;
        let (dir, name) = split(&target);
        remove_stale_temps(dir, &name)?;
    }
    remove(path)
}

fn remove(path: &Path) -> Result<(), MemoryError> {
    match fs::remove_file(path) {
        Err(err) if err.kind() != ErrorKind::NotFound => Err(io_error(path, err)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAIT: Duration = Duration::from_secs(30);

    fn lock_document(path: &Path) -> Result<File, MemoryError> {
        lock(path, WAIT, |attempts| {
            contention(&DocumentId::GlobalMemory, attempts)
        })
    }

    /// The claim the in-process safety rests on: two opens of one lock file in one process
    /// exclude each other, as two processes would.
    #[test]
    fn flock_excludes_separate_opens_in_one_process() {
        let dir = tempfile::tempdir().unwrap();
        let doc = dir.path().join("MEMORY.md");
        let held = lock_document(&doc).unwrap();
        let other = File::options()
            .read(true)
            .write(true)
            .open(dir.path().join(".MEMORY.md.lock"))
            .unwrap();
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));

        // And from another thread, through the same function the writers use: it gets the
        // lock only after the holder let go.
        let released = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let waiter = {
            let released = released.clone();
            std::thread::spawn(move || {
                let got = lock_document(&doc).unwrap();
                assert!(released.load(Ordering::SeqCst), "locked while still held");
                drop(got);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        released.store(true, Ordering::SeqCst);
        drop(held);
        waiter.join().unwrap();
        other.try_lock().unwrap();
    }

    #[test]
    fn wrong_types_in_the_layout_are_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("personalities"), "stray").unwrap();
        let tree = Tree {
            root: dir.path().to_path_buf(),
            layout: Layout::Ethos,
        };
        let doc = tree.path(&DocumentId::PersonalityMemory {
            personality: PersonalityId::new("ada").unwrap(),
        });
        let err = lock_document(&doc).unwrap_err();
        assert!(
            matches!(&err, MemoryError::Corrupt { reason, .. } if reason.contains("personalities is a file")),
            "{err}"
        );
        let err = read_at(doc, DocumentId::GlobalMemory).unwrap_err();
        assert!(matches!(err, MemoryError::Corrupt { .. }), "{err}");
    }
}
