//! The notes group (`CONTRACT.md`, Notes): every update rule on a note, the scope rules, races
//! between two writers, listing against reads, history across rename and delete. Each case
//! takes a provider with an empty namespace, as [`crate::cases`] do, and is stamped by
//! [`notes_suite!`](crate::notes_suite) for a backend that writes notes.

use std::sync::Arc;

use memory_core::{
    Budgets, DocumentId, ErrorKind, IdempotencyKey, IfMatch, MemoryContext, MemoryError,
    MemoryProvider, MemoryScope, MemoryUpdate, NoteCaps, NotePath, NoteScope, Store, Surface,
    history_across_renames, revert_document,
};

use crate::support::{M, U, ctx, sync};

fn path(path: &str) -> NotePath {
    NotePath::new(path).unwrap_or_else(|e| panic!("{path} is a note path: {e}"))
}

/// The note `at` of `store`'s scope in `c`.
fn note(c: &MemoryContext, store: Store, at: &str) -> DocumentId {
    DocumentId::note(&c.document(store), path(at))
}

async fn text_of<P: MemoryProvider + ?Sized>(p: &P, note: &DocumentId) -> String {
    p.read(note).await.expect("read of a note").text
}

/// The paths `scope` lists under `prefix`, in the listing's order.
async fn listed<P: MemoryProvider + ?Sized>(p: &P, scope: &NoteScope, prefix: &str) -> Vec<String> {
    p.notes(scope, prefix)
        .await
        .expect("notes")
        .into_iter()
        .map(|meta| meta.path.to_string())
        .collect()
}

async fn refused<P: MemoryProvider + ?Sized>(
    p: &P,
    c: &MemoryContext,
    updates: &[MemoryUpdate],
) -> MemoryError {
    match p.sync(c, updates, &IfMatch::NONE).await {
        Ok(report) => panic!("sync {updates:?} should be refused, got {report:?}"),
        Err(err) => err,
    }
}

