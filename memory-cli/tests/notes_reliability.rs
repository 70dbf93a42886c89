//! Eight `memory` processes creating, editing, renaming and deleting notes in one scope at
//! once, on markdown, PostgreSQL and Redis, a share of them killed with SIGKILL mid-call and
//! run again with the same idempotency key: every acknowledged write is there exactly once, no
//! note is lost or duplicated by a rename, and of the writers racing to create one path
//! exactly one wins (docs/reliability.md).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use memory_conformance::services::{Service, unique_name};
use serde_json::{Value, json};

const WRITERS: usize = 8;
/// Calls per writer: its own notes' creates, adds, renames and deletes, and a race with the
/// others every few calls.
const CALLS: usize = 24;
/// The share of runs killed, in percent.
const KILLED_PERCENT: u64 = 30;

/// A small deterministic generator (xorshift), seeded per writer.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One run of `memory sync` with `updates` under `key`, killed after `kill` when given:
/// `None` when it was killed, else its exit code and stderr.
fn run_sync(
    config: &Path,
    key: &str,
    updates: &Value,
    kill: Option<Duration>,
) -> Option<(i32, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_memory"))
        .arg("--config")
        .arg(config)
        .args([
            "sync",
            "--personality",
            "ada",
            "--user",
            "grace",
            "--idempotency-key",
            key,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("memory runs");
    // A killed child closes its end early: the kill is seen below.
    let _ = child
        .stdin
        .take()
        .expect("piped")
        .write_all(updates.to_string().as_bytes());
    if let Some(delay) = kill {
        std::thread::sleep(delay);
        if child.try_wait().expect("waits").is_none() {
            child.kill().expect("SIGKILL is sent");
        }
    }
    let output = child.wait_with_output().expect("waits");
    match output.status.signal() {
        Some(9) => None,
        Some(other) => panic!("{key}: memory died of signal {other}"),
        None => Some((
            output.status.code().expect("an exit code"),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )),
    }
}

/// What one writer did: its notes as they must be (path → text), the races it won, and how
/// many of its runs were killed.
#[derive(Default)]
struct Outcome {
    notes: BTreeMap<String, String>,
    won: Vec<String>,
    kills: u64,
}

/// One writer: each call run (a share of the runs killed) until it exits, the same key on
/// every run, so a killed call that landed is replayed, not applied again.
fn writer(config: &Path, run: &str, w: usize) -> Outcome {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ((w as u64 + 1) * 0x2545_f491));
    let mut outcome = Outcome::default();
    let mut next = 0;
    for call in 0..CALLS {
        let key = format!("{run}-w{w}-c{call}");
        let mine: Vec<String> = outcome.notes.keys().cloned().collect();
        let (updates, race) = match (call % 6, mine.as_slice()) {
            (5, _) => {
                let path = format!("race/{}.md", call / 6);
                let text = format!("won by w{w}");
                (
                    json!([{"action": "create", "store": "memory", "note": path, "content": text}]),
                    Some((path, text)),
                )
            }
            (_, []) | (0 | 1, _) => {
                next += 1;
                let path = format!("w{w}/n{next}.md");
                let text = format!("w{w} note {next} line 1");
                outcome.notes.insert(path.clone(), format!("{text}\n"));
                (
                    json!([{"action": "create", "store": "memory", "note": path, "content": text}]),
                    None,
                )
            }
            (2, paths) => {
                let path = paths[rng.below(paths.len() as u64) as usize].clone();
                let line = format!("w{w} call {call}");
                let text = outcome.notes.get_mut(&path).expect("its own note");
                text.push_str(&format!("\n{line}\n"));
                (
                    json!([{"action": "add", "store": "memory", "note": path, "content": line}]),
                    None,
                )
            }
            (3, paths) => {
                let path = paths[rng.below(paths.len() as u64) as usize].clone();
                next += 1;
                let to = format!("w{w}/moved/n{next}.md");
                let text = outcome.notes.remove(&path).expect("its own note");
                outcome.notes.insert(to.clone(), text);
                (
                    json!([{"action": "rename", "store": "memory", "note": path, "to": to}]),
                    None,
                )
            }
            (_, paths) => {
                let path = paths[rng.below(paths.len() as u64) as usize].clone();
                outcome.notes.remove(&path);
                (
                    json!([{"action": "delete", "store": "memory", "note": path}]),
                    None,
                )
            }
        };
        let result = loop {
            let kill =
                (rng.below(100) < KILLED_PERCENT).then(|| Duration::from_millis(rng.below(40)));
            match run_sync(config, &key, &updates, kill) {
                Some(result) => break result,
                None => outcome.kills += 1,
            }
        };
        match (result, race) {
            ((0, _), Some((path, _))) => outcome.won.push(path),
            ((3, stderr), Some(_)) => {
                assert!(
                    stderr.contains("exists") || stderr.contains("collides"),
                    "{key}: {stderr}"
                )
            }
            ((0, _), None) => {}
            ((code, stderr), _) => panic!("{key}: exit {code}: {stderr}"),
        }
    }
    outcome
}

/// The notes of ada's scope as `memory notes` lists and reads them.
fn stored(config: &Path) -> BTreeMap<String, String> {
    let memory = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_memory"));
        command.arg("--config").arg(config);
        command
    };
    let listed = memory()
        .args(["notes", "list", "personalities/ada/notes", "--json"])
        .output()
        .expect("memory runs");
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let listed: Vec<Value> = serde_json::from_slice(&listed.stdout).expect("JSON");
    listed
        .iter()
        .map(|note| {
            let path = note["path"].as_str().expect("a path").to_owned();
            let read = memory()
                .args(["notes", "cat", &format!("personalities/ada/notes/{path}")])
                .output()
                .expect("memory runs");
            assert!(
                read.status.success(),
                "{}",
                String::from_utf8_lossy(&read.stderr)
            );
            (path, String::from_utf8(read.stdout).expect("UTF-8"))
        })
        .collect()
}

