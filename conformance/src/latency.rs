//! A quick latency probe every backend's benchmark shares: it prints percentiles, it asserts
//! nothing about speed.

use std::time::{Duration, Instant};

use memory_core::{IfMatch, MemoryError, MemoryProvider, MemoryUpdate, Store};

use crate::support::ctx;

/// Times `samples` one-add `sync`s and as many `prefetch`es on each of two providers of one
/// backend, history on (`on`, the default retention) and off, their calls interleaved (and
/// which goes first alternating) so that whatever else loads the machine loads both alike;
/// prints p50, p95 and p99 of each, headed by `name`, and the ratio of the sync p50s: what
/// recording revisions costs.
pub async fn print_history_cost<P: MemoryProvider + ?Sized>(
    name: &str,
    on: &P,
    off: &P,
    samples: usize,
) -> Result<(), MemoryError> {
    print_side_by_side(name, [("history on", on), ("history off", off)], samples).await
}

/// [`print_history_cost`] for any two providers, each named by its label: the ratio printed
/// is the first's sync p50 over the second's.
pub async fn print_side_by_side<P: MemoryProvider + ?Sized>(
    name: &str,
    providers: [(&str, &P); 2],
    samples: usize,
) -> Result<(), MemoryError> {
    let c = ctx("ada", "grace");
    let profile = [MemoryUpdate::add(
        Store::User,
        "Name: Grace. Prefers short answers.",
    )];
    let (mut sync, mut prefetch) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    for (_, p) in providers {
        p.sync(&c, &profile, &IfMatch::NONE).await?;
    }
    for i in 0..samples.max(1) {
        let add = [MemoryUpdate::add(
            Store::Memory,
            format!("Note {i}: worth keeping."),
        )];
        for turn in 0..2 {
            let which = (i + turn) % 2;
            let started = Instant::now();
            providers[which].1.sync(&c, &add, &IfMatch::NONE).await?;
            sync[which].push(started.elapsed());
            let started = Instant::now();
            providers[which].1.prefetch(&c).await?;
            prefetch[which].push(started.elapsed());
        }
    }
    for (which, (label, _)) in providers.iter().enumerate() {
        println!(
            "{name}, {label}: {} samples each, one client, interleaved",
            sync[which].len()
        );
        print_percentiles("prefetch", &mut prefetch[which]);
        print_percentiles("sync (one add)", &mut sync[which]);
    }
    let p50 = |samples: &[Duration]| samples[samples.len() / 2].as_secs_f64();
    println!(
        "sync p50 {} / {}: {:.3}",
        providers[0].0,
        providers[1].0,
        p50(&sync[0]) / p50(&sync[1])
    );
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