/// `add`, `edit`, `remove` and `replace` apply to a note as to a document; `create` makes one,
/// `delete` ends it, and every update but `replace` and `create` needs the note to exist.
pub async fn notes_take_every_update_rule<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let kyoto = path("trips/kyoto.md");
    let id = note(&c, M, "trips/kyoto.md");
    for update in [
        MemoryUpdate::add(M, "x").in_note(kyoto.clone()),
        MemoryUpdate::edit(M, "a", "b").in_note(kyoto.clone()),
        MemoryUpdate::remove(M, "a").in_note(kyoto.clone()),
        MemoryUpdate::delete(M, kyoto.clone()),
    ] {
        let err = refused(&*p, &c, std::slice::from_ref(&update)).await;
        assert!(
            matches!(&err, MemoryError::NoteNotFound { index: 0, path, .. } if *path == kyoto),
            "{update:?} on a note that does not exist: {err:?}"
        );
        assert_eq!(err.code(), "note-not-found");
    }
    assert!(p.list().await.expect("list").is_empty(), "nothing written");

    let created = sync(
        &*p,
        &c,
        &[MemoryUpdate::create(M, kyoto.clone(), "  # Kyoto\n")],
    )
    .await;
    assert_eq!(created.documents.len(), 1);
    assert_eq!(
        created.documents[0].document, id,
        "the report names the note"
    );
    assert_eq!(created.documents[0].store, M);
    assert_eq!(
        text_of(&*p, &id).await,
        "# Kyoto\n",
        "create normalises as replace"
    );
    assert_eq!(
        text_of(&*p, &c.document(M)).await,
        "",
        "MEMORY.md is not touched"
    );

    let err = refused(&*p, &c, &[MemoryUpdate::create(M, kyoto.clone(), "again")]).await;
    assert!(
        matches!(err, MemoryError::NoteExists { index: 0, .. }),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Conflict);
    let err = refused(
        &*p,
        &c,
        &[MemoryUpdate::create(M, path("blank.md"), " \n ")],
    )
    .await;
    assert!(matches!(err, MemoryError::InvalidUpdate { .. }), "{err:?}");

    sync(
        &*p,
        &c,
        &[
            MemoryUpdate::add(M, "Temples first.").in_note(kyoto.clone()),
            MemoryUpdate::add(M, "Stay: ryokan.").in_note(kyoto.clone()),
            MemoryUpdate::edit(M, "ryokan", "Hiiragiya").in_note(kyoto.clone()),
            MemoryUpdate::remove(M, "Temples").in_note(kyoto.clone()),
        ],
    )
    .await;
    // `remove` drops the line and leaves the blank lines around it, as on a document.
    assert_eq!(text_of(&*p, &id).await, "# Kyoto\n\n\nStay: Hiiragiya.\n");

    let err = refused(
        &*p,
        &c,
        &[MemoryUpdate::edit(M, "Osaka", "x").in_note(kyoto.clone())],
    )
    .await;
    assert!(matches!(err, MemoryError::NoMatch { .. }), "{err:?}");

    sync(
        &*p,
        &c,
        &[MemoryUpdate::replace(M, "Rewritten.").in_note(kyoto.clone())],
    )
    .await;
    assert_eq!(text_of(&*p, &id).await, "Rewritten.\n");

    // `replace` creates a note that does not exist.
    let osaka = note(&c, M, "trips/osaka.md");
    sync(
        &*p,
        &c,
        &[MemoryUpdate::replace(M, "Castle.").in_note(path("trips/osaka.md"))],
    )
    .await;
    assert_eq!(text_of(&*p, &osaka).await, "Castle.\n");

    // `delete` leaves the note blank: gone from the listing, kept by its history.
    let deleted = sync(&*p, &c, &[MemoryUpdate::delete(M, kyoto.clone())]).await;
    assert_eq!(deleted.documents[0].bytes_after, 0);
    assert_eq!(text_of(&*p, &id).await, "");
    assert_eq!(listed(&*p, &id.scope(), "").await, ["trips/osaka.md"]);
    let err = refused(&*p, &c, &[MemoryUpdate::delete(M, kyoto.clone())]).await;
    assert!(matches!(err, MemoryError::NoteNotFound { .. }), "{err:?}");
    // A note whose last line is removed no longer exists either.
    sync(
        &*p,
        &c,
        &[MemoryUpdate::remove(M, "Castle").in_note(path("trips/osaka.md"))],
    )
    .await;
    assert!(listed(&*p, &id.scope(), "").await.is_empty());

    // A deleted note comes back by `revert`, as a revision of its own.
    let history = p.history(&id, 100).await.expect("history");
    let before_delete = history
        .iter()
        .find(|revision| revision.updates.iter().any(|u| u.action() == "replace"))
        .expect("the replace's revision is kept");
    let restored = revert_document(&*p, &c, &id, before_delete.number, None)
        .await
        .expect("revert of a deleted note");
    assert!(restored.documents[0].written);
    assert_eq!(text_of(&*p, &id).await, "Rewritten.\n");
    assert_eq!(listed(&*p, &id.scope(), "").await, ["trips/kyoto.md"]);
}

/// Within a scope no two notes differ only by case or normalisation, and no note is where a
/// folder of notes is: the write that would make such a pair writes nothing.
pub async fn colliding_notes_are_refused<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(
        &*p,
        &c,
        &[MemoryUpdate::create(M, path("Trips/Kyoto.md"), "Temples.")],
    )
    .await;
    for (colliding, existing) in [
        ("trips/kyoto.md", "Trips/Kyoto.md"),
        ("Trips/Ｋｙｏｔｏ.md", "Trips/Kyoto.md"),
        ("Trips/Kyoto.md/day1.md", "Trips/Kyoto.md"),
        ("trips", "Trips/Kyoto.md"),
    ] {
        let err = refused(
            &*p,
            &c,
            &[
                MemoryUpdate::add(M, "Beside."),
                MemoryUpdate::create(M, path(colliding), "Clash."),
            ],
        )
        .await;
        match &err {
            MemoryError::NoteCollision {
                path,
                existing: there,
                ..
            } => {
                assert_eq!(path.as_str(), colliding);
                assert_eq!(there.as_str(), existing, "{err}");
            }
            other => panic!("{colliding} beside {existing}: {other:?}"),
        }
        assert_eq!(err.kind(), ErrorKind::Conflict);
    }
    assert_eq!(
        text_of(&*p, &c.document(M)).await,
        "",
        "a refused call writes nothing"
    );
    assert_eq!(
        listed(&*p, &c.document(M).scope(), "").await,
        ["Trips/Kyoto.md"]
    );
    // The same path in the other scope, or another personality's, is another note.
    sync(
        &*p,
        &c,
        &[MemoryUpdate::create(
            U,
            path("trips/kyoto.md"),
            "Likes temples.",
        )],
    )
    .await;
    sync(
        &*p,
        &ctx("bob", "u1"),
        &[MemoryUpdate::create(M, path("trips/kyoto.md"), "Bob's.")],
    )
    .await;
}

