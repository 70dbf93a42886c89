//! The benchmark's flags, and the one other measurement it runs instead (`recall-eval`).

use std::path::PathBuf;

use clap::Parser;
use memory_vector::ModelName;

use crate::backends::BoxError;
use crate::recall_eval;

/// Benchmarks every provider in one run and writes a markdown report with charts.
///
/// Needs the services of ./scripts/bench (PostgreSQL, Redis) and the embedding model; a
/// provider that cannot be opened is skipped, loudly, and the report says so.
///
/// `memory-bench recall-eval` measures recall on conversations instead; the flags here are the
/// benchmark's only.
#[derive(Parser, Debug)]
#[command(name = "memory-bench", version, args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Another measurement instead of the benchmark.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Where benchmarks.md and the charts (benchmarks/*.svg) go.
    #[arg(long, default_value = "docs")]
    pub out: PathBuf,
    /// Which providers to measure.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "markdown,postgres,redis,vector"
    )]
    pub providers: Vec<String>,
    /// Samples per latency figure.
    #[arg(long, default_value_t = 200)]
    pub samples: usize,
    /// MEMORY.md sizes for prefetch, in KiB.
    #[arg(long, value_delimiter = ',', default_value = "1,8,20")]
    pub prefetch_kib: Vec<usize>,
    /// Concurrent client counts for the HTTP run (`memory serve`, keep-alive).
    #[arg(long, value_delimiter = ',', default_value = "1,16,64")]
    pub http_clients: Vec<usize>,
    /// Concurrent writer counts for the contention run.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64")]
    pub writers: Vec<usize>,
    /// Adds per contention level, split between the writers.
    #[arg(long, default_value_t = 256)]
    pub contention_adds: usize,
    /// How large MEMORY.md grows in the growth run, in bytes.
    #[arg(long, default_value_t = 20 * 1024)]
    pub growth_cap: usize,
    /// The size of the large MEMORY.md the history section writes to, in bytes.
    #[arg(long, default_value_t = 1536 * 1024)]
    pub large_bytes: usize,
    /// Prefetch + add cycles on the large MEMORY.md, with history off and on each.
    #[arg(long, default_value_t = 200)]
    pub large_adds: usize,
    /// Prefetch + add cycles that grow a MEMORY.md from empty, with history off and on each.
    #[arg(long, default_value_t = 1000)]
    pub grown_adds: usize,
    /// Notes in the scope the notes section lists and prefetches.
    #[arg(long, default_value_t = 1000)]
    pub notes: usize,
    /// Measures the notes section only, and prints it instead of writing the report.
    #[arg(long)]
    pub notes_only: bool,
    /// Entry counts for the recall run (each grows the same document; the entries of the last
    /// size are most of a default run's time).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    pub recall_entries: Vec<usize>,
    /// Queries per recall size.
    #[arg(long, default_value_t = 50)]
    pub recall_queries: usize,
    /// The vector provider's embedding model: `all-MiniLM-L6-v2` or `multilingual-e5-small`.
    #[arg(long, default_value_t = ModelName::default())]
    pub model: ModelName,
    /// LoCoMo-style conversations for the recall quality section (`recall-eval` on turns and
    /// observations, hybrid and each half alone); skipped, loudly, when the directory is
    /// missing. The data stays outside the repository (CC BY-NC).
    #[arg(long, default_value = "../shared/data/locomo-dev")]
    pub recall_data: PathBuf,
    /// PostgreSQL (default: $MEMORY_TEST_POSTGRES_URL, else the local test database).
    #[arg(
        long,
        env = "MEMORY_TEST_POSTGRES_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    pub postgres_url: String,
    /// Redis (default: $MEMORY_TEST_REDIS_URL, else the local server).
    #[arg(
        long,
        env = "MEMORY_TEST_REDIS_URL",
        default_value = "redis://127.0.0.1:6379"
    )]
    pub redis_url: String,
    /// PgBouncer in transaction mode in front of that PostgreSQL, for the deployments section
    /// (default: $MEMORY_TEST_PGBOUNCER_URL, which scripts/services.sh sets).
    #[arg(long, env = "MEMORY_TEST_PGBOUNCER_URL")]
    pub pgbouncer_url: Option<String>,
    /// A Redis Cluster's seed nodes, comma-separated, for the deployments section (default:
    /// $MEMORY_TEST_REDIS_CLUSTER_URLS, which scripts/services.sh sets).
    #[arg(long, env = "MEMORY_TEST_REDIS_CLUSTER_URLS", value_delimiter = ',')]
    pub redis_cluster_urls: Vec<String>,
}

/// Measurements other than the whole benchmark.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Recall@k of the vector provider on LoCoMo-style conversations (turns.jsonl,
    /// observations.jsonl, queries.jsonl), one fresh index per conversation; prints a markdown
    /// table per question category.
    RecallEval(recall_eval::EvalArgs),
}

impl Args {
    /// Refuses a count or size of 0, which would measure nothing.
    pub fn check(&self) -> Result<(), BoxError> {
        for (flag, values) in [
            ("--samples", vec![self.samples]),
            ("--recall-queries", vec![self.recall_queries]),
            ("--contention-adds", vec![self.contention_adds]),
            ("--writers", self.writers.clone()),
            ("--http-clients", self.http_clients.clone()),
            ("--prefetch-kib", self.prefetch_kib.clone()),
            ("--recall-entries", self.recall_entries.clone()),
            ("--large-adds", vec![self.large_adds]),
            ("--grown-adds", vec![self.grown_adds]),
            ("--notes", vec![self.notes]),
        ] {
            if values.contains(&0) {
                return Err(format!("{flag} must be at least 1").into());
            }
        }
        Ok(())
    }
}
