//! A document's idempotency receipts (`memory_core::raw::Receipts`): the sidecar file
//! `.<NAME>.receipts.json` beside it, read and replaced under the document's lock.
//!
//! A file system cannot replace two files in one step, so a keyed write records its receipt
//! *unsettled* first, then replaces the document. The next writer of the document, holding the
//! lock, settles it: kept if the document is at the version the receipt reports (the write
//! landed), dropped if not (the writer was killed between the two files). Either way a retry
//! with the key then does the right thing: nothing twice, nothing lost.
//!
//! The middle layer: the sidecar file, built on `files` alone. When a write records and
//! settles receipts is `store`'s.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use memory_core::MemoryError;
use memory_core::raw::Receipts;

use crate::files;

/// The sidecar of the document at `document`.
pub(crate) fn path(document: &Path) -> PathBuf {
    files::beside(document, "receipts.json")
}

/// The document's receipts as stored; none when the sidecar does not exist.
pub(crate) fn read(document: &Path) -> Result<Receipts, MemoryError> {
    let path = path(document);
    let location = path.display().to_string();
    match fs::read(&path) {
        Ok(bytes) => Receipts::parse(&location, Some(&String::from_utf8_lossy(&bytes))),
        Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            Ok(Receipts::default())
        }
        Err(err) => Err(files::read_error(&path, err)),
    }
}

/// Replaces the sidecar with `receipts`, atomically. The caller holds the document's lock.
pub(crate) fn write(document: &Path, receipts: &Receipts) -> Result<(), MemoryError> {
    files::replace(&path(document), &receipts.to_json())
}
