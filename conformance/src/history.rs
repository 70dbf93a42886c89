//! History (`CONTRACT.md`, History): every change a revision, in order, revertible, and a purge
//! that leaves only a tombstone. The cases stamped by [`crate::conformance_suite!`] run on a
//! provider with the default retention; [`retention_keeps_the_newest`] and
//! [`hand_edits_become_external_revisions`] need what only a backend's own tests can build (a
//! provider with a small retention, a way to edit the stored bytes by hand) and are called
//! from there.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use memory_core::raw::sha256_hex;
use memory_core::{
    DocumentId, ErrorKind, IdempotencyKey, MemoryError, MemoryProvider, MemoryUpdate, Retention,
    Revision, Surface,
};

use crate::support::{M, U, ctx, sync};
use crate::{Host, IntoFixture};

/// How far a backend's clock (a server's) may be from this process's.
const CLOCK_SKEW: Duration = Duration::from_secs(300);

async fn history<P: MemoryProvider + ?Sized>(p: &P, document: &DocumentId) -> Vec<Revision> {
    p.history(document, usize::MAX)
        .await
        .unwrap_or_else(|err| panic!("history of {document}: {err}"))
}

/// Numbers run down by one from the newest, and each revision starts from what the one before
/// it left.
pub(crate) fn assert_chained(revisions: &[Revision]) {
    for pair in revisions.windows(2) {
        let (newer, older) = (&pair[0], &pair[1]);
        assert_eq!(
            newer.number,
            older.number + 1,
            "numbers run without gaps, newest first: {} after {}",
            newer.number,
            older.number
        );
        assert_eq!(
            (&newer.sha256_before, newer.bytes_before),
            (&older.sha256_after, older.bytes_after),
            "revision {} starts where {} ended",
            newer.number,
            older.number
        );
        assert_eq!(newer.version_before, older.version_after);
    }
}

/// Each write that changes a document is one revision recording it whole: versions, hashes,
/// sizes, time, who (surface, personality, user, key, session), the updates and the text after;
/// newest first, numbered from 1. A batch that changes nothing records nothing.
pub async fn every_change_is_one_revision_newest_first<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let started = SystemTime::now();
    let tool = ctx("ada", "u1")
        .with_surface(Surface::Tool)
        .with_session("conversation-7")
        .with_idempotency_key(IdempotencyKey::new("turn-1").unwrap());
    let cli = ctx("ada", "u1").with_surface(Surface::Cli);
    let first = [
        MemoryUpdate::add(M, "Likes tea."),
        MemoryUpdate::add(M, "Flies Tuesday."),
    ];
    let reports = [
        sync(&*p, &tool, &first).await,
        sync(&*p, &cli, &[MemoryUpdate::remove(M, "absent")]).await,
        sync(&*p, &cli, &[MemoryUpdate::edit(M, "Tuesday", "Friday")]).await,
    ];
    assert!(!reports[1].documents[0].written);
    let document = tool.document(M);
    let log = history(&*p, &document).await;
    assert_eq!(
        log.iter().map(|r| r.number).collect::<Vec<_>>(),
        [2, 1],
        "one revision per change, newest first; the no-op made none"
    );
    assert_chained(&log);
    for (revision, report) in log.iter().rev().zip([&reports[0], &reports[2]]) {
        let report = &report.documents[0];
        assert_eq!(revision.document, document);
        assert_eq!(
            (&revision.version_before, &revision.version_after),
            (&report.version_before, &report.version_after),
            "revision {} has the versions its write reported",
            revision.number
        );
        assert_eq!(
            (&revision.sha256_before, &revision.sha256_after),
            (&report.sha256_before, &report.sha256_after)
        );
        assert_eq!(
            (revision.bytes_before, revision.bytes_after),
            (report.bytes_before, report.bytes_after)
        );
        let text = revision.text.as_deref().expect("a write keeps its text");
        assert_eq!(sha256_hex(text), report.sha256_after);
        let now = SystemTime::now();
        assert!(
            revision.time + CLOCK_SKEW >= started && revision.time <= now + CLOCK_SKEW,
            "revision {} was made during the test, by the backend's clock",
            revision.number
        );
    }
    let (newest, oldest) = (&log[0], &log[1]);
    assert_eq!(oldest.updates, first, "the updates applied, in order");
    assert_eq!(
        (oldest.surface, oldest.session.as_deref()),
        (Surface::Tool, Some("conversation-7"))
    );
    assert_eq!(oldest.idempotency_key, tool.idempotency_key);
    assert_eq!(
        (oldest.personality.as_ref(), oldest.user.as_ref()),
        (Some(&tool.personality), Some(&tool.user))
    );
    assert_eq!(
        (
            newest.surface,
            newest.session.as_deref(),
            &newest.idempotency_key
        ),
        (Surface::Cli, None, &None)
    );
    assert_eq!(
        newest.text.as_deref(),
        Some("Likes tea.\n\nFlies Friday.\n")
    );
    assert_eq!(p.history(&document, 1).await.unwrap(), log[..1], "limit");
    assert!(
        history(&*p, &tool.document(U)).await.is_empty(),
        "a document never written has no history"
    );
}

