//! Lost races: retried, then reported as contention.

use super::*;

#[tokio::test(start_paused = true)]
async fn lost_races_are_retried_then_reported_as_contention() {
    let store = FlakyStore::default();
    let writer = CasWriter::new(5);
    let add = [MemoryUpdate::add(Store::Memory, "kept")];

    store.lose.store(4, Ordering::SeqCst);
    let report = writer
        .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(
        store.attempts.load(Ordering::SeqCst),
        5,
        "four lost, the fifth lands"
    );
    assert_eq!(report.documents[0].version_after, Version::new("1"));
    assert_eq!(report.retries, 4, "the report counts the lost attempts");

    store.lose.store(5, Ordering::SeqCst);
    store.attempts.store(0, Ordering::SeqCst);
    let err = writer
        .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::Contention { attempts: 5, document } if *document == ctx().document(Store::Memory)),
        "{err:?}"
    );
    assert_eq!(store.attempts.load(Ordering::SeqCst), 5);
    let fetched = store
        .fetch(&[ctx().document(Store::Memory)], false)
        .await
        .unwrap()
        .remove(0);
    assert_eq!(
        (fetched.document.text.as_str(), fetched.version),
        ("kept\n", 1),
        "nothing more landed"
    );
}

#[tokio::test]
async fn a_call_that_changes_nothing_makes_no_write() {
    let store = FlakyStore::default();
    let writer = CasWriter::new(1);
    let noop = [MemoryUpdate::remove(Store::Memory, "absent")];
    let report = writer
        .sync(&store, &EventBus::new(), &ctx(), &noop, &IfMatch::NONE)
        .await
        .unwrap();
    assert!(!report.documents[0].written);
    assert_eq!(store.attempts.load(Ordering::SeqCst), 0);
}

#[test]
fn attempts_are_bounded_as_asked_and_at_least_one() {
    assert_eq!(CasWriter::new(5).max_attempts(), 5);
    assert_eq!(CasWriter::new(0).max_attempts(), 1);
}
