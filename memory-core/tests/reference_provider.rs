//! Rules of the reference provider the conformance cases do not reach.

use memory_core::{
    IdempotencyKey, IfMatch, InMemoryProvider, MemoryContext, MemoryProvider, MemoryUpdate,
    PersonalityId, Store, Surface, UserId,
};

fn ctx() -> MemoryContext {
    MemoryContext::new(
        PersonalityId::new("ada").unwrap(),
        UserId::new("u1").unwrap(),
    )
}

/// CONTRACT: purging a document already purged replaces its tombstone with a newer one.
#[tokio::test]
async fn purging_a_purged_document_replaces_its_tombstone() {
    let provider = InMemoryProvider::new();
    let memory = ctx().document(Store::Memory);
    let add = [MemoryUpdate::add(Store::Memory, "x")];
    provider.sync(&ctx(), &add, &IfMatch::NONE).await.unwrap();
    let first = provider.purge(&memory, Surface::Cli).await.unwrap();
    assert_eq!(first.tombstone.as_ref().map(|t| t.number), Some(2));
    let again = provider.purge(&memory, Surface::Web).await.unwrap();
    let tombstone = again.tombstone.expect("a newer tombstone");
    assert_eq!((tombstone.number, tombstone.surface), (3, Surface::Web));
    let history = provider.history(&memory, 10).await.unwrap();
    assert_eq!(history, [tombstone]);
}

#[tokio::test]
async fn receipts_are_those_its_sync_checks() {
    let provider = InMemoryProvider::new();
    let memory = ctx().document(Store::Memory);
    assert!(provider.receipts(&memory).await.unwrap().is_empty());
    let keyed = ctx().with_idempotency_key(IdempotencyKey::new("turn-1").unwrap());
    let add = [MemoryUpdate::add(Store::Memory, "x")];
    provider.sync(&keyed, &add, &IfMatch::NONE).await.unwrap();
    assert!(!provider.receipts(&memory).await.unwrap().is_empty());
}
