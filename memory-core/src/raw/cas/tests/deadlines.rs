//! Every call ends within its deadline, and says how far it got.

use super::*;

#[test]
fn a_pause_is_taken_only_when_it_ends_a_tick_before_the_deadline() {
    let now = Instant::now();
    let deadline = now + Duration::from_millis(10);
    assert!(ends_before(now, Duration::from_millis(8), deadline));
    // 9 ms and the tick reach the deadline: not before it.
    assert!(!ends_before(now, Duration::from_millis(9), deadline));
    assert!(!ends_before(now, Duration::from_millis(20), deadline));
}

#[tokio::test(start_paused = true)]
async fn a_call_ends_within_its_deadline() {
    let writer = CasWriter::new(64).with_deadline(Duration::from_secs(2));
    let add = [MemoryUpdate::add(Store::Memory, "x")];
    let started = Instant::now();
    let err = writer
        .sync(
            &ScriptedStore::new(stalled),
            &EventBus::new(),
            &ctx(),
            &add,
            &IfMatch::NONE,
        )
        .await
        .unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    assert!(matches!(err, MemoryError::OutcomeUnknown { .. }), "{err:?}");

    // Lost races are retried only while the deadline allows, then reported as contention.
    let store = FlakyStore::default();
    store.lose.store(u32::MAX, Ordering::SeqCst);
    let started = Instant::now();
    let err = writer
        .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
        .await
        .unwrap_err();
    // A pause that would end past the deadline is not taken: the call gives up before it.
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(matches!(err, MemoryError::Contention { .. }), "{err:?}");
}

#[test]
fn a_deadline_is_at_most_a_day() {
    let day = Duration::from_secs(24 * 3600);
    assert_eq!(CasWriter::new(1).deadline, DEFAULT_DEADLINE);
    let writer = CasWriter::new(1).with_deadline(Duration::MAX);
    assert_eq!(writer.deadline, day);
    let writer = CasWriter::new(1).with_deadline(Duration::from_secs(7));
    assert_eq!(writer.deadline, Duration::from_secs(7));
}

#[tokio::test(start_paused = true)]
async fn a_deadline_after_lost_races_is_contention_before_any_unavailable() {
    let writer = CasWriter::new(64).with_deadline(Duration::from_secs(2));
    let add = [MemoryUpdate::add(Store::Memory, "x")];
    // Nothing lost, no reply: unavailable.
    let silent = SlowStore {
        stalled: Some(ctx().document(Store::Memory)),
        ..SlowStore::default()
    };
    let err = writer
        .sync(&silent, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::Unavailable { .. }), "{err:?}");
    // One race lost, then no reply: contention, counting the lost attempt.
    let err = writer
        .sync(
            &ScriptedStore::new(lost_on_the_last).silent_after_one_read(),
            &EventBus::new(),
            &ctx(),
            &add,
            &IfMatch::NONE,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::Contention { attempts: 1, document } if *document == ctx().document(Store::Memory)),
        "{err:?}"
    );
    // Of a call's two documents, the contention names the one the race was lost on.
    let both = [
        MemoryUpdate::add(Store::Memory, "x"),
        MemoryUpdate::add(Store::User, "y"),
    ];
    let err = writer
        .sync(
            &ScriptedStore::new(lost_on_the_last).silent_after_one_read(),
            &EventBus::new(),
            &ctx(),
            &both,
            &IfMatch::NONE,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::Contention { attempts: 1, document } if *document == ctx().document(Store::User)),
        "{err:?}"
    );
}

/// Never answers, and is never given a lock wait past the 2 s deadline the tests set.
fn stalled(_: &FlakyStore, _: &[CasWrite<'_>], lock_wait: Duration) -> CasAnswer {
    assert!(lock_wait < Duration::from_secs(2), "{lock_wait:?}");
    None
}

/// Every race is lost, on the call's last document.
fn lost_on_the_last(_: &FlakyStore, writes: &[CasWrite<'_>], _: Duration) -> CasAnswer {
    Some(Ok(writes.last().map_or(Swapped::Landed(None), |write| {
        Swapped::Lost(write.id.clone())
    })))
}
