//! A document's receipts as `MemoryProvider::receipts` reads them: without the lock, settled
//! against the document as the next writer will settle them.

use memory_core::raw::Receipts;
use memory_core::{DocumentId, MemoryError};

use crate::layout::Tree;
use crate::{files, receipts};

/// The receipts of `document` in `tree`, each settled against the document as read now,
/// as the next writer will settle it. Without the lock.
pub(crate) fn read_receipts(tree: &Tree, document: DocumentId) -> Result<Receipts, MemoryError> {
    let path = tree.file(&document)?;
    let mut log = receipts::read(&path)?;
    log.settle(&files::read_at(path, document)?.version);
    Ok(log)
}
