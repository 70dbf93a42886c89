//! A history read: the document and its journal read so that the two match, without the lock
//! while that can be done.

use std::time::Duration;

use memory_core::raw::{RevisionTip, history_view, kept_revisions};
use memory_core::{DocumentId, MemoryError, Retention, Revision};

use crate::files;
use crate::journal;
use crate::layout::Tree;

/// The history of `id` in `tree` as `MemoryProvider::history` gives it: the revisions
/// `retention` keeps, newest first, at most `limit`, headed by an unrecorded hand edit.
///
/// Without the lock while it can: the journal is only appended to and replaced by rename, and
/// a torn last line is left out. The document is read first, then the journal; if the document
/// changed meanwhile, both are read again, so the two match: the journal then holds at most one
/// revision past the document (a write between its append and its rename), which is hidden as
/// the next writer would cut it off. A document rewritten faster than it can be read that way
/// is read under its lock, waiting at most `lock_timeout`: a history that mixes two moments
/// would show a hand edit nobody made.
pub(crate) fn history(
    tree: &Tree,
    id: DocumentId,
    retention: Retention,
    limit: usize,
    lock_timeout: Duration,
) -> Result<Vec<Revision>, MemoryError> {
    let document = tree.file(&id)?;
    let now = journal::now();
    if !retention.is_on() {
        // History off: nothing is recorded, whatever an earlier configuration left.
        let current = files::read_at(document, id)?;
        return Ok(history_view(
            Vec::new(),
            &journal::empty_tip(),
            &current,
            limit,
            now,
            &retention,
        ));
    }
    let (current, landed) = read_consistently(
        || files::stamp(&document),
        || {
            let current = files::read_at(document.clone(), id.clone())?;
            let landed = journal::read_landed(&document, &id, &current)?;
            Ok((current, landed))
        },
        || {
            files::lock(&document, lock_timeout, |attempts| {
                files::contention(&id, attempts)
            })
        },
    )?;
    let tip = landed
        .last()
        .map_or_else(journal::empty_tip, RevisionTip::of);
    let location = journal::path(&document).display().to_string();
    let mut kept = kept_revisions(
        landed.into_iter().rev().collect(),
        tip.number,
        now,
        &retention,
        &location,
    )?;
    kept.truncate(limit);
    Ok(history_view(kept, &tip, &current, limit, now, &retention))
}

/// What `read` gives while the file's `stamp` stays the same from before it to after it, so
/// everything it read belongs to one version of the file; after [`OPTIMISTIC_READS`] readings
/// that each saw the file change, it reads once more holding the `lock` (which every writer
/// takes), released when the reading is done.
fn read_consistently<Stamp: PartialEq, Reading, Lock>(
    mut stamp: impl FnMut() -> Result<Stamp, MemoryError>,
    mut read: impl FnMut() -> Result<Reading, MemoryError>,
    lock: impl FnOnce() -> Result<Lock, MemoryError>,
) -> Result<Reading, MemoryError> {
    for _ in 0..OPTIMISTIC_READS {
        let before = stamp()?;
        let reading = read()?;
        if stamp()? == before {
            return Ok(reading);
        }
    }
    let _lock = lock()?;
    read()
}

/// How many times a reader without the lock reads a document that changes while it is read
/// before it takes the lock: a few, so a reader waits for writers only when they outpace it.
const OPTIMISTIC_READS: usize = 3;

#[cfg(test)]
mod tests {
    use memory_core::UserId;

    use super::*;

    /// A reading during which the file stayed the same is taken without the lock, on the
    /// first try or a later one.
    #[test]
    fn a_reading_of_one_version_takes_no_lock() {
        use std::cell::Cell;
        for changes in 0..OPTIMISTIC_READS {
            // The file changes during the first `changes` readings, then holds still.
            let (stamps, reads) = (Cell::new(0), Cell::new(0));
            let stamp = || {
                stamps.set(stamps.get() + 1);
                Ok(stamps.get().min(2 * changes + 1) / 2)
            };
            let read = || {
                reads.set(reads.get() + 1);
                Ok(reads.get())
            };
            let lock = || -> Result<(), MemoryError> { panic!("the lock was taken") };
            assert_eq!(read_consistently(stamp, read, lock).unwrap(), changes + 1);
        }
    }

    /// A file that changes during every reading is read once more, under the lock, and that
    /// reading is the one given; a lock not had in time is the error.
    #[test]
    fn a_file_changing_during_every_reading_is_read_under_the_lock() {
        use std::cell::Cell;
        let (stamps, reads, locked) = (Cell::new(0), Cell::new(0), Cell::new(false));
        let stamp = || {
            stamps.set(stamps.get() + 1);
            Ok(stamps.get())
        };
        let read = || {
            reads.set(reads.get() + 1);
            Ok((reads.get(), locked.get()))
        };
        let lock = || {
            locked.set(true);
            Ok(())
        };
        let reading = read_consistently(stamp, read, lock).unwrap();
        assert_eq!(reading, (OPTIMISTIC_READS + 1, true));

        let busy = read_consistently(
            || Ok(reads.replace(reads.get() + 1)),
            || Ok(()),
            || -> Result<(), MemoryError> {
                let document = DocumentId::user(&UserId::new("u1").unwrap());
                Err(files::contention(&document, 7))
            },
        );
        assert!(matches!(
            busy,
            Err(MemoryError::Contention { attempts: 7, .. })
        ));
    }
}
