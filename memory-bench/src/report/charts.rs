//! The report's SVG charts: prefetch by size, throughput by writers, growth, recall latency.

use std::path::Path;

use super::growth::growth_buckets;
use super::{Measured, Report};
use crate::backends::BoxError;
use crate::chart::{self, Series, XAxis};
use crate::stats::Samples;

impl Report<'_> {
    /// Draws the charts into `dir`, which must exist.
    pub fn charts(&self, dir: &Path) -> Result<(), BoxError> {
        let colour = |m: &Measured| match m.provider {
            "markdown" => 0,
            "postgres" => 1,
            "redis" => 2,
            _ => 3,
        };
        let labels = |values: &[usize], unit: &str| {
            XAxis::Labels(values.iter().map(|v| format!("{v}{unit}")).collect())
        };
        let series = |f: &dyn Fn(&Measured) -> Vec<(f64, f64)>| -> Vec<Series> {
            self.measured
                .iter()
                .map(|m| Series {
                    name: m.provider.to_owned(),
                    colour: colour(m),
                    points: f(m),
                })
                .collect()
        };
        chart::lines(
            &dir.join("prefetch.svg"),
            "Prefetch p50 by MEMORY.md size",
            "MEMORY.md",
            "ms (log)",
            &labels(&self.args.prefetch_kib, " KiB"),
            &series(&|m: &Measured| {
                m.prefetch
                    .iter()
                    .enumerate()
                    .map(|(i, (_, s))| (i as f64, s.quantile_ms(0.5)))
                    .collect()
            }),
        )?;
        chart::lines(
            &dir.join("contention.svg"),
            "Acknowledged adds per second by concurrent writers",
            "writers",
            "adds/s (log)",
            &labels(&self.args.writers, ""),
            &series(&|m: &Measured| {
                m.contention
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (i as f64, c.throughput))
                    .collect()
            }),
        )?;
        let buckets = growth_buckets(self.measured);
        for (file, title, pick) in [
            (
                "growth-sync.svg",
                "Sync of one add p50 by MEMORY.md size",
                0,
            ),
            ("growth-prefetch.svg", "Prefetch p50 by MEMORY.md size", 1),
        ] {
            let lines: Vec<Series> = buckets
                .iter()
                .zip(self.measured)
                .map(|((name, points), m)| Series {
                    name: name.clone(),
                    colour: colour(m),
                    points: points
                        .iter()
                        .map(|(kib, s, p)| (*kib, if pick == 0 { *s } else { *p }))
                        .collect(),
                })
                .collect();
            chart::lines(
                &dir.join(file),
                title,
                "MEMORY.md (KiB)",
                "ms (log)",
                &XAxis::Linear,
                &lines,
            )?;
        }
        if !self.recall.is_empty() {
            let entries: Vec<usize> = self.recall.iter().map(|r| r.entries).collect();
            let search: Vec<&Samples> = self.recall.iter().map(|r| &r.queries).collect();
            let index: Vec<&Samples> = self.recall.iter().map(|r| &r.index_queries).collect();
            let quantile = |samples: &[&Samples], q: f64, name: &str, colour: usize| Series {
                name: name.to_owned(),
                colour,
                points: samples
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (i as f64, s.quantile_ms(q)))
                    .collect(),
            };
            chart::lines(
                &dir.join("recall.svg"),
                "recall query latency by entries",
                "entries",
                "ms (log)",
                &labels(&entries, ""),
                &[
                    quantile(&search, 0.5, "memory_search p50", 3),
                    quantile(&search, 0.95, "memory_search p95", 4),
                    quantile(&index, 0.5, "index query p50", 0),
                ],
            )?;
        }
        Ok(())
    }
}
