//! A purge: a document, its receipts, its journal and its killed writers' temporary files
//! erased under its lock, the tombstone left when history is on.

use std::time::Duration;

use memory_core::raw::{RevisionTip, sha256_hex};
use memory_core::{
    Document, DocumentId, MemoryError, Purged, Retention, Revision, Surface, Version,
};

use crate::journal;
use crate::layout::Tree;
use crate::{files, receipts};

/// Erases the document `id` in `tree`: its file, its receipts, its journal and the
/// temporary files writers killed mid-write left (each a copy of old text). With history on
/// and something erased, the journal then holds only the tombstone, so numbers go on from it.
/// The lock file stays: another writer may be waiting on it.
pub(crate) fn purge(
    tree: &Tree,
    id: &DocumentId,
    retention: Retention,
    surface: Surface,
    lock_timeout: Duration,
) -> Result<Purged, MemoryError> {
    let document = tree.file(id)?;
    let mut purged = Purged {
        document: id.clone(),
        location: document.display().to_string(),
        bytes: 0,
        revisions: 0,
        tombstone: None,
    };
    let dir = files::split(&document).0.to_path_buf();
    // No directory, nothing to erase: taking the lock would create one.
    if !dir.is_dir() {
        return Ok(purged);
    }
    files::refuse_case_twin(tree, id)?;
    let _lock = files::lock(&document, lock_timeout, |attempts| {
        files::contention(id, attempts)
    })?;

    // Bytes that are not UTF-8 are erased too: forgetting must not depend on them being ours.
    let stored = files::read_bytes(&document)?;
    let text = stored
        .as_ref()
        .map(|(bytes, _)| String::from_utf8_lossy(bytes).into_owned())
        .unwrap_or_default();
    let current = Document {
        id: id.clone(),
        version: Version::new(sha256_hex(&text)),
        text,
        location: purged.location.clone(),
        modified: stored.as_ref().map(|(_, modified)| *modified),
    };
    // Read whole before anything is erased: a journal that is not ours stops the purge here.
    let landed = journal::read_landed(&document, id, &current)?;
    let now = journal::now();
    let tip = landed
        .last()
        .map_or_else(journal::empty_tip, RevisionTip::of);
    purged.revisions =
        retention.count_kept(landed.iter().map(|r| (r.number, r.time)), tip.number, now);
    purged.bytes = stored.as_ref().map_or(0, |(bytes, _)| bytes.len());
    purged.tombstone = retention
        .leaves_tombstone(stored.is_some(), landed.len())
        .then(|| {
            // A hand edit that `history` showed under the next number keeps it: the tombstone
            // comes after it.
            let tip = tip
                .unrecorded(&current, now)
                .map_or(tip, |external| RevisionTip::of(&external));
            Revision::tombstone(id, &tip, journal::never_written(), surface, now)
        });

    // The document first: if the purge stops part way, what is left is history, which a
    // second purge erases, not the document itself.
    files::erase(&document)?;
    files::erase(&receipts::path(&document))?;
    let journal = journal::path(&document);
    match &purged.tombstone {
        Some(tombstone) => {
            files::replace(
                &journal,
                &journal::lines(&journal, std::slice::from_ref(tombstone))?,
            )?;
            journal::remove_older(&document)?;
        }
        None => journal::remove_journal(&document)?,
    }
    for file in [&document, &journal] {
        let (dir, name) = files::split(file);
        files::remove_stale_temps(dir, &name)?;
    }
    files::sync_dir(&dir).map_err(|err| files::io_error(&dir, err))?;
    Ok(purged)
}
