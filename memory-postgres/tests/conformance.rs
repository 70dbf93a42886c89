//! The contract, on PostgreSQL: each test in a schema of its own.

mod common;

use std::sync::Arc;

use memory_conformance::Fixture;
use memory_postgres::PostgresProvider;

async fn setup() -> Option<Fixture<PostgresProvider>> {
    let (provider, schema) = common::provider().await?;
    let schema = Arc::new(schema);
    let (hosts, edits, holds) = (schema.clone(), schema.clone(), schema.clone());
    Some(
        Fixture::new(provider)
            .with_hosts(move |host| {
                let schema = hosts.clone();
                async move { Arc::new(common::host(&schema, host).await) }
            })
            .with_hand_edits(move |document, text| {
                let schema = edits.clone();
                async move { common::edit_by_hand(&schema, document, text).await }
            })
            .with_outside_holds(move |document| {
                let schema = holds.clone();
                async move { common::hold_row(&schema, document).await }
            })
            .with_guard(schema),
    )
}

memory_conformance::conformance_suite!(setup; hosts, hand_edits, versioned, outside_holds);

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
