//! The section on `memory serve`: latency over HTTP and MCP beside in process, and load.

use std::fmt::Write as _;

use super::Report;
use crate::http;
use crate::stats::Samples;

impl Report<'_> {
    /// The HTTP section: latency over HTTP beside in process, and load.
    pub(super) fn http(&self) -> String {
        let mut md = String::from("\n## Over HTTP (`memory serve`)\n\n");
        let _ = writeln!(
            md,
            "The same calls through the memory service: `memory_web::Service` on a loopback \
             port of this process, called over keep-alive HTTP/1.1 connections by a load \
             generator in the same process (so on the same 2 cores: the figures include the \
             client's own cost). In process is the wiring (`memory_wiring::Memory`) the service \
             calls: `prefetch` (MEMORY.md of {} bytes, with a query), and a one-add \
             `sync_exactly_once` with an idempotency key, as the service runs every sync (over \
             HTTP each add carries an `Idempotency-Key`). Alternating rounds of {} samples a side.\n",
            http::PREFETCH_BYTES,
            self.args.samples.div_ceil(10) * 10
        );
        let _ = writeln!(
            md,
            "| provider | prefetch in process | prefetch over HTTP | added p50 | sync in process | sync over HTTP | added p50 |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for m in self.measured {
            let (pin, phttp) = &m.http.prefetch;
            let (sin, shttp) = &m.http.sync;
            let added = |inside: &Samples, over: &Samples| {
                format!("{:+.3} ms", over.quantile_ms(0.5) - inside.quantile_ms(0.5))
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} |",
                m.provider,
                pin.percentiles(),
                phttp.percentiles(),
                added(pin, phttp),
                sin.percentiles(),
                shttp.percentiles(),
                added(sin, shttp)
            );
        }
        let _ = writeln!(
            md,
            "\nMCP over HTTP (`/mcp`, stateless Streamable HTTP, JSON answers) beside `/v1` on the \
             same server and connection, call by call in turn: `memory_view` beside `POST \
             /v1/prefetch` without a query (the same reads and rendering), a `memory_add` keyed \
             in `_meta` beside a keyed one-add `POST /v1/sync`.\n"
        );
        let _ = writeln!(
            md,
            "| provider | prefetch on /v1 | memory_view on /mcp | added p50 | sync on /v1 | memory_add on /mcp | added p50 |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for m in self.measured {
            let (pv1, pmcp) = &m.http.mcp_view;
            let (av1, amcp) = &m.http.mcp_add;
            let added = |v1: &Samples, mcp: &Samples| {
                format!("{:+.3} ms", mcp.quantile_ms(0.5) - v1.quantile_ms(0.5))
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} |",
                m.provider,
                pv1.percentiles(),
                pmcp.percentiles(),
                added(pv1, pmcp),
                av1.percentiles(),
                amcp.percentiles(),
                added(av1, amcp)
            );
        }
        let _ = writeln!(
            md,
            "\nRequests per second with concurrent clients, each on its own connection: \
             prefetch (for {} s per level) and one-add syncs ({} in all, to one document, each with its \
             own key; lost = acknowledged adds missing from the document afterwards); then the \
             same over `/mcp` by as many MCP sessions: `memory_view` and keyed `memory_add` \
             tool calls.\n",
            http::PREFETCH_LOAD.as_secs(),
            http::SYNC_ADDS
        );
        let _ = writeln!(
            md,
            "| provider | operation | clients | requests | requests/s | p50 / p95 / p99 | lost |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for m in self.measured {
            for level in &m.http.load {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {:.0} | {} | {} |",
                    m.provider,
                    level.operation,
                    level.clients,
                    level.requests,
                    level.per_second,
                    level.latencies.percentiles(),
                    level.lost
                );
            }
        }
        md
    }
}
