//! The lock file beside a document (or the identity map) that every writer of it holds.

use std::fs::{File, TryLockError};
use std::io::ErrorKind;
use std::path::Path;
use std::time::{Duration, Instant};

use memory_core::raw::Backoff;
use memory_core::{DocumentId, MemoryError};

use super::errors::io_error;
use super::paths::{beside, split};
use super::write::{create_dirs, private_file};

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

#[cfg(test)]
mod tests {
    use std::fs;
    use std::sync::atomic::Ordering;

    use memory_core::PersonalityId;

    use super::*;
    use crate::files::read::read_at;
    use crate::layout::{Layout, Tree};

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
