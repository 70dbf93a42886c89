//! Latency of `prefetch` and of a one-add `sync` against a real server, printed as
//! percentiles. `cargo bench -p memory-postgres`; the server is `MEMORY_TEST_POSTGRES_URL`
//! (default: the local one), in a schema of its own that is dropped at the end.

use std::time::{Duration, Instant};

use memory_core::{
    IfMatch, MemoryContext, MemoryProvider, MemoryUpdate, PersonalityId, Store, UserId,
};
use memory_postgres::{PostgresConfig, PostgresProvider};
use sqlx::{AssertSqlSafe, Executor};

const SAMPLES: usize = 1_000;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("MEMORY_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test?sslmode=disable".into());
    let schema = format!("bench_{}", std::process::id());
    let memory = PostgresProvider::connect(&PostgresConfig::new(&url).with_schema(&schema)).await?;
    let ctx = MemoryContext::new(PersonalityId::new("ada")?, UserId::new("grace")?);
    let profile = [MemoryUpdate::add(
        Store::User,
        "Name: Grace. Prefers short answers.",
    )];
    memory.sync(&ctx, &profile, &IfMatch::NONE).await?;

    let mut sync = Vec::with_capacity(SAMPLES);
    let mut prefetch = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let add = [MemoryUpdate::add(
            Store::Memory,
            format!("Note {i}: something worth keeping."),
        )];
        let started = Instant::now();
        memory.sync(&ctx, &add, &IfMatch::NONE).await?;
        sync.push(started.elapsed());
        let started = Instant::now();
        memory.prefetch(&ctx).await?;
        prefetch.push(started.elapsed());
    }
    println!("memory-postgres, {SAMPLES} samples each, one client, memory growing to ~40 KB:");
    report("prefetch", &mut prefetch);
    report("sync (one add)", &mut sync);

    memory
        .pool()
        .execute(AssertSqlSafe(format!("DROP SCHEMA \"{schema}\" CASCADE")))
        .await?;
    Ok(())
}

fn report(what: &str, samples: &mut [Duration]) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    println!(
        "  {what:<16} p50 {:>9.3?}  p95 {:>9.3?}  p99 {:>9.3?}",
        at(0.50),
        at(0.95),
        at(0.99)
    );
}