/// A call touching notes and documents is all or nothing, and its reports name each note.
pub async fn a_call_with_notes_is_all_or_nothing<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let err = refused(
        &*p,
        &c,
        &[
            MemoryUpdate::add(M, "In MEMORY.md."),
            MemoryUpdate::create(M, path("a.md"), "A."),
            MemoryUpdate::add(U, "In USER.md."),
            MemoryUpdate::edit(U, "x", "y").in_note(path("missing.md")),
        ],
    )
    .await;
    assert!(
        matches!(err, MemoryError::NoteNotFound { index: 3, .. }),
        "{err:?}"
    );
    assert!(
        p.list().await.expect("list").is_empty(),
        "nothing was written"
    );

    let report = sync(
        &*p,
        &c,
        &[
            MemoryUpdate::create(U, path("diet.md"), "Vegetarian."),
            MemoryUpdate::add(M, "In MEMORY.md."),
            MemoryUpdate::create(M, path("b.md"), "B."),
            MemoryUpdate::create(M, path("a.md"), "A."),
        ],
    )
    .await;
    let order: Vec<DocumentId> = report
        .documents
        .iter()
        .map(|d| d.document.clone())
        .collect();
    assert_eq!(
        order,
        [
            c.document(M),
            note(&c, M, "a.md"),
            note(&c, M, "b.md"),
            note(&c, U, "diet.md"),
        ],
        "memory's scope first, each scope's document then its notes by path"
    );
    let totals = report.documents[2]
        .scope
        .expect("a note's report has its scope's totals");
    assert_eq!((totals.notes, totals.bytes), (2, 6));
    assert_eq!(
        report.documents[0].scope, None,
        "a document's report has none"
    );
}

/// Listing: the scope's notes that exist, sorted by path, with what a read gives.
pub async fn listing_agrees_with_reads<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let scope = c.document(M).scope();
    assert!(
        p.notes(&scope, "")
            .await
            .expect("notes of an empty scope")
            .is_empty()
    );
    for (at, text) in [
        (
            "projects/b.md",
            "---\nname: b\ndescription: The B project\n---\n# B\n",
        ),
        ("projects/a.md", "\n# Project A #\n\nDetails."),
        ("inbox.md", "First line.\nSecond."),
        ("projects-old.md", "Old."),
    ] {
        sync(&*p, &c, &[MemoryUpdate::create(M, path(at), text)]).await;
    }
    sync(
        &*p,
        &c,
        &[MemoryUpdate::create(
            U,
            path("projects/c.md"),
            "Not in memory.",
        )],
    )
    .await;
    let all = p.notes(&scope, "").await.expect("notes");
    let paths: Vec<&str> = all.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "inbox.md",
            "projects-old.md",
            "projects/a.md",
            "projects/b.md"
        ]
    );
    for meta in &all {
        let read = p.read(&scope.note(meta.path.clone())).await.expect("read");
        assert_eq!(meta.bytes, read.text.len(), "{}", meta.path);
        assert_eq!(meta.version, read.version, "{}", meta.path);
        assert_eq!(meta.modified, read.modified, "{}", meta.path);
    }
    let described: Vec<&str> = all.iter().map(|m| m.description.as_str()).collect();
    assert_eq!(
        described,
        ["First line.", "Old.", "Project A", "The B project"]
    );
    assert_eq!(
        listed(&*p, &scope, "projects/").await,
        ["projects/a.md", "projects/b.md"]
    );
    assert_eq!(
        listed(&*p, &scope, "projects").await.len(),
        3,
        "a string prefix"
    );
    assert!(listed(&*p, &scope, "zzz").await.is_empty());
    let user_scope = c.document(U).scope();
    assert_eq!(listed(&*p, &user_scope, "").await, ["projects/c.md"]);
    // `list` holds each note while it exists.
    sync(&*p, &c, &[MemoryUpdate::delete(M, path("inbox.md"))]).await;
    let documents = p.list().await.expect("list");
    assert!(
        documents.contains(&scope.note(path("projects/a.md"))),
        "{documents:?}"
    );
    assert!(
        documents.contains(&user_scope.note(path("projects/c.md"))),
        "{documents:?}"
    );
    assert!(
        !documents.contains(&scope.note(path("inbox.md"))),
        "{documents:?}"
    );
    assert_eq!(
        documents.len(),
        4,
        "four notes, no document and no index: {documents:?}"
    );
}

