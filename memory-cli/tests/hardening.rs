//! The `memory` command under what a new user's machine throws at it: a missing argument, a
//! closed pipe, a clock before 1970, a command repeated after a crash.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, UNIX_EPOCH};

use common::memory;
use serde_json::Value;

mod common;

#[test]
fn a_missing_argument_is_named_on_the_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = memory(dir.path())
        .args(["sync", "--personality", "ok"])
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--user"),
        "the line names what is missing: {stderr}"
    );
    assert!(stderr.contains("see memory --help"), "{stderr}");
}

#[test]
fn a_reader_that_stops_early_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    // Larger than a pipe's buffer, so the write meets the closed pipe whenever it happens.
    let big = "A line of memory that goes on for a while.\n".repeat(4_000);
    let file = dir.path().join("personalities/ada/MEMORY.md");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, &big).unwrap();

    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("memory"))
        .args(["cat", "personalities/ada/MEMORY.md"])
        .env("MEMORY_ROOT", dir.path())
        .env_remove("MEMORY_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    let mut stdout = child.stdout.take().unwrap();
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(status.code(), Some(0), "{stderr}");
}

/// A file time before 1970 (a clock set far back) is shown as unknown on every surface, never
/// as 1970: `unknown` in text, `null` for `modified` and a revision's `time` in JSON (the CLI's `--json` and the HTTP
/// API alike), which the API allows (milliseconds from 0, or null) and no JSON client reads as
/// a date.
#[test]
fn a_file_time_before_1970_is_shown_as_unknown_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("personalities/ada/MEMORY.md");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "Likes tea.\n").unwrap();
    let before_1970 = UNIX_EPOCH - Duration::from_secs(86_400);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(before_1970)
        .unwrap();

    let run = |args: &[&str]| {
        let out = memory(dir.path()).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        (String::from_utf8(out.stdout).unwrap(), stderr)
    };
    let (_, stderr) = run(&["cat", "personalities/ada/MEMORY.md"]);
    assert!(stderr.contains("modified unknown"), "{stderr}");
    let (shown, _) = run(&["show", "--personality", "ada", "--user", "grace"]);
    assert!(shown.contains("Likes tea."), "{shown}");

    let (stdout, _) = run(&["show", "--personality", "ada", "--user", "grace", "--json"]);
    let shown: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(shown["memory"]["text"], "Likes tea.\n");
    assert_eq!(shown["memory"]["modified"], Value::Null, "{shown}");
    let (stdout, _) = run(&["cat", "personalities/ada/MEMORY.md", "--json"]);
    let cat: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(cat["text"], "Likes tea.\n");
    assert_eq!(cat["modified"], Value::Null, "{cat}");

    let config_dir = tempfile::tempdir().unwrap();
    let config = common::write_config(
        config_dir.path(),
        &format!(
            "[providers.files]\nkind = \"markdown\"\nroot = {:?}\n",
            dir.path().to_str().unwrap()
        ),
    );
    let server = common::Server::start(&config);
    let (status, body) = server.request("GET", "/v1/documents/personalities/ada/MEMORY.md", None);
    assert!(status.contains(" 200 "), "{status}: {body}");
    let document: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(document["text"], "Likes tea.\n");
    assert_eq!(
        document.get("modified"),
        Some(&Value::Null),
        "HTTP says null too: {document}"
    );
    // The hand edit is a revision dated by the file's time: null before it is recorded, and
    // still null once a write has recorded it in the journal (not 0, read back as 1970).
    let log = || -> Vec<Value> {
        let (stdout, _) = run(&["log", "personalities/ada/MEMORY.md", "--json"]);
        serde_json::from_str(&stdout).unwrap()
    };
    let unrecorded = log();
    assert_eq!(unrecorded.len(), 1, "{unrecorded:?}");
    assert_eq!(unrecorded[0]["surface"], "external");
    assert_eq!(unrecorded[0]["time"], Value::Null, "{unrecorded:?}");
    assert_eq!(unrecorded[0]["time_utc"], "unknown (out of range)");
    let out = memory(dir.path())
        .args(["sync", "--personality", "ada", "--user", "grace"])
        .write_stdin(r#"[{"action":"add","store":"memory","content":"Likes green tea."}]"#)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let recorded = log();
    assert_eq!(recorded.len(), 2, "{recorded:?}");
    assert_eq!(
        (&recorded[1]["number"], &recorded[1]["surface"]),
        (&Value::from(1), &Value::from("external"))
    );
    assert_eq!(recorded[1]["time"], Value::Null, "{recorded:?}");
    assert_eq!(recorded[1]["time_utc"], "unknown (out of range)");
    assert!(
        recorded[0]["time"]
            .as_u64()
            .is_some_and(|millis| millis > 0),
        "{recorded:?}"
    );
    let (listed, _) = run(&["log", "personalities/ada/MEMORY.md"]);
    assert!(listed.contains("unknown (out of range)"), "{listed}");

    let (status, body) = server.request(
        "GET",
        "/v1/documents/personalities/ada/MEMORY.md/revisions",
        None,
    );
    assert!(status.contains(" 200 "), "{status}: {body}");
    let page: Value = serde_json::from_str(&body).unwrap();
    let revisions = page["revisions"].as_array().unwrap();
    assert_eq!(revisions.len(), 2, "{page}");
    assert_eq!(revisions[1]["time"], Value::Null, "{page}");
    assert!(revisions[0]["time"].as_u64().is_some(), "{page}");
}

#[test]
fn a_sync_repeated_with_its_key_applies_once() {
    let dir = tempfile::tempdir().unwrap();
    let sync = |key: &str| {
        let out = memory(dir.path())
            .args(["sync", "--personality", "ada", "--user", "grace"])
            .args(["--idempotency-key", key])
            .write_stdin(r#"[{"action":"add","store":"memory","content":"Paid the deposit."}]"#)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let first = sync("booking-7");
    let mut again = sync("booking-7");
    let replayed = again["documents"][0]
        .as_object_mut()
        .unwrap()
        .remove("replayed");
    assert_eq!(replayed, Some(Value::Bool(true)), "marked as a replay");
    assert_eq!(
        first["documents"], again["documents"],
        "otherwise the first call's report"
    );
    let text = std::fs::read_to_string(dir.path().join("personalities/ada/MEMORY.md")).unwrap();
    assert_eq!(text, "Paid the deposit.\n");
    sync("booking-8");
    let text = std::fs::read_to_string(dir.path().join("personalities/ada/MEMORY.md")).unwrap();
    assert_eq!(
        text.matches("Paid the deposit.").count(),
        2,
        "another key, another call"
    );

    let out = memory(dir.path())
        .args(["sync", "--personality", "ada", "--user", "grace"])
        .args(["--idempotency-key", "has space"])
        .write_stdin("[]")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("invalid idempotency key"), "{stderr}");
}
