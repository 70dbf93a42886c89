//! Latency of `prefetch` and of a one-add `sync` against a real server, printed as
//! percentiles: `cargo bench -p memory-postgres`. Two providers run side by side, history on
//! (the default retention) and off, their calls interleaved so that whatever else loads the
//! machine loads both alike, to show what recording revisions costs. The server is
//! `MEMORY_TEST_POSTGRES_URL` (default: the local one), in schemas of their own that are
//! dropped at the end.

use memory_conformance::latency::print_history_cost;
use memory_core::Retention;
use memory_postgres::{PostgresConfig, PostgresProvider};
use sqlx::{AssertSqlSafe, Executor};

const SAMPLES: usize = 1_000;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("MEMORY_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test?sslmode=disable".into());
    let mut providers = Vec::new();
    for (history, tag) in [(Retention::default(), "on"), (Retention::OFF, "off")] {
        let schema = format!("bench_{}_{tag}", std::process::id());
        let config = PostgresConfig {
            history,
            ..PostgresConfig::new(&url).with_schema(&schema)
        };
        providers.push((PostgresProvider::connect(&config).await?, schema));
    }
    let measured =
        print_history_cost("memory-postgres", &providers[0].0, &providers[1].0, SAMPLES).await;
    for (memory, schema) in &providers {
        memory
            .store()
            .pool()
            .execute(AssertSqlSafe(format!("DROP SCHEMA \"{schema}\" CASCADE")))
            .await?;
    }
    Ok(measured?)
}
