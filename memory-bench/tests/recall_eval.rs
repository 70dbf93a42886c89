//! `memory-bench recall-eval` end to end on a tiny made-up conversation written here (the real
//! data is CC BY-NC and stays out of the repository): it prints the table per category and
//! names bad input by file and line. Figures are printed by real runs, never asserted, except
//! where a tiny index makes them certain (k above the entry count finds everything).

use std::path::Path;
use std::process::{Command, Output};

const TURNS: &str = r#"{"conv_id": "conv-1", "dia_id": "D1:1", "speaker": "Ann", "text": "I adopted a grey cat called Pixel last week.", "blip_caption": "a photo of a grey cat on a sofa"}
{"conv_id": "conv-1", "dia_id": "D1:2", "speaker": "Bo", "text": "My marathon training\nstarts on Monday.", "blip_caption": null}
{"conv_id": "conv-1", "dia_id": "D1:3", "speaker": "Ann", "text": "Good luck!", "blip_caption": null}
{"conv_id": "conv-1", "dia_id": "D2:1", "speaker": "Ann", "text": "Good luck!", "blip_caption": null}
{"conv_id": "conv-2", "dia_id": "D1:1", "speaker": "Cy", "text": "I moved to Lisbon for a new job.", "blip_caption": null}
"#;

const OBSERVATIONS: &str = r#"{"conv_id": "conv-1", "position": 0, "text": "Ann adopted a grey cat named Pixel.", "dia_ids": ["D1:1"]}
{"conv_id": "conv-1", "position": 1, "text": "Bo starts marathon training on Monday.", "dia_ids": ["D1:2", "D2:1"]}
{"conv_id": "conv-2", "position": 0, "text": "Cy moved to Lisbon for a new job.", "dia_ids": ["D1:1"]}
"#;

const QUERIES: &str = r#"{"conv_id": "conv-1", "qid": "conv-1/q0", "question": "What is the name of Ann's cat?", "answer": "Pixel", "category": 4, "category_name": "single-hop", "evidence": ["D1:1"]}
{"conv_id": "conv-1", "qid": "conv-1/q1", "question": "When does Bo start training?", "answer": "Monday", "category": 2, "category_name": "temporal", "evidence": ["D1:2", "D2:1"]}
{"conv_id": "conv-1", "qid": "conv-1/q2", "question": "What did nobody say?", "answer": null, "category": 5, "category_name": "adversarial", "evidence": []}
{"conv_id": "conv-2", "qid": "conv-2/q0", "question": "Where did Cy move?", "answer": "Lisbon", "category": 4, "category_name": "single-hop", "evidence": ["D1:1"]}
"#;

fn write_data(dir: &Path, queries: &str) {
    std::fs::write(dir.join("turns.jsonl"), TURNS).unwrap();
    std::fs::write(dir.join("observations.jsonl"), OBSERVATIONS).unwrap();
    std::fs::write(dir.join("queries.jsonl"), queries).unwrap();
}

fn recall_eval(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memory-bench"))
        .arg("recall-eval")
        .args(args)
        // The benchmark's flags read these; they must not clash with the subcommand.
        .env(
            "MEMORY_TEST_POSTGRES_URL",
            "postgres://nobody@127.0.0.1:1/none",
        )
        .env("MEMORY_TEST_REDIS_URL", "redis://127.0.0.1:1")
        .output()
        .unwrap()
}

#[test]
fn a_tiny_conversation_is_scored_per_category_for_both_units_and_each_ranking() {
    let data = tempfile::tempdir().unwrap();
    write_data(data.path(), QUERIES);
    let dir = data.path().to_str().unwrap();
    for (unit, ranking, vector_weight, entries) in [
        ("turn", "hybrid", None, "4 entries (3 distinct texts)"),
        ("observation", "hybrid", None, "2 entries"),
        (
            "turn",
            "hybrid",
            Some("0.25"),
            "4 entries (3 distinct texts)",
        ),
        ("turn", "vector", None, "4 entries (3 distinct texts)"),
        ("turn", "full-text", None, "4 entries (3 distinct texts)"),
    ] {
        let mut args = vec![
            "--data",
            dir,
            "--unit",
            unit,
            "--ranking",
            ranking,
            "--k",
            "8",
            "--conversations",
            "conv-1",
        ];
        args.extend(vector_weight.iter().flat_map(|w| ["--vector-weight", *w]));
        let run = recall_eval(&args);
        let weight = match (ranking, vector_weight) {
            ("hybrid", Some(w)) => format!(" (vector weight {w})"),
            ("hybrid", None) => format!(
                " (vector weight {})",
                memory_vector::ModelName::default().vector_weight()
            ),
            _ => String::new(),
        };
        let (stdout, stderr) = (
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr),
        );
        assert!(run.status.success(), "{unit}: {stderr}");
        assert!(
            stdout.contains(&format!(
                "unit {unit}, ranking {ranking}{weight}, conversations conv-1, {entries}"
            )),
            "{stdout}"
        );
        assert!(
            stdout.contains("2 questions, k 8 (questions without evidence skipped: 1)"),
            "{stdout}"
        );
        assert!(stdout.contains("| category | questions | R@1 | R@5 | R@8 |"));
        assert!(stdout.contains("| 2 temporal | 1 | "), "{stdout}");
        assert!(stdout.contains("| 4 single-hop | 1 | "), "{stdout}");
        assert!(!stdout.contains("adversarial"), "{stdout}");
        // With k above the entry count, everything is returned: the duplicated "Good luck!"
        // counts for both its turns, an observation for every turn it was drawn from. BM25
        // alone returns only entries sharing a word with the question, and "Good luck!" (the
        // second evidence turn of the temporal question) shares none.
        let expected = if ranking == "full-text" {
            "| 0.750 |"
        } else {
            "| 1.000 |"
        };
        let all = stdout.lines().find(|l| l.starts_with("| all | 2 |"));
        assert!(all.is_some_and(|l| l.ends_with(expected)), "{stdout}");
        assert!(stdout.contains("search latency") && stdout.contains("indexing"));
    }
}

#[test]
fn bad_input_is_named_by_file_and_line_without_a_panic() {
    let data = tempfile::tempdir().unwrap();
    let broken = QUERIES.replacen("\"category\": 2,", "\"category\": \"two\",", 1);
    write_data(data.path(), &broken);
    let dir = data.path().to_str().unwrap();
    let run = recall_eval(&["--data", dir]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(stderr.contains("queries.jsonl:2: invalid type"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let run = recall_eval(&["--data", "/nonexistent/locomo"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(
        stderr.contains("/nonexistent/locomo/turns.jsonl: "),
        "{stderr}"
    );

    write_data(data.path(), QUERIES);
    let run = recall_eval(&["--data", dir, "--conversations", "conv-9"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("no entries for conversation \"conv-9\""),
        "{stderr}"
    );
    let run = recall_eval(&["--data", dir, "--k", "0"]);
    assert!(String::from_utf8_lossy(&run.stderr).contains("--k must be at least 1"));
    let run = recall_eval(&["--data", dir, "--vector-weight", "2"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(stderr.contains("recall.vector_weight is 2"), "{stderr}");
}

#[test]
fn the_benchmark_flags_do_not_mix_with_the_subcommand() {
    let run = Command::new(env!("CARGO_BIN_EXE_memory-bench"))
        .args(["--samples", "5", "recall-eval", "--data", "/nonexistent"])
        .output()
        .unwrap();
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("recall-eval"), "{stderr}");
}