/// A revert puts back the text a revision left, as a `replace` that is a revision of its own
/// (so a revert can be reverted); guarded by `if_match`, and refused for a revision not kept.
pub async fn revert_restores_a_revision_as_a_new_one<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1").with_surface(Surface::Web);
    sync(&*p, &c, &[MemoryUpdate::add(M, "Likes tea.")]).await;
    sync(&*p, &c, &[MemoryUpdate::add(M, "Flies Friday.")]).await;
    sync(&*p, &c, &[MemoryUpdate::replace(M, "Oops.")]).await;
    let document = c.document(M);

    let report = p.revert(&c, M, 2, None).await.expect("revert to 2");
    assert_eq!(
        p.read(&document).await.unwrap().text,
        "Likes tea.\n\nFlies Friday.\n"
    );
    let log = history(&*p, &document).await;
    assert_eq!(log.len(), 4, "the revert is a revision");
    assert_chained(&log);
    assert_eq!(log[0].version_after, report.documents[0].version_after);
    assert_eq!(log[0].surface, Surface::Web);
    assert_eq!(log[0].sha256_after, log[2].sha256_after, "back to 2's text");

    p.revert(&c, M, 3, Some(&report.documents[0].version_after))
        .await
        .expect("a revert can be reverted");
    assert_eq!(p.read(&document).await.unwrap().text, "Oops.\n");

    // The version the first revert left: stale now (with content-hash versions, the version
    // `bad` left is current again, as the text is).
    let stale = report.documents[0].version_after.clone();
    let err = p.revert(&c, M, 1, Some(&stale)).await.unwrap_err();
    assert!(matches!(err, MemoryError::Conflict { .. }), "{err}");
    for missing in [0, 99] {
        let err = p.revert(&c, M, missing, None).await.unwrap_err();
        assert!(
            matches!(&err, MemoryError::RevisionNotFound { number, .. } if *number == missing),
            "{err}"
        );
    }
    assert_eq!(
        history(&*p, &document).await.len(),
        5,
        "refusals wrote nothing"
    );
    assert_eq!(p.read(&document).await.unwrap().text, "Oops.\n");
}