/// A rename moves the text atomically, refuses a missing note or a taken path, and is a call
/// of its own; both notes record it.
pub async fn rename_moves_a_note<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let (from, to) = (path("drafts/kyoto.md"), path("trips/kyoto.md"));
    sync(
        &*p,
        &c,
        &[MemoryUpdate::create(M, from.clone(), "Temples.")],
    )
    .await;
    sync(
        &*p,
        &c,
        &[MemoryUpdate::add(M, "Ryokan.").in_note(from.clone())],
    )
    .await;
    let report = sync(
        &*p,
        &c,
        &[MemoryUpdate::rename(M, from.clone(), to.clone())],
    )
    .await;
    let (from_id, to_id) = (note(&c, M, from.as_str()), note(&c, M, to.as_str()));
    let touched: Vec<&DocumentId> = report.documents.iter().map(|d| &d.document).collect();
    assert_eq!(touched, [&from_id, &to_id]);
    assert_eq!(text_of(&*p, &from_id).await, "");
    assert_eq!(text_of(&*p, &to_id).await, "Temples.\n\nRyokan.\n");
    assert_eq!(
        listed(&*p, &c.document(M).scope(), "").await,
        ["trips/kyoto.md"]
    );
    for id in [&from_id, &to_id] {
        let newest = p.history(id, 1).await.expect("history");
        assert_eq!(
            newest[0].updates,
            [MemoryUpdate::rename(M, from.clone(), to.clone())],
            "{id} records the rename"
        );
    }
    let arrived = p.history(&to_id, 1).await.expect("history");
    assert_eq!(arrived[0].text.as_deref(), Some("Temples.\n\nRyokan.\n"));
    // History follows the rename back into the note's revisions at its old path.
    let followed = history_across_renames(&*p, &to_id, 10)
        .await
        .expect("history");
    let trail: Vec<(&DocumentId, Vec<&str>)> = followed
        .iter()
        .map(|r| {
            (
                &r.document,
                r.updates.iter().map(MemoryUpdate::action).collect(),
            )
        })
        .collect();
    assert_eq!(
        trail,
        [
            (&to_id, vec!["rename"]),
            (&from_id, vec!["rename"]),
            (&from_id, vec!["add"]),
            (&from_id, vec!["create"]),
        ]
    );
    assert_eq!(
        history_across_renames(&*p, &to_id, 2)
            .await
            .expect("history")
            .len(),
        2
    );

    let err = refused(
        &*p,
        &c,
        &[MemoryUpdate::rename(M, from.clone(), path("x.md"))],
    )
    .await;
    assert!(matches!(err, MemoryError::NoteNotFound { .. }), "{err:?}");
    sync(
        &*p,
        &c,
        &[MemoryUpdate::create(M, path("other.md"), "Other.")],
    )
    .await;
    let err = refused(
        &*p,
        &c,
        &[MemoryUpdate::rename(M, to.clone(), path("other.md"))],
    )
    .await;
    assert!(matches!(err, MemoryError::NoteExists { .. }), "{err:?}");
    let err = refused(
        &*p,
        &c,
        &[
            MemoryUpdate::rename(M, to.clone(), path("y.md")),
            MemoryUpdate::add(M, "x"),
        ],
    )
    .await;
    assert!(
        matches!(err, MemoryError::InvalidUpdate { index: 0, .. }),
        "{err:?}"
    );
    assert_eq!(
        text_of(&*p, &to_id).await,
        "Temples.\n\nRyokan.\n",
        "nothing moved"
    );
    // Only the case changes: the note is not in its own way.
    sync(
        &*p,
        &c,
        &[MemoryUpdate::rename(M, to.clone(), path("trips/Kyoto.md"))],
    )
    .await;
    assert_eq!(
        listed(&*p, &c.document(M).scope(), "trips/").await,
        ["trips/Kyoto.md"]
    );
    // A rename onto a path that would collide with another note is refused.
    let err = refused(
        &*p,
        &c,
        &[MemoryUpdate::rename(
            M,
            path("other.md"),
            path("TRIPS/kyoto.md"),
        )],
    )
    .await;
    assert!(matches!(err, MemoryError::NoteCollision { .. }), "{err:?}");
    // Into a folder of its own name, or onto the folder it is in: the two would both be
    // there while it moves (a file where a folder is, on a file system).
    for (from, to) in [
        ("trips/Kyoto.md", "trips/Kyoto.md/inside.md"),
        ("trips/Kyoto.md", "trips"),
    ] {
        let err = refused(&*p, &c, &[MemoryUpdate::rename(M, path(from), path(to))]).await;
        assert!(
            matches!(err, MemoryError::NoteCollision { .. }),
            "{from} to {to}: {err:?}"
        );
    }
    assert_eq!(
        listed(&*p, &c.document(M).scope(), "trips/").await,
        ["trips/Kyoto.md"]
    );
    // A folder's path, or one under a note, holds no note: it reads as one never written.
    for nowhere in ["trips", "trips/Kyoto.md/inside.md"] {
        let id = c.document(M).scope().note(path(nowhere));
        let read = p.read(&id).await.unwrap();
        assert_eq!(read.text, "", "{nowhere}");
    }
}

