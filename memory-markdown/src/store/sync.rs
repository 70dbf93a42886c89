//! A write (`sync`): lock the scopes whose notes it writes, then every touched document,
//! re-read them all under the locks, settle their receipts, find their journals' tips, plan
//! every batch, check the scopes' rules, and only then record the revisions and receipts and
//! replace the texts.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::time::Duration;

use memory_core::raw::{DocumentBatch, EventBus, Planned, check_scopes, sha256_hex};
use memory_core::{DocumentId, MemoryError, NotePath, NoteScope, Retention, SyncReport, Version};

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

    // Every writer of a scope's notes holds the scope's lock (`.notes.lock` beside its folder)
    // first, so the scope's listing read under it is the one the write lands in: no other
    // writer creates a colliding note or passes a cap in between. Scopes in one fixed order,
    // then documents in another, so no two calls each hold a lock the other waits for.
    let mut scopes: Vec<(PathBuf, NoteScope)> = batches
        .iter()
        .filter(|batch| batch.document().note_path().is_some())
        .filter_map(|batch| {
            let scope = batch.document().scope();
            Some((tree.notes_folder(&scope)?, scope))
        })
        .collect();
    scopes.sort();
    scopes.dedup();
    let _scope_locks = scopes
        .iter()
        .map(|(folder, scope)| {
            files::lock(folder, lock_timeout, |attempts| {
                files::contention(&scope.document(), attempts)
            })
        })
        .collect::<Result<Vec<File>, _>>()?;
    // Read once under the scopes' locks: for the check below and the scope rules after
    // planning.
    let mut listings = BTreeMap::new();
    for (_, scope) in &scopes {
        let listing: Vec<(NotePath, usize)> = files::note_files(tree, scope)?
            .into_iter()
            .map(|note| (note.path, usize::try_from(note.bytes).unwrap_or(usize::MAX)))
            .collect();
        refuse_unholdable(batches, scope, &listing)?;
        listings.insert(scope.clone(), listing);
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
        planned.push(batch.plan(current, &log, &planned)?);
        logs.push((log, settled, journal));
    }
    check_scopes(&mut planned, |scope| {
        Ok(listings.remove(scope).unwrap_or_default())
    })?;
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
                // A deleted note leaves the folder; its journal and receipts stay beside it.
                match text.is_empty() && batch.document().note_path().is_some() {
                    true => files::remove_note(path).map_err(landed)?,
                    false => files::replace_target(&target, text).map_err(landed)?,
                }
                document_report
            }
            None => write.report(write.before().version.clone()),
        };
        report.documents.push(document_report);
    }
    events.publish(&report);
    Ok(report)
}

/// Refuses a note of `batches` in `scope` that collides with a note `listing` holds (by case,
/// normalisation, or as a folder of it or a file where its folder is), unless that note is
/// the one a `rename` of the call moves away. Checked before the documents' locks, because a
/// file system cannot even lock a note where another note is a file in its path.
fn refuse_unholdable(
    batches: &[DocumentBatch],
    scope: &NoteScope,
    listing: &[(NotePath, usize)],
) -> Result<(), MemoryError> {
    let leaving: Vec<&NotePath> = batches
        .iter()
        .filter_map(|batch| match batch.document().note_path() {
            Some(path) if batch.moves_away() => Some(path),
            _ => None,
        })
        .collect();
    for batch in batches {
        let Some(path) = batch.document().note_path() else {
            continue;
        };
        if batch.document().scope() != *scope || listing.iter().any(|(there, _)| there == path) {
            continue;
        }
        if let Some((existing, _)) = listing
            .iter()
            .find(|(there, _)| there.collides_with(path) && !leaving.contains(&there))
        {
            return Err(MemoryError::NoteCollision {
                scope: scope.document(),
                path: path.clone(),
                existing: existing.clone(),
            });
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use std::io;
    use std::time::Duration;

    use memory_core::{
        IdempotencyKey, IfMatch, MemoryContext, MemoryProvider, MemoryUpdate, PersonalityId, Store,
        UserId,
    };

    use super::*;
    use crate::provider::MarkdownProvider;

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
            layout: crate::layout::Layout::Ethos,
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
