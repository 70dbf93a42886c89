//! `memory-bench`: every provider side by side in one run (prefetch, sync, contention against a
//! naive baseline, the storage floor, recall and growth), written to `<out>/benchmarks.md` with
//! SVG charts in `<out>/benchmarks/`. Prints figures; asserts nothing about speed.
//!
//! `memory-bench recall-eval --data DIR` instead measures recall@k of the vector provider on
//! LoCoMo-style conversations (see `src/recall_eval.rs`).

mod backends;
mod chart;
mod deployments;
mod http;
mod recall_eval;
mod stats;
mod tls;
mod workloads;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use memory_vector::{Embedder, ModelConfig, ModelName};

use backends::{Backend, BoxError, Floor};
use chart::{Series, XAxis};
use stats::{Samples, ms};
use workloads::{Contention, RecallRound};

/// Benchmarks every provider in one run and writes a markdown report with charts.
///
/// Needs the services of ./scripts/bench (PostgreSQL, Redis) and the embedding model; a
/// provider that cannot be opened is skipped, loudly, and the report says so.
///
/// `memory-bench recall-eval` measures recall on conversations instead; the flags here are the
/// benchmark's only.
#[derive(Parser, Debug)]
#[command(name = "memory-bench", version, args_conflicts_with_subcommands = true)]
struct Args {
    /// Another measurement instead of the benchmark.
    #[command(subcommand)]
    command: Option<Command>,
    /// Where benchmarks.md and the charts (benchmarks/*.svg) go.
    #[arg(long, default_value = "docs")]
    out: PathBuf,
    /// Which providers to measure.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "markdown,postgres,redis,vector"
    )]
    providers: Vec<String>,
    /// Samples per latency figure.
    #[arg(long, default_value_t = 200)]
    samples: usize,
    /// MEMORY.md sizes for prefetch, in KiB.
    #[arg(long, value_delimiter = ',', default_value = "1,8,20")]
    prefetch_kib: Vec<usize>,
    /// Concurrent client counts for the HTTP run (`memory serve`, keep-alive).
    #[arg(long, value_delimiter = ',', default_value = "1,16,64")]
    http_clients: Vec<usize>,
    /// Concurrent writer counts for the contention run.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64")]
    writers: Vec<usize>,
    /// Adds per contention level, split between the writers.
    #[arg(long, default_value_t = 256)]
    contention_adds: usize,
    /// How large MEMORY.md grows in the growth run, in bytes.
    #[arg(long, default_value_t = 20 * 1024)]
    growth_cap: usize,
    /// The size of the large MEMORY.md the history section writes to, in bytes.
    #[arg(long, default_value_t = 1536 * 1024)]
    large_bytes: usize,
    /// Prefetch + add cycles on the large MEMORY.md, with history off and on each.
    #[arg(long, default_value_t = 200)]
    large_adds: usize,
    /// Prefetch + add cycles that grow a MEMORY.md from empty, with history off and on each.
    #[arg(long, default_value_t = 1000)]
    grown_adds: usize,
    /// Entry counts for the recall run (each grows the same document; the entries of the last
    /// size are most of a default run's time).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    recall_entries: Vec<usize>,
    /// Queries per recall size.
    #[arg(long, default_value_t = 50)]
    recall_queries: usize,
    /// The vector provider's embedding model: `all-MiniLM-L6-v2` or `multilingual-e5-small`.
    #[arg(long, default_value_t = ModelName::default())]
    model: ModelName,
    /// LoCoMo-style conversations for the recall quality section (`recall-eval` on turns and
    /// observations, hybrid and each half alone); skipped, loudly, when the directory is
    /// missing. The data stays outside the repository (CC BY-NC).
    #[arg(long, default_value = "../shared/data/locomo-dev")]
    recall_data: PathBuf,
    /// PostgreSQL (default: $MEMORY_TEST_POSTGRES_URL, else the local test database).
    #[arg(
        long,
        env = "MEMORY_TEST_POSTGRES_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    postgres_url: String,
    /// Redis (default: $MEMORY_TEST_REDIS_URL, else the local server).
    #[arg(
        long,
        env = "MEMORY_TEST_REDIS_URL",
        default_value = "redis://127.0.0.1:6379"
    )]
    redis_url: String,
    /// PgBouncer in transaction mode in front of that PostgreSQL, for the deployments section
    /// (default: $MEMORY_TEST_PGBOUNCER_URL, which scripts/services.sh sets).
    #[arg(long, env = "MEMORY_TEST_PGBOUNCER_URL")]
    pgbouncer_url: Option<String>,
    /// A Redis Cluster's seed nodes, comma-separated, for the deployments section (default:
    /// $MEMORY_TEST_REDIS_CLUSTER_URLS, which scripts/services.sh sets).
    #[arg(long, env = "MEMORY_TEST_REDIS_CLUSTER_URLS", value_delimiter = ',')]
    redis_cluster_urls: Vec<String>,
}