/// The run on one backend, given the body of its provider table.
fn eight_writers_on(name: &str, table: &str) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("memory.toml");
    std::fs::write(&config, format!("[providers.{name}]\n{table}\n")).unwrap();
    let run = unique_name("notes");
    let outcomes: Vec<Outcome> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (config, run) = (&config, &run);
                scope.spawn(move || writer(config, run, w))
            })
            .collect();
        writers
            .into_iter()
            .map(|w| w.join().expect("a writer"))
            .collect()
    });
    let mut expected = BTreeMap::new();
    let mut winners: BTreeMap<String, usize> = BTreeMap::new();
    for outcome in &outcomes {
        expected.extend(outcome.notes.clone());
        for path in &outcome.won {
            *winners.entry(path.clone()).or_default() += 1;
        }
    }
    let races = CALLS / 6;
    assert_eq!(
        winners.len(),
        races,
        "{name}: every race has a winner: {winners:?}"
    );
    assert!(
        winners.values().all(|&n| n == 1),
        "{name}: one winner each: {winners:?}"
    );
    let stored = stored(&config);
    let (races_stored, own): (BTreeMap<_, _>, BTreeMap<_, _>) = stored
        .into_iter()
        .partition(|(path, _)| path.starts_with("race/"));
    assert_eq!(
        own, expected,
        "{name}: every acknowledged write, once; nothing else"
    );
    assert_eq!(races_stored.len(), races, "{name}");
    for (outcome, w) in outcomes.iter().zip(0..) {
        for path in &outcome.won {
            assert_eq!(
                races_stored[path],
                format!("won by w{w}\n"),
                "{name}: {path}"
            );
        }
    }
    let kills: u64 = outcomes.iter().map(|o| o.kills).sum();
    eprintln!(
        "{name}: {WRITERS} writers, {} calls, {kills} runs killed, {} notes at the end, {races} races with one winner each",
        WRITERS * CALLS,
        expected.len()
    );
}

#[test]
fn eight_writers_killed_mid_call_lose_and_duplicate_no_note_on_markdown() {
    eight_writers_on("files", "kind = \"markdown\"\nroot = \"root\"");
}

#[test]
fn eight_writers_killed_mid_call_lose_and_duplicate_no_note_on_postgres() {
    let Some(url) = Service::Postgres.url() else {
        return;
    };
    let schema = unique_name("notes_rel").replace('-', "_");
    eight_writers_on(
        "pg",
        &format!("kind = \"postgres\"\nurl = \"{url}\"\nschema = \"{schema}\""),
    );
    let _ = Command::new("psql")
        .env("PGOPTIONS", "--client-min-messages=warning")
        .arg(&url)
        .args([
            "-qc",
            &format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"),
        ])
        .status();
}

#[test]
fn eight_writers_killed_mid_call_lose_and_duplicate_no_note_on_redis() {
    let Some(url) = Service::Redis.url() else {
        return;
    };
    let prefix = unique_name("notes-rel");
    eight_writers_on(
        "redis",
        &format!("kind = \"redis\"\nurl = \"{url}\"\nprefix = \"{prefix}\""),
    );
}
