//! What keeping history costs: one-add syncs with it off and on, and documents large or grown
//! long where a revision's whole text would cost most.

use std::fmt::Write as _;

use super::Report;

impl Report<'_> {
    /// The history cost section: the same one-add syncs with history off and on.
    pub(super) fn history_cost(&self) -> String {
        let mut md = String::new();
        let a = self.args;
        let _ = writeln!(md, "\n## History cost\n");
        let _ = writeln!(
            md,
            "The same one-`add` syncs ({} per side, on fresh documents, in alternating rounds) \
             on an instance that keeps no history and one that keeps the default 100 revisions \
             per document. The goal: history on within 15% of off.\n",
            a.samples.div_ceil(4) * 4
        );
        let _ = writeln!(
            md,
            "| provider | history off p50 / p95 / p99 | history on p50 / p95 / p99 | p50 change |"
        );
        let _ = writeln!(md, "|---|---|---|---|");
        for m in self.measured {
            if let Some((off, on)) = &m.history {
                let (off50, on50) = (off.quantile_ms(0.5), on.quantile_ms(0.5));
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {:+.1}% |",
                    m.provider,
                    off.percentiles(),
                    on.percentiles(),
                    (on50 / off50 - 1.0) * 100.0
                );
            }
        }
        md
    }

    /// The large-document section: history off and on where a revision's whole text would
    /// cost most, and what history holds in storage.
    pub(super) fn large_documents(&self) -> String {
        let mut md = String::from("\n## History on large documents\n\n");
        let _ = writeln!(
            md,
            "Cycles of a prefetch and one `add` on a MEMORY.md that starts at {} bytes ({} \
             cycles), and on one grown from empty ({} cycles), with history off and with the \
             default retention (keep 100), the two written in alternating cycles. History \
             stores each revision as its change, with the whole text only at checkpoints. \
             \"History bytes\" is what the history-on document's history holds in storage \
             (markdown the journal file, PostgreSQL `pg_column_size` of its rows, Redis \
             `MEMORY USAGE` of its stream). Goals: add p50 and p99 with history on within 15% \
             of off; history at most 3× the document; grown from empty, add p99 <= 2 ms on \
             markdown.\n",
            self.args.large_bytes, self.args.large_adds, self.args.grown_adds
        );
        let _ = writeln!(
            md,
            "| provider | document | add off p50 / p95 / p99 | add on p50 / p95 / p99 | p50 / p99 change | cycles/s off / on | history bytes | × document |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
        for m in self.measured {
            for large in &m.large {
                let (off, on) = &large.adds;
                let change = |q: f64| (on.quantile_ms(q) / off.quantile_ms(q) - 1.0) * 100.0;
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {:+.1}% / {:+.1}% | {:.0} / {:.0} | {} | {:.2}× |",
                    m.provider,
                    large.describe(),
                    off.percentiles(),
                    on.percentiles(),
                    change(0.5),
                    change(0.99),
                    large.cycles_per_second.0,
                    large.cycles_per_second.1,
                    large.history_bytes,
                    large.history_bytes as f64 / large.bytes.max(1) as f64
                );
            }
        }
        md
    }
}
