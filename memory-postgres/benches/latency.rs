//! Latency of `prefetch` and of a one-add `sync` against a real server, printed as
//! percentiles: `cargo bench -p memory-postgres`. The server is `MEMORY_TEST_POSTGRES_URL`
//! (default: the local one), in a schema of its own that is dropped at the end.

use memory_postgres::{PostgresConfig, PostgresProvider};
use sqlx::{AssertSqlSafe, Executor};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("MEMORY_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test?sslmode=disable".into());
    let schema = format!("bench_{}", std::process::id());
    let memory = PostgresProvider::connect(&PostgresConfig::new(&url).with_schema(&schema)).await?;
    let measured = memory_conformance::latency::print_prefetch_and_sync_latency(
        "memory-postgres",
        &memory,
        1_000,
    )
    .await;
    memory
        .pool()
        .execute(AssertSqlSafe(format!("DROP SCHEMA \"{schema}\" CASCADE")))
        .await?;
    Ok(measured?)
}