/// Per note `max_note_bytes`, per scope `max_notes` and `max_bytes`: refused past them, with
/// nothing written.
pub async fn note_caps_are_enforced<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let caps = NoteCaps {
        max_note_bytes: 20,
        max_notes: 2,
        max_bytes: 30,
    };
    let c = ctx("ada", "u1").with_budgets(Budgets {
        notes: caps,
        ..Budgets::default()
    });
    let err = refused(
        &*p,
        &c,
        &[MemoryUpdate::create(M, path("big.md"), "x".repeat(21))],
    )
    .await;
    assert!(
        matches!(
            err,
            MemoryError::HardCapExceeded {
                bytes: 22,
                hard_cap: 20,
                ..
            }
        ),
        "{err:?}"
    );
    sync(
        &*p,
        &c,
        &[MemoryUpdate::create(M, path("a.md"), "x".repeat(14))],
    )
    .await;
    let err = refused(
        &*p,
        &c,
        &[MemoryUpdate::create(M, path("b.md"), "y".repeat(16))],
    )
    .await;
    assert!(
        matches!(
            &err,
            MemoryError::NotesCapExceeded {
                cap: "max_bytes",
                limit: 30,
                would_be: 32,
                ..
            }
        ),
        "{err:?}"
    );
    sync(&*p, &c, &[MemoryUpdate::create(M, path("b.md"), "y")]).await;
    let err = refused(&*p, &c, &[MemoryUpdate::create(M, path("c.md"), "z")]).await;
    assert!(
        matches!(
            &err,
            MemoryError::NotesCapExceeded {
                cap: "max_notes",
                limit: 2,
                would_be: 3,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Refused);
    assert_eq!(
        listed(&*p, &c.document(M).scope(), "").await,
        ["a.md", "b.md"]
    );
    // The documents' caps and the other scope are apart: USER.md and its notes still take one.
    sync(&*p, &c, &[MemoryUpdate::create(U, path("c.md"), "z")]).await;
}

/// `if_match` guards a note by its path; a key applies a note's write once.
pub async fn notes_are_guarded_and_keyed<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let at = path("kyoto.md");
    let id = note(&c, M, "kyoto.md");
    let never = p.read(&id).await.expect("read").version;
    let guarded = IfMatch::NONE.with_note(M, at.clone(), never.clone());
    p.sync(&c, &[MemoryUpdate::create(M, at.clone(), "One.")], &guarded)
        .await
        .expect("a create guarded by the version of a note never written");
    let err = p
        .sync(
            &c,
            &[MemoryUpdate::add(M, "Two.").in_note(at.clone())],
            &guarded,
        )
        .await
        .expect_err("a stale version");
    assert!(
        matches!(&err, MemoryError::Conflict { document, .. } if *document == id),
        "{err:?}"
    );
    assert_eq!(text_of(&*p, &id).await, "One.\n");

    let keyed = c
        .clone()
        .with_idempotency_key(IdempotencyKey::new("note-1").expect("a key"));
    let add = [MemoryUpdate::add(M, "Two.").in_note(at.clone())];
    let first = p
        .sync(&keyed, &add, &IfMatch::NONE)
        .await
        .expect("first send");
    let again = p
        .sync(&keyed, &add, &IfMatch::NONE)
        .await
        .expect("second send");
    assert!(again.documents[0].replayed, "{again:?}");
    assert_eq!(
        again.documents[0].version_after,
        first.documents[0].version_after
    );
    assert_eq!(text_of(&*p, &id).await, "One.\n\nTwo.\n", "applied once");
}

