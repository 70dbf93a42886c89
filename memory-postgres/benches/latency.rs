//! Latency of `prefetch` and of a one-add `sync` against a real server, printed as
//! percentiles: `cargo bench -p memory-postgres`. Two providers run side by side, history on
//! (the default retention) and off, their calls interleaved so that whatever else loads the
//! machine loads both alike, to show what recording revisions costs. The server is
//! `MEMORY_TEST_POSTGRES_URL` (default: the local one), in schemas of their own that are
//! dropped at the end.

use std::time::{Duration, Instant};

use memory_conformance::cases::ctx;
use memory_core::{IfMatch, MemoryError, MemoryProvider, MemoryUpdate, Retention, Store};
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
    let measured = measure(&providers[0].0, &providers[1].0).await;
    for (memory, schema) in &providers {
        memory
            .pool()
            .execute(AssertSqlSafe(format!("DROP SCHEMA \"{schema}\" CASCADE")))
            .await?;
    }
    Ok(measured?)
}

/// `SAMPLES` one-add syncs and prefetches on each provider, alternating between them.
async fn measure(on: &PostgresProvider, off: &PostgresProvider) -> Result<(), MemoryError> {
    let c = ctx("ada", "grace");
    let profile = [MemoryUpdate::add(
        Store::User,
        "Name: Grace. Prefers short answers.",
    )];
    let providers = [on, off];
    let mut sync = [Vec::new(), Vec::new()];
    let mut prefetch = [Vec::new(), Vec::new()];
    for p in providers {
        p.sync(&c, &profile, &IfMatch::NONE).await?;
    }
    for i in 0..SAMPLES {
        let add = [MemoryUpdate::add(
            Store::Memory,
            format!("Note {i}: worth keeping."),
        )];
        // Which goes first alternates too, so neither always follows the other's write.
        for turn in 0..2 {
            let which = (i + turn) % 2;
            let started = Instant::now();
            providers[which].sync(&c, &add, &IfMatch::NONE).await?;
            sync[which].push(started.elapsed());
            let started = Instant::now();
            providers[which].prefetch(&c).await?;
            prefetch[which].push(started.elapsed());
        }
    }
    for (which, name) in ["memory-postgres", "memory-postgres, history off"]
        .into_iter()
        .enumerate()
    {
        println!("{name}: {SAMPLES} samples each, one client, interleaved");
        print_percentiles("prefetch", &mut prefetch[which]);
        print_percentiles("sync (one add)", &mut sync[which]);
    }
    let ratio = median(&mut sync[0]).as_secs_f64() / median(&mut sync[1]).as_secs_f64();
    println!("sync p50 with history on / off: {ratio:.3}");
    Ok(())
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn print_percentiles(what: &str, samples: &mut [Duration]) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    println!(
        "  {what:<16} p50 {:>9.3?}  p95 {:>9.3?}  p99 {:>9.3?}",
        at(0.50),
        at(0.95),
        at(0.99)
    );
}
