//! Writes planned from the writer's last view of a document, without a read.

use super::*;

#[tokio::test]
async fn a_writer_alone_writes_from_its_view_without_reading() {
    let store = FlakyStore {
        checks_text: true,
        ..FlakyStore::default()
    };
    let writer = CasWriter::new(3);
    let events = EventBus::new();
    let add = |text: &str| [MemoryUpdate::add(Store::Memory, text)];
    for (i, text) in ["one", "two", "three"].into_iter().enumerate() {
        let report = writer
            .sync(&store, &events, &ctx(), &add(text), &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!(report.retries, 0);
        assert_eq!(
            report.documents[0].version_after,
            Version::new((i + 1).to_string())
        );
    }
    assert_eq!(
        store.fetches.load(Ordering::SeqCst),
        1,
        "only the first read"
    );
    let memory = store
        .read_by_fetch(&ctx().document(Store::Memory))
        .await
        .unwrap();
    assert_eq!(memory.text, "one\n\ntwo\n\nthree\n");

    // A store that does not check the text reads before every write.
    let store = FlakyStore::default();
    for text in ["one", "two"] {
        writer
            .sync(&store, &events, &ctx(), &add(text), &IfMatch::NONE)
            .await
            .unwrap();
    }
    assert_eq!(store.fetches.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_stale_view_costs_one_lost_attempt_and_loses_nothing() {
    let store = FlakyStore {
        checks_text: true,
        ..FlakyStore::default()
    };
    let writer = CasWriter::new(3);
    let events = EventBus::new();
    let memory = ctx().document(Store::Memory);
    writer
        .sync(
            &store,
            &events,
            &ctx(),
            &[MemoryUpdate::add(Store::Memory, "mine")],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    // Purged and written again elsewhere: the same version, another text.
    store
        .documents
        .lock()
        .unwrap()
        .insert(memory.clone(), ("theirs\n".to_owned(), 1, None));
    let report = writer
        .sync(
            &store,
            &events,
            &ctx(),
            &[MemoryUpdate::add(Store::Memory, "more")],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    assert_eq!(report.retries, 1, "the view lost, the read won");
    assert_eq!(report.documents[0].version_after, Version::new("2"));
    let text = store.read_by_fetch(&memory).await.unwrap().text;
    assert_eq!(
        text, "theirs\n\nmore\n",
        "planned from what the store holds"
    );
}

#[tokio::test]
async fn a_keyed_call_reads_receipts_its_view_does_not_have() {
    let store = FlakyStore {
        checks_text: true,
        ..FlakyStore::default()
    };
    let writer = CasWriter::new(3);
    let events = EventBus::new();
    let add = [MemoryUpdate::add(Store::Memory, "x")];
    writer
        .sync(&store, &events, &ctx(), &add, &IfMatch::NONE)
        .await
        .unwrap();
    let keyed = |key: &str| ctx().with_idempotency_key(IdempotencyKey::new(key).unwrap());
    // The view was left by a call without a key, which did not read the receipts.
    let first = writer
        .sync(&store, &events, &keyed("k1"), &add, &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(
        store.fetches.load(Ordering::SeqCst),
        2,
        "read for the receipts"
    );
    // Now the view holds the receipts it wrote: a replay is answered from it.
    let again = writer
        .sync(&store, &events, &keyed("k1"), &add, &IfMatch::NONE)
        .await
        .unwrap();
    assert!(again.documents[0].replayed);
    assert_eq!(
        again.documents[0].version_after,
        first.documents[0].version_after
    );
    assert_eq!(store.fetches.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_view_is_the_document_as_written_one_version_on() {
    let store = FlakyStore {
        checks_text: true,
        ..FlakyStore::default()
    };
    let writer = CasWriter::new(1);
    let events = EventBus::new();
    let add = |text: &str| [MemoryUpdate::add(Store::Memory, text)];
    writer
        .sync(&store, &events, &ctx(), &add("one"), &IfMatch::NONE)
        .await
        .unwrap();
    // Planned from the view: its version is the one written.
    let report = writer
        .sync(
            &store,
            &events,
            &ctx(),
            &add("two"),
            &IfMatch::only(Store::Memory, Some(Version::new("1"))),
        )
        .await
        .unwrap();
    assert_eq!(report.documents[0].version_before, Version::new("1"));
    assert_eq!(report.documents[0].version_after, Version::new("2"));
    assert_eq!(store.fetches.load(Ordering::SeqCst), 1, "from the view");
}

#[tokio::test]
async fn a_keyed_call_that_changes_nothing_keeps_a_view_with_the_stored_receipts() {
    let store = FlakyStore {
        checks_text: true,
        ..FlakyStore::default()
    };
    let writer = CasWriter::new(1);
    let events = EventBus::new();
    writer
        .sync(
            &store,
            &events,
            &keyed("k1"),
            &[MemoryUpdate::add(Store::Memory, "x")],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    let noop = [MemoryUpdate::remove(Store::Memory, "absent")];
    let first = writer
        .sync(&store, &events, &keyed("k2"), &noop, &IfMatch::NONE)
        .await
        .unwrap();
    assert!(!first.documents[0].written);
    // The view still knows the receipts (a keyed call need not read them again), and holds
    // no receipt of the call that wrote nothing: the store holds none.
    let again = writer
        .sync(&store, &events, &keyed("k2"), &noop, &IfMatch::NONE)
        .await
        .unwrap();
    let fresh = CasWriter::new(1)
        .sync(&store, &events, &keyed("k2"), &noop, &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(again, fresh, "the view answers as the store does");
    assert!(!again.documents[0].replayed);
    assert_eq!(
        store.fetches.load(Ordering::SeqCst),
        2,
        "one read each writer"
    );
    writer
        .sync(
            &store,
            &events,
            &keyed("k3"),
            &[MemoryUpdate::add(Store::Memory, "y")],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    assert_eq!(store.fetches.load(Ordering::SeqCst), 2, "receipts known");
}

#[tokio::test]
async fn a_writer_keeps_at_most_views_kept_views() {
    let store = FlakyStore {
        checks_text: true,
        ..FlakyStore::default()
    };
    let writer = CasWriter::new(1);
    let events = EventBus::new();
    let add = [MemoryUpdate::add(Store::User, "x")];
    let kept = || writer.views.kept().views.len();
    for i in 0..VIEWS_KEPT {
        writer
            .sync(
                &store,
                &events,
                &ctx_of(&format!("u{i}")),
                &add,
                &IfMatch::NONE,
            )
            .await
            .unwrap();
    }
    assert_eq!(kept(), VIEWS_KEPT);
    // Full: a document already kept is updated in place.
    writer
        .sync(&store, &events, &ctx_of("u0"), &add, &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(kept(), VIEWS_KEPT);
    // Full: another one drops them all first.
    writer
        .sync(&store, &events, &ctx_of("another"), &add, &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(kept(), 1);
}

#[tokio::test(start_paused = true)]
async fn lost_races_are_remembered_for_contended_for_only() {
    let views = Views::default();
    let doc = |user: &str| ctx_of(user).document(Store::User);
    let lost = || {
        let mut ids: Vec<String> = views.kept().lost.keys().map(ToString::to_string).collect();
        ids.sort();
        ids
    };
    views.forget(&[doc("a")]);
    tokio::time::advance(CONTENDED_FOR / 2).await;
    views.forget(&[doc("b")]);
    assert_eq!(lost(), [doc("a").to_string(), doc("b").to_string()]);
    assert!(views.contended(&[doc("a")]));
    tokio::time::advance(CONTENDED_FOR / 2).await;
    views.forget(&[doc("c")]);
    assert_eq!(lost(), [doc("b").to_string(), doc("c").to_string()]);
    assert!(!views.contended(&[doc("a")]));
    assert!(views.contended(&[doc("b"), doc("z")]));
}
