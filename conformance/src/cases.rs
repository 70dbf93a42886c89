//! One async fn per contract rule. Each takes a provider with an empty namespace and panics,
//! naming the rule, when the provider breaks it.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use memory_core::raw::{EVENT_BUFFER, RECEIPTS_KEPT, sha256_hex};
use memory_core::{
    Budgets, Caps, DocumentId, DocumentReport, ErrorKind, IdempotencyKey, IfMatch, MemoryContext,
    MemoryError, MemoryEvent, MemoryProvider, MemoryScope, MemoryUpdate, NotePath, PersonalityId,
    Store, Surface, UserId,
};

pub use crate::history::{
    a_second_purge_replaces_the_tombstone, concurrent_writes_have_one_revision_each,
    every_change_is_one_revision_newest_first, purge_leaves_only_a_tombstone,
    redaction_erases_one_revision_and_keeps_the_rest, revert_restores_a_revision_as_a_new_one,
};
pub use crate::support::ctx;
use crate::support::{M, U, sync};

async fn refused<P: MemoryProvider + ?Sized>(
    p: &P,
    ctx: &MemoryContext,
    updates: &[MemoryUpdate],
) -> MemoryError {
    let err = match p.sync(ctx, updates, &IfMatch::NONE).await {
        Ok(report) => panic!("sync {updates:?} should be refused, got {report:?}"),
        Err(e) => e,
    };
    if let MemoryError::InvalidUpdate { document, .. }
    | MemoryError::NoMatch { document, .. }
    | MemoryError::AmbiguousMatch { document, .. }
    | MemoryError::HardCapExceeded { document, .. } = &err
    {
        let message = err.to_string();
        assert!(
            message.contains(&document.to_string()),
            "the message names the document: {message}"
        );
    }
    err
}

async fn text<P: MemoryProvider + ?Sized>(p: &P, ctx: &MemoryContext, store: Store) -> String {
    p.read(&ctx.document(store)).await.expect("read").text
}

/// Text and version of both documents, to show that a refused call changed nothing.
async fn state<P: MemoryProvider + ?Sized>(p: &P, ctx: &MemoryContext) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for store in [M, U] {
        let doc = p.read(&ctx.document(store)).await.expect("read");
        out.push((doc.text, doc.version.to_string()));
    }
    out
}

/// No context at all for an empty store, but versions to guard a first write with.
pub async fn empty_store_gives_no_context<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let seen = p.prefetch(&c).await.expect("prefetch of an empty store");
    assert_eq!(seen.context, None, "an empty store renders nothing");
    assert_eq!(seen.memory.id, c.document(M));
    assert_eq!(seen.user.id, c.document(U));
    for meta in [&seen.memory, &seen.user] {
        let doc = p.read(&meta.id).await.expect("read of a missing document");
        assert_eq!(doc.text, "", "a missing document reads as empty");
        assert_eq!(
            doc.version, meta.version,
            "prefetch and read agree on versions"
        );
        assert_eq!(doc.location, meta.location);
    }
    assert!(
        p.list().await.expect("list").is_empty(),
        "reading creates nothing"
    );
}

/// A note is a document of its scope (`CONTRACT.md`, Notes): one never written reads as empty
/// text with a version a create can be guarded by, at its own location, and reading it
/// creates nothing. Notes of the two scopes, and a note and its scope's document, are apart.
pub async fn a_note_never_written_reads_as_empty<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let path = NotePath::new("projects/kyoto.md").expect("a note path");
    let mut locations = HashSet::new();
    for store in [M, U] {
        let beside = p.read(&c.document(store)).await.expect("read");
        let note = DocumentId::note(&c.document(store), path.clone());
        let doc = p.read(&note).await.expect("read of a note never written");
        assert_eq!(doc.id, note, "the read names the note");
        assert_eq!(doc.text, "", "a note never written reads as empty");
        assert_eq!(doc.modified, None, "{note} was never written");
        assert_ne!(
            doc.location, beside.location,
            "{note} is not its scope's document"
        );
        locations.insert(doc.location);
    }
    assert_eq!(locations.len(), 2, "the two scopes' notes are apart");
    assert!(
        p.list().await.expect("list").is_empty(),
        "reading creates nothing"
    );
    // As for a document never written: no history, and a purge erases nothing and succeeds.
    let note = DocumentId::note(&c.document(M), path);
    assert!(p.history(&note, 10).await.expect("history").is_empty());
    let purged = p
        .purge(&note, Surface::Cli)
        .await
        .expect("purge of a note never written");
    assert_eq!((purged.bytes, purged.revisions), (0, 0), "{purged:?}");
    assert!(
        purged.tombstone.is_none(),
        "nothing to leave a tombstone for"
    );
    assert!(p.history(&note, 10).await.expect("history").is_empty());
    assert!(
        p.list().await.expect("list").is_empty(),
        "a purge creates nothing"
    );
}

/// `add`: `c.trim() + "\n"` on a blank text, else `t.trim_end() + "\n\n" + c.trim() + "\n"`.
pub async fn add_follows_the_newline_discipline<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(&*p, &c, &[MemoryUpdate::add(M, "  first entry \n")]).await;
    assert_eq!(text(&*p, &c, M).await, "first entry\n");
    sync(&*p, &c, &[MemoryUpdate::add(M, "\n\nsecond\n\n")]).await;
    assert_eq!(text(&*p, &c, M).await, "first entry\n\nsecond\n");
    // Extra trailing blank lines in the text are folded before the separator.
    sync(
        &*p,
        &c,
        &[MemoryUpdate::edit(M, "second\n", "second\n\n\n\t\n")],
    )
    .await;
    sync(&*p, &c, &[MemoryUpdate::add(M, "third")]).await;
    assert_eq!(text(&*p, &c, M).await, "first entry\n\nsecond\n\nthird\n");
    // A whitespace-only text counts as blank.
    sync(&*p, &c, &[MemoryUpdate::add(U, "x")]).await;
    sync(&*p, &c, &[MemoryUpdate::edit(U, "x", " \t")]).await;
    assert_eq!(text(&*p, &c, U).await, " \t\n");
    sync(&*p, &c, &[MemoryUpdate::add(U, "y")]).await;
    assert_eq!(
        text(&*p, &c, U).await,
        "y\n",
        "add to a blank text replaces it"
    );
}

