//! The benchmark's run: each provider opened and measured in turn (floor, prefetch, sync,
//! history, HTTP, contention, growth), then the deployments, PostgreSQL over TLS, recall at
//! each size and recall quality, and the report written from what was measured.

use std::sync::Arc;
use std::time::Instant;

use memory_vector::{Embedder, ModelConfig, ModelName};

use crate::args::Args;
use crate::backends::{Backend, BoxError};
use crate::report::{Measured, Report};
use crate::{backends, deployments, http, recall_eval, report, tls, workloads};

pub async fn run(args: Args) -> Result<(), BoxError> {
    args.check()?;
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

    if args.notes_only {
        return notes_only(&backends, &args).await;
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
    let (deployments, unreached) = deployments::measure(&targets, &run_id, args.samples, |name| {
        progress("deployments", name)
    })
    .await;
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
        machine: report::machine(&args).await,
        command_line: report::command_line(),
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

/// `--notes-only`: the notes section of each backend, printed.
async fn notes_only(backends: &[Backend], args: &Args) -> Result<(), BoxError> {
    let mut measured = Vec::new();
    for backend in backends {
        let name = backend.name();
        progress(name, &format!("notes: adds, a scope of {}", args.notes));
        let result = async {
            let (provider, _index) = backend.open_with_index().await?;
            Ok::<_, BoxError>(workloads::notes(&*provider, args.samples, args.notes).await?)
        }
        .await;
        if let Err(err) = backends::clean_up(backend).await {
            eprintln!("!!! could not clean up after {name}: {err}");
        }
        measured.push((name, result?));
    }
    let rows: Vec<(&str, &workloads::NotesMeasured)> =
        measured.iter().map(|(name, m)| (*name, m)).collect();
    print!("{}", report::notes_section(args.notes, &rows));
    Ok(())
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
    progress(name, &format!("notes: adds, a scope of {}", args.notes));
    let notes = workloads::notes(&*provider, args.samples, args.notes).await?;
    settled().await;
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
        notes,
        growth,
    })
}
