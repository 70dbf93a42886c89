//! The contract, on PostgreSQL: each test in a schema of its own.

mod common;

use memory_conformance::Fixture;
use memory_postgres::PostgresProvider;

async fn setup() -> Option<Fixture<PostgresProvider>> {
    let (provider, schema) = common::provider().await?;
    Some(Fixture::new(provider).with_guard(schema))
}

memory_conformance::conformance_suite!(setup);

/// The identity-map cases through two providers on one schema, each with its own pool, as two
/// hosts would have.
mod identity_map {
    use std::sync::Arc;

    use memory_conformance::identity::Maps;
    use memory_core::IdentityMap;
    use memory_postgres::{PostgresConfig, PostgresProvider};

    use super::common;

    async fn setup() -> Option<Maps> {
        let (first, schema) = common::provider().await?;
        let config = PostgresConfig {
            migrate: false,
            max_connections: 4,
            ..PostgresConfig::new(&schema.url).with_schema(&schema.schema)
        };
        let second = PostgresProvider::connect(&config).await.unwrap();
        let handles: Vec<Arc<dyn IdentityMap>> = vec![Arc::new(first), Arc::new(second)];
        Some(Maps::new(handles).with_guard(schema))
    }

    memory_conformance::identity_map_suite!(setup);
}
