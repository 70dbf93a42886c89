//! Lost replies: a success only where the write shows, never applied twice.

use super::*;

#[tokio::test]
async fn a_lost_reply_is_a_success_only_if_the_write_shows() {
    let store = FlakyStore::default();
    let writer = CasWriter::new(3);
    let add = |text: &str| [MemoryUpdate::add(Store::Memory, text)];
    let events = EventBus::new();

    *store.drop_reply.lock().unwrap() = Some(true);
    let report = writer
        .sync(&store, &events, &ctx(), &add("landed"), &IfMatch::NONE)
        .await
        .expect("the write shows, so the call succeeded");
    assert_eq!(report.documents[0].version_after, Version::new("1"));

    *store.drop_reply.lock().unwrap() = Some(false);
    let err = writer
        .sync(&store, &events, &ctx(), &add("lost"), &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::OutcomeUnknown { .. }), "{err:?}");
    assert!(
        err.to_string().contains("may or may not have landed"),
        "{err}"
    );
    let memory = store
        .read_by_fetch(&ctx().document(Store::Memory))
        .await
        .unwrap();
    assert_eq!(
        memory.text, "landed\n",
        "no retry applied it behind the caller's back"
    );
}

#[tokio::test]
async fn a_keyed_call_repeated_after_a_lost_reply_applies_once() {
    let store = FlakyStore::default();
    let writer = CasWriter::new(3);
    let events = EventBus::new();
    let keyed = ctx().with_idempotency_key(IdempotencyKey::new("turn-1").unwrap());
    let add = [
        MemoryUpdate::add(Store::Memory, "once"),
        MemoryUpdate::add(Store::User, "also once"),
    ];

    // The write lands and its reply is lost; the caller repeats the call all the same.
    *store.drop_reply.lock().unwrap() = Some(true);
    let first = writer
        .sync(&store, &events, &keyed, &add, &IfMatch::NONE)
        .await;
    let first = match first {
        Ok(report) => report,
        Err(err) => panic!("the re-read shows the write: {err:?}"),
    };
    let mut seen = events.subscribe();
    let again = writer
        .sync(&store, &events, &keyed, &add, &IfMatch::NONE)
        .await
        .unwrap();
    assert!(again.documents.iter().all(|d| d.replayed));
    let as_first: Vec<_> = again
        .documents
        .iter()
        .map(|d| DocumentReport {
            replayed: false,
            ..d.clone()
        })
        .collect();
    assert_eq!(as_first, first.documents, "the first call's report");
    assert!(seen.try_recv().is_none(), "a replay announces nothing");
    for store_ in [Store::Memory, Store::User] {
        let (text, version, _) = store.documents.lock().unwrap()[&ctx().document(store_)].clone();
        assert_eq!(version, 1, "written once");
        assert_eq!(text.matches("once").count(), 1, "{text}");
    }

    // Another key is another call.
    let other = ctx().with_idempotency_key(IdempotencyKey::new("turn-2").unwrap());
    let report = writer
        .sync(&store, &events, &other, &add[..1], &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(report.documents[0].version_after, Version::new("2"));
}

#[tokio::test]
async fn a_lost_reply_is_not_a_success_when_another_text_shows() {
    let err = CasWriter::new(3)
        .sync(
            &ScriptedStore::new(overtaken),
            &EventBus::new(),
            &ctx(),
            &[MemoryUpdate::add(Store::Memory, "mine")],
            &IfMatch::NONE,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::OutcomeUnknown { .. }), "{err:?}");
}

/// Another writer takes each document one version on, with its own text, and the reply is
/// lost.
fn overtaken(store: &FlakyStore, writes: &[CasWrite<'_>], _: Duration) -> CasAnswer {
    let mut documents = store.documents.lock().unwrap();
    for write in writes {
        documents.insert(
            write.id.clone(),
            ("theirs\n".to_owned(), write.expected + 1, None),
        );
    }
    Some(Err(MemoryError::unavailable("test", "connection reset")))
}