/// `add` of blank content is refused and writes nothing.
pub async fn add_of_blank_content_is_refused<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let err = refused(&*p, &c, &[MemoryUpdate::add(M, " \n\t ")]).await;
    assert!(
        matches!(&err, MemoryError::InvalidUpdate { index: 0, document, .. } if *document == c.document(M)),
        "{err:?}"
    );
    assert!(
        p.list().await.unwrap().is_empty(),
        "a refused add creates nothing"
    );
    sync(&*p, &c, &[MemoryUpdate::add(M, "kept")]).await;
    let before = state(&*p, &c).await;
    let err = refused(&*p, &c, &[MemoryUpdate::add(M, "")]).await;
    assert!(matches!(err, MemoryError::InvalidUpdate { .. }), "{err:?}");
    assert_eq!(state(&*p, &c).await, before);
}

/// Text to write with a NUL character in it is refused (no backend can be trusted to keep
/// it, PostgreSQL cannot store it), whichever update carries it.
pub async fn nul_characters_are_refused<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(&*p, &c, &[MemoryUpdate::add(M, "kept")]).await;
    let before = state(&*p, &c).await;
    for (index, bad) in [
        MemoryUpdate::add(U, "a\0b"),
        MemoryUpdate::replace(M, "\0"),
        MemoryUpdate::edit(M, "kept", "k\0ept"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut updates = vec![MemoryUpdate::add(U, "fine")];
        updates.insert(1, bad);
        let err = refused(&*p, &c, &updates).await;
        assert!(
            matches!(&err, MemoryError::InvalidUpdate { index: 1, reason, .. } if reason.contains("NUL")),
            "case {index}: {err:?}"
        );
        assert_eq!(state(&*p, &c).await, before);
    }
}

/// `replace` writes `c.trim() + "\n"`; blank content clears the document.
pub async fn replace_sets_and_clears<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(&*p, &c, &[MemoryUpdate::add(U, "old")]).await;
    let r = sync(
        &*p,
        &c,
        &[MemoryUpdate::replace(U, "\n  Name: Grace  \n\n")],
    )
    .await;
    assert_eq!(text(&*p, &c, U).await, "Name: Grace\n");
    assert!(r.documents[0].written);
    let r = sync(&*p, &c, &[MemoryUpdate::replace(U, "  \n ")]).await;
    assert_eq!(text(&*p, &c, U).await, "", "blank replace clears");
    assert_eq!(r.documents[0].bytes_after, 0);
    assert_eq!(
        p.prefetch(&c).await.unwrap().context,
        None,
        "a cleared document drops its section"
    );
}

/// `remove` drops every line containing the literal, case-sensitively, and counts them.
pub async fn remove_drops_matching_lines_and_counts_them<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(
        &*p,
        &c,
        &[MemoryUpdate::replace(
            M,
            "keep one\nDROP two\nkeep three DROP\n\nlast (x)\n",
        )],
    )
    .await;
    let r = sync(&*p, &c, &[MemoryUpdate::remove(M, "DROP")]).await;
    assert_eq!(r.documents[0].lines_removed, 2);
    assert_eq!(text(&*p, &c, M).await, "keep one\n\nlast (x)\n");
    let r = sync(&*p, &c, &[MemoryUpdate::remove(M, "KEEP")]).await;
    assert_eq!(
        r.documents[0].lines_removed, 0,
        "matching is case-sensitive"
    );
    let r = sync(&*p, &c, &[MemoryUpdate::remove(M, "(x)")]).await;
    assert_eq!(
        r.documents[0].lines_removed, 1,
        "matching is literal, not a pattern"
    );
    assert_eq!(
        text(&*p, &c, M).await,
        "keep one\n",
        "the end is trimmed to one newline"
    );
}

/// A `remove` that matches nothing reports zero, writes nothing and emits no event.
pub async fn remove_with_no_match_reports_zero_and_writes_nothing<P: MemoryProvider + ?Sized>(
    p: Arc<P>,
) {
    let c = ctx("ada", "u1");
    sync(&*p, &c, &[MemoryUpdate::add(M, "alpha")]).await;
    let before = p.read(&c.document(M)).await.unwrap();
    let mut events = p.subscribe();
    let r = sync(&*p, &c, &[MemoryUpdate::remove(M, "zzz")]).await;
    let d = &r.documents[0];
    assert_eq!((d.lines_removed, d.written), (0, false));
    assert_eq!(d.version_after, before.version);
    assert_eq!(d.version_before, before.version);
    assert_eq!(p.read(&c.document(M)).await.unwrap(), before);
    assert_eq!(events.try_recv(), None, "nothing written, nothing evented");
}

/// Removing every line leaves an empty document.
pub async fn remove_of_every_line_leaves_the_document_empty<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(
        &*p,
        &c,
        &[MemoryUpdate::add(M, "x1"), MemoryUpdate::add(M, "x2")],
    )
    .await;
    let r = sync(&*p, &c, &[MemoryUpdate::remove(M, "x")]).await;
    assert_eq!(r.documents[0].lines_removed, 2);
    assert_eq!(text(&*p, &c, M).await, "");
    assert_eq!(p.prefetch(&c).await.unwrap().context, None);
}

/// `remove` with an empty substring is refused.
pub async fn remove_of_empty_substring_is_refused<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(&*p, &c, &[MemoryUpdate::add(M, "alpha")]).await;
    let before = state(&*p, &c).await;
    let err = refused(&*p, &c, &[MemoryUpdate::remove(M, "")]).await;
    assert!(
        matches!(err, MemoryError::InvalidUpdate { index: 0, .. }),
        "{err:?}"
    );
    assert_eq!(state(&*p, &c).await, before);
}

/// `edit` replaces its one occurrence literally: no `$&`, group or regex meaning.
pub async fn edit_replaces_literally<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(&*p, &c, &[MemoryUpdate::add(M, "price: $5 (a+b)* [x]")]).await;
    sync(
        &*p,
        &c,
        &[MemoryUpdate::edit(M, "$5 (a+b)*", "$& $1 \\0 ${x}")],
    )
    .await;
    assert_eq!(text(&*p, &c, M).await, "price: $& $1 \\0 ${x} [x]\n");
    // The edit is not normalised: what it says is what lands.
    sync(&*p, &c, &[MemoryUpdate::edit(M, " [x]\n", "\n\n")]).await;
    assert_eq!(text(&*p, &c, M).await, "price: $& $1 \\0 ${x}\n\n");
}

