//! A document's idempotency receipts (`memory_core::Receipts`): the sidecar file
//! `.<NAME>.receipts.json` beside it, read and replaced under the document's lock.
//!
//! A file system cannot replace two files in one step, so a keyed write records its receipt
//! *unsettled* first, then replaces the document. The next writer of the document, holding the
//! lock, settles it: kept if the document is at the version the receipt reports (the write
//! landed), dropped if not (the writer was killed between the two files). Either way a retry
//! with the key then does the right thing: nothing twice, nothing lost.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use memory_core::{MemoryError, Receipts};

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

#[cfg(test)]
mod tests {
    use memory_core::{
        IdempotencyKey, IfMatch, MemoryContext, MemoryProvider, MemoryUpdate, PersonalityId, Store,
        UserId,
    };

    use crate::MarkdownProvider;

    fn keyed(key: &str) -> MemoryContext {
        MemoryContext::new(
            PersonalityId::new("ada").unwrap(),
            UserId::new("u1").unwrap(),
        )
        .with_idempotency_key(IdempotencyKey::new(key).unwrap())
    }

    /// The two ways a writer can die between its receipt and its document, replayed by hand:
    /// the receipt is on disk, the document is or is not.
    #[tokio::test]
    async fn a_receipt_counts_only_if_its_write_reached_the_document() {
        let dir = tempfile::tempdir().unwrap();
        let p = MarkdownProvider::new(dir.path());
        let add = |text: &str| [MemoryUpdate::add(Store::Memory, text)];
        let file = p.path(&keyed("k").document(Store::Memory));

        // Killed after the receipt, before the rename: the document never changed.
        p.sync(&keyed("k1"), &add("first"), &IfMatch::NONE)
            .await
            .unwrap();
        let before = std::fs::read_to_string(&file).unwrap();
        p.sync(&keyed("k2"), &add("lost"), &IfMatch::NONE)
            .await
            .unwrap();
        std::fs::write(&file, &before).unwrap();
        p.sync(&keyed("k2"), &add("lost"), &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "first\n\nlost\n");

        // Killed after the rename: the write landed, and a later writer settles its receipt
        // before changing the document again.
        p.sync(&keyed("k3"), &add("landed"), &IfMatch::NONE)
            .await
            .unwrap();
        let plain = MemoryContext::new(
            PersonalityId::new("ada").unwrap(),
            UserId::new("u1").unwrap(),
        );
        p.sync(&plain, &add("other"), &IfMatch::NONE).await.unwrap();
        let again = p
            .sync(&keyed("k3"), &add("landed"), &IfMatch::NONE)
            .await
            .unwrap();
        assert!(again.documents[0].replayed);
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "first\n\nlost\n\nlanded\n\nother\n"
        );
        let sidecar = std::fs::read_to_string(super::path(&file)).unwrap();
        assert!(
            !sidecar.contains("unsettled"),
            "settled by the later writer: {sidecar}"
        );
    }
}