/// A purge erases the document and its history, leaving one tombstone without content; the
/// document reads as never written, `list` leaves it out, other documents are untouched, and
/// later writes number on from the tombstone.
pub async fn purge_leaves_only_a_tombstone<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let never = p.read(&c.document(M)).await.unwrap().version;
    sync(
        &*p,
        &c,
        &[
            MemoryUpdate::add(M, "Secret."),
            MemoryUpdate::add(U, "Kept."),
        ],
    )
    .await;
    sync(&*p, &c, &[MemoryUpdate::add(M, "Also secret.")]).await;
    let document = c.document(M);
    let erased = p.read(&document).await.unwrap();
    let bytes = erased.text.len();

    let purged = p.purge(&document, Surface::Cli).await.expect("purge");
    assert_eq!((purged.bytes, purged.revisions), (bytes, 2));
    let tombstone = purged.tombstone.expect("history is on: a tombstone");
    assert!(tombstone.is_tombstone() && tombstone.text.is_none());
    assert_eq!((tombstone.number, tombstone.surface), (3, Surface::Cli));
    assert_eq!((tombstone.bytes_before, tombstone.bytes_after), (bytes, 0));
    let read = p.read(&document).await.unwrap();
    assert_eq!(
        (read.text.as_str(), &read.version, read.modified),
        ("", &never, None)
    );
    assert!(!p.list().await.unwrap().contains(&document));
    assert_eq!(
        history(&*p, &document).await,
        std::slice::from_ref(&tombstone)
    );
    let log = format!("{:?}", history(&*p, &document).await);
    assert!(!log.contains("ecret"), "no content survives: {log}");
    assert!(
        !log.contains(&sha256_hex(&erased.text)),
        "nothing derived from the content survives either: {log}"
    );
    assert_eq!(
        (&tombstone.version_before, tombstone.sha256_before.as_str()),
        (&never, sha256_hex("").as_str()),
        "the tombstone starts from the empty document, not the erased one's version"
    );
    assert_eq!(p.read(&c.document(U)).await.unwrap().text, "Kept.\n");
    assert_eq!(history(&*p, &c.document(U)).await.len(), 1);
    let err = p.revert(&c, M, 3, None).await.unwrap_err();
    assert!(matches!(err, MemoryError::RevisionNotFound { .. }), "{err}");

    sync(&*p, &c, &[MemoryUpdate::add(M, "After.")]).await;
    let log = history(&*p, &document).await;
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].number, 4, "numbers are never reused");
    assert_eq!(
        log[0].surface,
        Surface::Api,
        "no external revision: nothing was unrecorded"
    );

    let never_written = ctx("bob", "u2").document(M);
    let nothing = p.purge(&never_written, Surface::Cli).await.unwrap();
    assert_eq!(
        (nothing.bytes, nothing.revisions, nothing.tombstone),
        (0, 0, None)
    );
    assert!(history(&*p, &never_written).await.is_empty());
}

/// Purging a document purged already erases its tombstone and leaves a newer one in its
/// place, with this purge's surface and nothing to erase but that tombstone; later writes
/// number on from it.
pub async fn a_second_purge_replaces_the_tombstone<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let document = c.document(M);
    sync(&*p, &c, &[MemoryUpdate::add(M, "Secret.")]).await;
    let first = p.purge(&document, Surface::Cli).await.expect("purge");
    let first = first.tombstone.expect("history is on: a tombstone");
    assert_eq!(first.number, 2);

    let again = p.purge(&document, Surface::Web).await.expect("purge again");
    assert_eq!(
        (again.bytes, again.revisions),
        (0, 1),
        "only the old tombstone was left to erase"
    );
    let tombstone = again.tombstone.expect("a newer tombstone");
    assert!(tombstone.is_tombstone());
    assert_eq!((tombstone.number, tombstone.surface), (3, Surface::Web));
    assert_eq!((tombstone.bytes_before, tombstone.bytes_after), (0, 0));
    assert_eq!(
        history(&*p, &document).await,
        std::slice::from_ref(&tombstone),
        "the newer tombstone replaces the old"
    );
    assert_eq!(p.read(&document).await.unwrap().text, "");

    sync(&*p, &c, &[MemoryUpdate::add(M, "After.")]).await;
    let numbers: Vec<u64> = history(&*p, &document)
        .await
        .iter()
        .map(|revision| revision.number)
        .collect();
    assert_eq!(numbers, [4, 3]);
}

/// Concurrent writers: every acknowledged write has exactly one revision, and the revisions
/// form one chain in the order the writes landed.
pub async fn concurrent_writes_have_one_revision_each<P: MemoryProvider + ?Sized + 'static>(
    p: Arc<P>,
) {
    const TASKS: usize = 8;
    const ADDS: usize = 10;
    let c = ctx("ada", "u1");
    let writers: Vec<_> = (0..TASKS)
        .map(|t| {
            let (p, c) = (Arc::clone(&p), c.clone());
            tokio::spawn(async move {
                let mut reports = Vec::new();
                for i in 0..ADDS {
                    let add = [MemoryUpdate::add(M, format!("task{t}-add{i}"))];
                    reports.push(sync(&*p, &c, &add).await.documents.remove(0));
                }
                reports
            })
        })
        .collect();
    let mut acknowledged = HashMap::new();
    for writer in writers {
        for report in writer.await.expect("writer task") {
            acknowledged.insert(report.version_after.clone(), report);
        }
    }
    let log = history(&*p, &c.document(M)).await;
    assert_eq!(
        log.len(),
        TASKS * ADDS,
        "one revision per acknowledged write"
    );
    assert_chained(&log);
    assert_eq!(log.last().unwrap().number, 1);
    for revision in &log {
        let report = acknowledged
            .remove(&revision.version_after)
            .unwrap_or_else(|| panic!("revision {} matches no write", revision.number));
        assert_eq!(revision.sha256_after, report.sha256_after);
    }
    assert!(acknowledged.is_empty());
}

