//! MEMORY.md grown add by add: sync and prefetch by document size.

use std::fmt::Write as _;

use super::{Measured, Report};
use crate::stats::{Samples, ms};

impl Report<'_> {
    /// The growth section: sync and prefetch medians per 2 KiB of document size.
    pub(super) fn growth(&self) -> String {
        let mut md = String::new();
        let a = self.args;
        let _ = writeln!(md, "## Growth\n");
        let _ = writeln!(
            md,
            "MEMORY.md grown by adds of about 75 bytes to {} bytes; after each add, one prefetch. \
             Medians per 2 KiB of document size:\n",
            a.growth_cap
        );
        let buckets = growth_buckets(self.measured);
        let sizes: Vec<String> = buckets
            .first()
            .map(|(_, points)| {
                points
                    .iter()
                    .map(|(kib, _, _)| format!("{kib:.0} KiB"))
                    .collect()
            })
            .unwrap_or_default();
        let _ = writeln!(md, "| provider | op | {} |", sizes.join(" | "));
        let _ = writeln!(md, "|---|---|{}", "---|".repeat(sizes.len()));
        for (name, points) in &buckets {
            let syncs: Vec<String> = points.iter().map(|(_, s, _)| ms(*s)).collect();
            let prefetches: Vec<String> = points.iter().map(|(_, _, p)| ms(*p)).collect();
            let _ = writeln!(md, "| {name} | sync | {} |", syncs.join(" | "));
            let _ = writeln!(md, "| {name} | prefetch | {} |", prefetches.join(" | "));
        }
        let _ = writeln!(
            md,
            "\n![sync by document size](benchmarks/growth-sync.svg)\n\n\
             ![prefetch by document size](benchmarks/growth-prefetch.svg)\n"
        );
        md
    }
}

/// One provider's growth: its name, and (KiB, sync p50 ms, prefetch p50 ms) per bucket.
pub(super) type GrowthLine = (String, Vec<(f64, f64, f64)>);

/// Per provider, the medians per 2 KiB bucket of document size.
pub(super) fn growth_buckets(measured: &[Measured]) -> Vec<GrowthLine> {
    const BUCKET: usize = 2048;
    measured
        .iter()
        .map(|m| {
            let mut buckets: std::collections::BTreeMap<usize, (Samples, Samples)> =
                Default::default();
            for (bytes, sync, prefetch) in &m.growth {
                let bucket = buckets.entry(bytes.div_ceil(BUCKET)).or_default();
                bucket.0.push(*sync);
                bucket.1.push(*prefetch);
            }
            let points = buckets
                .into_iter()
                .map(|(b, (sync, prefetch))| {
                    let kib = (b * BUCKET) as f64 / 1024.0;
                    (kib, sync.quantile_ms(0.5), prefetch.quantile_ms(0.5))
                })
                .collect();
            (m.provider.to_owned(), points)
        })
        .collect()
}