/// Measurements other than the whole benchmark.
#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Recall@k of the vector provider on LoCoMo-style conversations (turns.jsonl,
    /// observations.jsonl, queries.jsonl), one fresh index per conversation; prints a markdown
    /// table per question category.
    RecallEval(recall_eval::EvalArgs),
}

/// Everything measured on one provider.
struct Measured {
    /// The provider's name in tables and charts.
    provider: &'static str,
    /// Whether its writers race on storage of their own: not the vector provider's, which
    /// write to its source (see [`Backend::races`]).
    races: bool,
    floor: Floor,
    prefetch: Vec<(usize, Samples)>,
    sync: Samples,
    /// The same adds by the naive read-append-write baseline on the same storage.
    naive_sync: Samples,
    /// Sync with history off, then on; `None` for the vector provider (its source's).
    history: Option<(Samples, Samples)>,
    /// History off and on for a large MEMORY.md, then for one grown from empty; none for the
    /// vector provider.
    large: Vec<workloads::LargeDocument>,
    /// The same calls over HTTP through `memory serve`.
    http: http::HttpMeasured,
    contention: Vec<Contention>,
    growth: Vec<(usize, Duration, Duration)>,
}

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
                    None => run(args).await,
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

async fn run(args: Args) -> Result<(), BoxError> {
    for (flag, values) in [
        ("--samples", vec![args.samples]),
        ("--recall-queries", vec![args.recall_queries]),
        ("--contention-adds", vec![args.contention_adds]),
        ("--writers", args.writers.clone()),
        ("--http-clients", args.http_clients.clone()),
        ("--prefetch-kib", args.prefetch_kib.clone()),
        ("--recall-entries", args.recall_entries.clone()),
        ("--large-adds", vec![args.large_adds]),
        ("--grown-adds", vec![args.grown_adds]),
    ] {
        if values.contains(&0) {
            return Err(format!("{flag} must be at least 1").into());
        }
    }
    let started = Instant::now();
    let scratch = tempfile::tempdir()?;
    let run_id = format!("bench-{}", std::process::id());
    let mut skipped = Vec::new();
    let mut backends = Vec::new();
    let mut embedder = None;
    for name in &args.providers {
        let backend = match name.as_str() {
            "markdown" => Backend::Markdown {
                root: scratch.path().join("markdown"),
            },
            "postgres" => Backend::Postgres {
                url: args.postgres_url.clone(),
                schema: run_id.replace('-', "_"),
            },
            "redis" => Backend::Redis {
                url: args.redis_url.clone(),
                prefix: run_id.clone(),
            },
            "vector" => match Embedder::load(&ModelConfig::of(args.model)) {
                Ok(loaded) => {
                    let loaded = Arc::new(loaded);
                    embedder = Some(loaded.clone());
                    Backend::Vector {
                        root: scratch.path().join("vector"),
                        index: scratch.path().join("vector-index"),
                        embedder: loaded,
                    }
                }
                Err(err) => {
                    skip(&mut skipped, name, &err.to_string());
                    continue;
                }
            },
            other => {
                return Err(format!(
                    "unknown provider {other:?}: choose from markdown, postgres, redis, vector"
                )
                .into());
            }
        };
        match backend.open().await {
            Ok(_) => backends.push(backend),
            Err(err) => skip(&mut skipped, name, &err.to_string()),
        }
    }

    let mut measured = Vec::new();
    for backend in backends {
        let result = measure(&backend, &args).await;
        if let Err(err) = backends::clean_up(&backend).await {
            eprintln!("!!! could not clean up after {}: {err}", backend.name());
        }
        measured.push(result?);
    }
    let measures = |name: &str| measured.iter().any(|m| m.provider == name);
    let targets = deployments::Targets {
        postgres: measures("postgres").then_some(args.postgres_url.as_str()),
        pgbouncer: args.pgbouncer_url.as_deref(),
        redis: measures("redis").then_some(args.redis_url.as_str()),
        redis_cluster: &args.redis_cluster_urls,
    };
    let (deployments, unreached) = deployments::measure(&targets, &run_id, args.samples).await;
    for (name, reason) in unreached {
        skip(&mut skipped, &name, &reason);
    }
    let tls = match targets.postgres {
        Some(url) => {
            progress("postgres", "over TLS and with sslmode=disable");
            match tls::measure(url, &run_id, args.grown_adds).await {
                Ok(connections) => Some(connections),
                Err(err) => {
                    skip(&mut skipped, "postgres over TLS", &err.to_string());
                    None
                }
            }
        }
        None => None,
    };
    let recall = match &embedder {
        Some(embedder) if !args.recall_entries.is_empty() => {
            progress("vector", "recall at each size");
            let dir = scratch.path().join("recall");
            workloads::recall(
                &dir,
                embedder.clone(),
                &args.recall_entries,
                args.recall_queries,
            )
            .await?
        }
        _ => Vec::new(),
    };

    let quality = match &embedder {
        Some(embedder) if args.recall_data.is_dir() => {
            progress("vector", "recall quality on the LoCoMo conversations");
            recall_quality(&args.recall_data, args.model, embedder).await?
        }
        Some(_) => {
            let reason = format!("no conversations at {}", args.recall_data.display());
            skip(&mut skipped, "recall quality", &reason);
            Vec::new()
        }
        None => Vec::new(),
    };

    let took = started.elapsed();
    let report = Report {
        machine: machine(&args).await,
        command_line: command_line(),
        args: &args,
        measured: &measured,
        deployments: &deployments,
        tls: tls.as_ref(),
        recall: &recall,
        quality: &quality,
        skipped: &skipped,
        took,
    };
    let charts = args.out.join("benchmarks");
    std::fs::create_dir_all(&charts)?;
    report.charts(&charts)?;
    let markdown = report.markdown();
    std::fs::write(args.out.join("benchmarks.md"), &markdown)?;
    println!("{markdown}");
    eprintln!(
        "== wrote {} and its charts in {} ({:.0?})",
        args.out.join("benchmarks.md").display(),
        charts.display(),
        started.elapsed()
    );
    Ok(())
}