/// With a retention of `keep`, history shows exactly the newest `keep` revisions, an older one
/// cannot be reverted to, and a purge erases as many as history showed. `p` must be a provider configured to keep `keep` (at least 2).
pub async fn retention_keeps_the_newest<P: MemoryProvider + ?Sized>(p: Arc<P>, keep: usize) {
    let c = ctx("ada", "u1");
    let writes = keep as u64 * 3 + 2;
    for i in 0..writes {
        sync(&*p, &c, &[MemoryUpdate::add(M, format!("entry {i}"))]).await;
    }
    let log = history(&*p, &c.document(M)).await;
    let numbers: Vec<u64> = log.iter().map(|r| r.number).collect();
    let expected: Vec<u64> = (writes + 1 - keep as u64..=writes).rev().collect();
    assert_eq!(numbers, expected, "the newest {keep}, newest first");
    let oldest_kept = writes + 1 - keep as u64;
    let err = p.revert(&c, M, oldest_kept - 1, None).await.unwrap_err();
    assert!(matches!(err, MemoryError::RevisionNotFound { .. }), "{err}");
    p.revert(&c, M, oldest_kept, None)
        .await
        .expect("the oldest kept revision can be reverted to");
    let purged = p.purge(&c.document(M), Surface::Cli).await.expect("purge");
    assert_eq!(
        purged.revisions, keep,
        "a purge counts the revisions history showed, whatever storage kept to rebuild them"
    );
}

/// A change made without the provider (an editor, another program) shows as an `external`
/// revision at the head of the history, and the next write records it before its own, so the
/// log has no gap. `edit(document, text)` replaces the stored text by hand, as a person would.
pub async fn hand_edits_become_external_revisions<P, F, Fut>(p: Arc<P>, edit: F)
where
    P: MemoryProvider + ?Sized,
    F: Fn(DocumentId, String) -> Fut,
    Fut: Future<Output = ()>,
{
    let c = ctx("ada", "u1");
    let document = c.document(M);
    sync(&*p, &c, &[MemoryUpdate::add(M, "Likes tea.")]).await;
    edit(
        document.clone(),
        "Likes tea.\n\nEdited by hand.\n".to_owned(),
    )
    .await;

    let seen = history(&*p, &document).await;
    assert_eq!(seen.len(), 2);
    let external = &seen[0];
    assert_eq!((external.number, external.surface), (2, Surface::External));
    assert_eq!(
        external.text.as_deref(),
        Some("Likes tea.\n\nEdited by hand.\n")
    );
    assert_eq!(
        external.version_after,
        p.read(&document).await.unwrap().version
    );
    assert!(external.updates.is_empty() && external.personality.is_none());
    assert_eq!(
        history(&*p, &document).await,
        seen,
        "reading records nothing twice"
    );

    sync(&*p, &c, &[MemoryUpdate::add(M, "Then the agent.")]).await;
    let log = history(&*p, &document).await;
    assert_eq!(
        log.iter()
            .map(|r| (r.number, r.surface))
            .collect::<Vec<_>>(),
        [(3, Surface::Api), (2, Surface::External), (1, Surface::Api)],
        "the write recorded the hand edit before itself"
    );
    assert_chained(&log);
    assert_eq!(log[1].text, external.text);
    p.revert(&c, M, 2, None)
        .await
        .expect("a hand edit can be reverted to");
    assert_eq!(
        p.read(&document).await.unwrap().text,
        "Likes tea.\n\nEdited by hand.\n"
    );

    // A document created by hand before any write through the provider.
    let other = ctx("bob", "u2");
    edit(other.document(U), "Made by hand.\n".to_owned()).await;
    sync(&*p, &other, &[MemoryUpdate::add(U, "Then the agent.")]).await;
    let log = history(&*p, &other.document(U)).await;
    assert_eq!(
        log.iter()
            .map(|r| (r.number, r.surface))
            .collect::<Vec<_>>(),
        [(2, Surface::Api), (1, Surface::External)]
    );
    assert_eq!(log[1].text.as_deref(), Some("Made by hand.\n"));
    assert_eq!(log[1].bytes_before, 0);
}