/// `edit` whose `old` is absent is `NoMatch`, with nothing written.
pub async fn edit_with_no_match_is_refused<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(&*p, &c, &[MemoryUpdate::add(M, "alpha")]).await;
    let before = state(&*p, &c).await;
    let err = refused(&*p, &c, &[MemoryUpdate::edit(M, "Alpha", "beta")]).await;
    assert!(
        matches!(&err, MemoryError::NoMatch { index: 0, document, old } if *document == c.document(M) && old == "Alpha"),
        "{err:?}"
    );
    assert_eq!(state(&*p, &c).await, before);
}

/// `edit` whose `old` occurs twice is `AmbiguousMatch`, with nothing written.
pub async fn edit_with_two_matches_is_refused<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(
        &*p,
        &c,
        &[
            MemoryUpdate::add(U, "tea"),
            MemoryUpdate::add(U, "more tea"),
        ],
    )
    .await;
    let before = state(&*p, &c).await;
    let err = refused(&*p, &c, &[MemoryUpdate::edit(U, "tea", "coffee")]).await;
    assert!(
        matches!(&err, MemoryError::AmbiguousMatch { index: 0, count: 2, document, .. } if *document == c.document(U)),
        "{err:?}"
    );
    assert_eq!(state(&*p, &c).await, before);
}

/// `edit` with an empty `old` is refused.
pub async fn edit_of_empty_text_is_refused<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(&*p, &c, &[MemoryUpdate::add(M, "alpha")]).await;
    let before = state(&*p, &c).await;
    let err = refused(&*p, &c, &[MemoryUpdate::edit(M, "", "x")]).await;
    assert!(
        matches!(err, MemoryError::InvalidUpdate { index: 0, .. }),
        "{err:?}"
    );
    assert_eq!(state(&*p, &c).await, before);
}

/// One refused update refuses the whole call, on both documents, and is named by position.
pub async fn failing_update_refuses_its_whole_batch<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(
        &*p,
        &c,
        &[MemoryUpdate::add(M, "m0"), MemoryUpdate::add(U, "u0")],
    )
    .await;
    let before = state(&*p, &c).await;
    let mut events = p.subscribe();

    let err = refused(
        &*p,
        &c,
        &[
            MemoryUpdate::add(U, "u1"),
            MemoryUpdate::add(M, "m1"),
            MemoryUpdate::edit(M, "absent", "x"),
        ],
    )
    .await;
    assert!(
        matches!(err, MemoryError::NoMatch { index: 2, .. }),
        "{err:?}"
    );

    // The memory batch is fine; the user batch fails: memory must not land either.
    let err = refused(
        &*p,
        &c,
        &[
            MemoryUpdate::add(M, "m2"),
            MemoryUpdate::edit(U, "absent", "x"),
        ],
    )
    .await;
    assert!(
        matches!(&err, MemoryError::NoMatch { index: 1, document, .. } if *document == c.document(U)),
        "{err:?}"
    );

    let err = refused(
        &*p,
        &c,
        &[MemoryUpdate::add(M, "m3"), MemoryUpdate::remove(U, "")],
    )
    .await;
    assert!(
        matches!(err, MemoryError::InvalidUpdate { index: 1, .. }),
        "{err:?}"
    );

    assert_eq!(
        state(&*p, &c).await,
        before,
        "a refused call writes nothing"
    );
    assert_eq!(events.try_recv(), None, "a refused call emits nothing");
}

/// A call's updates to one document apply in order, as one write with one version change.
pub async fn batch_applies_in_order_as_one_write<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let mut events = p.subscribe();
    let r = sync(
        &*p,
        &c,
        &[
            MemoryUpdate::add(M, "draft"),
            MemoryUpdate::edit(M, "draft", "final"),
            MemoryUpdate::add(M, "after"),
            MemoryUpdate::remove(M, "after"),
            MemoryUpdate::add(M, "last"),
        ],
    )
    .await;
    assert_eq!(text(&*p, &c, M).await, "final\n\nlast\n");
    assert_eq!(r.documents.len(), 1);
    assert_eq!(r.documents[0].lines_removed, 1);
    assert_eq!(r.documents[0].bytes_before, 0);
    let updated = std::iter::from_fn(|| events.try_recv()).count();
    assert_eq!(updated, 1, "one write, one memory.updated");
}

/// A call that leaves the text unchanged (or has no updates) writes nothing and keeps the version.
pub async fn unchanged_batch_keeps_the_version<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(&*p, &c, &[MemoryUpdate::add(M, "same")]).await;
    let before = p.read(&c.document(M)).await.unwrap();
    let mut events = p.subscribe();
    for noop in [
        vec![MemoryUpdate::replace(M, "  same \n")],
        vec![MemoryUpdate::edit(M, "same", "same")],
        vec![MemoryUpdate::add(M, "tmp"), MemoryUpdate::remove(M, "tmp")],
    ] {
        let r = sync(&*p, &c, &noop).await;
        assert!(!r.documents[0].written, "{noop:?} changes nothing");
        assert_eq!(r.documents[0].version_after, before.version);
        assert_eq!(p.read(&c.document(M)).await.unwrap(), before);
    }
    let r = sync(&*p, &c, &[]).await;
    assert!(
        r.documents.is_empty(),
        "no updates touch no document: {r:?}"
    );
    assert_eq!(events.try_recv(), None);
}

/// Every change of content changes the version.
pub async fn version_changes_whenever_content_changes<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let mut seen = vec![p.read(&c.document(M)).await.unwrap().version];
    for update in [
        MemoryUpdate::add(M, "a"),
        MemoryUpdate::add(M, "b"),
        MemoryUpdate::edit(M, "b", "c"),
        MemoryUpdate::replace(M, "d"),
        MemoryUpdate::remove(M, "d"),
        MemoryUpdate::add(M, "d"),
    ] {
        let r = sync(&*p, &c, std::slice::from_ref(&update)).await;
        let now = p.read(&c.document(M)).await.unwrap().version;
        assert_eq!(
            r.documents[0].version_after, now,
            "the report has the new version"
        );
        assert_ne!(
            seen.last(),
            Some(&now),
            "{update:?} changed the text, so the version"
        );
        seen.push(now);
    }
}

