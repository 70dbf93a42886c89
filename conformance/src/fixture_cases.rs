//! The cases that need more of a [`Fixture`] than its provider: other hosts on its namespace,
//! hand edits, documents held from outside, the stored bytes of history. [`crate::conformance_suite!`] stamps them by group.

use std::sync::Arc;

use memory_core::raw::{Versioned, VersionedStore};
use memory_core::{MemoryError, MemoryProvider, MemoryUpdate, Retention, Surface};

use crate::support::{M, ctx, sync};
use crate::{Fixture, Host, history, hosts};

/// How many hosts the many-host cases run.
pub const HOSTS: usize = 4;

/// [`hosts::many_hosts_lose_nothing`] on [`HOSTS`] hosts.
pub async fn many_hosts_lose_nothing<P: MemoryProvider + ?Sized + 'static>(f: &Fixture<P>) {
    hosts::many_hosts_lose_nothing(&f.hosts(HOSTS, Host::default()).await).await;
}

/// [`hosts::two_document_calls_land_whole`] on [`HOSTS`] hosts.
pub async fn two_document_calls_from_many_hosts_land_whole<P>(f: &Fixture<P>)
where
    P: MemoryProvider + ?Sized + 'static,
{
    hosts::two_document_calls_land_whole(&f.hosts(HOSTS, Host::default()).await).await;
}

/// [`hosts::prefetch_lists_what_other_hosts_wrote`] on two hosts.
pub async fn prefetch_lists_what_other_hosts_wrote<P>(f: &Fixture<P>)
where
    P: MemoryProvider + ?Sized + 'static,
{
    hosts::prefetch_lists_what_other_hosts_wrote(&f.hosts(2, Host::default()).await).await;
}

/// [`hosts::contention_is_reported_never_dropped`] on [`HOSTS`] hosts allowed one attempt.
pub async fn contention_is_reported_never_dropped<P>(f: &Fixture<P>)
where
    P: MemoryProvider + ?Sized + 'static,
{
    let one_attempt = Host {
        max_attempts: Some(1),
        ..Host::default()
    };
    let gave_up =
        hosts::contention_is_reported_never_dropped(&f.hosts(HOSTS, one_attempt).await).await;
    println!("{gave_up} single-attempt adds gave up with Contention");
}

/// [`history::retention_keeps_the_newest`] on a host keeping 3.
pub async fn retention_keeps_the_newest_three<P: MemoryProvider + ?Sized + 'static>(
    f: &Fixture<P>,
) {
    let keeping_three = Host {
        retention: Some(Retention::keep(3)),
        ..Host::default()
    };
    history::retention_keeps_the_newest(f.host(keeping_three).await, 3).await;
}

/// [`history::hand_edits_become_external_revisions`], edited with the fixture's hand.
pub async fn hand_edits_become_external_revisions<P: MemoryProvider + ?Sized + 'static>(
    f: &Fixture<P>,
) {
    history::hand_edits_become_external_revisions(f.provider(), |document, text| {
        f.hand_edit(document, text)
    })
    .await;
}

/// [`hosts::compare_and_swap_gives_up_after_max_attempts`], the rival another host.
pub async fn the_engine_gives_up_after_max_attempts<S: VersionedStore + 'static>(
    f: &Fixture<Versioned<S>>,
) {
    let rival = f.host(Host::default()).await;
    hosts::compare_and_swap_gives_up_after_max_attempts(&*f.provider(), &*rival).await;
}

/// [`hosts::a_write_between_read_and_write_loses_nothing`], the rival another host.
pub async fn a_write_between_read_and_write_loses_nothing<S: VersionedStore + 'static>(
    f: &Fixture<Versioned<S>>,
) {
    let rival = f.host(Host::default()).await;
    hosts::a_write_between_read_and_write_loses_nothing(&*f.provider(), &*rival).await;
}

/// [`hosts::a_held_document_gives_up_at_once`] on a host allowed one attempt, the document
/// held by the fixture's outside hold.
pub async fn a_held_document_gives_up_at_once<P: MemoryProvider + ?Sized + 'static>(
    f: &Fixture<P>,
) {
    let one_attempt: Arc<P> = f
        .host(Host {
            max_attempts: Some(1),
            ..Host::default()
        })
        .await;
    hosts::a_held_document_gives_up_at_once(
        &*one_attempt,
        async |document| f.hold_outside(document.clone()).await,
        async |release| release().await,
    )
    .await;
}

/// [`hosts::a_write_of_two_documents_lands_whole_or_not_at_all`] on the fixture's provider.
pub async fn a_write_of_two_documents_lands_whole_or_not_at_all<S: VersionedStore + 'static>(
    f: &Fixture<Versioned<S>>,
) {
    hosts::a_write_of_two_documents_lands_whole_or_not_at_all(&*f.provider()).await;
}

/// A host keeping `keep` revisions, `ctx("ada", "u1")`'s MEMORY.md, and four adds of `entries`
/// to it: the history the `stored_history` cases start from.
async fn four_revisions<P: MemoryProvider + ?Sized + 'static>(
    f: &Fixture<P>,
    keep: usize,
    entries: [&str; 4],
) -> (Arc<P>, memory_core::DocumentId) {
    let p = f
        .host(Host {
            retention: Some(Retention::keep(keep)),
            ..Host::default()
        })
        .await;
    let c = ctx("ada", "u1");
    for entry in entries {
        sync(p.as_ref(), &c, &[MemoryUpdate::add(M, entry)]).await;
    }
    (p, c.document(M))
}

