//! The goals table: this run's figures against the performance goals, met or not.

use std::fmt::Write as _;

use super::Report;
use crate::stats::ms;
use crate::tls;

impl Report<'_> {
    /// The performance goals (issue 22) against this run's figures, one row each, with whether
    /// the run met them. A figure this run did not measure is left out.
    pub(super) fn goals(&self) -> String {
        let provider = |name: &str| self.measured.iter().find(|m| m.provider == name);
        let mut rows: Vec<(String, String, &str, bool)> = Vec::new();
        for name in ["postgres", "redis"] {
            let Some(m) = provider(name) else { continue };
            let one = m.contention.iter().find(|c| c.writers == 1);
            let most = m.contention.iter().max_by_key(|c| c.writers);
            if let (Some(one), Some(most)) = (one, most)
                && most.writers > 1
            {
                let share = most.throughput / one.throughput;
                rows.push((
                    format!("{name}, {} writers on one document", most.writers),
                    format!(
                        "{:.0} adds/s, {:.0}% of one writer's {:.0}; {} lost; p95 {} ms",
                        most.throughput,
                        share * 100.0,
                        one.throughput,
                        most.lost,
                        ms(most.latencies.quantile_ms(0.95))
                    ),
                    if name == "postgres" {
                        ">= 50% of one writer's, 0 lost, p95 <= 150 ms"
                    } else {
                        ">= 50% of one writer's, 0 lost"
                    },
                    share >= 0.5
                        && most.lost == 0
                        && (name != "postgres" || most.latencies.quantile_ms(0.95) <= 150.0),
                ));
            }
            let sync = m.sync.quantile_ms(0.5) / m.floor.write.quantile_ms(0.5);
            rows.push((
                format!("{name}, one-add sync ÷ durable write floor"),
                format!("{sync:.1}×"),
                "<= 2×",
                sync <= 2.0,
            ));
            if let Some((_, prefetch)) = m.prefetch.first() {
                let (ratio, goal) = (
                    prefetch.quantile_ms(0.5) / m.floor.read.quantile_ms(0.5),
                    if name == "postgres" { 2.0 } else { 1.3 },
                );
                rows.push((
                    format!("{name}, prefetch ÷ read floor"),
                    format!("{ratio:.1}×"),
                    if name == "postgres" {
                        "<= 2×"
                    } else {
                        "<= 1.3×"
                    },
                    ratio <= goal,
                ));
            }
        }
        if let Some(connections) = self.tls {
            let added = tls::added_p50(connections);
            rows.push((
                "postgres, one-add sync over TLS: p50 beyond sslmode=disable's".to_owned(),
                match connections[0].tls {
                    true => format!("{added:+.3} ms"),
                    false => format!("{added:+.3} ms (the server offered no TLS)"),
                },
                "<= 1 ms",
                added <= 1.0,
            ));
        }
        if let (Some(vector), Some(markdown)) = (provider("vector"), provider("markdown")) {
            let ratio = vector.sync.quantile_ms(0.5) / markdown.sync.quantile_ms(0.5);
            rows.push((
                "recall provider, one-add sync ÷ its markdown source's".to_owned(),
                format!("{ratio:.1}×"),
                "<= 2×",
                ratio <= 2.0,
            ));
        }
        if let Some(slowest) = self
            .recall
            .iter()
            .min_by(|a, b| a.ingest_per_second.total_cmp(&b.ingest_per_second))
        {
            rows.push((
                "recall ingest (slowest size)".to_owned(),
                format!(
                    "{:.0} entries/s (at {} entries)",
                    slowest.ingest_per_second, slowest.entries
                ),
                ">= 500 entries/s",
                slowest.ingest_per_second >= 500.0,
            ));
        }
        if let Some(largest) = self.recall.iter().max_by_key(|r| r.entries) {
            let p50 = largest.queries.quantile_ms(0.5);
            rows.push((
                format!(
                    "recall query (`memory_search`) at {} entries",
                    largest.entries
                ),
                format!("p50 {} ms", ms(p50)),
                "p50 <= 20 ms",
                p50 <= 20.0,
            ));
        }
        for m in self.measured {
            let name = m.provider;
            for (what, (inside, over)) in [("prefetch", &m.http.prefetch), ("sync", &m.http.sync)] {
                let added = over.quantile_ms(0.5) - inside.quantile_ms(0.5);
                rows.push((
                    format!("{name}, {what}: HTTP p50 over in process"),
                    format!("{added:+.3} ms"),
                    "<= 0.2 ms",
                    added <= 0.2,
                ));
            }
            for (what, (v1, mcp)) in [
                (
                    "memory_view over /mcp, p50 over /v1 prefetch",
                    &m.http.mcp_view,
                ),
                ("memory_add over /mcp, p50 over /v1 sync", &m.http.mcp_add),
            ] {
                let added = mcp.quantile_ms(0.5) - v1.quantile_ms(0.5);
                rows.push((
                    format!("{name}, {what}"),
                    format!("{added:+.3} ms"),
                    "<= 0.3 ms",
                    added <= 0.3,
                ));
            }
            if name == "markdown"
                && let Some(most) = m
                    .http
                    .load
                    .iter()
                    .filter(|level| level.operation == "prefetch")
                    .max_by_key(|level| level.clients)
            {
                rows.push((
                    format!("markdown prefetch over HTTP, {} clients", most.clients),
                    format!("{:.0} requests/s", most.per_second),
                    ">= 10,000 requests/s",
                    most.per_second >= 10_000.0,
                ));
            }
            let lost: usize = m.http.load.iter().map(|level| level.lost).sum();
            rows.push((
                format!("{name}, adds lost over HTTP (every load level)"),
                lost.to_string(),
                "0",
                lost == 0,
            ));
        }
        for m in self.measured {
            let name = m.provider;
            for large in &m.large {
                let (off, on) = &large.adds;
                let worst = [0.5, 0.99]
                    .map(|q| on.quantile_ms(q) / off.quantile_ms(q))
                    .into_iter()
                    .fold(0.0, f64::max);
                rows.push((
                    format!("{name}, {}: add with history on ÷ off", large.describe()),
                    format!("{worst:.2}× (the worse of p50 and p99)"),
                    "<= 1.15×",
                    worst <= 1.15,
                ));
                let share = large.history_bytes as f64 / large.bytes.max(1) as f64;
                rows.push((
                    format!("{name}, {}: history bytes ÷ document", large.describe()),
                    format!("{share:.2}×"),
                    "<= 3×",
                    share <= 3.0,
                ));
                if name == "markdown" && large.seeded == 0 {
                    let p99 = on.quantile_ms(0.99);
                    rows.push((
                        format!("markdown, {}: add p99, history on", large.describe()),
                        format!("{} ms", ms(p99)),
                        "<= 2 ms",
                        p99 <= 2.0,
                    ));
                }
            }
        }
        rows.extend(self.notes_goals());
        let minutes = self.took.as_secs_f64() / 60.0;
        rows.push((
            "this run".to_owned(),
            format!("{minutes:.1} min"),
            "<= 10 min",
            minutes <= 10.0,
        ));
        let mut md = String::from(
            "## Goals\n\nThis run's figures against the goals of the performance issue; the sections below have the detail.\n\n| figure | this run | goal | met |\n|---|---|---|---|\n",
        );
        for (figure, now, goal, met) in rows {
            let _ = writeln!(
                md,
                "| {figure} | {now} | {goal} | {} |",
                if met { "yes" } else { "**no**" }
            );
        }
        md.push('\n');
        md
    }
}
