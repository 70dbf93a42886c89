//! What a write stores beside its text, in the same step: receipts and revisions.

use super::*;

#[tokio::test]
async fn a_keyed_write_stores_its_receipt_with_the_text() {
    let store = FlakyStore::default();
    let writer = CasWriter::new(1);
    let memory = ctx().document(Store::Memory);
    assert!(store.receipts_by_fetch(&memory).await.unwrap().is_empty());
    let add = [MemoryUpdate::add(Store::Memory, "x")];
    let report = writer
        .sync(&store, &EventBus::new(), &keyed("k1"), &add, &IfMatch::NONE)
        .await
        .unwrap();
    let receipts = store.receipts_by_fetch(&memory).await.unwrap();
    let batch = &plan_sync(&keyed("k1"), &add, &IfMatch::NONE).unwrap()[0];
    let key = IdempotencyKey::new("k1").unwrap();
    let replayed = receipts
        .replay(&key, &batch.fingerprint(), &memory)
        .unwrap();
    assert_eq!(
        replayed.map(|r| r.version_after.clone()),
        Some(Version::new("1"))
    );
    assert_eq!(report.documents[0].version_after, Version::new("1"));
}

#[tokio::test]
async fn writes_carry_their_revisions_when_history_is_on_and_none_when_off() {
    let store = FlakyStore::default();
    let add = [MemoryUpdate::add(Store::Memory, "x")];
    CasWriter::new(1)
        .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
        .await
        .unwrap();
    let revisions = std::mem::take(&mut *store.revisions.lock().unwrap());
    assert_eq!(revisions.len(), 1, "{revisions:?}");
    let revision = &revisions[0];
    assert_eq!(revision.number, 1);
    assert_eq!(revision.document, ctx().document(Store::Memory));
    assert_eq!(
        (&revision.version_before, &revision.version_after),
        (&Version::new("0"), &Version::new("1"))
    );
    // Revision 1 is no checkpoint: its change is its updates, and it carries no text.
    assert!(revision.is_change_only(), "{revision:?}");
    assert_eq!(revision.updates, add);
    assert_eq!(revision.bytes_after, 2);
    assert_eq!(revision.sha256_after, sha256_hex("x\n"));

    CasWriter::new(1)
        .with_retention(Retention::OFF)
        .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(store.revisions.lock().unwrap().len(), 0, "history off");
    let memory = store.fetch(&[ctx().document(Store::Memory)], false).await;
    assert_eq!(memory.unwrap()[0].version, 2, "yet written");
}
