//! The benchmark end to end with tiny sizes, on markdown and on the vector provider with its
//! recall run: it runs, loses no update, and writes the report and its charts. (Speed is
//! printed by real runs, never asserted.)

use std::path::Path;
use std::process::Command;

/// Runs the benchmark with `flags` (space-separated) into `out`; returns the report.
fn run_bench(flags: &str, out: &Path) -> String {
    let run = Command::new(env!("CARGO_BIN_EXE_memory-bench"))
        .args(flags.split(' '))
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    std::fs::read_to_string(out.join("benchmarks.md")).unwrap()
}

#[test]
fn a_small_run_writes_the_report_and_the_charts() {
    let out = tempfile::tempdir().unwrap();
    let report = run_bench(
        "--providers markdown --samples 5 --prefetch-kib 1,2 --writers 1,4 \
         --contention-adds 16 --growth-cap 3000 --large-bytes 20000 --large-adds 5 \
         --grown-adds 10 --notes 40",
        out.path(),
    );
    for heading in [
        "## Prefetch",
        "## Sync of one add",
        "## Contention",
        "## The floor",
        "## Growth",
        "## History on large documents",
        "## Notes",
    ] {
        assert!(report.contains(heading), "{heading} missing:\n{report}");
    }
    // The notes section lists the scope it made, and the goals table judges it.
    assert!(
        report.contains("| markdown, listing 40 notes, p50 |"),
        "{report}"
    );
    let notes_row = report
        .lines()
        .find(|l| l.starts_with("| markdown | ") && l.matches('|').count() == 9)
        .unwrap_or_else(|| panic!("no notes row:\n{report}"));
    assert!(notes_row.contains('×'), "{notes_row}");
    // A row for the large document and one for the grown one, each with its history's bytes.
    let large: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("| markdown | 0.02 MB + 5 adds |"))
        .chain(
            report
                .lines()
                .filter(|l| l.starts_with("| markdown | empty + 10 adds |")),
        )
        .collect();
    assert_eq!(large.len(), 2, "{report}");
    // One row per contention level; an acknowledged add is never lost (bold zero).
    let rows: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("| markdown | 1 |") || l.starts_with("| markdown | 4 |"))
        .collect();
    assert_eq!(rows.len(), 2, "{report}");
    assert!(rows.iter().all(|row| row.contains("| **0** |")), "{rows:?}");
    assert!(report.contains("| markdown | file read |"), "{report}");
    assert!(
        report.contains("One run of `./scripts/bench --providers markdown --samples 5 "),
        "the report names the command it came from:\n{report}"
    );
    for chart in ["prefetch", "contention", "growth-sync", "growth-prefetch"] {
        let svg =
            std::fs::read_to_string(out.path().join(format!("benchmarks/{chart}.svg"))).unwrap();
        assert!(svg.contains("<svg") && svg.contains("markdown"), "{chart}");
    }
}

#[test]
fn a_small_vector_run_reports_recall_at_each_size() {
    let out = tempfile::tempdir().unwrap();
    // A two-turn conversation in the LoCoMo format, for the recall quality section.
    let data = out.path().join("locomo");
    std::fs::create_dir_all(&data).unwrap();
    let turn = |id: &str, text: &str| {
        format!(r#"{{"conv_id": "c", "dia_id": "{id}", "speaker": "Ann", "text": "{text}"}}"#)
    };
    let files = [
        (
            "turns.jsonl",
            [turn("D1:1", "My cat is called Pixel."), turn("D1:2", "I run on Mondays.")].join("\n"),
        ),
        (
            "observations.jsonl",
            r#"{"conv_id": "c", "text": "Ann has a cat named Pixel.", "dia_ids": ["D1:1"]}"#
                .to_owned(),
        ),
        (
            "queries.jsonl",
            r#"{"conv_id": "c", "qid": "q0", "question": "What is the cat called?", "category": 4, "category_name": "single-hop", "evidence": ["D1:1"]}"#
                .to_owned(),
        ),
    ];
    for (name, text) in files {
        std::fs::write(data.join(name), text + "\n").unwrap();
    }
    let report = run_bench(
        &format!(
            "--providers vector --samples 3 --prefetch-kib 1 --writers 1,2 --contention-adds 4 \
             --growth-cap 600 --notes 12 --recall-entries 20,60 --recall-queries 3 --recall-data {}",
            data.display()
        ),
        out.path(),
    );
    assert!(report.contains("## Recall (vector)"), "{report}");
    assert!(
        report.contains("3 queries each, embedded by multilingual-e5-small."),
        "{report}"
    );
    assert!(!report.contains("was not measured"), "{report}");
    assert!(report.contains("## Recall quality (LoCoMo)"), "{report}");
    for unit in ["turn", "observation"] {
        for ranking in ["hybrid", "full-text", "vector"] {
            let weight = if ranking == "hybrid" {
                format!(
                    " (vector weight {})",
                    memory_vector::ModelName::default().vector_weight()
                )
            } else {
                String::new()
            };
            let summary = format!("unit {unit}, ranking {ranking}{weight}, conversations c,");
            assert!(report.contains(&summary), "{summary}\n{report}");
        }
    }
    assert_eq!(
        report.matches("| 4 single-hop | 1 |").count(),
        6,
        "{report}"
    );
    // One row per size: entries, ingest, then search and index-only query p50 and p95.
    for size in ["20", "60"] {
        let row = report
            .lines()
            .find(|l| l.starts_with(&format!("| {size} | ")))
            .unwrap_or_else(|| panic!("no recall row for {size}:\n{report}"));
        assert_eq!(row.matches('|').count(), 7, "{row}");
    }
    let svg = std::fs::read_to_string(out.path().join("benchmarks/recall.svg")).unwrap();
    assert!(svg.contains("memory_search p50") && svg.contains("index query p50"));
}

#[test]
fn an_unknown_provider_is_refused_by_name() {
    let run = Command::new(env!("CARGO_BIN_EXE_memory-bench"))
        .args(["--providers", "mongodb", "--out", "/nonexistent"])
        .output()
        .unwrap();
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("unknown provider \"mongodb\""), "{stderr}");
}

#[test]
fn zero_writers_are_refused_naming_the_flag() {
    let run = Command::new(env!("CARGO_BIN_EXE_memory-bench"))
        .args([
            "--providers",
            "markdown",
            "--writers",
            "4,0",
            "--out",
            "/nonexistent",
        ])
        .output()
        .unwrap();
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(stderr.trim(), "error: --writers must be at least 1");
}
