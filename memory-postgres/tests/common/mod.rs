//! Finding the test server and giving each test a schema of its own, dropped at the end.

#![allow(dead_code)] // each test file uses its own part of this

pub use memory_conformance::services::SchemaGuard;
use memory_conformance::services::{Service, unique_name};
use memory_postgres::{PostgresConfig, PostgresProvider};

/// The server's URL, or `None` (after a loud message) when the test should skip.
pub fn url() -> Option<String> {
    Service::Postgres.url()
}

/// A schema name no other test, process or run uses.
pub fn unique_schema() -> String {
    unique_name("test")
}

/// A migrated provider in a fresh schema, and the guard that drops it.
pub async fn provider() -> Option<(PostgresProvider, SchemaGuard)> {
    let url = url()?;
    let schema = unique_schema();
    let guard = SchemaGuard {
        url: url.clone(),
        schema: schema.clone(),
    };
    let config = PostgresConfig {
        max_connections: 4,
        ..PostgresConfig::new(&url).with_schema(&schema)
    };
    let provider = PostgresProvider::connect(&config)
        .await
        .unwrap_or_else(|err| panic!("connecting to the test server: {err}"));
    Some((provider, guard))
}