/// One step of [`kept_revisions_rebuild_to_the_texts_written`]'s random sequences, all on one
/// MEMORY.md.
#[derive(Debug, Clone)]
enum HistoryStep {
    /// An agent's batch (often refused: an edit of text that is not there, an empty
    /// needle).
    Sync(Vec<MemoryUpdate>),
    /// The document replaced by hand, outside the provider.
    HandEdit(String),
    /// A revert to the kept revision this many places from the newest (wrapped).
    Revert(usize),
    /// The document purged.
    Purge,
}

fn history_step() -> impl proptest::strategy::Strategy<Value = HistoryStep> {
    use proptest::prelude::*;
    let hand_text = proptest::sample::select(crate::model::TEXTS)
        .prop_map(|text| format!("{text}\nEdited by hand.\n"));
    prop_oneof![
        12 => proptest::collection::vec(crate::model::update(&[M]), 1..4).prop_map(HistoryStep::Sync),
        3 => hand_text.prop_map(HistoryStep::HandEdit),
        2 => (0..8usize).prop_map(HistoryStep::Revert),
        1 => Just(HistoryStep::Purge),
    ]
}

/// Plays `steps` on `p` (keeping `keep` revisions; `edit` replaces the stored text by hand)
/// and checks every revision history then shows against the texts the document held: each
/// kept revision's text, however its backend stores it (whole, or as its change), is the text
/// that was there just after it.
async fn play_history<P, F, Fut>(p: &P, keep: usize, steps: &[HistoryStep], edit: F)
where
    P: MemoryProvider + ?Sized,
    F: Fn(DocumentId, String) -> Fut,
    Fut: Future<Output = ()>,
{
    let c = ctx("ada", "u1");
    let document = c.document(M);
    // The text the document held at each version it had.
    let mut texts = HashMap::new();
    // The oldest revision there can be: 1, or the last purge's tombstone.
    let mut oldest = 1;
    for step in steps {
        match step {
            HistoryStep::Sync(updates) => {
                if let Err(err) = p.sync(&c, updates, &memory_core::IfMatch::NONE).await {
                    assert!(
                        matches!(err.kind(), ErrorKind::Refused | ErrorKind::InvalidInput),
                        "{step:?}: {err}"
                    );
                }
            }
            // An edit that leaves the text as it is changes nothing history records (a store
            // may still move its version, as redis-cli's HINCRBY would): not this property's.
            HistoryStep::HandEdit(text) if *text == p.read(&document).await.expect("read").text => {
                continue;
            }
            HistoryStep::HandEdit(text) => edit(document.clone(), text.clone()).await,
            HistoryStep::Revert(back) => {
                let log = history(p, &document).await;
                let Some(revision) = log
                    .iter()
                    .filter(|revision| !revision.is_tombstone())
                    .cycle()
                    .nth(*back)
                else {
                    continue;
                };
                p.revert(&c, M, revision.number, None)
                    .await
                    .unwrap_or_else(|err| panic!("revert to {}: {err}", revision.number));
            }
            HistoryStep::Purge => {
                let purged = p.purge(&document, Surface::Cli).await.expect("purge");
                if let Some(tombstone) = purged.tombstone {
                    oldest = tombstone.number;
                }
            }
        }
        let now = p.read(&document).await.expect("read");
        texts.insert(now.version, now.text);
    }

    let log = history(p, &document).await;
    let Some(newest) = log.first() else {
        return;
    };
    assert_eq!(
        log.len() as u64,
        (newest.number + 1 - oldest).min(keep as u64),
        "the newest {keep} revisions are kept: {:?}",
        log.iter().map(|r| r.number).collect::<Vec<_>>()
    );
    assert_chained(&log);
    for revision in log.iter().filter(|revision| !revision.is_tombstone()) {
        let text = revision
            .text
            .as_deref()
            .unwrap_or_else(|| panic!("revision {} has no text", revision.number));
        assert_eq!(
            Some(text),
            texts.get(&revision.version_after).map(String::as_str),
            "revision {}'s text is the text its version held",
            revision.number
        );
        assert_eq!(
            (text.len(), sha256_hex(text)),
            (revision.bytes_after, revision.sha256_after.clone()),
            "revision {}",
            revision.number
        );
    }
}

