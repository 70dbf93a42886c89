//! Concurrent writers on one document: throughput, retries and lost updates, beside the naive
//! read-then-write baseline.

use std::fmt::Write as _;

use super::Report;
use crate::stats::ms;

impl Report<'_> {
    /// The contention section: N writers on one document beside the naive baseline.
    pub(super) fn contention(&self) -> String {
        let mut md = String::new();
        let a = self.args;
        let _ = writeln!(md, "\n## Contention\n");
        let _ = writeln!(
            md,
            "N writers add to one document at once, {} adds in all. Each writer is its own \
             provider instance, with its own connections, as separate processes or hosts would \
             be (within one instance, writers queue instead of racing). The vector provider's \
             writes go to its markdown source, so it runs its writers on one instance. \
             \"Naive\" is the hand-written read-then-write baseline (read the text, append, \
             write it back, with no lock or version check) under the same load: its speed, and \
             the updates it loses, which the compare-and-swap and the locks prevent.\n",
            a.contention_adds
        );
        let _ = writeln!(
            md,
            "| provider | writers | adds/s | p95 ms | CAS retries | refused (Contention) | lost | naive adds/s | naive p95 ms | naive lost |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|");
        for m in self.measured {
            for c in &m.contention {
                let _ = writeln!(
                    md,
                    "| {} | {} | {:.0} | {} | {} | {} | **{}** | {:.0} | {} | {} |",
                    m.provider,
                    c.writers,
                    c.throughput,
                    ms(c.latencies.quantile_ms(0.95)),
                    c.retries,
                    c.refused,
                    c.lost,
                    c.naive.throughput,
                    ms(c.naive.latencies.quantile_ms(0.95)),
                    c.naive.lost
                );
            }
        }
        let _ = writeln!(
            md,
            "\n![throughput by writers](benchmarks/contention.svg)\n"
        );
        md
    }
}
