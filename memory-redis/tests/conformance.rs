//! The contract, on Redis: each test under a key prefix of its own.

mod common;

use std::sync::Arc;

use common::Topology;
use memory_conformance::Fixture;
use memory_redis::RedisProvider;

async fn setup() -> Option<Fixture<RedisProvider>> {
    fixture(Topology::Server).await
}

/// The suite's fixture on `topology`'s Redis.
async fn fixture(topology: Topology) -> Option<Fixture<RedisProvider>> {
    let (provider, keys) = common::provider_on(topology, |config| config).await?;
    let keys = Arc::new(keys);
    let (hosts, edits, holds) = (keys.clone(), keys.clone(), keys.clone());
    let (stored, damaged) = (keys.clone(), keys.clone());
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
            .with_stored_history(move |_| {
                let keys = stored.clone();
                async move { common::stored_keys(&keys).await }
            })
            .with_history_damage(move |document, number| {
                let keys = damaged.clone();
                async move { common::delete_change(&keys, document, number).await }
            })
            .with_guard(keys),
    )
}

memory_conformance::conformance_suite!(setup; hosts, hand_edits, versioned, outside_holds, stored_history);
memory_conformance::notes_suite!(setup);

/// The identity-map cases through two clients under one prefix, each with its own connection,
/// as two processes would have.
mod identity_map {
    use super::common::Topology;

    async fn setup() -> Option<memory_conformance::identity::Maps> {
        super::maps(Topology::Server).await
    }

    memory_conformance::identity_map_suite!(setup);
}

/// Two identity maps under one prefix on `topology`'s Redis, each with its own connection.
async fn maps(topology: Topology) -> Option<memory_conformance::identity::Maps> {
    use memory_core::IdentityMap;
    let (first, keys) = common::provider_on(topology, |config| config).await?;
    let second = RedisProvider::connect(&keys.config()).await.unwrap();
    let handles: Vec<Arc<dyn IdentityMap>> = vec![Arc::new(first), Arc::new(second)];
    Some(memory_conformance::identity::Maps::new(handles).with_guard(keys))
}

/// The contract on a Redis Cluster of three masters: every script and transaction goes to the
/// master that owns the prefix's slot, and writers that hold wait on it there.
mod cluster {
    use super::common::Topology;

    async fn setup() -> Option<memory_conformance::Fixture<memory_redis::RedisProvider>> {
        super::fixture(Topology::Cluster).await
    }

    memory_conformance::conformance_suite!(setup; hosts, hand_edits, versioned, outside_holds);
    memory_conformance::notes_suite!(setup);

    mod identity_map {
        use super::super::common::Topology;

        async fn setup() -> Option<memory_conformance::identity::Maps> {
            super::super::maps(Topology::Cluster).await
        }

        memory_conformance::identity_map_suite!(setup);
    }
}
