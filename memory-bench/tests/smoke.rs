//! The benchmark end to end on markdown with tiny sizes: it runs, loses no update, and writes
//! the report and its charts. (Speed is printed by real runs, never asserted.)

use std::process::Command;

#[test]
fn a_small_run_writes_the_report_and_the_charts() {
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_memory-bench"))
        .args([
            "--providers",
            "markdown",
            "--samples",
            "5",
            "--prefetch-kib",
            "1,2",
        ])
        .args([
            "--writers",
            "1,4",
            "--contention-adds",
            "16",
            "--growth-cap",
            "3000",
        ])
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");

    let report = std::fs::read_to_string(out.path().join("benchmarks.md")).unwrap();
    for heading in [
        "## Prefetch",
        "## Sync of one add",
        "## Contention",
        "## The floor",
        "## Growth",
    ] {
        assert!(report.contains(heading), "{heading} missing:\n{report}");
    }
    // One row per contention level; an acknowledged add is never lost (bold zero).
    let rows: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("| markdown | 1 |") || l.starts_with("| markdown | 4 |"))
        .collect();
    assert_eq!(rows.len(), 2, "{report}");
    assert!(rows.iter().all(|row| row.contains("| **0** |")), "{rows:?}");
    assert!(report.contains("| markdown | file read |"), "{report}");
    for chart in ["prefetch", "contention", "growth-sync", "growth-prefetch"] {
        let svg =
            std::fs::read_to_string(out.path().join(format!("benchmarks/{chart}.svg"))).unwrap();
        assert!(svg.contains("<svg") && svg.contains("markdown"), "{chart}");
    }
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
