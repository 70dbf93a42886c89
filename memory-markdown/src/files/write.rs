//! Writing files: new ones private to their owner, a document replaced atomically and durably
//! (through its symbolic links), the temporary files killed writers left, and erasing.

use std::collections::hash_map::RandomState;
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, ErrorKind, Write};
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use memory_core::MemoryError;

use super::errors::io_error;
use super::links::write_target;
use super::paths::split;

/// Replaces the file `document` (a document, the identity map) with `text`, writing through
/// symbolic links (see [`write_target`]) and otherwise as [`replace_target`] does.
pub(crate) fn replace(document: &Path, text: &str) -> Result<(), MemoryError> {
    replace_target(&write_target(document)?, text)
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

/// Creates `dir` and its missing parents, flushing each parent that gained an entry so that a
/// first document survives a crash along with the directories that lead to it.
pub(super) fn create_dirs(dir: &Path) -> io::Result<()> {
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

/// Removes a deleted note's file, durably (its folder synced), so the folder shows the notes
/// that exist; a note that is a symbolic link is emptied through it instead, leaving the link
/// and the file it leads to in place.
pub(crate) fn remove_note(path: &Path) -> Result<(), MemoryError> {
    if fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return replace_target(&write_target(path)?, "");
    }
    remove(path)?;
    sync_dir(split(path).0).map_err(|err| io_error(path, err))
}

fn remove(path: &Path) -> Result<(), MemoryError> {
    match fs::remove_file(path) {
        Err(err) if err.kind() != ErrorKind::NotFound => Err(io_error(path, err)),
        _ => Ok(()),
    }
}
