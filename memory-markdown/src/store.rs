//! The top layer: what the provider's calls do with a document's files, under its lock or
//! without it. A write (`sync`) reads the document, settles its receipts, finds its journal's
//! tip, and records revisions and receipts before it replaces the text; `history` reads the
//! document and its journal so the two match; `purge` erases them all and leaves the tombstone.
//! Built on the middle layer (`journal`, `receipts`) and the bottom (`files`); only the
//! provider (the crate root) calls it.

use std::fs::File;
use std::path::PathBuf;
use std::time::Duration;

use memory_core::raw::{
    DocumentBatch, EventBus, Planned, Receipts, RevisionTip, history_view, kept_revisions,
    sha256_hex,
};
use memory_core::{
    Document, DocumentId, MemoryError, Purged, Retention, Revision, Surface, SyncReport, Version,
};

use crate::journal::{self, Journal, KnownTips};
use crate::layout::Tree;
use crate::{files, receipts};

/// Applies one call's batches: lock every touched document, re-read them all under the locks,
/// apply every batch, and only then write. The events are published before the locks are
/// released on return, so subscribers see writes in the order they landed.
pub(crate) fn sync(
    tree: &Tree,
    batches: &[DocumentBatch],
    lock_timeout: Duration,
    retention: Retention,
    events: &EventBus,
    known_tips: &KnownTips,
) -> Result<SyncReport, MemoryError> {
    let paths: Vec<PathBuf> = batches
        .iter()
        .map(|batch| tree.file(batch.document()))
        .collect::<Result<_, _>>()?;
    // Before the locks, because taking a lock creates the document's directory.
    for batch in batches {
        files::refuse_case_twin(tree, batch.document())?;
    }

    // One fixed order for every caller, so two calls that touch the same two documents cannot
    // each hold the lock the other waits for.
    let mut lock_order: Vec<(&PathBuf, &DocumentId)> = paths
        .iter()
        .zip(batches.iter().map(|b| b.document()))
        .collect();
    lock_order.sort();
    let _locks = lock_order
        .into_iter()
        .map(|(path, id)| {
            files::lock(path, lock_timeout, |attempts| {
                files::contention(id, attempts)
            })
        })
        .collect::<Result<Vec<File>, _>>()?;

    // Every batch is checked against what is on disk now, before anything is written: a
    // refusal (or a corrupt document) anywhere writes nothing anywhere. A receipt left
    // unsettled by a writer killed mid-call is settled first, while the document still shows
    // whether that write landed.
    // Each journal's tip is found the same way, cutting off (in memory, until this call
    // writes) a revision whose write never landed.
    let mut logs = Vec::with_capacity(batches.len());
    let mut planned = Vec::with_capacity(batches.len());
    for (batch, path) in batches.iter().zip(&paths) {
        let current = files::read_at(path.clone(), batch.document().clone())?;
        let mut log = receipts::read(path)?;
        let settled = log.settle(&current.version);
        let journal = retention
            .is_on()
            .then(|| Journal::open(path, batch.document(), &current, known_tips))
            .transpose()?;
        planned.push(batch.plan(current, &log)?);
        logs.push((log, settled, journal));
    }
    // Where each change goes, found for all of them before anything is written: a dangling
    // link at the second document must not leave the first one written.
    let changes = planned
        .iter()
        .zip(&paths)
        .map(|(planned, path)| match planned {
            Planned::Write(write) => write
                .new_text()
                .map(|text| Ok::<_, MemoryError>((files::write_target(path)?, text)))
                .transpose(),
            Planned::Replayed(_) => Ok(None),
        })
        .collect::<Result<Vec<_>, _>>()?;

    let mut report = SyncReport::default();
    let steps = planned
        .iter()
        .zip(changes)
        .zip(logs)
        .zip(batches.iter().zip(&paths));
    for (((planned, change), (mut log, settled, journal)), (batch, path)) in steps {
        let write = match planned {
            Planned::Replayed(replayed) => {
                report.documents.push(replayed.clone());
                continue;
            }
            Planned::Write(write) => write,
        };
        let landed = |err| after_landed(err, &report);
        let document_report = match change {
            Some((target, text)) => {
                let version = Version::new(sha256_hex(text));
                let document_report = write.report(version.clone());
                // The revisions and the receipt go down before the text they describe (see
                // `journal` and `receipts`): the next writer drops what did not land.
                match journal {
                    Some(journal) => {
                        let now = journal::now();
                        let revisions = write.revisions(&journal.tip(), version, now, &retention);
                        journal
                            .record(&revisions, retention, now, write.before(), &target)
                            .map_err(landed)?;
                    }
                    // History off keeps none, not even what an earlier configuration recorded.
                    None => journal::remove_journal(path).map_err(landed)?,
                }
                if let Some(key) = batch.key() {
                    log.record_unsettled(key, &batch.fingerprint(), document_report.clone());
                    receipts::write(path, &log).map_err(landed)?;
                } else if settled {
                    receipts::write(path, &log).map_err(landed)?;
                }
                files::replace_target(&target, text).map_err(landed)?;
                document_report
            }
            None => write.report(write.before().version.clone()),
        };
        report.documents.push(document_report);
    }
    events.publish(&report);
    Ok(report)
}