/// Over the hard cap: `HardCapExceeded`, and neither document changes.
pub async fn hard_cap_is_refused_with_the_document_unchanged<P: MemoryProvider + ?Sized>(
    p: Arc<P>,
) {
    let capped = Budgets {
        memory: Caps {
            soft: None,
            hard: Some(32),
        },
        ..Budgets::default()
    };
    let c = ctx("ada", "u1").with_budgets(capped);
    sync(&*p, &c, &[MemoryUpdate::add(M, "a".repeat(20))]).await;
    let before = state(&*p, &c).await;
    let err = refused(
        &*p,
        &c,
        &[
            MemoryUpdate::add(U, "fine"),
            MemoryUpdate::add(M, "b".repeat(20)),
        ],
    )
    .await;
    assert!(
        matches!(&err, MemoryError::HardCapExceeded { bytes: 43, hard_cap: 32, document } if *document == c.document(M)),
        "{err:?}"
    );
    assert_eq!(state(&*p, &c).await, before);
    // Exactly at the cap is allowed: 20 + 2 + 9 + 1 bytes.
    sync(&*p, &c, &[MemoryUpdate::add(M, "b".repeat(9))]).await;
    assert_eq!(text(&*p, &c, M).await.len(), 32);

    // A document already over a lowered cap may still shrink, so an agent can consolidate it,
    // but may not grow.
    let lowered = ctx("ada", "u1").with_budgets(Budgets {
        memory: Caps {
            soft: None,
            hard: Some(16),
        },
        ..Budgets::default()
    });
    let err = refused(&*p, &lowered, &[MemoryUpdate::add(M, "c")]).await;
    assert!(
        matches!(err, MemoryError::HardCapExceeded { bytes: 35, .. }),
        "{err:?}"
    );
    let r = sync(&*p, &lowered, &[MemoryUpdate::remove(M, "bbbbbbbbb")]).await;
    assert_eq!(
        (r.documents[0].bytes_after, r.documents[0].lines_removed),
        (21, 1)
    );
}

/// Over the soft cap: written, reported, and a `memory.eviction` event follows `memory.updated`.
pub async fn soft_cap_is_reported_and_evented<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1").with_budgets(Budgets {
        memory: Caps {
            soft: Some(16),
            hard: None,
        },
        ..Budgets::default()
    });
    let mut events = p.subscribe();
    let r = sync(&*p, &c, &[MemoryUpdate::add(M, "short")]).await;
    assert!(!r.documents[0].over_soft_cap);
    let first: Vec<_> = std::iter::from_fn(|| events.try_recv()).collect();
    assert_eq!(first, vec![MemoryEvent::Updated(r.documents[0].clone())]);

    let r = sync(&*p, &c, &[MemoryUpdate::add(M, "a longer entry")]).await;
    let d = r.documents[0].clone();
    assert!(d.written && d.over_soft_cap, "{d:?}");
    assert_eq!(
        text(&*p, &c, M).await,
        "short\n\na longer entry\n",
        "soft cap never refuses"
    );
    let second: Vec<_> = std::iter::from_fn(|| events.try_recv()).collect();
    assert_eq!(
        second,
        vec![MemoryEvent::Updated(d.clone()), MemoryEvent::Eviction(d)]
    );
    assert_eq!(second[1].name(), "memory.eviction");
}

/// No cap applies unless one is configured.
pub async fn no_cap_by_default<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let big = "x".repeat(256 * 1024);
    let r = sync(
        &*p,
        &c,
        &[MemoryUpdate::add(M, &big), MemoryUpdate::add(U, &big)],
    )
    .await;
    assert!(r.documents.iter().all(|d| d.written && !d.over_soft_cap));
    assert_eq!(text(&*p, &c, U).await.len(), big.len() + 1);
}

/// The SHA-256 after write N is the SHA-256 before write N+1, and matches the stored text.
pub async fn hashes_chain_from_write_to_write<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let mut previous_sha = sha256_hex("");
    let mut previous_version = p.read(&c.document(M)).await.unwrap().version;
    for i in 0..5 {
        let r = sync(&*p, &c, &[MemoryUpdate::add(M, format!("entry {i}"))]).await;
        let d = &r.documents[0];
        assert_eq!(d.sha256_before, previous_sha, "write {i}");
        assert_eq!(d.version_before, previous_version, "write {i}");
        let now = p.read(&c.document(M)).await.unwrap();
        assert_eq!(d.sha256_after, sha256_hex(&now.text));
        assert_eq!(d.bytes_after, now.text.len());
        previous_sha = d.sha256_after.clone();
        previous_version = d.version_after.clone();
    }
}

/// The report names store, document and location, memory first, and matches what was stored.
pub async fn report_describes_the_write<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let r = sync(
        &*p,
        &c,
        &[
            MemoryUpdate::add(U, "Name: Grace"),
            MemoryUpdate::add(M, "note"),
        ],
    )
    .await;
    let stores: Vec<_> = r.documents.iter().map(|d| d.store).collect();
    assert_eq!(stores, vec![M, U], "one report per document, memory first");
    let seen = p.prefetch(&c).await.unwrap();
    for (d, meta) in r.documents.iter().zip([&seen.memory, &seen.user]) {
        let doc = p.read(&d.document).await.unwrap();
        assert_eq!(d.document, c.document(d.store));
        assert_eq!(d.location, doc.location);
        assert_eq!(d.version_after, doc.version);
        assert_ne!(d.version_after, d.version_before);
        assert_eq!((d.bytes_before, d.bytes_after), (0, doc.text.len()));
        assert_eq!(d.sha256_before, sha256_hex(""));
        assert_eq!(
            (d.written, d.lines_removed, d.over_soft_cap),
            (true, 0, false)
        );
        assert_eq!(
            meta.version, doc.version,
            "prefetch carries the current version"
        );
        assert_eq!(meta.location, doc.location);
    }
    assert_eq!(r.get(U).map(|d| d.bytes_after), Some("Name: Grace\n".len()));
}

/// Ids outside `^[A-Za-z0-9_-]{1,64}$` are refused before any read or write: they cannot even be
/// constructed or deserialised, so nothing reaches the provider.
pub async fn invalid_ids_are_refused_before_any_io<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let long = "x".repeat(65);
    for bad in [
        "../x",
        "a/b",
        "",
        long.as_str(),
        "é",
        "日本",
        "a\0b",
        "a b",
        ".",
        "..",
    ] {
        for err in [
            PersonalityId::new(bad).map(drop).unwrap_err(),
            UserId::new(bad).map(drop).unwrap_err(),
        ] {
            assert!(
                matches!(&err, MemoryError::InvalidId { value, .. } if value == bad),
                "{bad:?}: {err:?}"
            );
        }
        let json = format!(
            r#"{{"personality":{bad:?},"scope":"global","user":"u1","query":null,"budgets":{{"memory":{{"soft":null,"hard":null}},"user":{{"soft":null,"hard":null}}}},"max_chars":100}}"#,
            bad = bad
        );
        assert!(
            serde_json::from_str::<MemoryContext>(&json).is_err(),
            "{bad:?}"
        );
    }
    assert!(
        PersonalityId::new("x".repeat(64)).is_ok(),
        "64 chars is the limit"
    );
    assert!(p.list().await.unwrap().is_empty(), "nothing was touched");
}