/// A user's notes are theirs whatever the personality; a shared MEMORY.md's notes are shared
/// by the personalities that share it, and a personality's own are its own.
pub async fn notes_follow_their_scope<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let (ada, bob) = (ctx("ada", "u1"), ctx("bob", "u1"));
    sync(
        &*p,
        &ada,
        &[MemoryUpdate::create(U, path("diet.md"), "Vegetarian.")],
    )
    .await;
    assert_eq!(
        text_of(&*p, &note(&bob, U, "diet.md")).await,
        "Vegetarian.\n"
    );
    assert!(
        listed(&*p, &ctx("ada", "u2").document(U).scope(), "")
            .await
            .is_empty()
    );

    sync(
        &*p,
        &ada,
        &[MemoryUpdate::create(M, path("own.md"), "Ada's.")],
    )
    .await;
    assert!(listed(&*p, &bob.document(M).scope(), "").await.is_empty());

    let (g1, g2) = (
        ctx("ada", "u1").with_scope(MemoryScope::Global),
        ctx("bob", "u2").with_scope(MemoryScope::Global),
    );
    sync(
        &*p,
        &g1,
        &[MemoryUpdate::create(M, path("shared.md"), "For all.")],
    )
    .await;
    assert_eq!(g2.document(M).scope(), NoteScope::GlobalMemory);
    assert_eq!(
        listed(&*p, &g2.document(M).scope(), "").await,
        ["shared.md"]
    );
    let err = refused(&*p, &g2, &[MemoryUpdate::create(M, path("SHARED.md"), "x")]).await;
    assert!(matches!(err, MemoryError::NoteCollision { .. }), "{err:?}");
}

/// Two writers racing on one note: one wins, the other is told why, nothing acknowledged is
/// lost.
pub async fn racing_writers_on_notes_lose_nothing<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let none = IfMatch::NONE;
    // create/create of one path, and of two paths that collide.
    for (one, two) in [("race.md", "race.md"), ("Case.md", "case.md")] {
        let (a, b) = (
            [MemoryUpdate::create(M, path(one), "From one.")],
            [MemoryUpdate::create(M, path(two), "From two.")],
        );
        let (a, b) = tokio::join!(p.sync(&c, &a, &none), p.sync(&c, &b, &none));
        let lost = match (a, b) {
            (Ok(_), Err(err)) | (Err(err), Ok(_)) => err,
            other => panic!("exactly one create of {one} and {two} wins: {other:?}"),
        };
        assert_eq!(lost.kind(), ErrorKind::Conflict, "{lost:?}");
    }
    // rename/write: the add lands before the rename (and moves with it) or is refused.
    sync(
        &*p,
        &c,
        &[MemoryUpdate::create(M, path("from.md"), "Start.")],
    )
    .await;
    let rename = [MemoryUpdate::rename(M, path("from.md"), path("to.md"))];
    let add = [MemoryUpdate::add(M, "Added.").in_note(path("from.md"))];
    let (renamed, added) = tokio::join!(p.sync(&c, &rename, &none), p.sync(&c, &add, &none));
    renamed.expect("the rename wins either way");
    let moved = text_of(&*p, &note(&c, M, "to.md")).await;
    match added {
        Ok(_) => assert_eq!(moved, "Start.\n\nAdded.\n", "the acknowledged add moved"),
        Err(err) => {
            assert!(matches!(err, MemoryError::NoteNotFound { .. }), "{err:?}");
            assert_eq!(moved, "Start.\n");
        }
    }
    assert_eq!(text_of(&*p, &note(&c, M, "from.md")).await, "");
    // delete/write: the same.
    let delete = [MemoryUpdate::delete(M, path("to.md"))];
    let edit = [MemoryUpdate::edit(M, "Start", "Begin").in_note(path("to.md"))];
    let (deleted, edited) = tokio::join!(p.sync(&c, &delete, &none), p.sync(&c, &edit, &none));
    deleted.expect("the delete wins either way");
    if let Err(err) = edited {
        assert!(matches!(err, MemoryError::NoteNotFound { .. }), "{err:?}");
    }
    assert!(
        !listed(&*p, &c.document(M).scope(), "")
            .await
            .contains(&"to.md".to_owned())
    );
    let history = p.history(&note(&c, M, "to.md"), 10).await.expect("history");
    assert_eq!(
        history[0].updates, delete,
        "the delete is the newest revision"
    );
}

