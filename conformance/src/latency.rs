//! A quick latency probe every backend's benchmark shares: it prints percentiles, it asserts
//! nothing about speed.

use std::time::{Duration, Instant};

use memory_core::{IfMatch, MemoryError, MemoryProvider, MemoryUpdate, Store};

use crate::cases::ctx;

/// Times `samples` one-add `sync`s and as many `prefetch`es, alternating, on a fresh
/// namespace, and prints p50, p95 and p99 of each, headed by `name`.
pub async fn print_prefetch_and_sync_latency<P: MemoryProvider + ?Sized>(
    name: &str,
    provider: &P,
    samples: usize,
) -> Result<(), MemoryError> {
    let c = ctx("ada", "grace");
    let profile = [MemoryUpdate::add(
        Store::User,
        "Name: Grace. Prefers short answers.",
    )];
    provider.sync(&c, &profile, &IfMatch::NONE).await?;
    let (mut sync, mut prefetch) = (Vec::new(), Vec::new());
    for i in 0..samples.max(1) {
        let add = [MemoryUpdate::add(
            Store::Memory,
            format!("Note {i}: worth keeping."),
        )];
        let started = Instant::now();
        provider.sync(&c, &add, &IfMatch::NONE).await?;
        sync.push(started.elapsed());
        let started = Instant::now();
        provider.prefetch(&c).await?;
        prefetch.push(started.elapsed());
    }
    println!("{name}: {} samples each, one client", sync.len());
    print_percentiles("prefetch", &mut prefetch);
    print_percentiles("sync (one add)", &mut sync);
    Ok(())
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