/// `recall-eval` on `data` for each unit and ranking, k 25.
async fn recall_quality(
    data: &std::path::Path,
    model: ModelName,
    embedder: &Arc<Embedder>,
) -> Result<Vec<recall_eval::Evaluated>, BoxError> {
    use recall_eval::{EvalArgs, Measured, Unit};
    let mut found = Vec::new();
    for unit in [Unit::Turn, Unit::Observation] {
        for ranking in [Measured::Hybrid, Measured::FullText, Measured::Vector] {
            let args = EvalArgs {
                data: data.to_owned(),
                unit,
                k: 25,
                conversations: Vec::new(),
                ranking,
                vector_weight: None,
                model,
            };
            found.push(recall_eval::evaluate(&args, Some(embedder.clone())).await?);
        }
    }
    Ok(found)
}

fn skip(skipped: &mut Vec<(String, String)>, name: &str, reason: &str) {
    eprintln!("!!! SKIPPING {name}: {reason}");
    skipped.push((name.to_owned(), reason.to_owned()));
}

fn progress(provider: &str, what: &str) {
    eprintln!("== {provider}: {what}");
}

async fn measure(backend: &Backend, args: &Args) -> Result<Measured, BoxError> {
    let name = backend.name();
    let (provider, index) = backend.open_with_index().await?;
    // A recall index catches up after each write is acknowledged: each workload waits for it
    // before the next, so none is measured against the last one's indexing.
    let settled = || async {
        if let Some(index) = &index {
            for warning in index.settle().await {
                eprintln!("!!! {name}: {warning}");
            }
        }
    };
    progress(name, "floor");
    let floor = backends::floor(backend, args.samples).await?;
    let mut prefetch = Vec::new();
    for &kib in &args.prefetch_kib {
        progress(name, &format!("prefetch with {kib} KiB"));
        prefetch.push((
            kib,
            workloads::prefetch(&*provider, kib * 1024, args.samples).await?,
        ));
        settled().await;
    }
    progress(name, "sync of one add");
    let sync = workloads::sync(&*provider, args.samples).await?;
    settled().await;
    let naive_sync = workloads::naive_sync(backend, args.samples).await?;
    let (history, large) = match backend {
        Backend::Vector { .. } => (None, Vec::new()),
        _ => {
            progress(name, "sync with history off and on");
            let history = workloads::history_cost(backend, args.samples).await?;
            let mut large = Vec::new();
            for (seeded, adds) in [(args.large_bytes, args.large_adds), (0, args.grown_adds)] {
                progress(
                    name,
                    &format!("history on a document of {seeded} bytes + {adds} adds"),
                );
                large.push(workloads::large_document(backend, seeded, adds).await?);
            }
            (Some(history), large)
        }
    };
    progress(name, "over HTTP (memory serve)");
    let http_dir = tempfile::tempdir()?;
    let http = http::measure(backend, http_dir.path(), args.samples, &args.http_clients).await?;
    settled().await;
    let mut contention = Vec::new();
    for &writers in &args.writers {
        progress(name, &format!("{writers} concurrent writers"));
        contention
            .push(workloads::contention(backend, &provider, writers, args.contention_adds).await?);
        settled().await;
    }
    progress(name, "growth");
    let growth = workloads::growth(&*provider, args.growth_cap).await?;
    settled().await;
    Ok(Measured {
        provider: backend.name(),
        races: backend.races(),
        floor,
        prefetch,
        sync,
        naive_sync,
        history,
        large,
        http,
        contention,
        growth,
    })
}