/// Purging a note erases it and its history, as for a document.
pub async fn purging_a_note_erases_it<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let id = note(&c, M, "secret.md");
    sync(
        &*p,
        &c,
        &[MemoryUpdate::create(M, path("secret.md"), "Hidden.")],
    )
    .await;
    sync(
        &*p,
        &c,
        &[MemoryUpdate::add(M, "More.").in_note(path("secret.md"))],
    )
    .await;
    let purged = p.purge(&id, Surface::Cli).await.expect("purge of a note");
    assert_eq!(purged.bytes, "Hidden.\n\nMore.\n".len());
    assert_eq!(text_of(&*p, &id).await, "");
    assert!(listed(&*p, &id.scope(), "").await.is_empty());
    let history = p.history(&id, 10).await.expect("history");
    assert!(
        history
            .iter()
            .all(|r| r.text.is_none() && r.updates.is_empty()),
        "{history:?}"
    );
}

/// Prefetch lists the notes of the context's two scopes after the pair, bounded, and without
/// notes is exactly what it was before notes.
pub async fn prefetch_indexes_the_notes<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    sync(
        &*p,
        &c,
        &[
            MemoryUpdate::add(M, "Likes tea."),
            MemoryUpdate::add(U, "Name: Ada"),
        ],
    )
    .await;
    let without = p.prefetch(&c).await.expect("prefetch").context;
    assert_eq!(
        without,
        memory_core::raw::render("Name: Ada\n", "Likes tea.\n", c.max_chars),
        "no notes: the prompt is the pair's alone"
    );
    sync(
        &*p,
        &c,
        &[MemoryUpdate::create(
            M,
            path("trips/kyoto.md"),
            "# Kyoto\nTemples.",
        )],
    )
    .await;
    sync(
        &*p,
        &c,
        &[MemoryUpdate::create(U, path("diet.md"), "Vegetarian.")],
    )
    .await;
    // Another personality's notes, and a deleted one, are not listed.
    sync(
        &*p,
        &ctx("bob", "u1"),
        &[MemoryUpdate::create(M, path("bob.md"), "Bob's.")],
    )
    .await;
    sync(
        &*p,
        &c,
        &[MemoryUpdate::create(M, path("gone.md"), "Gone.")],
    )
    .await;
    sync(&*p, &c, &[MemoryUpdate::delete(M, path("gone.md"))]).await;

    let context = p
        .prefetch(&c)
        .await
        .expect("prefetch")
        .context
        .expect("a context");
    let (pair, index) = context
        .split_once("\n\n## Notes\n")
        .expect("a notes section last");
    assert_eq!(
        Some(pair.to_owned()),
        without,
        "the pair's sections come first, unchanged"
    );
    let mut lines: Vec<&str> = index.lines().filter(|line| !line.is_empty()).collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "- memory/trips/kyoto.md (17 bytes): Kyoto",
            "- user/diet.md (12 bytes): Vegetarian.",
        ]
    );

    // Past 20 notes the index says how many more there are.
    for n in 0..23 {
        let at = path(&format!("many/{n:02}.md"));
        sync(
            &*p,
            &c,
            &[MemoryUpdate::create(M, at, format!("Note {n}."))],
        )
        .await;
    }
    let context = p
        .prefetch(&c)
        .await
        .expect("prefetch")
        .context
        .expect("a context");
    let index = context
        .split_once("\n\n## Notes\n")
        .expect("a notes section")
        .1;
    let lines: Vec<&str> = index.lines().filter(|line| !line.is_empty()).collect();
    assert_eq!(lines.len(), 21, "{index}");
    assert_eq!(lines[20], "- ... and 5 more");
}

