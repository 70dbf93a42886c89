//! What the cases of every group share: the two stores' short names, a context for two valid
//! ids, and a sync that must succeed. Below `cases`, `history`, `model`, `hosts` and
//! `latency`, so none of them needs another for these.

use memory_core::{
    IfMatch, MemoryContext, MemoryProvider, MemoryUpdate, PersonalityId, Store, SyncReport, UserId,
};

pub(crate) const M: Store = Store::Memory;
pub(crate) const U: Store = Store::User;

/// A per-personality context for two ids known to be valid.
pub fn ctx(personality: &str, user: &str) -> MemoryContext {
    MemoryContext::new(
        PersonalityId::new(personality).expect("valid personality id"),
        UserId::new(user).expect("valid user id"),
    )
}

/// `p.sync` without a precondition, which must succeed.
pub(crate) async fn sync<P: MemoryProvider + ?Sized>(
    p: &P,
    ctx: &MemoryContext,
    updates: &[MemoryUpdate],
) -> SyncReport {
    p.sync(ctx, updates, &IfMatch::NONE)
        .await
        .unwrap_or_else(|e| panic!("sync {updates:?} should succeed: {e}"))
}
