//! `memory notes` end to end on a fresh markdown root: the files a person opens are the notes
//! the agent lists, every command writes through the agent's write path, and bad input writes
//! nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{memory, run, snapshot};
use serde_json::Value;

mod common;

fn notes(root: &Path, args: &[&str]) -> (i32, String, String) {
    run(memory(root).arg("notes").args(args))
}

fn ok(result: (i32, String, String)) -> String {
    let (code, stdout, stderr) = result;
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    stdout
}

const ADA: &str = "personalities/ada/notes";

#[test]
fn notes_are_listed_edited_moved_removed_and_logged() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    let created = run(memory(dir)
        .args(["sync", "--personality", "ada", "--user", "grace"])
        .write_stdin(
            r##"[{"action":"create","store":"memory","note":"trips/kyoto.md","content":"# Kyoto\nTemples first."}]"##,
        ));
    ok(created);
    // A note a person writes by hand is a note like the rest.
    std::fs::write(dir.join(ADA).join("inbox.md"), "Call the ryokan.\n").unwrap();

    let listed = ok(notes(dir, &["list", ADA]));
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert!(
        lines[0].starts_with("inbox.md ") && lines[0].ends_with("Call the ryokan."),
        "{listed}"
    );
    assert!(
        lines[1].starts_with("trips/kyoto.md ") && lines[1].contains("23 bytes"),
        "{listed}"
    );
    let json: Value = serde_json::from_str(&ok(notes(
        dir,
        &["list", ADA, "--json", "--prefix", "trips/"],
    )))
    .unwrap();
    assert_eq!(json.as_array().unwrap().len(), 1);
    assert_eq!(json[0]["path"], "trips/kyoto.md");
    assert_eq!(json[0]["description"], "Kyoto");

    let kyoto = format!("{ADA}/trips/kyoto.md");
    assert_eq!(
        ok(notes(dir, &["cat", &kyoto])),
        "# Kyoto\nTemples first.\n"
    );
    let edited = run(memory(dir)
        .args(["notes", "edit", &kyoto, "--file", "-"])
        .write_stdin("# Kyoto\nShrines first."));
    assert!(ok(edited).contains("23 bytes → 23 bytes"));
    // With an editor: what it saves is written.
    ok(run(memory(dir)
        .env("EDITOR", "sed -i s/Shrines/Gardens/")
        .args(["notes", "edit", &kyoto])));
    assert_eq!(
        std::fs::read_to_string(dir.join(&kyoto)).unwrap(),
        "# Kyoto\nGardens first.\n"
    );

    ok(notes(dir, &["move", &kyoto, "japan/kyoto.md"]));
    let moved = format!("{ADA}/japan/kyoto.md");
    assert!(!dir.join(&kyoto).exists(), "the old file is gone");
    assert_eq!(
        std::fs::read_to_string(dir.join(&moved)).unwrap(),
        "# Kyoto\nGardens first.\n"
    );
    ok(notes(dir, &["remove", &moved]));
    assert!(
        !dir.join(&moved).exists(),
        "a removed note leaves its folder"
    );
    assert_eq!(ok(notes(dir, &["list", ADA])).lines().count(), 1);

    // The log follows the move back to the note's first revision, and revert restores it.
    let log = ok(notes(dir, &["log", &moved]));
    let actions: Vec<&str> = log
        .lines()
        .map(|line| {
            line.split_whitespace()
                .find(|word| ["create", "replace", "rename", "delete"].contains(word))
                .unwrap_or("?")
        })
        .collect();
    assert_eq!(
        actions,
        ["delete", "rename", "rename", "replace", "replace", "create"],
        "{log}"
    );
    assert!(
        log.lines().nth(2).unwrap().ends_with(&format!("[{kyoto}]")),
        "{log}"
    );
    ok(run(memory(dir).args(["revert", &moved, "1"])));
    assert_eq!(
        std::fs::read_to_string(dir.join(&moved)).unwrap(),
        "# Kyoto\nGardens first.\n"
    );
}