/// One personality never sees another's memory.
pub async fn personalities_are_isolated<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let ada = ctx("ada", "u1");
    let bob = ctx("bob", "u1");
    sync(&*p, &ada, &[MemoryUpdate::add(M, "ada's secret")]).await;
    assert_eq!(p.prefetch(&bob).await.unwrap().context, None);
    assert_eq!(text(&*p, &bob, M).await, "");
    assert_eq!(p.read(&DocumentId::GlobalMemory).await.unwrap().text, "");
    let global = ada.clone().with_scope(MemoryScope::Global);
    assert_eq!(p.prefetch(&global).await.unwrap().context, None);
}

/// One user never sees another's profile.
pub async fn users_are_isolated<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    sync(&*p, &ctx("ada", "u1"), &[MemoryUpdate::add(U, "likes tea")]).await;
    let other = ctx("ada", "u2");
    assert_eq!(p.prefetch(&other).await.unwrap().context, None);
    assert_eq!(text(&*p, &other, U).await, "");
}

/// Global-scope personalities share one `MEMORY.md`; per-personality ones do not see it.
pub async fn global_scope_is_shared_by_global_personalities<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let ada = ctx("ada", "u1").with_scope(MemoryScope::Global);
    let bob = ctx("bob", "u2").with_scope(MemoryScope::Global);
    let r = sync(&*p, &ada, &[MemoryUpdate::add(M, "shared fact")]).await;
    assert_eq!(r.documents[0].document, DocumentId::GlobalMemory);
    sync(&*p, &bob, &[MemoryUpdate::add(M, "bob's addition")]).await;
    assert_eq!(
        p.prefetch(&ada).await.unwrap().context.as_deref(),
        Some("## Memory\n\nshared fact\n\nbob's addition")
    );
    assert_eq!(p.prefetch(&ctx("ada", "u1")).await.unwrap().context, None);
}

/// Changing personality (or scope) never changes which `USER.md` is read.
pub async fn switching_personality_keeps_the_user_profile<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    sync(
        &*p,
        &ctx("ada", "u1"),
        &[MemoryUpdate::add(U, "Name: Grace")],
    )
    .await;
    let expected = Some("## About You\n\nName: Grace".to_owned());
    let versions: Vec<_> = [
        ctx("ada", "u1"),
        ctx("bob", "u1"),
        ctx("carol", "u1").with_scope(MemoryScope::Global),
    ]
    .iter()
    .map(|c| (c.document(U), c.clone()))
    .collect();
    let mut seen_versions = HashSet::new();
    for (doc, c) in versions {
        assert_eq!(doc, DocumentId::user(&c.user));
        let seen = p.prefetch(&c).await.unwrap();
        assert_eq!(seen.context, expected, "{}", c.personality);
        seen_versions.insert(seen.user.version);
    }
    assert_eq!(
        seen_versions.len(),
        1,
        "one USER.md behind every personality"
    );
}

/// Prefetch renders `## About You` then `## Memory`, blank sections dropped.
pub async fn prefetch_renders_both_sections<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(
        &*p,
        &c,
        &[
            MemoryUpdate::add(M, "note one"),
            MemoryUpdate::add(M, "note two"),
        ],
    )
    .await;
    assert_eq!(
        p.prefetch(&c).await.unwrap().context.as_deref(),
        Some("## Memory\n\nnote one\n\nnote two")
    );
    sync(&*p, &c, &[MemoryUpdate::add(U, "Name: Grace")]).await;
    assert_eq!(
        p.prefetch(&c).await.unwrap().context.as_deref(),
        Some("## About You\n\nName: Grace\n\n## Memory\n\nnote one\n\nnote two")
    );
    sync(&*p, &c, &[MemoryUpdate::replace(M, "")]).await;
    assert_eq!(
        p.prefetch(&c).await.unwrap().context.as_deref(),
        Some("## About You\n\nName: Grace")
    );
}

/// Over `max_chars` the tail is kept behind `[...truncated N chars]`, within the budget.
pub async fn truncation_keeps_the_tail<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let entries: Vec<_> = (0..50)
        .map(|i| MemoryUpdate::add(M, format!("entry {i:02}: something worth remembering")))
        .collect();
    sync(&*p, &c, &entries).await;
    let full = p.prefetch(&c).await.unwrap().context.unwrap();
    assert!(!full.contains("truncated"), "the default budget fits");

    // The default budget is 20,000 chars, headings included: "## Memory\n\n" is 11 of them.
    for (personality, body, cut) in [("at", 19_989, false), ("over", 19_990, true)] {
        let c = ctx(personality, "nobody");
        sync(&*p, &c, &[MemoryUpdate::add(M, "x".repeat(body))]).await;
        let context = p.prefetch(&c).await.unwrap().context.unwrap();
        assert_eq!(
            context.starts_with("[...truncated "),
            cut,
            "{body} + 11 chars"
        );
        let chars = context.chars().count();
        assert!(chars <= 20_000 && (cut || chars == 20_000), "{chars} chars");
    }

    let small = c.clone().with_max_chars(300);
    let cut = p.prefetch(&small).await.unwrap().context.unwrap();
    assert!(cut.chars().count() <= 300, "{} chars", cut.chars().count());
    assert!(cut.starts_with("[...truncated "), "{cut}");
    assert!(
        cut.ends_with("entry 49: something worth remembering"),
        "the tail is kept"
    );
    let (marker, kept) = cut.split_once('\n').unwrap();
    let n: usize = marker
        .trim_start_matches("[...truncated ")
        .trim_end_matches(" chars]")
        .parse()
        .expect("N in the marker");
    assert_eq!(
        n + kept.chars().count(),
        full.chars().count(),
        "N counts what was cut"
    );
    assert!(full.ends_with(kept));
    assert!(
        kept.starts_with("entry "),
        "cut at a line boundary: {kept:?}"
    );
}

