//! Writers of one process take turns per document.

use super::*;

#[tokio::test]
async fn writers_in_one_process_take_turns_instead_of_racing() {
    let store = SlowStore::default();
    let writer = CasWriter::new(3);
    let events = EventBus::new();
    let (one, two) = (
        [MemoryUpdate::add(Store::Memory, "one")],
        [MemoryUpdate::add(Store::Memory, "two")],
    );
    let (ctx, none) = (ctx(), IfMatch::NONE);
    let (one, two) = tokio::join!(
        writer.sync(&store, &events, &ctx, &one, &none),
        writer.sync(&store, &events, &ctx, &two, &none),
    );
    assert_eq!((one.unwrap().retries, two.unwrap().retries), (0, 0));
    assert_eq!(
        store.store.attempts.load(Ordering::SeqCst),
        2,
        "no race lost"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stalled_document_does_not_hold_up_writers_of_others() {
    // Two documents in different local queues.
    let stalled = ctx().document(Store::Memory);
    let other = (0..)
        .take(LOCAL_QUEUES * 16)
        .map(|i| ctx_of(&format!("u{i}")).document(Store::User))
        .find(|id| queue_of(id) != queue_of(&stalled))
        .expect("documents spread over the local queues");
    let DocumentId::UserProfile { user } = &other else {
        unreachable!("a user document")
    };
    let other_ctx = ctx_of(user.as_str());
    let store = SlowStore {
        stalled: Some(stalled),
        ..SlowStore::default()
    };
    let writer = CasWriter::new(3);
    let events = EventBus::new();
    let started = Instant::now();
    let (ctx, add, none) = (
        ctx(),
        [MemoryUpdate::add(Store::Memory, "x")],
        IfMatch::NONE,
    );
    let stuck = writer.sync(&store, &events, &ctx, &add, &none);
    let free = async {
        tokio::task::yield_now().await;
        let report = writer
            .sync(
                &store,
                &events,
                &other_ctx,
                &[MemoryUpdate::add(Store::User, "y")],
                &IfMatch::NONE,
            )
            .await;
        (report, started.elapsed())
    };
    let (stuck, (free, free_after)) = tokio::join!(stuck, free);
    assert!(free.is_ok(), "{free:?}");
    assert_eq!(
        free_after,
        Duration::ZERO,
        "not queued behind the stalled one"
    );
    let stuck = stuck.unwrap_err();
    assert!(
        matches!(stuck, MemoryError::Unavailable { .. }),
        "{stuck:?}"
    );
}