/// A purge erases the checkpoints and the changes alike: kept as a checkpoint (its whole
/// text) or as a change (its updates), no revision's text is left anywhere the backend
/// stores, only the tombstone, numbered after the last revision.
pub async fn purge_erases_checkpoints_and_changes_alike<P: MemoryProvider + ?Sized + 'static>(
    f: &Fixture<P>,
) {
    let secrets = [
        "Secret one.",
        "Secret two.",
        "Secret three.",
        "Secret four.",
    ];
    let (p, document) = four_revisions(f, 3, secrets).await;
    let before = f.stored(document.clone()).await;
    assert!(before.contains("Secret four."), "stored: {before}");
    let purged = p.purge(&document, Surface::Cli).await.expect("purge");
    assert_eq!(purged.revisions, 3, "the kept ones are erased");
    let after = f.stored(document.clone()).await;
    assert!(!after.contains("Secret"), "a purge leaves no text: {after}");
    let left = p.history(&document, 10).await.expect("history");
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].is_tombstone() && left[0].number == 5, "{left:?}");
}

/// A chain of changes damaged by hand reads as `Corrupt` naming the revision that can no
/// longer be rebuilt (and reverting to a revision past it too), while the document reads and
/// the write path, which reads only the history's tip, goes on.
pub async fn a_damaged_chain_is_corrupt_naming_the_revision<P>(f: &Fixture<P>)
where
    P: MemoryProvider + ?Sized + 'static,
{
    let (p, document) = four_revisions(f, 5, ["One.", "Two.", "Three.", "Four."]).await;
    let named = f.damage_history(document.clone(), 3).await;
    match p.history(&document, 10).await {
        Err(MemoryError::Corrupt { location, .. }) => assert!(
            location.ends_with(&format!("#{named}")),
            "names revision {named}: {location}"
        ),
        other => panic!("a damaged chain reads as Corrupt, not {other:?}"),
    }
    let c = ctx("ada", "u1");
    sync(p.as_ref(), &c, &[MemoryUpdate::add(M, "Five.")]).await;
    assert_eq!(
        p.read(&document).await.expect("read").text,
        "One.\n\nTwo.\n\nThree.\n\nFour.\n\nFive.\n"
    );
    let revert = p.revert(&c, M, 2, None).await;
    assert!(
        matches!(revert, Err(MemoryError::Corrupt { .. })),
        "{revert:?}"
    );
}

/// A redaction leaves the erased text nowhere the backend stores: redacting the revision that
/// added a secret and the one that removed it (whose update names it) erases it from the
/// stored history, checkpoint or change, while the revisions after them still rebuild, the
/// newest included.
pub async fn redaction_leaves_no_text_in_storage<P: MemoryProvider + ?Sized + 'static>(
    f: &Fixture<P>,
) {
    let p = f
        .host(Host {
            retention: Some(Retention::keep(3)),
            ..Host::default()
        })
        .await;
    let c = ctx("ada", "u1");
    let document = c.document(M);
    for update in [
        MemoryUpdate::add(M, "Public."),
        MemoryUpdate::add(M, "Secret two."),
        MemoryUpdate::remove(M, "Secret two."),
    ] {
        sync(p.as_ref(), &c, &[update]).await;
    }
    assert!(f.stored(document.clone()).await.contains("Secret two."));
    // Revision 3, a checkpoint, is the newest: a store may not hold its text apart from the
    // document yet (markdown links it at the next write).
    p.redact(&document, 2).await.expect("redact 2");
    sync(p.as_ref(), &c, &[MemoryUpdate::add(M, "After.")]).await;
    p.redact(&document, 3).await.expect("redact 3");
    let after = f.stored(document.clone()).await;
    assert!(
        !after.contains("Secret"),
        "the redacted text is erased: {after}"
    );
    let log = p.history(&document, 10).await.expect("history");
    let numbers: Vec<(u64, bool)> = log.iter().map(|r| (r.number, r.is_redacted())).collect();
    assert_eq!(numbers, [(4, false), (3, true), (2, true)]);
    assert_eq!(log[0].text.as_deref(), Some("Public.\n\nAfter.\n"));
    sync(p.as_ref(), &c, &[MemoryUpdate::add(M, "Later.")]).await;
    let log = p
        .history(&document, 10)
        .await
        .expect("history after a write");
    assert_eq!(
        log.iter().map(|r| r.text.as_deref()).collect::<Vec<_>>(),
        [
            Some("Public.\n\nAfter.\n\nLater.\n"),
            Some("Public.\n\nAfter.\n"),
            None
        ]
    );
}

/// [`history::a_hand_edit_frees_the_newest_revision_for_redaction`], edited with the
/// fixture's hand.
pub async fn a_hand_edit_frees_the_newest_revision_for_redaction<P>(f: &Fixture<P>)
where
    P: MemoryProvider + ?Sized + 'static,
{
    history::a_hand_edit_frees_the_newest_revision_for_redaction(f.provider(), |document, text| {
        f.hand_edit(document, text)
    })
    .await;
}
