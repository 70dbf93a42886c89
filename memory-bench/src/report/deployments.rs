//! How teams deploy the multi-host backends: through PgBouncer, on a Redis Cluster, and
//! PostgreSQL over TLS, each beside the direct connection.

use std::fmt::Write as _;

use super::Report;
use crate::tls;

impl Report<'_> {
    /// The deployments section; empty when none was reached.
    pub(super) fn deployments(&self) -> String {
        if self.deployments.is_empty() {
            return String::new();
        }
        let (rows, samples) = (self.deployments, self.args.samples);
        let mut md = String::new();
        let _ = writeln!(
            md,
            "## Deployments: through PgBouncer, on a Redis Cluster\n"
        );
        let _ = writeln!(
            md,
            "The multi-host backends as teams run them, beside a direct connection to the same \
             PostgreSQL and a single Redis server: prefetch with an 8 KiB MEMORY.md and one-add \
             syncs, one writer, {samples} calls each; PostgreSQL without TLS both ways, as Debian's \
             PgBouncer has none. Through PgBouncer in transaction mode nothing outlives a \
             transaction (see memory-postgres/README.md); on the cluster every call goes to the \
             master that owns the prefix's slot (see memory-redis/README.md).\n"
        );
        let _ = writeln!(
            md,
            "| deployment | prefetch p50 / p95 / p99 | sync p50 / p95 / p99 |"
        );
        let _ = writeln!(md, "|---|---|---|");
        for row in rows {
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                row.name,
                row.prefetch.percentiles(),
                row.sync.percentiles()
            );
        }
        md.push('\n');
        md
    }

    /// The TLS section; empty when PostgreSQL was not measured.
    pub(super) fn tls(&self) -> String {
        let Some(connections) = self.tls else {
            return String::new();
        };
        let cycles = self.args.grown_adds;
        let mut md = String::new();
        let _ = writeln!(md, "## PostgreSQL over TLS\n");
        let _ = writeln!(
            md,
            "The same server reached as the README's URL does (no `sslmode`: sqlx's `prefer`, \
             which takes TLS where the server offers it, as Debian's does) and with \
             `sslmode=disable`: {cycles} cycles of a prefetch and one add on a MEMORY.md grown from \
             empty, one writer per connection, the two interleaved. A write over TLS once cost \
             about 43 ms more than without (Nagle's algorithm held back the second TLS record of \
             every message over 16 KiB until the server's delayed ACK); the goal is within 1 ms.\n"
        );
        let _ = writeln!(
            md,
            "| connection | TLS in use | prefetch p50 / p95 / p99 | add p50 / p95 / p99 | cycles/s |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|");
        for connection in connections {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.0} |",
                connection.name,
                if connection.tls { "yes" } else { "no" },
                connection.prefetch.percentiles(),
                connection.add.percentiles(),
                connection.cycles_per_second
            );
        }
        let _ = writeln!(
            md,
            "\nAdd p50 over TLS minus without: {:+.3} ms.\n",
            tls::added_p50(connections)
        );
        md
    }
}