/// Caps count UTF-8 bytes, the prefetch budget counts chars, and no char is split.
pub async fn multibyte_content_is_counted_right<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let note = "日本語のメモ 🙂🎉 ñ";
    let r = sync(&*p, &c, &[MemoryUpdate::add(M, note)]).await;
    assert_eq!(
        text(&*p, &c, M).await,
        format!("{note}\n"),
        "round-trips exactly"
    );
    assert_eq!(
        r.documents[0].bytes_after,
        note.len() + 1,
        "bytes, not chars"
    );

    let more: Vec<_> = (0..6)
        .map(|i| MemoryUpdate::add(U, format!("ユーザー {i} 🙂🎉 ñ")))
        .collect();
    sync(&*p, &c, &more).await;
    let rendered = p.prefetch(&c).await.unwrap().context.unwrap();
    let chars = rendered.chars().count();
    assert!(chars < rendered.len());
    let exact = p.prefetch(&c.clone().with_max_chars(chars)).await.unwrap();
    assert_eq!(
        exact.context.as_deref(),
        Some(rendered.as_str()),
        "the budget counts chars"
    );
    let cut = p
        .prefetch(&c.clone().with_max_chars(chars - 1))
        .await
        .unwrap();
    let cut = cut.context.unwrap();
    assert!(cut.starts_with("[...truncated "), "{cut}");
    assert!(cut.chars().count() < chars, "{cut}");
    assert!(cut.ends_with(note), "the tail is whole: {cut}");

    let capped = c.clone().with_budgets(Budgets {
        memory: Caps {
            soft: None,
            hard: Some(note.len() + 2 + "🙂".len() + 1),
        },
        ..Budgets::default()
    });
    let r = sync(&*p, &capped, &[MemoryUpdate::add(M, "🙂")]).await;
    assert_eq!(
        Some(r.documents[0].bytes_after),
        capped.budgets.memory.hard,
        "exactly at the cap"
    );
    let err = refused(&*p, &capped, &[MemoryUpdate::add(M, "é")]).await;
    assert!(
        matches!(err, MemoryError::HardCapExceeded { .. }),
        "{err:?}"
    );
}

/// `if_match` on a stale version is `Conflict` with the current version, and nothing is written.
pub async fn stale_if_match_is_a_conflict<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(
        &*p,
        &c,
        &[MemoryUpdate::add(M, "first"), MemoryUpdate::add(U, "me")],
    )
    .await;
    let seen = p.prefetch(&c).await.unwrap();
    sync(&*p, &c, &[MemoryUpdate::add(M, "another writer's note")]).await;
    let before = state(&*p, &c).await;

    let stale = IfMatch {
        memory: Some(seen.memory.version.clone()),
        user: Some(seen.user.version.clone()),
        ..IfMatch::NONE
    };
    let err = p
        .sync(
            &c,
            &[
                MemoryUpdate::replace(U, "new me"),
                MemoryUpdate::replace(M, "consolidated"),
            ],
            &stale,
        )
        .await
        .expect_err("a replace computed from a stale view must not land");
    let current = p.read(&c.document(M)).await.unwrap().version;
    assert!(
        matches!(&err, MemoryError::Conflict { document, expected, current: now }
            if *document == c.document(M) && *expected == seen.memory.version && *now == current),
        "{err:?}"
    );
    assert_eq!(
        state(&*p, &c).await,
        before,
        "nothing written, not even USER.md"
    );
    assert!(text(&*p, &c, M).await.contains("another writer's note"));
}

/// `if_match` on the current version applies, including for a document never written; the
/// same version then guards against a second writer.
pub async fn current_if_match_applies_once<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let seen = p.prefetch(&c).await.unwrap();
    let guard = IfMatch {
        memory: Some(seen.memory.version.clone()),
        ..IfMatch::NONE
    };
    let r = p
        .sync(&c, &[MemoryUpdate::replace(M, "first")], &guard)
        .await
        .expect("the current version matches");
    assert_eq!(r.documents[0].version_before, seen.memory.version);
    let err = p
        .sync(&c, &[MemoryUpdate::replace(M, "second")], &guard)
        .await
        .expect_err("the version moved on");
    assert!(matches!(err, MemoryError::Conflict { .. }), "{err:?}");
    assert_eq!(text(&*p, &c, M).await, "first\n");
    // A precondition on an untouched document is not checked.
    let unrelated = IfMatch {
        user: Some(seen.memory.version.clone()),
        ..IfMatch::NONE
    };
    p.sync(&c, &[MemoryUpdate::add(M, "more")], &unrelated)
        .await
        .expect("only touched documents are checked");
}

fn parse_entries(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    assert!(text.ends_with('\n'), "a torn document: {text:?}");
    text.trim_end()
        .split("\n\n")
        .map(|entry| {
            assert!(
                entry.starts_with("task") && entry.contains("-add") && !entry.contains('\n'),
                "a torn or mixed entry: {entry:?}"
            );
            entry.to_owned()
        })
        .collect()
}

/// 16 tasks x 50 adds to one document lose nothing; readers never see a torn document; and the
/// reports chain into one history (every add was applied to the latest content).
pub async fn concurrent_adds_lose_nothing<P: MemoryProvider + ?Sized + 'static>(p: Arc<P>) {
    const TASKS: usize = 16;
    const ADDS: usize = 50;
    let c = ctx("ada", "u1");
    let writers: Vec<_> = (0..TASKS)
        .map(|t| {
            let (p, c) = (Arc::clone(&p), c.clone());
            tokio::spawn(async move {
                let mut reports = Vec::new();
                for i in 0..ADDS {
                    let update = MemoryUpdate::add(M, format!("task{t:02}-add{i:02}"));
                    reports.push(sync(&*p, &c, &[update]).await);
                }
                reports
            })
        })
        .collect();
    let writers_done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (p, c, done) = (Arc::clone(&p), c.clone(), Arc::clone(&writers_done));
        tokio::spawn(async move {
            let mut last = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let now = parse_entries(&text(&*p, &c, M).await).len();
                assert!(
                    now >= last,
                    "an acknowledged add disappeared: {now} < {last}"
                );
                last = now;
                tokio::task::yield_now().await;
            }
        })
    };
    let mut chain = std::collections::HashMap::new();
    for writer in writers {
        for report in writer.await.expect("writer task") {
            let d = &report.documents[0];
            assert!(d.written && d.bytes_after > d.bytes_before);
            assert!(
                chain
                    .insert(d.sha256_before.clone(), d.sha256_after.clone())
                    .is_none()
            );
        }
    }
    writers_done.store(true, std::sync::atomic::Ordering::SeqCst);
    reader.await.expect("reader task");

    let entries = parse_entries(&text(&*p, &c, M).await);
    let unique: HashSet<_> = entries.iter().collect();
    assert_eq!((entries.len(), unique.len()), (TASKS * ADDS, TASKS * ADDS));
    // Following the reports from the empty document visits every write once: no write was
    // computed from stale content.
    let (mut at, mut steps) = (sha256_hex(""), 0);
    while let Some(next) = chain.get(&at) {
        at = next.clone();
        steps += 1;
    }
    assert_eq!(steps, TASKS * ADDS, "the reports form one linear history");
    assert_eq!(at, sha256_hex(&text(&*p, &c, M).await));
}

