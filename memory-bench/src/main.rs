//! `memory-bench`: every provider side by side in one run (prefetch, sync, contention against a
//! naive baseline, the storage floor, recall and growth), written to `<out>/benchmarks.md` with
//! SVG charts in `<out>/benchmarks/`. Prints figures; asserts nothing about speed.
//!
//! `memory-bench recall-eval --data DIR` instead measures recall@k of the vector provider on
//! LoCoMo-style conversations (see `src/recall_eval/`).
//!
//! The flow is in `run`: each provider is opened and measured in turn, then the deployments,
//! PostgreSQL over TLS, recall at each size and recall quality; `report` renders what was
//! measured.

// The flags, and the `recall-eval` subcommand.
mod args;
// The providers under test, their storage floor, and the naive read-then-write baseline.
mod backends;
// SVG line charts.
mod chart;
// PgBouncer and a Redis Cluster, each beside a direct connection.
mod deployments;
// The memory service over HTTP and MCP: latency beside in process, and load.
mod http;
// `recall-eval`: recall@k on LoCoMo-style conversations.
mod recall_eval;
// `benchmarks.md` and its charts, from the figures.
mod report;
// The run: provider by provider, then what the whole deployment is measured on.
mod run;
// Latency samples and their percentiles.
mod stats;
// PostgreSQL over TLS beside `sslmode=disable`.
mod tls;
// The workloads: prefetch, sync, history, contention, growth, recall.
mod workloads;

use clap::Parser;

use args::{Args, Command};
use backends::BoxError;

fn main() -> std::process::ExitCode {
    // First, while the process has one thread, as `memory` does: the figures are what it gets.
    memory_vector::spin_briefly_when_idle();
    let mut args = Args::parse();
    let result = tokio::runtime::Runtime::new()
        .map_err(BoxError::from)
        .and_then(|runtime| {
            runtime.block_on(async {
                match args.command.take() {
                    Some(Command::RecallEval(eval)) => recall_eval::run(eval).await,
                    None => run::run(args).await,
                }
            })
        });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}
