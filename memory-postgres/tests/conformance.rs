//! The contract, on PostgreSQL: each test in a schema of its own.

mod common;

use memory_conformance::Fixture;
use memory_postgres::PostgresProvider;

async fn setup() -> Option<Fixture<PostgresProvider>> {
    let (provider, schema) = common::provider().await?;
    Some(Fixture::new(provider).with_guard(schema))
}

memory_conformance::conformance_suite!(setup);
