//! The suite's cases against the reference provider, directly and through
//! `Arc<dyn MemoryProvider>` (the object-safe path agent code uses), and the identity-map cases
//! against the in-memory map.
//!
//! Only the cases (`conformance_cases!`), each checking the literal outcomes the contract
//! states: the model-based test of `conformance_suite!` compares a provider with
//! `InMemoryProvider`, so here it would compare the reference with itself and could not fail.

use memory_conformance::Fixture;
use memory_core::{InMemoryProvider, MemoryProvider};
use std::sync::Arc;

mod direct {
    use super::*;

    async fn setup() -> Fixture<InMemoryProvider> {
        Fixture::new(InMemoryProvider::new())
    }

    memory_conformance::conformance_cases!(setup);
    memory_conformance::notes_suite!(setup);
}

mod through_dyn {
    use super::*;

    async fn setup() -> Fixture<dyn MemoryProvider> {
        let provider: Arc<dyn MemoryProvider> = Arc::new(InMemoryProvider::new());
        Fixture::from_arc(provider)
    }

    memory_conformance::conformance_cases!(setup);
}

mod identity_map {
    use memory_conformance::identity::Maps;
    use memory_core::{IdentityMap, InMemoryIdentityMap};
    use std::sync::Arc;

    async fn setup() -> Maps {
        let map: Arc<dyn IdentityMap> = Arc::new(InMemoryIdentityMap::default());
        Maps::new(vec![map])
    }

    memory_conformance::identity_map_suite!(setup);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reference_keeps_only_its_retention() {
    use memory_core::Retention;
    let kept = InMemoryProvider::new().with_retention(Retention::keep(3));
    memory_conformance::history::retention_keeps_the_newest(Arc::new(kept), 3).await;
}