/// Random sequences of agent writes, hand edits, reverts and purges on a provider keeping a
/// random 2 to 6 revisions: every revision history keeps reads back as the text the document
/// held just after it, across checkpoints and pruning (`CONTRACT.md`, History). Needs a fixture
/// with hosts (for the small retention) and hand edits. `PROPTEST_CASES` sets the number of
/// sequences (default 16: each plays up to 40 calls).
pub fn kept_revisions_rebuild_to_the_texts_written<P, F, Fut>(setup: F)
where
    P: MemoryProvider + ?Sized + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output: IntoFixture<P>>,
{
    use proptest::test_runner::TestCaseError;

    let Some((mut runner, runtime)) = crate::model::property_runner(&setup, 16) else {
        return; // setup explained the skip
    };
    let sequences = (2..=6usize, proptest::collection::vec(history_step(), 1..40));
    let result = runner.run(&sequences, |(keep, steps)| {
        runtime.block_on(async {
            let fixture = setup().await.into_fixture().expect("the service went away");
            let keeping = Host {
                retention: Some(Retention::keep(keep)),
                ..Host::default()
            };
            let p = fixture.host(keeping).await;
            play_history(&*p, keep, &steps, |document, text| {
                fixture.hand_edit(document, text)
            })
            .await;
            Ok::<(), TestCaseError>(())
        })
    });
    if let Err(e) = result {
        panic!("a kept revision does not read back as its text: {e}");
    }
}

/// The revisions of `document` with their texts, keyed by number, as `history` gives them.
async fn texts<P: MemoryProvider + ?Sized>(
    p: &P,
    document: &DocumentId,
) -> HashMap<u64, Option<String>> {
    history(p, document)
        .await
        .into_iter()
        .map(|revision| (revision.number, revision.text))
        .collect()
}

/// A redaction erases one kept revision's text and updates and nothing else: it keeps its
/// number, time, origin, sizes and hashes, `history` shows it without text, `revert` to it is
/// `RevisionNotFound`, and every other revision still shows its text (the revisions stored as
/// changes after it were rebased). The revision the document holds now is refused, and so is
/// one not kept; a second redaction of the same revision changes nothing.
pub async fn redaction_erases_one_revision_and_keeps_the_rest<P: MemoryProvider + ?Sized>(
    p: Arc<P>,
) {
    let c = ctx("ada", "u1").with_surface(Surface::Tool);
    sync(&*p, &c, &[MemoryUpdate::add(M, "Code: opal-heron.")]).await;
    sync(&*p, &c, &[MemoryUpdate::add(M, "Likes tea.")]).await;
    sync(
        &*p,
        &c,
        &[MemoryUpdate::edit(M, "Code: opal-heron.", "No code.")],
    )
    .await;
    sync(&*p, &c, &[MemoryUpdate::add(M, "Flies Friday.")]).await;
    let document = c.document(M);
    let before = history(&*p, &document).await;
    let before_texts = texts(&*p, &document).await;

    let newest = p.redact(&document, 4).await.unwrap_err();
    assert!(
        matches!(&newest, MemoryError::RevisionInUse { number: 4, .. }),
        "the document holds revision 4's text: {newest}"
    );
    assert_eq!(newest.kind(), ErrorKind::Refused);
    assert_eq!(
        history(&*p, &document).await,
        before,
        "refused: nothing written"
    );
    for missing in [0, 5, 99] {
        let err = p.redact(&document, missing).await.unwrap_err();
        assert!(
            matches!(&err, MemoryError::RevisionNotFound { number, .. } if *number == missing),
            "{err}"
        );
    }

    let redacted = p.redact(&document, 2).await.expect("redact revision 2");
    let shown = history(&*p, &document).await;
    assert_eq!(shown.len(), 4);
    assert_chained(&shown);
    assert_eq!(
        shown[2], redacted,
        "history shows the revision redact returned"
    );
    let original = &before[2];
    assert!(redacted.is_redacted() && !redacted.is_tombstone());
    assert_eq!(
        (redacted.text.as_deref(), redacted.updates.as_slice()),
        (None, &[][..]),
        "its text and updates are erased"
    );
    assert_eq!(
        Revision {
            text: None,
            updates: Vec::new(),
            redacted_at: None,
            ..redacted.clone()
        },
        Revision {
            text: None,
            updates: Vec::new(),
            ..original.clone()
        },
        "number, versions, hashes, sizes, time and origin are kept"
    );
    let at = redacted.redacted_at.unwrap();
    let now = SystemTime::now();
    assert!(at > now - CLOCK_SKEW && at < now + CLOCK_SKEW, "{at:?}");
    for number in [1, 3, 4] {
        assert_eq!(
            texts(&*p, &document).await[&number],
            before_texts[&number],
            "revision {number} still rebuilds"
        );
    }
    let err = p.revert(&c, M, 2, None).await.unwrap_err();
    assert!(
        matches!(&err, MemoryError::RevisionNotFound { number: 2, .. }),
        "{err}"
    );
    assert_eq!(
        p.redact(&document, 2).await.expect("again"),
        redacted,
        "redacting it again changes nothing"
    );
    assert_eq!(history(&*p, &document).await, shown);

    // Every revision that held the code, the first and the edit that removed it: the code is
    // gone from history, and the revisions after them still rebuild.
    for number in [3, 1] {
        p.redact(&document, number).await.expect("redact");
    }
    let log = history(&*p, &document).await;
    assert!(!format!("{log:?}").contains("opal-heron"), "{log:?}");
    assert_eq!(log[0].text, before_texts[&4]);
    sync(&*p, &c, &[MemoryUpdate::add(M, "Reads.")]).await;
    p.redact(&document, 4)
        .await
        .expect("revision 4 is no longer the document's text");
    let log = history(&*p, &document).await;
    assert_chained(&log);
    assert_eq!(log[0].number, 5);
    assert_eq!(
        log[0].text.as_deref(),
        Some("No code.\n\nLikes tea.\n\nFlies Friday.\n\nReads.\n")
    );
    assert_eq!(log.iter().filter(|r| r.is_redacted()).count(), 4, "{log:?}");
    assert_eq!(
        p.read(&document).await.unwrap().text,
        "No code.\n\nLikes tea.\n\nFlies Friday.\n\nReads.\n",
        "the document itself is untouched"
    );
}