/// Of several writers guarding a replace with the same version, exactly one lands.
pub async fn concurrent_guarded_replaces_have_one_winner<P: MemoryProvider + ?Sized + 'static>(
    p: Arc<P>,
) {
    let c = ctx("ada", "u1");
    sync(&*p, &c, &[MemoryUpdate::add(M, "original")]).await;
    let version = p.read(&c.document(M)).await.unwrap().version;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (p, c) = (Arc::clone(&p), c.clone());
            let guard = IfMatch {
                memory: Some(version.clone()),
                ..IfMatch::NONE
            };
            tokio::spawn(async move {
                p.sync(
                    &c,
                    &[MemoryUpdate::replace(M, format!("winner {i}"))],
                    &guard,
                )
                .await
            })
        })
        .collect();
    let mut winners = Vec::new();
    for (i, task) in tasks.into_iter().enumerate() {
        match task.await.expect("task") {
            Ok(_) => winners.push(i),
            Err(MemoryError::Conflict { .. }) => {}
            Err(e) => panic!("expected Conflict, got {e:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    assert_eq!(text(&*p, &c, M).await, format!("winner {}\n", winners[0]));
}

/// Every write emits `memory.updated` with the report's fields; a subscriber that never reads
/// (or is dropped) does not slow or fail writes.
pub async fn events_follow_writes<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let _never_read = p.subscribe();
    drop(p.subscribe());
    let mut events = p.subscribe();
    let r = sync(
        &*p,
        &c,
        &[MemoryUpdate::add(M, "m"), MemoryUpdate::add(U, "u")],
    )
    .await;
    let got: Vec<_> = std::iter::from_fn(|| events.try_recv()).collect();
    let expected: Vec<_> = r
        .documents
        .iter()
        .cloned()
        .map(MemoryEvent::Updated)
        .collect();
    assert_eq!(got, expected);
    assert!(got.iter().all(|e| e.name() == "memory.updated"));
    let late = p.subscribe();
    drop(late);
    // More events than a subscriber may fall behind by, with one subscriber never reading and
    // another reading only at the end: writes go on, and the reader is told what it missed.
    let calls = EVENT_BUFFER / 2 + 8;
    for i in 0..calls {
        let updates = [
            MemoryUpdate::add(M, format!("more {i}")),
            MemoryUpdate::add(U, format!("more {i}")),
        ];
        sync(&*p, &c, &updates).await;
    }
    let received = std::iter::from_fn(|| events.try_recv()).count();
    assert!(received <= EVENT_BUFFER);
    assert_eq!(received as u64 + events.missed(), 2 * calls as u64);
}

/// `list` shows each document written, sorted; `read` returns its text.
pub async fn read_and_list_show_what_was_written<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let ada = ctx("ada", "u1");
    sync(
        &*p,
        &ada,
        &[MemoryUpdate::add(M, "ada"), MemoryUpdate::add(U, "u1")],
    )
    .await;
    let global = ctx("bob", "u2").with_scope(MemoryScope::Global);
    sync(&*p, &global, &[MemoryUpdate::add(M, "global")]).await;
    sync(&*p, &global, &[MemoryUpdate::replace(M, "")]).await;
    let mut expected = vec![DocumentId::GlobalMemory, ada.document(M), ada.document(U)];
    expected.sort();
    assert_eq!(
        p.list().await.unwrap(),
        expected,
        "cleared documents stay listed"
    );
    assert_eq!(p.read(&ada.document(M)).await.unwrap().text, "ada\n");
    assert_eq!(p.read(&DocumentId::GlobalMemory).await.unwrap().text, "");
}

/// `modified`: `None` for a document never written; after a write, `read` and `prefetch` give
/// the time of the write by the backend's clock (checked within a generous window, since that
/// clock is not ours); an unchanged batch keeps it and a later change never moves it back.
pub async fn modified_follows_writes<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    const SLACK: Duration = Duration::from_secs(5);
    let c = ctx("ada", "u1");
    let seen = p.prefetch(&c).await.expect("prefetch");
    assert_eq!(seen.memory.modified, None, "never written: no time");
    assert_eq!(seen.user.modified, None, "never written: no time");
    assert_eq!(p.read(&c.document(M)).await.unwrap().modified, None);

    let started = SystemTime::now();
    sync(&*p, &c, &[MemoryUpdate::add(M, "first")]).await;
    let ended = SystemTime::now();
    let first = p
        .read(&c.document(M))
        .await
        .unwrap()
        .modified
        .expect("a written document has a modified time");
    assert!(
        first >= started - SLACK && first <= ended + SLACK,
        "{first:?} is not within {SLACK:?} of the write ({started:?} to {ended:?})"
    );
    let seen = p.prefetch(&c).await.unwrap();
    assert_eq!(seen.memory.modified, Some(first), "prefetch and read agree");
    assert_eq!(
        seen.user.modified, None,
        "only the written document has a time"
    );

    sync(&*p, &c, &[MemoryUpdate::remove(M, "not there")]).await;
    assert_eq!(
        p.read(&c.document(M)).await.unwrap().modified,
        Some(first),
        "a batch that changes nothing keeps the time"
    );

    sync(
        &*p,
        &c,
        &[MemoryUpdate::add(M, "second"), MemoryUpdate::add(U, "u")],
    )
    .await;
    let ended = SystemTime::now();
    let seen = p.prefetch(&c).await.unwrap();
    let second = seen.memory.modified.expect("still written");
    assert!(second >= first, "{second:?} went back from {first:?}");
    let user = seen.user.modified.expect("the user document was written");
    assert!(
        user >= started - SLACK && user <= ended + SLACK,
        "{user:?} is not within {SLACK:?} of the write"
    );
    assert_eq!(p.read(&c.document(U)).await.unwrap().modified, Some(user));
}