/// An error writing one document after an earlier one of the same call landed: says which, so
/// the caller knows the call was not all-or-nothing.
fn after_landed(err: MemoryError, report: &SyncReport) -> MemoryError {
    let landed: Vec<_> = report
        .documents
        .iter()
        .filter(|d| d.written && !d.replayed)
        .cloned()
        .collect();
    if landed.is_empty() {
        return err;
    }
    MemoryError::PartiallyApplied {
        landed,
        source: Box::new(err),
    }
}

/// The receipts of `document` in `tree`, each settled against the document as read now,
/// as the next writer will settle it. Without the lock.
pub(crate) fn read_receipts(tree: &Tree, document: DocumentId) -> Result<Receipts, MemoryError> {
    let path = tree.file(&document)?;
    let mut log = receipts::read(&path)?;
    log.settle(&files::read_at(path, document)?.version);
    Ok(log)
}

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

#[cfg(test)]
mod tests {
    use std::io;

    use memory_core::{
        IdempotencyKey, IfMatch, MemoryContext, MemoryProvider, MemoryUpdate, PersonalityId, Store,
        UserId,
    };

    use super::*;
    use crate::MarkdownProvider;

    const WAIT: Duration = Duration::from_secs(30);

    /// A failure on the second document after the first landed is `PartiallyApplied`, naming
    /// the landed write; a failure before any write stays what it was.
    #[test]
    fn failure_after_a_landed_write_names_it() {
        use memory_core::raw::plan_sync;
        let dir = tempfile::tempdir().unwrap();
        let ctx = MemoryContext::new(
            PersonalityId::new("ada").unwrap(),
            UserId::new("u1").unwrap(),
        );
        let updates = [MemoryUpdate::add(Store::Memory, "landed")];
        let batches = plan_sync(&ctx, &updates, &IfMatch::NONE).unwrap();
        let tree = Tree {
            root: dir.path().to_path_buf(),
            layout: crate::Layout::Ethos,
        };
        let report = sync(
            &tree,
            &batches,
            WAIT,
            Retention::default(),
            &memory_core::raw::EventBus::default(),
            &KnownTips::default(),
        )
        .unwrap();
        let cause = || MemoryError::unavailable("USER.md", io::Error::other("disk full"));

        let err = after_landed(cause(), &report);
        let MemoryError::PartiallyApplied { landed, source } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(landed, &report.documents);
        assert!(matches!(**source, MemoryError::Unavailable { .. }));
        let message = err.to_string();
        assert!(
            message.contains("disk full") && message.contains("MEMORY.md of personality 'ada'")
        );

        let nothing_landed = after_landed(cause(), &SyncReport::default());
        assert!(matches!(nothing_landed, MemoryError::Unavailable { .. }));
    }

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
        let sidecar = std::fs::read_to_string(receipts::path(&file)).unwrap();
        assert!(
            !sidecar.contains("unsettled"),
            "settled by the later writer: {sidecar}"
        );
    }
}