/// The newest recorded revision can be redacted once a hand edit changed the document (the
/// document no longer holds its text); the hand edit itself, shown at the head of history
/// until a write records it, cannot. The next write records the hand edit whole, and history
/// rebuilds.
pub async fn a_hand_edit_frees_the_newest_revision_for_redaction<P, F, Fut>(p: Arc<P>, edit: F)
where
    P: MemoryProvider + ?Sized,
    F: Fn(DocumentId, String) -> Fut,
    Fut: Future<Output = ()>,
{
    let c = ctx("ada", "u1");
    let document = c.document(M);
    sync(&*p, &c, &[MemoryUpdate::add(M, "Likes tea.")]).await;
    sync(&*p, &c, &[MemoryUpdate::add(M, "Password: opal-heron.")]).await;
    // Not the text before revision 2: markdown would take a hand edit back to it, made
    // within the millisecond, for revision 2's write never landing.
    edit(document.clone(), "Likes coffee.\n".to_owned()).await;

    let err = p.redact(&document, 3).await.unwrap_err();
    assert!(
        matches!(&err, MemoryError::RevisionInUse { number: 3, .. }),
        "the hand edit is the document's text: {err}"
    );
    let redacted = p.redact(&document, 2).await.expect("redact 2");
    let log = history(&*p, &document).await;
    assert_eq!(log.len(), 3);
    assert_eq!((log[0].number, log[0].surface), (3, Surface::External));
    assert_eq!(log[1], redacted);
    assert!(!format!("{log:?}").contains("opal-heron"), "{log:?}");

    sync(&*p, &c, &[MemoryUpdate::add(M, "More.")]).await;
    let log = history(&*p, &document).await;
    assert_chained(&log);
    let texts: Vec<Option<&str>> = log.iter().map(|r| r.text.as_deref()).collect();
    assert_eq!(
        texts,
        [
            Some("Likes coffee.\n\nMore.\n"),
            Some("Likes coffee.\n"),
            None,
            Some("Likes tea.\n")
        ]
    );
}