/// `reports` as first made: without the mark a replay puts on them.
fn unmarked(reports: &[DocumentReport]) -> Vec<DocumentReport> {
    reports
        .iter()
        .map(|report| DocumentReport {
            replayed: false,
            ..report.clone()
        })
        .collect()
}

fn keyed(ctx: &MemoryContext, key: &str) -> MemoryContext {
    ctx.clone()
        .with_idempotency_key(IdempotencyKey::new(key).expect("valid key"))
}

/// `receipts` shows what `sync` checks: nothing for a document no keyed call wrote, the key's
/// report once one did (a repeat is answered from it), and a key that wrote the other document
/// only is not in this one's.
pub async fn a_keyed_write_shows_in_receipts<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let (memory, user) = (c.document(M), c.document(U));
    assert!(p.receipts(&memory).await.expect("receipts").is_empty());
    sync(&*p, &c, &[MemoryUpdate::add(M, "Unkeyed.")]).await;
    assert!(
        p.receipts(&memory).await.expect("receipts").is_empty(),
        "no key, no receipt"
    );
    let call = [MemoryUpdate::add(M, "Booked the train.")];
    let first = sync(&*p, &keyed(&c, "turn-1"), &call).await;
    let key = IdempotencyKey::new("turn-1").expect("valid key");
    let receipts = p.receipts(&memory).await.expect("receipts");
    let batches = memory_core::raw::plan_sync(&keyed(&c, "turn-1"), &call, &IfMatch::NONE)
        .expect("a valid call");
    let fingerprint = batches[0].fingerprint();
    assert_eq!(
        receipts
            .replay(&key, &fingerprint, &memory)
            .expect("the same call"),
        Some(&first.documents[0]),
        "the key's report, as the call returned it"
    );
    assert!(p.receipts(&user).await.expect("receipts").is_empty());
}

/// A call repeated with its idempotency key (after a lost reply, a crash) writes nothing more,
/// announces nothing and reports what the first call did; another key is another call.
pub async fn a_repeated_key_applies_once<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let call = [
        MemoryUpdate::add(M, "Booked the train."),
        MemoryUpdate::add(U, "Likes trains."),
    ];
    let first = sync(&*p, &keyed(&c, "turn-1"), &call).await;
    let before = state(&*p, &c).await;
    let mut events = p.subscribe();
    let again = sync(&*p, &keyed(&c, "turn-1"), &call).await;
    assert!(again.documents.iter().all(|d| d.replayed), "{again:?}");
    assert!(first.documents.iter().all(|d| !d.replayed), "{first:?}");
    assert_eq!(
        unmarked(&again.documents),
        first.documents,
        "the first call's report, again"
    );
    assert_eq!(state(&*p, &c).await, before, "the repeat wrote nothing");
    assert!(events.try_recv().is_none(), "the repeat announced nothing");

    sync(&*p, &keyed(&c, "turn-2"), &call[..1]).await;
    assert_eq!(
        text(&*p, &c, M).await.matches("Booked the train.").count(),
        2
    );
    sync(&*p, &c, &call[..1]).await;
    assert_eq!(
        text(&*p, &c, M).await.matches("Booked the train.").count(),
        3,
        "a call without a key always applies"
    );
}

/// A receipt outlives other writers' changes to the document: the repeat still writes nothing,
/// and what the others wrote stays.
pub async fn a_key_survives_other_writes<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let call = [MemoryUpdate::add(M, "Paid the deposit.")];
    let first = sync(&*p, &keyed(&c, "pay-1"), &call).await;
    sync(&*p, &c, &[MemoryUpdate::add(M, "Another writer's note.")]).await;
    let again = sync(&*p, &keyed(&c, "pay-1"), &call).await;
    assert_eq!(unmarked(&again.documents), first.documents);
    assert_eq!(
        text(&*p, &c, M).await,
        "Paid the deposit.\n\nAnother writer's note.\n"
    );
}

/// A key names one call: used again with other updates on a document it wrote, the call is
/// refused and writes nothing, instead of being taken for a repeat and dropping its updates.
pub async fn a_key_reused_for_other_updates_is_refused<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(
        &*p,
        &keyed(&c, "turn-7"),
        &[MemoryUpdate::add(M, "Booked the train.")],
    )
    .await;
    let before = state(&*p, &c).await;
    let err = p
        .sync(
            &keyed(&c, "turn-7"),
            &[MemoryUpdate::add(M, "Booked the ferry.")],
            &IfMatch::NONE,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::KeyReused { key, document } if key == "turn-7" && *document == c.document(M)),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Refused);
    assert_eq!(state(&*p, &c).await, before, "nothing was written");
}

/// Several copies of one keyed call racing each other land once.
pub async fn concurrent_repeats_of_a_key_land_once<P: MemoryProvider + ?Sized + 'static>(
    p: Arc<P>,
) {
    let c = keyed(&ctx("ada", "u1"), "raced");
    let racers: Vec<_> = (0..8)
        .map(|_| {
            let (p, c) = (Arc::clone(&p), c.clone());
            tokio::spawn(async move { sync(&*p, &c, &[MemoryUpdate::add(M, "Once.")]).await })
        })
        .collect();
    let mut reports = Vec::new();
    for racer in racers {
        reports.push(unmarked(&racer.await.expect("racer task").documents));
    }
    assert!(
        reports.windows(2).all(|w| w[0] == w[1]),
        "one report for all: {reports:?}"
    );
    assert_eq!(text(&*p, &c, M).await, "Once.\n");
}

/// Each document keeps the keys of its last [`RECEIPTS_KEPT`] keyed writes: a key older than
/// that applies again, a newer one does not.
pub async fn keys_are_kept_for_the_last_writes<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    for n in 0..=RECEIPTS_KEPT {
        sync(
            &*p,
            &keyed(&c, &format!("k{n}")),
            &[MemoryUpdate::add(M, format!("e{n}"))],
        )
        .await;
    }
    let count = |text: &str, entry: &str| text.lines().filter(|l| *l == entry).count();
    sync(&*p, &keyed(&c, "k1"), &[MemoryUpdate::add(M, "e1")]).await;
    assert_eq!(count(&text(&*p, &c, M).await, "e1"), 1, "k1 is still kept");
    sync(&*p, &keyed(&c, "k0"), &[MemoryUpdate::add(M, "e0")]).await;
    assert_eq!(
        count(&text(&*p, &c, M).await, "e0"),
        2,
        "k0 was pushed out by {RECEIPTS_KEPT} later keys"
    );
}
