//! The contract, on Redis: each test under a key prefix of its own.

mod common;

use memory_conformance::Fixture;
use memory_redis::RedisProvider;

async fn setup() -> Option<Fixture<RedisProvider>> {
    let (provider, keys) = common::provider().await?;
    Some(Fixture::new(provider).with_guard(keys))
}

memory_conformance::conformance_suite!(setup);
