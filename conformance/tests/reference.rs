//! The suite checks itself against the reference provider, directly and through
//! `Arc<dyn MemoryProvider>` (the object-safe path agent code uses).

use memory_conformance::Fixture;
use memory_core::{InMemoryProvider, MemoryProvider};
use std::sync::Arc;

mod direct {
    use super::*;

    async fn setup() -> Fixture<InMemoryProvider> {
        Fixture::new(InMemoryProvider::new())
    }

    memory_conformance::conformance_suite!(setup);
}

mod through_dyn {
    use super::*;

    async fn setup() -> Fixture<dyn MemoryProvider> {
        let provider: Arc<dyn MemoryProvider> = Arc::new(InMemoryProvider::new());
        Fixture::from_arc(provider)
    }

    memory_conformance::conformance_suite!(setup);
}
