//! The contract, on Redis: each test under a key prefix of its own.

mod common;

use std::sync::Arc;

use memory_conformance::Fixture;
use memory_redis::RedisProvider;

async fn setup() -> Option<Fixture<RedisProvider>> {
    let (provider, keys) = common::provider().await?;
    let keys = Arc::new(keys);
    let (hosts, edits, holds) = (keys.clone(), keys.clone(), keys.clone());
    Some(
        Fixture::new(provider)
            .with_hosts(move |host| {
                let keys = hosts.clone();
                async move { Arc::new(common::host(&keys, host).await) }
            })
            .with_hand_edits(move |document, text| {
                let keys = edits.clone();
                async move { common::edit_by_hand(&keys, document, text).await }
            })
            .with_outside_holds(move |document| {
                let keys = holds.clone();
                async move { common::hold_lock(&keys, document).await }
            })
            .with_guard(keys),
    )
}

memory_conformance::conformance_suite!(setup; hosts, hand_edits, versioned, outside_holds);

/// The identity-map cases through two clients under one prefix, each with its own connection,
/// as two processes would have.
mod identity_map {
    use std::sync::Arc;

    use memory_conformance::identity::Maps;
    use memory_core::IdentityMap;
    use memory_redis::{RedisConfig, RedisProvider};

    use super::common;

    async fn setup() -> Option<Maps> {
        let (first, keys) = common::provider().await?;
        let config = RedisConfig::new(&keys.url).with_prefix(&keys.prefix);
        let second = RedisProvider::connect(&config).await.unwrap();
        let handles: Vec<Arc<dyn IdentityMap>> = vec![Arc::new(first), Arc::new(second)];
        Some(Maps::new(handles).with_guard(keys))
    }

    memory_conformance::identity_map_suite!(setup);
}