/// Hundreds of note paths an agent, a client or an attacker might send to reach outside a
/// scope, hide a file, or pass for another note (traversal, encodings, control and invisible
/// characters, Windows names, compatibility spellings, too long, too deep): every one must be
/// refused with `InvalidNotePath` before any read or write, on every surface.
pub fn hostile_note_paths() -> Vec<String> {
    let escapes = [
        "..",
        ".",
        "...",
        "\u{ff0e}\u{ff0e}",
        ".git",
        ".env",
        ".MEMORY.md.history.jsonl",
        "",
        " ",
        "a ",
        " a",
        "a.",
        "..\\..",
        "%2e%2e",
        "%2f",
        "%00",
        "..%2f",
        "C:",
        "\\\\server",
        "a\u{0}b",
        "a\nb",
        "\u{7f}",
        "\u{85}",
        "\u{200b}",
        "\u{202e}txt.md",
        "\u{feff}",
        "\u{2028}",
        "\u{a0}",
        "\u{3000}",
        "\u{e0041}",
        "CON",
        "nul.md",
        "Com1.txt",
        "lpt9",
        "*",
        "?",
        "<a>",
        "a|b",
        "a\"b",
        "\u{ff0f}",
        "\u{ff3c}",
        "\u{ff1a}",
        "e\u{301}",
    ];
    let mut paths: Vec<String> = Vec::new();
    for bad in escapes {
        for shape in ["{}", "{}/x.md", "a/{}", "a/{}/b.md", "/{}", "{}/", "a//{}"] {
            paths.push(shape.replace("{}", bad));
        }
    }
    paths.extend(["/etc/passwd".to_owned(), "/memories/x.md".to_owned()]);
    paths.push("a/".repeat(memory_core::MAX_NOTE_PATH_SEGMENTS) + "b.md");
    paths.push("x".repeat(memory_core::MAX_NOTE_SEGMENT_BYTES + 1));
    paths.push(vec!["y".repeat(90); 3].join("/"));
    paths
}

/// A note's revision is redacted as a document's is, and history still follows the note
/// across a rename whose arrival was redacted (the rename's update, only paths, stays).
pub async fn a_note_revision_is_redacted<P: MemoryProvider + ?Sized>(p: Arc<P>) {
    let c = ctx("ada", "u1");
    let (from, to) = (path("drafts/kyoto.md"), path("trips/kyoto.md"));
    let (from_id, to_id) = (note(&c, M, from.as_str()), note(&c, M, to.as_str()));
    for update in [
        MemoryUpdate::create(M, from.clone(), "Temples."),
        MemoryUpdate::add(M, "Door code opal-heron.").in_note(from.clone()),
        MemoryUpdate::rename(M, from.clone(), to.clone()),
        MemoryUpdate::add(M, "Ryokan.").in_note(to.clone()),
    ] {
        sync(&*p, &c, &[update]).await;
    }
    let err = p.redact(&to_id, 2).await.unwrap_err();
    assert!(
        matches!(err, MemoryError::RevisionInUse { .. }),
        "the note holds it: {err}"
    );
    let missing = p.redact(&note(&c, M, "none.md"), 1).await.unwrap_err();
    assert!(
        matches!(missing, MemoryError::RevisionNotFound { .. }),
        "{missing}"
    );

    p.redact(&from_id, 2).await.expect("redact the add");
    let arrival = p.redact(&to_id, 1).await.expect("redact the arrival");
    assert_eq!(
        arrival.updates,
        [MemoryUpdate::rename(M, from.clone(), to.clone())],
        "a rename's update stays"
    );
    let followed = history_across_renames(&*p, &to_id, 10)
        .await
        .expect("history across the rename");
    let seen: Vec<(String, u64, bool)> = followed
        .iter()
        .map(|r| (r.document.relative_path(), r.number, r.is_redacted()))
        .collect();
    let (to_path, from_path) = (to_id.relative_path(), from_id.relative_path());
    assert_eq!(
        seen,
        [
            (to_path.clone(), 2, false),
            (to_path, 1, true),
            (from_path.clone(), 3, false),
            (from_path.clone(), 2, true),
            (from_path, 1, false),
        ]
    );
    assert_eq!(
        followed[0].text.as_deref(),
        Some("Temples.\n\nDoor code opal-heron.\n\nRyokan.\n"),
        "the revision after the arrival still rebuilds"
    );
    assert_eq!(
        text_of(&*p, &to_id).await,
        "Temples.\n\nDoor code opal-heron.\n\nRyokan.\n"
    );
}
