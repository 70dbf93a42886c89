//! Rules of the reference provider the conformance cases do not reach.

use memory_core::{
    IdempotencyKey, IfMatch, InMemoryProvider, MemoryContext, MemoryProvider, MemoryUpdate,
    PersonalityId, Store, UserId,
};

fn ctx() -> MemoryContext {
    MemoryContext::new(
        PersonalityId::new("ada").unwrap(),
        UserId::new("u1").unwrap(),
    )
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
