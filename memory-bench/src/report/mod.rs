//! The report of a run: `benchmarks.md` and its SVG charts, rendered from the figures alone.
//! What the run gathers besides them (the machine, the services' versions, the command line) is
//! gathered first, by [`machine()`] and [`command_line`], so the same figures always render the
//! same bytes; `tests.rs` holds the rendering of fixed figures to the copy in `tests/report/`.

// The header's facts about the run: the machine, toolchain, services, and the command.
mod machine;
// The goals table: this run's figures against the performance goals, met or not.
mod goals;
// One caller at a time: prefetch and a one-add sync against the storage's floor.
mod latency;
// What history costs: syncs with it off and on, on small, large and long-grown documents.
mod history;
// `memory serve`: latency over HTTP and MCP beside in process, and load.
mod http;
// Concurrent writers on one document, beside the naive baseline.
mod contention;
// Notes: a note's add, a scope's listing, prefetch with many notes.
mod notes;
pub use notes::notes_section;
// Through PgBouncer, on a Redis Cluster, and PostgreSQL over TLS.
mod deployments;
// The vector provider's recall: speed at each size, and quality on LoCoMo.
mod recall;
// MEMORY.md grown add by add: sync and prefetch by size.
mod growth;
// The SVG charts.
mod charts;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;
use std::time::Duration;

use crate::args::Args;
use crate::backends::Floor;
use crate::deployments::Deployment;
use crate::http::HttpMeasured;
use crate::recall_eval::Evaluated;
use crate::stats::Samples;
use crate::tls::Connection;
use crate::workloads::{Contention, LargeDocument, NotesMeasured, RecallRound};

pub use machine::{command_line, machine};

/// Everything measured on one provider.
pub struct Measured {
    /// The provider's name in tables and charts.
    pub provider: &'static str,
    /// Whether its writers race on storage of their own: not the vector provider's, which
    /// write to its source (see [`Backend::races`]).
    ///
    /// [`Backend::races`]: crate::backends::Backend::races
    pub races: bool,
    pub floor: Floor,
    pub prefetch: Vec<(usize, Samples)>,
    pub sync: Samples,
    /// The same adds by the naive read-append-write baseline on the same storage.
    pub naive_sync: Samples,
    /// Sync with history off, then on; `None` for the vector provider (its source's).
    pub history: Option<(Samples, Samples)>,
    /// History off and on for a large MEMORY.md, then for one grown from empty; none for the
    /// vector provider.
    pub large: Vec<LargeDocument>,
    /// The same calls over HTTP through `memory serve`.
    pub http: HttpMeasured,
    pub contention: Vec<Contention>,
    /// A note's add against a document's, a scope's listing, prefetch with notes.
    pub notes: NotesMeasured,
    pub growth: Vec<(usize, Duration, Duration)>,
}

/// The figures of one run, as markdown and charts.
pub struct Report<'a> {
    /// The machine, toolchain and service versions the run had: see [`machine()`].
    pub machine: String,
    /// How the run was started: see [`command_line`].
    pub command_line: String,
    pub args: &'a Args,
    pub measured: &'a [Measured],
    pub deployments: &'a [Deployment],
    /// PostgreSQL over TLS and with `sslmode=disable`, when PostgreSQL was measured.
    pub tls: Option<&'a [Connection; 2]>,
    pub recall: &'a [RecallRound],
    pub quality: &'a [Evaluated],
    pub skipped: &'a [(String, String)],
    pub took: Duration,
}

impl Report<'_> {
    /// `benchmarks.md`: the header, the goals, then one section per measurement, in this order.
    pub fn markdown(&self) -> String {
        let sections = [
            self.header(),
            self.goals(),
            self.prefetch(),
            self.sync(),
            self.history_cost(),
            self.large_documents(),
            self.http(),
            self.contention(),
            self.notes(),
            self.deployments(),
            self.tls(),
            self.floor(),
            self.recall(),
            self.quality(),
            self.growth(),
            self.building(),
        ];
        sections.concat()
    }

    /// The title, how the run was made and on what, its settings, and what it skipped.
    fn header(&self) -> String {
        let mut md = String::new();
        let a = self.args;
        let _ = writeln!(md, "# Benchmarks\n");
        let _ = writeln!(
            md,
            "One run of `{}` (release build) measured {} side by side; it took {:.0?}. \
             Latencies are milliseconds, p50 / p95 / p99, measured by the calling client, with \
             the services on the same host.\n",
            self.command_line,
            a.providers.join(", "),
            self.took
        );
        let _ = writeln!(md, "{}", self.machine);
        let _ = writeln!(
            md,
            "Settings: {} samples per latency; prefetch with MEMORY.md of {} KiB (and a 36-byte \
             USER.md); contention with {} writers, {} adds per level; growth to {} bytes; recall \
             at {} entries, {} queries each, embedded by {}. Flags: `./scripts/bench --help`.\n",
            a.samples,
            list(&a.prefetch_kib),
            list(&a.writers),
            a.contention_adds,
            a.growth_cap,
            list(&a.recall_entries),
            a.recall_queries,
            a.model
        );
        for (name, reason) in self.skipped {
            let _ = writeln!(md, "**{name} was not measured:** {reason}\n");
        }
        md
    }

    /// How the benchmark is built, and how to keep that fast.
    fn building(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "## Building it\n");
        let _ = writeln!(
            md,
            "`./scripts/bench` builds with the release profile into a target directory of its \
             own (`~/.cache/agent-memory/target-release`, or `$MEMORY_RELEASE_TARGET_DIR`): cargo \
             locks a target directory for a whole build, so sharing the debug one would stall \
             every test run behind it. Cold, on a fresh 2-core machine of this kind, \
             `./scripts/bench --help` took 50 minutes (2026-11-24, prerequisites included; 64 on \
             the previous session's machine, beside a debug build), nearly all of it lance, \
             lancedb and datafusion. Once it is warm, a change to the workspace's own code \
             rebuilds in a minute or two; a change to the features of a shared dependency \
             rebuilds lance and lancedb, about half an hour. Keep it warm by leaving that \
             directory in place (CI clones reuse it), and build before a session that needs \
             figures: `./scripts/bench --help` builds without measuring. Stop other builds while \
             it measures: they share the cores and the disk."
        );
        md
    }
}

fn ratio(value: f64, floor: f64) -> String {
    if floor > 0.0 {
        format!("{:.1}×", value / floor)
    } else {
        "n/a".to_owned()
    }
}

fn list(values: &[usize]) -> String {
    values
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
