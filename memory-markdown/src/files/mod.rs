//! The bottom layer: the blocking file work behind the provider, knowing nothing of journals,
//! receipts or what a write does with them. Document paths, reading, locking, atomic
//! replacement, removal, listing, and the mapping of I/O errors to `MemoryError`s. It uses only
//! `layout` (which file holds which document); the journal, the receipts, the identity map
//! (the middle layer) and `store` (the top) are built on it, through the functions this module
//! re-exports.

// The names of the files beside a document (`.<NAME>.<suffix>`).
mod paths;
// I/O errors as `MemoryError`s: the wrong type where the layout needs a file or a directory is
// `Corrupt`, anything else `Unavailable`.
mod errors;
// Symbolic links: the file a write to a linked document replaces; a loop or a dangling link.
mod links;
// Reading a document, its bytes with their time, and a file's stamp.
mod read;
// Writing: private new files and folders, atomic and durable replacement, erasing.
mod write;
// The lock file every writer of a document holds, polled up to a timeout.
mod lock;
// The documents the directories hold, and ids that differ from a directory only in case.
mod listing;
// The notes a scope's folder holds.
mod notes;
// Whether anything in a notes folder changed since it was listed.
mod watch;

pub(crate) use errors::io_error;
pub(crate) use links::{read_error, write_target};
pub(crate) use listing::{list, refuse_case_twin};
pub(crate) use lock::{contention, lock};
pub(crate) use notes::{ListedNotes, newest_notes, note_files, notes};
pub(crate) use paths::{beside, split};
pub(crate) use read::{read, read_at, read_bytes, stamp};
pub(crate) use write::{
    erase, private_file, remove_note, remove_stale_temps, replace, replace_target, sync_dir,
};