/// The figures of one run, as markdown and charts.
struct Report<'a> {
    /// The machine, toolchain and service versions the run had: see [`machine`].
    machine: String,
    /// How the run was started: see [`command_line`].
    command_line: String,
    args: &'a Args,
    measured: &'a [Measured],
    deployments: &'a [deployments::Deployment],
    /// PostgreSQL over TLS and with `sslmode=disable`, when PostgreSQL was measured.
    tls: Option<&'a [tls::Connection; 2]>,
    recall: &'a [RecallRound],
    quality: &'a [recall_eval::Evaluated],
    skipped: &'a [(String, String)],
    took: Duration,
}

impl Report<'_> {
    fn markdown(&self) -> String {
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
        md.push_str(&self.goals());

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

        md.push_str(&self.large_documents());
        md.push_str(&self.http());

        let _ = writeln!(md, "\n## Contention\n");
        let _ = writeln!(
            md,
            "N writers add to one document at once, {} adds in all. Each writer is its own \
             provider instance, with its own connections, as separate processes or hosts would \
             be (within one instance, writers queue instead of racing). The vector provider's \
             writes go to its markdown source, so it runs its writers on one instance. \
             \"Naive\" is the hand-written read-then-write baseline (read the text, append, \
             write it back, with no lock or version check) under the same load: its speed, and \
             the updates it loses, which the compare-and-swap and the locks prevent.\n",
            a.contention_adds
        );
        let _ = writeln!(
            md,
            "| provider | writers | adds/s | p95 ms | CAS retries | refused (Contention) | lost | naive adds/s | naive p95 ms | naive lost |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|");
        for m in self.measured {
            for c in &m.contention {
                let _ = writeln!(
                    md,
                    "| {} | {} | {:.0} | {} | {} | {} | **{}** | {:.0} | {} | {} |",
                    m.provider,
                    c.writers,
                    c.throughput,
                    ms(c.latencies.quantile_ms(0.95)),
                    c.retries,
                    c.refused,
                    c.lost,
                    c.naive.throughput,
                    ms(c.naive.latencies.quantile_ms(0.95)),
                    c.naive.lost
                );
            }
        }
        let _ = writeln!(
            md,
            "\n![throughput by writers](benchmarks/contention.svg)\n"
        );

        if !self.deployments.is_empty() {
            md.push_str(&deployments::markdown(self.deployments, a.samples));
        }
        if let Some(connections) = self.tls {
            md.push_str(&tls::markdown(connections, a.grown_adds));
        }

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

        if !self.recall.is_empty() {
            let _ = writeln!(md, "\n## Recall (vector)\n");
            let _ = writeln!(
                md,
                "One MEMORY.md grown to each size in turn; ingest counts the entries added since \
                 the previous size (embedding, LanceDB writes, index optimisation). A query is \
                 `memory_search`, k 8: the index query (embedding the query, vector and BM25 \
                 candidates, fusion by similarity and query-word coverage), then the entries' \
                 text from the source document. The index query is also timed alone; it reads \
                 the source document too, whose entries weigh the query's words.\n"
            );
            let _ = writeln!(
                md,
                "| entries | ingest entries/s | query p50 | query p95 | index query p50 | index query p95 |"
            );
            let _ = writeln!(md, "|---|---|---|---|---|---|");
            for r in self.recall {
                let _ = writeln!(
                    md,
                    "| {} | {:.0} | {} | {} | {} | {} |",
                    r.entries,
                    r.ingest_per_second,
                    ms(r.queries.quantile_ms(0.5)),
                    ms(r.queries.quantile_ms(0.95)),
                    ms(r.index_queries.quantile_ms(0.5)),
                    ms(r.index_queries.quantile_ms(0.95))
                );
            }
            let _ = writeln!(md, "\n![recall query latency](benchmarks/recall.svg)\n");
        }

        if !self.quality.is_empty() {
            let _ = writeln!(md, "## Recall quality (LoCoMo)\n");
            let _ = writeln!(
                md,
                "`memory-bench recall-eval` on the conversations in `{}` (the protocol is in \
                 that directory's README): one MEMORY.md per conversation, one entry per dialog \
                 turn or per observation, each question the query; recall@k is the share of \
                 the question's evidence turns among the top k. `hybrid` is what an agent's \
                 `memory_search` returns; `full-text` (LanceDB's BM25, stemmed, stop words \
                 dropped) and `vector` are its two halves alone.\n",
                self.args.recall_data.display()
            );
            for evaluated in self.quality {
                let _ = writeln!(md, "{}\n", evaluated.summary);
                let _ = writeln!(md, "{}", evaluated.table);
                let _ = writeln!(md, "{}\n", evaluated.timing);
            }
        }

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

    /// The performance goals (issue 22) against this run's figures, one row each, with whether
    /// the run met them. A figure this run did not measure is left out.
    fn goals(&self) -> String {
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

    /// The large-document section: history off and on where a revision's whole text would
    /// cost most, and what history holds in storage.
    fn large_documents(&self) -> String {
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

    /// The HTTP section: latency over HTTP beside in process, and load.
    fn http(&self) -> String {
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

    fn charts(&self, dir: &std::path::Path) -> Result<(), BoxError> {
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

/// One provider's growth: its name, and (KiB, sync p50 ms, prefetch p50 ms) per bucket.
type GrowthLine = (String, Vec<(f64, f64, f64)>);

/// Per provider, the medians per 2 KiB bucket of document size.
fn growth_buckets(measured: &[Measured]) -> Vec<GrowthLine> {
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

/// How this run was started, for the report to be reproduced: the script and the flags given.
fn command_line() -> String {
    std::iter::once("./scripts/bench".to_owned())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ")
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

/// The machine, toolchain and service versions, for the report's header.
async fn machine(args: &Args) -> String {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let memory_kib: u64 = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|l| l.trim().trim_end_matches(" kB").parse().ok())
        .unwrap_or(0);
    let run = |program: &str, arguments: &[&str]| {
        std::process::Command::new(program)
            .args(arguments)
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
            .unwrap_or_else(|| "unknown".to_owned())
    };
    let postgres = postgres_version(&args.postgres_url).await;
    let redis = redis_version(&args.redis_url).await;
    let date = run("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    format!(
        "Machine: {cpu}, {cores} cores, {:.0} GiB RAM, {} ({}); {}; commit {}; run {date}. \
         Services: {postgres}; Redis {redis}; both on 127.0.0.1. Markdown and the vector \
         index in a temp directory on the local disk.\n",
        memory_kib as f64 / 1024.0 / 1024.0,
        run("uname", &["-sr"]),
        run("uname", &["-m"]),
        run("rustc", &["--version"]),
        run("git", &["rev-parse", "--short", "HEAD"]),
    )
}

async fn postgres_version(url: &str) -> String {
    use sqlx::Connection;
    let Ok(mut db) = sqlx::PgConnection::connect(url).await else {
        return "PostgreSQL (unreachable)".to_owned();
    };
    sqlx::query_scalar::<_, String>("SHOW server_version")
        .fetch_one(&mut db)
        .await
        .map(|v| format!("PostgreSQL {v}"))
        .unwrap_or_else(|_| "PostgreSQL (version unknown)".to_owned())
}

async fn redis_version(url: &str) -> String {
    let info: Option<String> = async {
        let client = redis::Client::open(url).ok()?;
        let mut conn = client.get_multiplexed_async_connection().await.ok()?;
        redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await
            .ok()
    }
    .await;
    info.and_then(|info| {
        info.lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .map(str::to_owned)
    })
    .unwrap_or_else(|| "(version unknown)".to_owned())
}

#[cfg(test)]
mod tests {
    //! The report of fixed figures against the committed one, byte for byte: a change to its
    //! wording, layout or charts shows in the diff of `tests/report/`.

    use std::fmt::Write as _;
    use std::path::Path;

    use super::*;
    use crate::backends::Naive;
    use crate::http::{HttpMeasured, Load};
    use crate::workloads::LargeDocument;

    /// 100 samples whose p50 is `p50_ms`, p95 1.45 times it and p99 1.49 times it.
    fn samples(p50_ms: f64) -> Samples {
        let mut samples = Samples::default();
        for i in 1..=100 {
            samples.push(Duration::from_secs_f64(
                p50_ms * (0.5 + f64::from(i) / 100.0) / 1e3,
            ));
        }
        samples
    }

    fn large(seeded: usize, scale: f64) -> LargeDocument {
        LargeDocument {
            seeded,
            bytes: seeded + 7_500,
            adds: (samples(scale), samples(scale * 1.12)),
            cycles_per_second: (500.0 / scale, 450.0 / scale),
            history_bytes: seeded as u64 * 2 + 12_345,
        }
    }

    fn load(operation: &'static str, clients: usize, scale: f64, lost: usize) -> Load {
        Load {
            operation,
            clients,
            requests: 512 * clients,
            per_second: 3_000.0 * clients as f64 / scale,
            latencies: samples(scale * clients as f64),
            lost,
        }
    }

    fn contention(writers: usize, scale: f64, lost: usize) -> Contention {
        Contention {
            writers,
            throughput: 400.0 / scale / writers as f64,
            latencies: samples(scale * writers as f64),
            retries: 37 * writers as u64 - 37,
            refused: writers / 8,
            lost,
            naive: Naive {
                lost: writers * 3 - 3,
                throughput: 900.0 / scale,
                latencies: samples(scale / 2.0),
            },
        }
    }

    /// One provider's figures, `scale` times a base: from under a millisecond to over 100, so
    /// every precision of [`ms`] shows.
    fn measured(provider: &'static str, scale: f64) -> Measured {
        let storage = provider != "vector";
        Measured {
            provider,
            races: storage,
            floor: Floor {
                read_label: "read",
                // Redis's read floor is missing: its ratios say n/a.
                read: if provider == "redis" {
                    Samples::default()
                } else {
                    samples(scale * 0.5)
                },
                write_label: "durable write",
                write: samples(scale),
            },
            prefetch: vec![(1, samples(scale * 0.8)), (8, samples(scale * 2.0))],
            sync: samples(scale * 1.7),
            naive_sync: samples(scale * 0.9),
            history: storage.then(|| (samples(scale * 1.7), samples(scale * 1.9))),
            large: if storage {
                vec![large(1_572_864, scale), large(0, scale)]
            } else {
                Vec::new()
            },
            http: HttpMeasured {
                prefetch: (samples(scale), samples(scale + 0.15)),
                sync: (samples(2.0 * scale), samples(2.0 * scale + 0.25)),
                load: vec![
                    load("prefetch", 1, scale, 0),
                    load("prefetch", 16, scale, 0),
                    load("sync", 16, scale, usize::from(provider == "redis")),
                    load("mcp memory_view", 16, scale, 0),
                    load("mcp memory_add", 16, scale, 0),
                ],
                mcp_view: (samples(scale), samples(scale + 0.2)),
                mcp_add: (samples(2.0 * scale), samples(2.0 * scale + 0.4)),
            },
            contention: vec![contention(1, scale, 0), contention(16, scale, 0)],
            growth: (1..=30)
                .map(|i| {
                    let sync = Duration::from_secs_f64(scale * (1.0 + f64::from(i) / 30.0) / 1e3);
                    (i as usize * 200, sync, sync / 2)
                })
                .collect(),
        }
    }

    /// FNV-1a, 64 bits: a chart's fingerprint, stable across Rust releases.
    fn fingerprint(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
        })
    }

    /// `UPDATE_REPORT=1` rewrites the committed report and chart fingerprints.
    #[test]
    fn the_report_of_fixed_figures_is_the_committed_one() {
        let args = Args::try_parse_from([
            "memory-bench",
            "--providers",
            "markdown,postgres,redis,vector",
            "--samples",
            "200",
            "--prefetch-kib",
            "1,8",
            "--writers",
            "1,16",
            "--contention-adds",
            "256",
            "--growth-cap",
            "6000",
            "--large-bytes",
            "1572864",
            "--large-adds",
            "100",
            "--grown-adds",
            "100",
            "--recall-entries",
            "1000,10000",
            "--recall-queries",
            "50",
            "--model",
            "multilingual-e5-small",
            "--recall-data",
            "/data/locomo-dev",
        ])
        .unwrap();
        let measured = [
            measured("markdown", 0.05),
            measured("postgres", 1.2),
            measured("redis", 0.4),
            measured("vector", 30.0),
        ];
        let deployments = [
            deployments::Deployment {
                name: "postgres, directly".to_owned(),
                prefetch: samples(0.9),
                sync: samples(2.1),
            },
            deployments::Deployment {
                name: "postgres, through PgBouncer (transaction mode)".to_owned(),
                prefetch: samples(1.3),
                sync: samples(2.9),
            },
        ];
        let tls = [
            tls::Connection {
                name: "as the README's URL (sslmode=prefer)",
                tls: true,
                prefetch: samples(1.1),
                add: samples(2.6),
                cycles_per_second: 270.0,
            },
            tls::Connection {
                name: "sslmode=disable",
                tls: false,
                prefetch: samples(1.0),
                add: samples(2.2),
                cycles_per_second: 301.0,
            },
        ];
        let recall = [
            RecallRound {
                entries: 1_000,
                ingest_per_second: 44.4,
                queries: samples(47.7),
                index_queries: samples(41.0),
            },
            RecallRound {
                entries: 10_000,
                ingest_per_second: 38.2,
                queries: samples(150.4),
                index_queries: samples(120.0),
            },
        ];
        let quality = [recall_eval::Evaluated {
            summary: "recall-eval: data /data/locomo-dev, unit turn, ranking hybrid".to_owned(),
            table: "| category | questions | R@1 |\n| --- | --- | --- |\n| all | 3 | 0.333 |\n"
                .to_owned(),
            timing: "search latency (release build, hybrid ranking, k 25): p50 48.0 ms".to_owned(),
        }];
        let skipped = [(
            "redis cluster".to_owned(),
            "no seed nodes (--redis-cluster-urls)".to_owned(),
        )];
        let report = Report {
            machine: "Machine: a fixed one, for the test.\n".to_owned(),
            command_line: "./scripts/bench --samples 200".to_owned(),
            args: &args,
            measured: &measured,
            deployments: &deployments,
            tls: Some(&tls),
            recall: &recall,
            quality: &quality,
            skipped: &skipped,
            took: Duration::from_secs(754),
        };

        let charts = tempfile::tempdir().unwrap();
        report.charts(charts.path()).unwrap();
        let mut drawn: Vec<_> = std::fs::read_dir(charts.path())
            .unwrap()
            .map(|file| file.unwrap().path())
            .collect();
        drawn.sort();
        let mut fingerprints = String::new();
        for chart in &drawn {
            let svg = std::fs::read(chart).unwrap();
            let _ = writeln!(
                fingerprints,
                "{} {} bytes, FNV-1a {:016x}",
                chart.file_name().unwrap().to_string_lossy(),
                svg.len(),
                fingerprint(&svg)
            );
        }
        let markdown = report.markdown();

        let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/report");
        let (markdown_path, charts_path) = (
            committed.join("benchmarks.md"),
            committed.join("charts.txt"),
        );
        if std::env::var_os("UPDATE_REPORT").is_some() {
            std::fs::create_dir_all(&committed).unwrap();
            std::fs::write(&markdown_path, &markdown).unwrap();
            std::fs::write(&charts_path, &fingerprints).unwrap();
        }
        let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
        let update = "if the change is meant, rewrite it with UPDATE_REPORT=1 cargo nextest run \
                      --workspace --all-features --locked -E 'test(the_report_of_fixed_figures)'";
        let expected = read(&markdown_path);
        if let Some((line, (want, got))) = expected
            .lines()
            .zip(markdown.lines())
            .enumerate()
            .find(|(_, (want, got))| want != got)
        {
            panic!(
                "line {} of the report differs from tests/report/benchmarks.md:\n  committed: {want}\n  rendered:  {got}\n{update}",
                line + 1
            );
        }
        assert!(
            expected == markdown,
            "the report differs from tests/report/benchmarks.md in its length or line ends; {update}"
        );
        assert!(
            read(&charts_path) == fingerprints,
            "the charts differ from tests/report/charts.txt:\n{fingerprints}{update}"
        );
    }
}