#[test]
fn bad_input_is_refused_naming_it_and_writes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    ok(run(memory(dir)
        .args(["sync", "--personality", "ada", "--user", "grace"])
        .write_stdin(
            r#"[{"action":"create","store":"memory","note":"a.md","content":"A."},
                {"action":"create","store":"memory","note":"b.md","content":"B."}]"#,
        )));
    let before = walk(dir);
    for (args, code, needle) in [
        (vec!["list", "personalities/ada"], 2, "not a scope of notes"),
        (vec!["cat", "personalities/ada/MEMORY.md"], 2, "not a note"),
        (
            vec!["cat", "personalities/ada/notes/../USER.md"],
            2,
            "invalid note path",
        ),
        (
            vec![
                "move",
                "personalities/ada/notes/a.md",
                "users/bob/notes/a.md",
            ],
            2,
            "another scope",
        ),
        (
            vec!["move", "personalities/ada/notes/a.md", "B.md"],
            3,
            "collides",
        ),
        (
            vec!["move", "personalities/ada/notes/c.md", "d.md"],
            2,
            "does not exist",
        ),
        (
            vec!["remove", "personalities/ada/notes/c.md"],
            2,
            "does not exist",
        ),
        (vec!["edit", "personalities/ada/notes/a.md"], 2, "no editor"),
    ] {
        let (got, _, stderr) = run(memory(dir)
            .env_remove("EDITOR")
            .env_remove("VISUAL")
            .arg("notes")
            .args(&args));
        assert_eq!(got, code, "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: {needle:?} not in {stderr}"
        );
    }
    assert_eq!(walk(dir), before, "nothing was written");
}

/// Every file under `dir` with its bytes (locks aside: taking one creates it).
fn walk(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = snapshot(dir);
    files.retain(|path, _| !path.to_string_lossy().ends_with(".lock"));
    files
}

/// Every hostile path, in every action and either scope, sent to `memory sync` on markdown,
/// PostgreSQL and Redis: each exits 2 naming the path rule, and nothing is written anywhere
/// (no file under the root, no table or row in the schema, no key under the prefix).
#[test]
fn hostile_paths_are_refused_with_nothing_written_on_every_backend() {
    use memory_conformance::services::{Service, unique_name};

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut backends = vec![("markdown", "kind = \"markdown\"\nroot = \"md\"".to_owned())];
    let unique = unique_name("hostile");
    let schema = unique.replace('-', "_");
    if let Some(pg) = Service::Postgres.url() {
        backends.push((
            "postgres",
            format!("kind = \"postgres\"\nurl = \"{pg}\"\nschema = \"{schema}\""),
        ));
    }
    if let Some(redis) = Service::Redis.url() {
        backends.push((
            "redis",
            format!("kind = \"redis\"\nurl = \"{redis}\"\nprefix = \"{unique}\""),
        ));
    }
    let paths = memory_conformance::notes::hostile_note_paths();
    for (name, table) in &backends {
        let config = root.join(format!("{name}.toml"));
        std::fs::write(&config, format!("[providers.{name}]\n{table}\n")).unwrap();
        for (i, path) in paths.iter().enumerate() {
            let store = ["memory", "user"][i % 2];
            let update = match i % 6 {
                0 => {
                    serde_json::json!({"action": "create", "store": store, "note": path, "content": "x"})
                }
                1 => {
                    serde_json::json!({"action": "replace", "store": store, "note": path, "content": "x"})
                }
                2 => {
                    serde_json::json!({"action": "add", "store": store, "note": path, "content": "x"})
                }
                3 => serde_json::json!({"action": "delete", "store": store, "note": path}),
                4 => {
                    serde_json::json!({"action": "rename", "store": store, "note": "ok.md", "to": path})
                }
                _ => {
                    serde_json::json!({"action": "edit", "store": store, "note": path, "old": "a", "new": "b"})
                }
            };
            let (code, _, stderr) = run(memory(root)
                .arg("--config")
                .arg(&config)
                .args(["sync", "--personality", "ada", "--user", "grace"])
                .write_stdin(serde_json::json!([update]).to_string()));
            assert_eq!(code, 2, "{name}: {path:?}: {stderr}");
            assert!(
                stderr.contains("invalid note path"),
                "{name}: {path:?}: {stderr}"
            );
        }
    }
    assert!(!root.join("md").exists(), "nothing under the markdown root");
    if let Some(pg) = Service::Postgres.url() {
        let exists = std::process::Command::new("psql")
            .arg(&pg)
            .args([
                "-tAc",
                &format!("SELECT count(*) FROM pg_namespace WHERE nspname = '{schema}'"),
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&exists.stdout).trim(),
            "0",
            "no schema was made"
        );
    }
    if let Some(redis) = Service::Redis.url() {
        let keys = std::process::Command::new("redis-cli")
            .args(["-u", &redis, "--scan", "--pattern", &format!("*{unique}*")])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&keys.stdout).trim(),
            "",
            "no key was written"
        );
    }
}
