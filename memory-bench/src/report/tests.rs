//! The report of fixed figures against the committed one, byte for byte: a change to its
//! wording, layout or charts shows in the diff of `tests/report/`.

use std::path::Path;

use clap::Parser;

use super::*;
use crate::backends::Naive;
use crate::http::Load;
use crate::recall_eval;

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
        notes: NotesMeasured {
            document_add: samples(scale * 1.7),
            note_add: samples(scale * 1.9),
            listed: 1000,
            listing: samples(scale * 3.0),
            prefetch_without: samples(scale * 0.8),
            prefetch_with: samples(scale * 0.9),
        },
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
        Deployment {
            name: "postgres, directly".to_owned(),
            prefetch: samples(0.9),
            sync: samples(2.1),
        },
        Deployment {
            name: "postgres, through PgBouncer (transaction mode)".to_owned(),
            prefetch: samples(1.3),
            sync: samples(2.9),
        },
    ];
    let tls = [
        Connection {
            name: "as the README's URL (sslmode=prefer)",
            tls: true,
            prefetch: samples(1.1),
            add: samples(2.6),
            cycles_per_second: 270.0,
        },
        Connection {
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
