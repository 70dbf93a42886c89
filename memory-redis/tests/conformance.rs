//! The contract, on Redis: each test under a key prefix of its own.

mod common;

use memory_conformance::Fixture;
use memory_redis::RedisProvider;

async fn setup() -> Option<Fixture<RedisProvider>> {
    let (provider, keys) = common::provider().await?;
    Some(Fixture::new(provider).with_guard(keys))
}

memory_conformance::conformance_suite!(setup);

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
