//! One caller at a time: prefetch and a one-add sync against the storage's own floor.

use std::fmt::Write as _;

use super::{Report, ratio};

impl Report<'_> {
    /// The prefetch section: p50 / p95 / p99 at each MEMORY.md size, and the first over the
    /// read floor.
    pub(super) fn prefetch(&self) -> String {
        let mut md = String::new();
        let a = self.args;
        let _ = writeln!(md, "## Prefetch\n");
        let _ = writeln!(
            md,
            "What the agent reads before a turn: both documents, rendered. The vector provider \
             answers with a query (embedding it, hybrid search over MEMORY.md's entries); the \
             others render everything. The ratio divides the p50 by the backend's bare read \
             p50 (prefetch reads two documents).\n"
        );
        let headers: Vec<String> = a.prefetch_kib.iter().map(|k| format!("{k} KiB")).collect();
        let _ = writeln!(
            md,
            "| provider | {} | p50 ÷ read floor ({} KiB) |",
            headers.join(" | "),
            a.prefetch_kib.first().copied().unwrap_or_default()
        );
        let _ = writeln!(md, "|---|{}---|", "---|".repeat(headers.len()));
        for m in self.measured {
            let cells: Vec<String> = m
                .prefetch
                .iter()
                .map(|(_, s)| s.percentiles().to_string())
                .collect();
            let first = m
                .prefetch
                .first()
                .map(|(_, s)| s.quantile_ms(0.5))
                .unwrap_or_default();
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                m.provider,
                cells.join(" | "),
                ratio(first, m.floor.read.quantile_ms(0.5))
            );
        }
        let _ = writeln!(
            md,
            "\n![prefetch p50 by document size](benchmarks/prefetch.svg)\n"
        );
        md
    }

    /// The one-writer sync section: each provider's sync beside its write floor and the naive
    /// baseline, and the vector provider's beside its markdown source's.
    pub(super) fn sync(&self) -> String {
        let mut md = String::new();
        let a = self.args;
        let _ = writeln!(md, "## Sync of one add, one writer\n");
        let _ = writeln!(
            md,
            "One `add` per call, {} calls on a growing document. The ratio divides the p50 by the \
             backend's bare durable write p50: a sync must read, then write conditionally. The \
             vector provider acknowledges a write once its markdown source has it; its index \
             catches up in the background (and every measurement here waits for that before the \
             next starts). \"Naive\" is the same adds by a hand-written baseline on the same \
             storage: read the whole text, append, write it back, with no lock, no version \
             check, no history and (on files: `std::fs` read, write and rename) no fsync. It \
             loses updates under concurrency (see Contention); the last column is what the \
             safety costs a single writer.\n",
            a.samples
        );
        let _ = writeln!(
            md,
            "| provider | p50 / p95 / p99 | p50 ÷ write floor | naive p50 / p95 / p99 | p50 ÷ naive p50 |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|");
        for m in self.measured {
            let p50 = m.sync.quantile_ms(0.5);
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                m.provider,
                m.sync.percentiles(),
                ratio(p50, m.floor.write.quantile_ms(0.5)),
                m.naive_sync.percentiles(),
                ratio(p50, m.naive_sync.quantile_ms(0.5))
            );
        }
        let sync_p50 = |name: &str| {
            let measured = self.measured.iter().find(|m| m.provider == name);
            measured.map(|m| m.sync.quantile_ms(0.5))
        };
        if let (Some(vector), Some(markdown)) = (sync_p50("vector"), sync_p50("markdown")) {
            let _ = writeln!(
                md,
                "\nThe vector provider's sync p50 is {} its markdown source's.",
                ratio(vector, markdown)
            );
        }
        md
    }

    /// The floor section: the cheapest read and durable write of each storage.
    pub(super) fn floor(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "## The floor\n");
        let _ = writeln!(
            md,
            "The cheapest read and durable write each storage allows, measured in the same run \
             on 1 KiB values: what no provider on it can beat.\n"
        );
        let _ = writeln!(
            md,
            "| backend | read | p50 / p95 / p99 | write | p50 / p95 / p99 |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|");
        for m in self.measured.iter().filter(|m| m.races) {
            let f = &m.floor;
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                m.provider,
                f.read_label,
                f.read.percentiles(),
                f.write_label,
                f.write.percentiles()
            );
        }
        md
    }
}
