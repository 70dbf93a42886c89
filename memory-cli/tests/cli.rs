//! The `memory` command end to end: every subcommand, its exit codes, and bad input that
//! writes nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use common::{memory, run, snapshot};
use memory_conformance::services::Service;
use serde_json::{Value, json};

mod common;
mod seeds;

/// `memory` with `--config config`, relative paths in it resolved against its directory.
fn configured(root: &Path, config: &Path) -> Command {
    let mut cmd = memory(root);
    cmd.arg("--config").arg(config);
    cmd
}

/// Asserts a one-line error on stderr with `code`, mentioning `needle`.
fn assert_fails(result: (i32, String, String), code: i32, needle: &str) {
    let (got, _, stderr) = result;
    assert_eq!(got, code, "stderr: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
}

fn sync(root: &Path, personality: &str, user: &str, updates: &str) -> (i32, String, String) {
    run(memory(root)
        .args(["sync", "--personality", personality, "--user", user])
        .write_stdin(updates))
}

const GRACE: &str = r#"[{"action":"add","store":"user","content":"Name: Grace."},
                        {"action":"add","store":"memory","content":"Kyoto in May."}]"#;

#[test]
fn every_subcommand_has_help_with_an_example() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["show"][..],
        &["cat"],
        &["sync"],
        &["identity", "link"],
        &["identity", "resolve"],
        &["migrate"],
        &["reindex"],
        &["demo"],
        &["log"],
        &["diff"],
        &["revert"],
        &["redact"],
        &["purge"],
    ] {
        let (code, stdout, _) = run(memory(dir.path()).args(args).arg("--help"));
        assert_eq!(code, 0, "{args:?}");
        assert!(stdout.contains("Example: "), "{args:?}: {stdout}");
    }
    let (code, stdout, _) = run(memory(dir.path()).arg("--help"));
    assert_eq!(code, 0);
    assert!(stdout.contains("Exit codes"), "{stdout}");
    assert_fails(run(memory(dir.path()).arg("shw")), 2, "shw");
}

#[test]
fn sync_then_show_and_cat() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (code, stdout, _) =
        run(memory(root).args(["show", "--personality", "ada", "--user", "grace"]));
    assert_eq!(code, 0);
    assert!(stdout.contains("(nothing remembered yet)"), "{stdout}");
    assert!(stdout.contains("never written"), "{stdout}");

    let (code, stdout, stderr) = sync(root, "ada", "grace", GRACE);
    assert_eq!(code, 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["documents"].as_array().unwrap().len(), 2);
    assert_eq!(report["documents"][0]["store"], "memory");

    let (code, stdout, _) =
        run(memory(root).args(["show", "--personality", "ada", "--user", "grace"]));
    assert_eq!(code, 0);
    assert!(
        stdout.ends_with("## About You\n\nName: Grace.\n\n## Memory\n\nKyoto in May.\n"),
        "{stdout}"
    );
    assert!(stdout.contains("personalities/ada/MEMORY.md") && stdout.contains("modified 20"));

    let (code, stdout, _) = run(memory(root).args([
        "show",
        "--personality",
        "ada",
        "--user",
        "grace",
        "--json",
        "--max-chars",
        "20",
    ]));
    assert_eq!(code, 0);
    let seen: Value = serde_json::from_str(&stdout).unwrap();
    assert!(seen["context"].as_str().unwrap().chars().count() <= 20);
    assert!(seen["memory"]["modified"].is_u64());

    let (code, stdout, stderr) = run(memory(root).args(["cat", "users/grace/USER.md"]));
    assert_eq!(code, 0);
    assert_eq!(stdout, "Name: Grace.\n");
    let path = root.join("users/grace/USER.md");
    assert!(stderr.contains(&path.display().to_string()), "{stderr}");
    let version = memory_core::raw::sha256_hex("Name: Grace.\n");
    assert!(stderr.contains(&format!("version {version}")), "{stderr}");

    let (code, stdout, _) =
        run(memory(root).args(["cat", "--json", "personalities/ada/MEMORY.md"]));
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["text"], "Kyoto in May.\n");
}

#[test]
fn sync_reads_a_file_and_honours_if_match() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let file = root.join("updates.json");
    std::fs::write(&file, GRACE).unwrap();
    let base = ["sync", "--personality", "ada", "--user", "grace", "--file"];
    let (code, stdout, _) = run(memory(root).args(base).arg(&file));
    assert_eq!(code, 0);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let memory_version = report["documents"][0]["version_after"]
        .as_str()
        .unwrap()
        .to_owned();

    // Guarded by the current version: lands.
    let edit = r#"[{"action":"edit","store":"memory","old":"May","new":"June"}]"#;
    std::fs::write(&file, edit).unwrap();
    let (code, _, stderr) = run(memory(root)
        .args(base)
        .arg(&file)
        .args(["--if-match-memory", &memory_version]));
    assert_eq!(code, 0, "{stderr}");
    // Guarded by the version before it: a conflict, and nothing written.
    let before = snapshot(root);
    let result = run(memory(root)
        .args(base)
        .arg(&file)
        .args(["--if-match-memory", &memory_version]));
    assert_fails(result, 3, "read it again");
    assert_eq!(snapshot(root), before);
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    assert_eq!(sync(root, "ada", "grace", GRACE).0, 0);
    let before = snapshot(root);

    assert_fails(
        sync(root, "ada", "../etc", GRACE),
        2,
        "invalid user id \"../etc\"",
    );
    assert_fails(
        sync(root, "a b", "grace", GRACE),
        2,
        "invalid personality id",
    );
    assert_fails(
        sync(root, "ada", "grace", "[{\"action\":\"add\""),
        2,
        "not a JSON array",
    );
    assert_fails(
        sync(root, "ada", "grace", "{\"action\":\"add\"}"),
        2,
        "not a JSON array",
    );
    let blank = r#"[{"action":"add","store":"memory","content":"ok"},{"action":"add","store":"user","content":"  "}]"#;
    assert_fails(sync(root, "ada", "grace", blank), 2, "update #1");
    let missing = r#"[{"action":"edit","store":"memory","old":"absent","new":"x"}]"#;
    // Well-formed, but it does not fit what the document holds: refused, not invalid.
    assert_fails(sync(root, "ada", "grace", missing), 4, "was not found");
    let show = ["show", "--personality", "ada", "--user", "gr/ace"];
    assert_fails(run(memory(root).args(show)), 2, "invalid user id");
    assert_fails(
        run(memory(root).args(["cat", "users/../USER.md"])),
        2,
        "invalid user id",
    );
    assert_fails(
        run(memory(root).args(["cat", "notes.txt"])),
        2,
        "is not a document",
    );
    assert_fails(
        run(memory(root).args(["cat", "MEMORY.md", "--provider", "nope"])),
        2,
        "no provider is named \"nope\"",
    );
    let file = [
        "sync",
        "--personality",
        "ada",
        "--user",
        "grace",
        "--file",
        "/nonexistent.json",
    ];
    assert_fails(
        run(memory(root).args(file)),
        2,
        "cannot read /nonexistent.json",
    );
    assert_eq!(snapshot(root), before);
}

#[test]
fn config_errors_exit_2_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let unreadable = ["--config", "/nonexistent/memory.toml", "cat", "MEMORY.md"];
    assert_fails(
        run(memory(root).args(unreadable)),
        2,
        "cannot read /nonexistent/memory.toml",
    );

    let config = root.join("memory.toml");
    let text = "[providers.files]\nkind = \"markdown\"\nroot = \"m\"\n\n[personalities.ada]\nprovider = \"gone\"\n";
    std::fs::write(&config, text).unwrap();
    let show = ["show", "--personality", "ada", "--user", "grace"];
    let needle = format!(
        "{}:6: personalities.ada.provider names \"gone\"",
        config.display()
    );
    assert_fails(
        run(memory(root).arg("--config").arg(&config).args(show)),
        2,
        &needle,
    );
    // The same through MEMORY_CONFIG.
    assert_fails(
        run(memory(root).env("MEMORY_CONFIG", &config).args(show)),
        2,
        &needle,
    );
    assert!(!root.join("m").exists());
}

#[test]
fn a_hard_cap_exits_4_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = root.join("memory.toml");
    let text = "[providers.files]\nkind = \"markdown\"\nroot = \"m\"\n\n[personalities.ada]\ncaps.memory = { hard = 16 }\n";
    std::fs::write(&config, text).unwrap();
    let (code, _, stderr) = run(configured(root, &config)
        .args(["sync", "--personality", "ada", "--user", "grace"])
        .write_stdin(
            r#"[{"action":"add","store":"memory","content":"far more than sixteen bytes"}]"#,
        ));
    assert_eq!(code, 4, "{stderr}");
    assert!(stderr.contains("over its hard cap of 16"), "{stderr}");
    // (The lock file beside the document may exist: it is not a document.)
    assert!(snapshot_of_documents(&root.join("m")).is_empty());
}

#[test]
fn identity_link_and_resolve() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let link = |args: &[&str]| run(memory(root).args(["identity", "link"]).args(args));
    let resolve = |args: &[&str]| run(memory(root).args(["identity", "resolve"]).args(args));

    let (code, stdout, _) = link(&["telegram", "12345", "grace"]);
    assert_eq!(
        (code, stdout.as_str()),
        (0, "telegram:12345 linked to grace\n")
    );
    let (code, stdout, _) = resolve(&["telegram", "12345"]);
    assert_eq!((code, stdout.as_str()), (0, "grace\n"));
    assert!(root.join("users/identity-map.json").is_file());

    let before = snapshot(root);
    assert_fails(
        link(&["telegram", "12345", "bob"]),
        3,
        "already linked to user 'grace'",
    );
    assert_fails(link(&["tele gram", "1", "bob"]), 2, "invalid platform");
    assert_fails(link(&["telegram", "1", "b/ob"]), 2, "invalid user id");
    assert_eq!(snapshot(root), before);

    let (code, stdout, _) = link(&["telegram", "12345", "bob", "--relink"]);
    assert_eq!(
        (code, stdout.as_str()),
        (0, "telegram:12345 linked to bob (was grace)\n")
    );
    assert_eq!(resolve(&["telegram", "12345"]).1, "bob\n");
    assert_fails(resolve(&["slack", "U1"]), 1, "slack:U1 is not linked");
}

/// `users/identity-map.json` as Ethos writes it (`JSON.stringify(entries, null, 2)`, no newline
/// at the end) after it met two senders.
const ETHOS_IDENTITY_MAP: &str = r#"[
  {
    "platform": "telegram",
    "platformUserId": "12345",
    "userId": "3f9c2a7b1d4e",
    "displayLabel": "Grace Hopper",
    "firstSeenAt": "2026-09-01T10:00:00.000Z"
  },
  {
    "platform": "slack",
    "platformUserId": "U024BE7LH",
    "userId": "a81bc81b4b1e",
    "displayLabel": "slack:U024BE7LH",
    "firstSeenAt": "2026-09-02T08:30:12.345Z"
  }
]"#;

/// The entries of the identity map under `root`, without their `firstSeenAt` (the time of the
/// link), which is checked to be `toISOString`'s form.
fn identity_entries(root: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(root.join("users/identity-map.json")).unwrap();
    let entries: Vec<Value> = serde_json::from_str(&text).unwrap();
    entries
        .into_iter()
        .map(|mut entry| {
            let stamp = entry["firstSeenAt"].as_str().unwrap().to_owned();
            let shape: String = stamp
                .chars()
                .map(|c| if c.is_ascii_digit() { '0' } else { c })
                .collect();
            assert_eq!(shape, "0000-00-00T00:00:00.000Z", "{stamp}");
            entry.as_object_mut().unwrap().remove("firstSeenAt");
            entry
        })
        .collect()
}

/// On a root Ethos shares, `memory identity` reads the map Ethos wrote, and a link adds an
/// entry as Ethos would, leaving Ethos's own entries byte for byte.
#[test]
fn identity_resolve_and_link_on_a_map_ethos_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("users")).unwrap();
    let path = root.join("users/identity-map.json");
    std::fs::write(&path, ETHOS_IDENTITY_MAP).unwrap();
    let resolve = |args: &[&str]| run(memory(root).args(["identity", "resolve"]).args(args));

    let (code, stdout, stderr) = resolve(&["telegram", "12345"]);
    assert_eq!((code, stdout.as_str()), (0, "3f9c2a7b1d4e\n"), "{stderr}");
    assert_eq!(resolve(&["slack", "U024BE7LH"]).1, "a81bc81b4b1e\n");
    assert_fails(
        resolve(&["telegram", "999"]),
        1,
        "telegram:999 is not linked",
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), ETHOS_IDENTITY_MAP);

    let (code, stdout, stderr) =
        run(memory(root).args(["identity", "link", "telegram", "999", "grace"]));
    assert_eq!(
        (code, stdout.as_str()),
        (0, "telegram:999 linked to grace\n"),
        "{stderr}"
    );
    assert_eq!(resolve(&["telegram", "999"]).1, "grace\n");
    let text = std::fs::read_to_string(&path).unwrap();
    let kept = ETHOS_IDENTITY_MAP.strip_suffix("\n]").unwrap();
    assert!(text.starts_with(&format!("{kept},\n  {{\n")), "{text}");
    assert!(text.ends_with("\"\n  }\n]"), "{text}");
    assert_eq!(
        identity_entries(root)[2],
        json!({
            "platform": "telegram",
            "platformUserId": "999",
            "userId": "grace",
            "displayLabel": "telegram:999",
        })
    );

    // A file that is neither Ethos's array nor the older object is corrupt (exit 8), untouched.
    std::fs::write(&path, "\"grace\"").unwrap();
    assert_fails(resolve(&["telegram", "12345"]), 8, "identity-map.json");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "\"grace\"");
}

/// `migrate` copies the links of a map Ethos wrote into another root, where they resolve; the
/// target's entries are its own links, dated when they were copied.
#[test]
fn migrate_copies_the_links_of_a_map_ethos_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = two_roots(root);
    std::fs::create_dir_all(root.join("a/users")).unwrap();
    std::fs::write(root.join("a/users/identity-map.json"), ETHOS_IDENTITY_MAP).unwrap();
    let (code, stdout, stderr) =
        run(configured(root, &config).args(["migrate", "--from", "a", "--to", "b"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("identity links: 2 copied, 0 already there, 0 in conflict"),
        "{stdout}"
    );
    let (code, stdout, _) = run(configured(root, &config).args([
        "identity",
        "resolve",
        "--provider",
        "b",
        "telegram",
        "12345",
    ]));
    assert_eq!((code, stdout.as_str()), (0, "3f9c2a7b1d4e\n"));
    assert_eq!(
        identity_entries(&root.join("b")),
        vec![
            json!({"platform": "slack", "platformUserId": "U024BE7LH", "userId": "a81bc81b4b1e", "displayLabel": "slack:U024BE7LH"}),
            json!({"platform": "telegram", "platformUserId": "12345", "userId": "3f9c2a7b1d4e", "displayLabel": "telegram:12345"}),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(root.join("a/users/identity-map.json")).unwrap(),
        ETHOS_IDENTITY_MAP,
        "the source is only read"
    );
}

/// A config with two markdown roots, `a` and `b`.
fn two_roots(root: &Path) -> PathBuf {
    let config = root.join("memory.toml");
    let text = "default_provider = \"a\"\n[providers.a]\nkind = \"markdown\"\nroot = \"a\"\n[providers.b]\nkind = \"markdown\"\nroot = \"b\"\n";
    std::fs::write(&config, text).unwrap();
    config
}

/// grace tells bob (on `b`) about her allergy; ada (on `a`, the default) knows it, and `memory
/// cat` shows the one USER.md both read.
#[test]
fn what_one_personality_learns_about_a_user_every_personality_knows() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = two_roots(root);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{text}[personalities.bob]\nprovider = \"b\"\n"),
    )
    .unwrap();
    let cli = || configured(root, &config);
    let told = r#"[{"action":"add","store":"user","content":"Allergic to peanuts."}]"#;
    let (code, _, stderr) = run(cli()
        .args(["sync", "--personality", "bob", "--user", "grace"])
        .write_stdin(told));
    assert_eq!(code, 0, "{stderr}");

    let (code, stdout, _) = run(cli().args(["show", "--personality", "ada", "--user", "grace"]));
    assert_eq!(code, 0);
    assert!(
        stdout.ends_with("## About You\n\nAllergic to peanuts.\n"),
        "{stdout}"
    );
    let (code, stdout, stderr) = run(cli().args(["cat", "users/grace/USER.md"]));
    assert_eq!(code, 0);
    assert_eq!(stdout, "Allergic to peanuts.\n");
    assert!(
        stderr.contains(&root.join("a/users/grace/USER.md").display().to_string()),
        "{stderr}"
    );
    assert!(!root.join("b/users").exists());
}

#[test]
fn migrate_copies_once_and_leaves_targets_holding_more_alone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = two_roots(root);
    let cli = || configured(root, &config);
    assert_eq!(
        run(cli()
            .args(["sync", "--personality", "ada", "--user", "grace"])
            .write_stdin(GRACE))
        .0,
        0
    );

    let (code, stdout, _) = run(cli().args(["migrate", "--from", "a", "--to", "b"]));
    assert_eq!(code, 0);
    assert!(
        stdout.contains("a → b: 2 copied, 0 already identical"),
        "{stdout}"
    );
    assert_eq!(
        snapshot_of_documents(&root.join("a")),
        snapshot_of_documents(&root.join("b"))
    );
    let (_, stdout, _) = run(cli().args(["migrate", "--from", "a", "--to", "b"]));
    assert!(stdout.contains("0 copied, 2 already identical"), "{stdout}");

    // Content decides, not clocks: the source grew after the copy, and the target (on a
    // machine whose clock runs a day ahead) looks newer; it holds nothing the source lacks,
    // so it is brought up to date.
    let added = r#"[{"action":"add","store":"user","content":"Prefers trains."}]"#;
    assert_eq!(
        run(cli()
            .args(["sync", "--personality", "ada", "--user", "grace"])
            .write_stdin(added))
        .0,
        0
    );
    let day_ahead = std::time::SystemTime::now() + std::time::Duration::from_secs(86_400);
    std::fs::File::options()
        .write(true)
        .open(root.join("b/users/grace/USER.md"))
        .unwrap()
        .set_modified(day_ahead)
        .unwrap();
    let (code, stdout, _) = run(cli().args(["migrate", "--from", "a", "--to", "b"]));
    assert_eq!(code, 0);
    assert!(stdout.contains("1 copied, 1 already identical"), "{stdout}");

    // The target's USER.md gets a line of its own (older by the clock than the source): left
    // alone, exit 3, unless --force.
    std::fs::write(
        root.join("b/users/grace/USER.md"),
        "Name: Grace.\n\nEdited in b.\n",
    )
    .unwrap();
    std::fs::File::options()
        .write(true)
        .open(root.join("b/users/grace/USER.md"))
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000))
        .unwrap();
    assert_fails(
        run(cli().args(["migrate", "--from", "a", "--to", "b"])),
        3,
        "users/grace/USER.md",
    );
    assert_eq!(
        std::fs::read_to_string(root.join("b/users/grace/USER.md")).unwrap(),
        "Name: Grace.\n\nEdited in b.\n"
    );
    let (code, stdout, _) = run(cli().args(["migrate", "--from", "a", "--to", "b", "--force"]));
    assert_eq!(code, 0);
    assert!(stdout.contains("1 copied, 1 already identical"), "{stdout}");
    assert_eq!(
        snapshot_of_documents(&root.join("a")),
        snapshot_of_documents(&root.join("b"))
    );

    // A hand edit that no write would leave (untrimmed, no final newline) is copied in the
    // form writes leave, and said so.
    std::fs::create_dir_all(root.join("a/users/bob")).unwrap();
    std::fs::write(root.join("a/users/bob/USER.md"), "  Name: Bob.").unwrap();
    let (code, stdout, _) = run(cli().args(["migrate", "--from", "a", "--to", "b"]));
    assert_eq!(code, 0);
    assert!(
        stdout.contains("copied users/bob/USER.md (normalized"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("b/users/bob/USER.md")).unwrap(),
        "Name: Bob.\n"
    );
    let (_, stdout, _) = run(cli().args(["migrate", "--from", "a", "--to", "b"]));
    assert!(stdout.contains("0 copied, 3 already identical"), "{stdout}");

    assert_fails(
        run(cli().args(["migrate", "--from", "a", "--to", "a"])),
        2,
        "same place",
    );
    assert_fails(
        run(cli().args(["migrate", "--from", "a", "--to", "zz"])),
        2,
        "\"zz\"",
    );
}

/// After `migrate` and a switch of `default_provider`, every account still resolves: links
/// are copied, links already in the target kept, and a conflicting one reported, not moved.
#[test]
fn migrate_copies_identity_links_and_keeps_the_targets() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = two_roots(root);
    let in_b = root.join("b.toml");
    std::fs::write(
        &in_b,
        std::fs::read_to_string(&config)
            .unwrap()
            .replace("default_provider = \"a\"", "default_provider = \"b\""),
    )
    .unwrap();
    let link = |config: &Path, args: &[&str]| {
        let (code, _, stderr) = run(configured(root, config)
            .args(["identity", "link"])
            .args(args));
        assert_eq!(code, 0, "{stderr}");
    };
    link(&config, &["telegram", "1", "grace"]);
    link(&config, &["telegram", "9", "ada"]);
    link(&in_b, &["slack", "U2", "bob"]);
    link(&in_b, &["telegram", "9", "zed"]);

    let (code, stdout, stderr) =
        run(configured(root, &config).args(["migrate", "--from", "a", "--to", "b"]));
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stdout.contains("identity links: 1 copied, 0 already there, 1 in conflict"),
        "{stdout}"
    );
    assert!(
        stderr.contains("1 identity linked to another user in b")
            && stderr.contains("telegram:9 → ada here, zed there")
            && stderr.contains("memory identity link --provider b --relink"),
        "{stderr}"
    );
    let resolve = |platform: &str, id: &str| {
        run(configured(root, &in_b).args(["identity", "resolve", platform, id])).1
    };
    assert_eq!(resolve("telegram", "1"), "grace\n");
    assert_eq!(resolve("slack", "U2"), "bob\n");
    assert_eq!(resolve("telegram", "9"), "zed\n");

    // A second run has nothing to copy and still reports the conflict.
    let (code, stdout, _) =
        run(configured(root, &config).args(["migrate", "--from", "a", "--to", "b"]));
    assert_eq!(code, 3);
    assert!(
        stdout.contains("identity links: 0 copied, 1 already there, 1 in conflict"),
        "{stdout}"
    );
    // The hint resolves it: relink in the target, from the source's config.
    link(
        &config,
        &["--provider", "b", "--relink", "telegram", "9", "ada"],
    );
    let (code, stdout, stderr) =
        run(configured(root, &config).args(["migrate", "--from", "a", "--to", "b"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("identity links: 0 copied, 2 already there, 0 in conflict"),
        "{stdout}"
    );
    assert_eq!(resolve("telegram", "9"), "ada\n");
}

/// The documents under a markdown root by their layout path (lock files and the identity map
/// are not documents).
fn snapshot_of_documents(root: &Path) -> BTreeMap<String, Vec<u8>> {
    snapshot(root)
        .into_iter()
        .filter_map(|(path, bytes)| {
            let relative = path.strip_prefix(root).ok()?.to_str()?.to_owned();
            memory_core::DocumentId::from_relative_path(&relative).map(|_| (relative, bytes))
        })
        .collect()
}

#[test]
fn migrate_round_trip_markdown_postgres_redis_markdown_is_byte_identical() {
    let (Some(pg), Some(redis)) = (Service::Postgres.url(), Service::Redis.url()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let unique = format!(
        "{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let schema = format!("cli_migrate_{unique}");
    let config = root.join("memory.toml");
    let text = format!(
        "default_provider = \"start\"\n\
         [providers.start]\nkind = \"markdown\"\nroot = \"start\"\n\
         [providers.end]\nkind = \"markdown\"\nroot = \"end\"\n\
         [providers.pg]\nkind = \"postgres\"\nurl = \"{pg}\"\nschema = \"{schema}\"\n\
         [providers.redis]\nkind = \"redis\"\nurl = \"{redis}\"\nprefix = \"cli-migrate-{unique}\"\n"
    );
    std::fs::write(&config, text).unwrap();
    let cli = || configured(root, &config);
    // Text that a lossy copy would change: unicode, CRLF, blank lines.
    std::fs::create_dir_all(root.join("start/users/grace")).unwrap();
    std::fs::create_dir_all(root.join("start/personalities/ada")).unwrap();
    std::fs::write(
        root.join("start/MEMORY.md"),
        "Global: the office closes on Fridays.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("start/personalities/ada/MEMORY.md"),
        "Kyoto 🚄 in May\r\nthen Osaka.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("start/users/grace/USER.md"),
        "Name: Grace.\n\n\nPrefers metric.\n",
    )
    .unwrap();

    let (code, _, stderr) = run(cli().args(["identity", "link", "telegram", "42", "grace"]));
    assert_eq!(code, 0, "{stderr}");

    for (from, to) in [("start", "pg"), ("pg", "redis"), ("redis", "end")] {
        let (code, stdout, stderr) = run(cli().args(["migrate", "--from", from, "--to", to]));
        assert_eq!(code, 0, "{from} → {to}: {stderr}");
        assert!(stdout.contains("3 copied"), "{stdout}");
    }
    let start = snapshot_of_documents(&root.join("start"));
    assert_eq!(start.len(), 3);
    assert_eq!(start, snapshot_of_documents(&root.join("end")));
    // The links make the round trip; each root dates its entries when they were linked there.
    assert_eq!(
        identity_entries(&root.join("end")),
        identity_entries(&root.join("start")),
        "the identity map made the round trip"
    );
    // And back into the original: nothing to do.
    let (code, stdout, _) = run(cli().args(["migrate", "--from", "redis", "--to", "start"]));
    assert_eq!(code, 0);
    assert!(stdout.contains("0 copied, 3 already identical"), "{stdout}");
    drop_schema(&pg, &schema);
}

/// `memory sync` behind a row lock another session holds ends within the provider's deadline
/// (2 s here) with exit 5 (busy): the command sends each sync keyed and resends it on Busy,
/// and it used to send it three times, each with a deadline of its own (31 s for the default
/// 10 s deadline).
#[test]
fn a_sync_behind_a_row_lock_ends_within_one_deadline() {
    use std::io::{BufRead, BufReader, Write};
    use std::time::{Duration, Instant};
    let Some(pg) = Service::Postgres.url() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let schema = format!("cli_deadline_{}", std::process::id());
    let config = root.join("memory.toml");
    let text = format!(
        "[providers.pg]\nkind = \"postgres\"\nurl = \"{pg}\"\nschema = \"{schema}\"\n\
         deadline_ms = 2000\n"
    );
    std::fs::write(&config, text).unwrap();
    let sync = |content: &str| {
        run(configured(root, &config)
            .args(["sync", "--personality", "ada", "--user", "grace"])
            .write_stdin(format!(
                r#"[{{"action":"add","store":"memory","content":"{content}"}}]"#
            )))
    };
    let (code, _, stderr) = sync("first");
    assert_eq!(code, 0, "{stderr}");

    // Another session locks the row and keeps its transaction open.
    let mut blocker = std::process::Command::new("psql")
        .args([pg.as_str(), "-qAt", "-v", "ON_ERROR_STOP=1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_blocker = blocker.stdin.take().unwrap();
    writeln!(
        to_blocker,
        "BEGIN; SELECT 'locked' FROM \"{schema}\".memory_documents \
         WHERE kind = 'personality_memory' FOR UPDATE;"
    )
    .unwrap();
    let mut answer = String::new();
    BufReader::new(blocker.stdout.take().unwrap())
        .read_line(&mut answer)
        .unwrap();
    assert_eq!(answer.trim(), "locked");

    let started = Instant::now();
    let (code, _, stderr) = sync("second");
    let took = started.elapsed();
    assert_eq!(code, 5, "busy: {stderr}");
    assert!(
        stderr.contains("MEMORY.md of personality 'ada' stayed busy"),
        "names the document: {stderr}"
    );
    assert!(
        took < Duration::from_millis(3_500),
        "one deadline of 2 s and the command's start, not three: {took:?}"
    );

    writeln!(to_blocker, "ROLLBACK;").unwrap();
    drop(to_blocker);
    blocker.wait().unwrap();
    let (code, _, stderr) = sync("second");
    assert_eq!(code, 0, "lands once the lock is gone: {stderr}");
    drop_schema(&pg, &schema);
}

/// Removes the test's schema (the Redis keys are left to the prefix: the test server keeps
/// nothing on disk).
fn drop_schema(url: &str, schema: &str) {
    let status = std::process::Command::new("psql")
        .arg(url)
        .args([
            "-qc",
            &format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"),
        ])
        .status();
    if !matches!(status, Ok(s) if s.success()) {
        eprintln!("could not drop schema {schema}: {status:?}");
    }
}

#[test]
fn reindex_rebuilds_the_index_and_needs_a_vector_provider() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    assert_fails(
        run(memory(root).arg("reindex")),
        2,
        "no vector provider is configured",
    );

    let config = root.join("memory.toml");
    let text = "default_provider = \"files\"\n[providers.files]\nkind = \"markdown\"\nroot = \"m\"\n[providers.recall]\nkind = \"vector\"\nsource = \"files\"\n[personalities.ada]\nprovider = \"recall\"\n";
    std::fs::write(&config, text).unwrap();
    let cli = || configured(root, &config);
    assert_eq!(
        run(cli()
            .args(["sync", "--personality", "ada", "--user", "grace"])
            .write_stdin(GRACE))
        .0,
        0
    );
    std::fs::remove_dir_all(root.join("m/.recall-index")).unwrap();
    let (code, stdout, stderr) = run(cli().args(["reindex", "--provider", "recall"]));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "recall: reindexed 1 memory document\n");
    assert!(root.join("m/.recall-index").is_dir());
    assert_fails(
        run(cli().args(["reindex", "--provider", "files"])),
        2,
        "not a vector one",
    );
}

/// `memory sync` through a recall provider, run once per write as hooks and scripts do: each
/// leaves the index current for the next query, and together they never pile up table versions
/// (one per write, without housekeeping).
#[test]
fn one_shot_syncs_leave_the_index_current_and_small() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = root.join("memory.toml");
    let text = "default_provider = \"files\"\n[providers.files]\nkind = \"markdown\"\nroot = \"m\"\n[providers.recall]\nkind = \"vector\"\nsource = \"files\"\nrecall = { k = 2, catch_up_ms = 0 }\n[personalities.ada]\nprovider = \"recall\"\n";
    std::fs::write(&config, text).unwrap();
    let calls = 20;
    for i in 0..calls {
        let note =
            format!(r#"[{{"action":"add","store":"memory","content":"One-shot note {i}."}}]"#);
        let (code, _, stderr) = run(configured(root, &config)
            .args(["sync", "--personality", "ada", "--user", "grace"])
            .write_stdin(note));
        assert_eq!(code, 0, "{stderr}");
        assert!(!stderr.contains("warning"), "{stderr}");
    }
    let versions = std::fs::read_dir(root.join("m/.recall-index/entries.lance/_versions"))
        .unwrap()
        .count();
    assert!(
        versions < calls,
        "{versions} table versions after {calls} syncs"
    );
    // With no time to catch up (catch_up_ms = 0), the query is ranked only if the syncs left
    // the index current.
    let (code, stdout, stderr) = run(configured(root, &config).args([
        "show",
        "--personality",
        "ada",
        "--user",
        "grace",
        "--query",
        "note 19",
    ]));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.is_empty(), "no warning: {stderr}");
    assert!(stdout.contains("One-shot note 19."), "{stdout}");
    assert_eq!(
        stdout.matches("One-shot note").count(),
        2,
        "k entries: {stdout}"
    );
}

/// The e5 engine's idle OpenMP threads sleep after 1,000 spins, not libgomp's 300,000, so that
/// on cores other work shares a query does not wait on a barrier whose partner is descheduled;
/// a setting the environment already makes is kept. libgomp prints what it read when asked.
#[test]
fn the_engine_threads_spin_briefly_unless_the_environment_says_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = root.join("memory.toml");
    let text = "default_provider = \"files\"\n[providers.files]\nkind = \"markdown\"\nroot = \"m\"\n[providers.recall]\nkind = \"vector\"\nsource = \"files\"\n[personalities.ada]\nprovider = \"recall\"\n";
    std::fs::write(&config, text).unwrap();
    for (given, read) in [(None, "1000"), (Some("5000"), "5000")] {
        let mut command = configured(root, &config);
        command
            .env("OMP_DISPLAY_ENV", "verbose")
            .env_remove("OMP_WAIT_POLICY");
        match given {
            Some(spins) => command.env("GOMP_SPINCOUNT", spins),
            None => command.env_remove("GOMP_SPINCOUNT"),
        };
        let note = r#"[{"action":"add","store":"memory","content":"Spins are counted."}]"#;
        let (code, _, stderr) = run(command
            .args(["sync", "--personality", "ada", "--user", "grace"])
            .write_stdin(note));
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stderr.contains(&format!("GOMP_SPINCOUNT = '{read}'")),
            "{given:?}: {stderr}"
        );
    }
}

#[test]
fn demo_runs_the_scripted_session() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("demo");
    let (code, stdout, stderr) = run(memory(dir.path()).arg("demo").arg("--root").arg(&root));
    assert_eq!(code, 0, "{stderr}");
    for expected in [
        "turn 1 · personality 'ada'",
        "Identity: telegram:4242 resolves to user 'grace'",
        "refused (Conflict), nothing lost",
        "consolidated from the fresh view",
        "Recall: on for 'ada' (multilingual-e5-small from ",
        "undo it with: memory revert personalities/ada/MEMORY.md ",
    ] {
        assert!(stdout.contains(expected), "{expected:?} not in {stdout}");
    }
    // The agent's writes are tool writes; the newest of ada's is the consolidation.
    let newest = stdout
        .lines()
        .skip_while(|line| !line.contains("history: "))
        .nth(1)
        .unwrap_or_else(|| panic!("no history line in {stdout}"));
    assert!(
        newest.contains(" tool ") && newest.ends_with("replace  (personality ada, user grace)"),
        "{newest}"
    );
    let log = log_json(&root, "personalities/ada/MEMORY.md");
    assert!(
        log.iter().all(|revision| revision["surface"] == "tool"),
        "{log:?}"
    );
    assert!(root.join("users/grace/USER.md").is_file());
    assert!(root.join("MEMORY.md").is_file());
    assert_eq!(
        std::fs::read_to_string(root.join("personalities/coach/MEMORY.md")).unwrap(),
        "Training Grace for a 10 km run, goal: before her May trip.\n"
    );
}

#[test]
fn demo_says_how_to_enable_recall_without_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, _) = run(memory(dir.path())
        .env("MEMORY_E5_MODEL_DIR", dir.path().join("no-model"))
        .args(["demo", "--root"])
        .arg(dir.path().join("demo")));
    assert_eq!(code, 0);
    assert!(stdout.contains("Recall: off"), "{stdout}");
    assert!(stdout.contains("./scripts/provision-model"), "{stdout}");
    assert!(
        stdout.contains("consolidated from the fresh view"),
        "{stdout}"
    );

    // An empty variable is unset: the model is looked for where the provisioning script puts it.
    let (code, stdout, _) = run(memory(dir.path())
        .env("MEMORY_E5_MODEL_DIR", "")
        .env("HOME", dir.path())
        .args(["demo", "--root"])
        .arg(dir.path().join("demo-2")));
    assert_eq!(code, 0);
    let default_dir = dir
        .path()
        .join(".cache/agent-memory/models/multilingual-e5-small");
    assert!(
        stdout.contains(&format!("no model in {}", default_dir.display())),
        "{stdout}"
    );
}

const ADA: &str = "personalities/ada/MEMORY.md";

/// `memory log --json` of `path`: its revisions, newest first.
fn log_json(root: &Path, path: &str) -> Vec<Value> {
    let (code, stdout, stderr) = run(memory(root).args(["log", "--json", path]));
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

/// The text of `path` as `memory cat` prints it.
fn cat(root: &Path, path: &str) -> String {
    let (code, stdout, stderr) = run(memory(root).args(["cat", path]));
    assert_eq!(code, 0, "{stderr}");
    stdout
}

/// Ada's MEMORY.md after two adds and a consolidation: three revisions.
fn three_revisions(root: &Path) {
    for updates in [
        r#"[{"action":"add","store":"memory","content":"Likes tea."}]"#,
        r#"[{"action":"add","store":"memory","content":"Flies Tuesday."}]"#,
        r#"[{"action":"replace","store":"memory","content":"Tea."}]"#,
    ] {
        let (code, _, stderr) = sync(root, "ada", "grace", updates);
        assert_eq!(code, 0, "{stderr}");
    }
}

#[test]
fn log_diff_and_revert_a_document() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    three_revisions(root);

    let log = log_json(root, ADA);
    let numbers: Vec<u64> = log.iter().map(|r| r["number"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [3, 2, 1], "newest first");
    for revision in &log {
        assert_eq!(revision["surface"], "cli", "{revision}");
        assert_eq!(revision["personality"], "ada");
        assert_eq!(revision["user"], "grace");
        assert!(revision["idempotency_key"].is_string(), "{revision}");
        assert!(revision["time"].is_u64() && revision["time_utc"].is_string());
        assert_eq!(revision["tombstone"], false);
        assert!(revision.get("text").is_none(), "no text without --text");
    }
    assert_eq!(
        (&log[0]["bytes_before"], &log[0]["bytes_after"]),
        (&json!(27), &json!(5))
    );
    assert_eq!(log[0]["updates"][0]["action"], "replace");
    assert_eq!(log[2]["updates"][0]["content"], "Likes tea.");
    assert_eq!(
        log[0]["version"].as_str().unwrap(),
        memory_core::raw::sha256_hex("Tea.\n"),
        "the version `cat` shows"
    );
    assert_eq!(log[0]["sha256_before"], log[1]["sha256_after"]);
    // `version` is the version each revision left, where the next one started.
    for pair in log.windows(2) {
        assert_eq!(pair[0]["version_before"], pair[1]["version"], "{pair:?}");
    }
    let (code, stdout, _) =
        run(memory(root).args(["log", ADA, "--json", "--text", "--limit", "1"]));
    assert_eq!(code, 0);
    let newest: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(newest.len(), 1);
    assert_eq!(newest[0]["text"], "Tea.\n");

    let (code, stdout, _) = run(memory(root).args(["log", ADA]));
    assert_eq!(code, 0);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(lines[0].trim_start().starts_with("3  20"), "{stdout}");
    assert!(
        lines[0].contains(" cli ")
            && lines[0].contains("27 → 5")
            && lines[0].ends_with("replace  (personality ada, user grace)"),
        "{stdout}"
    );
    assert!(
        lines[2].contains("0 → 11") && lines[2].contains(" add "),
        "{stdout}"
    );

    let (code, stdout, _) = run(memory(root).args(["diff", ADA]));
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with(&format!("--- {ADA}@2\n+++ {ADA}@3\n")),
        "{stdout}"
    );
    assert!(
        stdout.contains("-Likes tea.\n") && stdout.contains("+Tea.\n"),
        "{stdout}"
    );
    let (code, stdout, _) = run(memory(root).args(["diff", ADA, "1", "2"]));
    assert_eq!(code, 0);
    assert!(
        stdout.contains("+Flies Tuesday.\n") && !stdout.contains("-Likes"),
        "{stdout}"
    );
    let (code, stdout, _) = run(memory(root).args(["diff", ADA, "3"]));
    assert_eq!(
        (code, stdout.as_str()),
        (0, ""),
        "revision 3 is the text now"
    );
    let (code, stdout, _) = run(memory(root).args(["diff", ADA, "2"]));
    assert_eq!(code, 0);
    assert!(stdout.contains(&format!("+++ {ADA}@current\n")), "{stdout}");

    // Undo the consolidation: revision 4, back to what revision 2 left.
    let (code, stdout, stderr) = run(memory(root).args(["revert", ADA, "2"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("reverted to revision 2 as revision 4 (5 → 27 bytes")
            && stdout.contains(&format!("undo with: memory revert {ADA} 3")),
        "{stdout}"
    );
    assert_eq!(cat(root, ADA), "Likes tea.\n\nFlies Tuesday.\n");
    let log = log_json(root, ADA);
    assert_eq!(log.len(), 4);
    assert_eq!(log[0]["surface"], "cli");
    assert_eq!(log[0]["updates"][0]["action"], "replace");
    assert_eq!(
        (&log[0]["personality"], &log[0]["user"]),
        (&json!("ada"), &Value::Null),
        "the document's personality; no user's conversation"
    );

    // The revert is a revision like any other: revert it.
    let (code, _, stderr) = run(memory(root).args(["revert", ADA, "3"]));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(cat(root, ADA), "Tea.\n");
    let (code, stdout, _) = run(memory(root).args(["revert", ADA, "3"]));
    assert_eq!(code, 0);
    assert!(stdout.contains("nothing written"), "{stdout}");
    assert_eq!(log_json(root, ADA).len(), 5);

    // Guarded: a stale version is a conflict and writes nothing; the current one lands.
    let stale = log[0]["version"].as_str().unwrap().to_owned();
    let before = snapshot(root);
    assert_fails(
        run(memory(root).args(["revert", ADA, "2", "--if-match", &stale])),
        3,
        "read it again",
    );
    assert_eq!(snapshot(root), before);
    let current = log_json(root, ADA)[0]["version"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, _, stderr) = run(memory(root).args(["revert", ADA, "2", "--if-match", &current]));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(log_json(root, ADA).len(), 6);
}

#[test]
fn purge_refuses_without_yes_and_leaves_only_a_tombstone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    three_revisions(root);
    assert_eq!(sync(root, "ada", "grace", GRACE).0, 0);

    let before = snapshot(root);
    let (code, stdout, stderr) = run(memory(root).args(["purge", ADA]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty());
    for needle in [
        "20 bytes of text",
        "4 revisions",
        "cannot be undone",
        "--yes",
    ] {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    assert_eq!(snapshot(root), before, "nothing erased without --yes");

    let (code, stdout, stderr) = run(memory(root).args(["purge", ADA, "--yes"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("erased 20 bytes of text and 4 revisions of history")
            && stdout.contains("tombstone without content, revision 5"),
        "{stdout}"
    );
    assert_eq!(cat(root, ADA), "");
    let (code, _, stderr) = run(memory(root).args(["cat", ADA]));
    assert!(code == 0 && stderr.contains("never written"), "{stderr}");
    let log = log_json(root, ADA);
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(
        (&log[0]["number"], &log[0]["tombstone"], &log[0]["surface"]),
        (&json!(5), &json!(true), &json!("cli"))
    );
    assert_eq!(log[0]["bytes_before"], 20);
    let on_disk = snapshot(root);
    assert!(
        !on_disk
            .values()
            .any(|bytes| String::from_utf8_lossy(bytes).contains("Kyoto in May")),
        "no copy of the text is left anywhere under the root"
    );
    // The other documents are untouched.
    assert_eq!(cat(root, "users/grace/USER.md"), "Name: Grace.\n");
    let (code, stdout, _) =
        run(memory(root).args(["show", "--personality", "ada", "--user", "grace"]));
    assert_eq!(code, 0);
    assert!(!stdout.contains("## Memory"), "{stdout}");

    assert_fails(run(memory(root).args(["diff", ADA])), 2, "tombstone");
    assert_fails(run(memory(root).args(["revert", ADA, "5"])), 2, "tombstone");
    assert_fails(
        run(memory(root).args(["revert", ADA, "2"])),
        2,
        "no revision 2",
    );

    // Writes number on from the tombstone, and the diff of the first starts from nothing.
    assert_eq!(sync(root, "ada", "grace", GRACE).0, 0);
    let log = log_json(root, ADA);
    assert_eq!(log[0]["number"], 6);
    let (code, stdout, _) = run(memory(root).args(["diff", ADA]));
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with(&format!("--- {ADA}@5\n+++ {ADA}@6\n"))
            && stdout.contains("+Kyoto in May."),
        "{stdout}"
    );

    let (code, stdout, _) = run(memory(root).args(["purge", "users/nobody/USER.md", "--yes"]));
    assert_eq!(code, 0);
    assert!(stdout.contains("nothing to erase"), "{stdout}");
}

#[test]
fn redact_refuses_without_yes_then_erases_one_revision_and_keeps_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    three_revisions(root);
    let kept = log_json(root, ADA);

    // Without --yes: what would be erased, and nothing is.
    let before = snapshot(root);
    let (code, stdout, stderr) = run(memory(root).args(["redact", ADA, "2"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    for needle in [
        "revision 2 of personalities/ada/MEMORY.md",
        kept[1]["time_utc"].as_str().unwrap(),
        "27 bytes",
        "cannot be undone",
        "--yes",
    ] {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    assert_eq!(snapshot(root), before, "nothing erased without --yes");

    let (code, stdout, stderr) = run(memory(root).args(["redact", ADA, "2", "--yes"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with(&format!(
            "{ADA}: revision 2 redacted (its text and updates erased;"
        )) && stdout.trim_end().lines().count() == 1,
        "{stdout}"
    );
    assert_eq!(cat(root, ADA), "Tea.\n", "the document is untouched");
    assert!(
        !snapshot(root)
            .values()
            .any(|bytes| String::from_utf8_lossy(bytes).contains("Flies Tuesday")),
        "the erased text is left nowhere under the root"
    );

    // The log keeps its record, without its text or updates.
    let (code, stdout, stderr) = run(memory(root).args(["log", ADA, "--json", "--text"]));
    assert_eq!(code, 0, "{stderr}");
    let log: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    let numbers: Vec<u64> = log.iter().map(|r| r["number"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [3, 2, 1]);
    let redacted = &log[1];
    assert!(redacted["redacted_at"].is_u64(), "{redacted}");
    assert_eq!(
        (
            &redacted["text"],
            &redacted["updates"],
            &redacted["tombstone"]
        ),
        (&Value::Null, &json!([]), &json!(false))
    );
    for field in [
        "time",
        "surface",
        "personality",
        "bytes_before",
        "bytes_after",
        "sha256_before",
        "sha256_after",
        "version",
    ] {
        assert_eq!(redacted[field], kept[1][field], "{field} is kept");
    }
    assert_eq!(
        log[0]["text"], "Tea.\n",
        "the revision after it still reads"
    );
    assert_eq!(log[2]["text"], "Likes tea.\n");
    assert_eq!(
        (&log[0]["redacted_at"], &log[2]["redacted_at"]),
        (&Value::Null, &Value::Null)
    );
    let (code, stdout, _) = run(memory(root).args(["log", ADA]));
    assert_eq!(code, 0);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[1].trim_start().starts_with("2  20")
            && lines[1].contains("11 → 27 bytes")
            && lines[1].ends_with("redacted  (personality ada, user grace)"),
        "{stdout}"
    );

    // Nothing to restore or compare: refused, as a revision not kept is.
    let before = snapshot(root);
    assert_fails(run(memory(root).args(["revert", ADA, "2"])), 2, "redacted");
    assert_fails(
        run(memory(root).args(["diff", ADA, "1", "2"])),
        2,
        "revision 2",
    );
    assert_eq!(snapshot(root), before);

    // Once is enough: again, with or without --yes, it writes nothing.
    let (code, stdout, stderr) = run(memory(root).args(["redact", ADA, "2"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("was redacted already"), "{stdout}");
    let (code, stdout, stderr) = run(memory(root).args(["redact", ADA, "2", "--yes"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("revision 2 redacted"), "{stdout}");
    assert_eq!(snapshot(root), before);

    // The revision the document holds is refused (exit 4), with --yes or without; so are a
    // revision never made and revision 0 (exit 2).
    for yes in [&[][..], &["--yes"]] {
        assert_fails(
            run(memory(root).args(["redact", ADA, "3"]).args(yes)),
            4,
            "revision 3 of MEMORY.md of personality 'ada' holds the text the document has now",
        );
        assert_fails(
            run(memory(root).args(["redact", ADA, "9"]).args(yes)),
            2,
            "no revision 9: revisions 1 to 3 are kept",
        );
        assert_fails(
            run(memory(root).args(["redact", ADA, "0"]).args(yes)),
            2,
            "revision 0",
        );
    }
    assert_fails(
        run(memory(root).args(["redact", ADA, "x", "--yes"])),
        2,
        "\"x\" is not a revision number",
    );
    assert_eq!(snapshot(root), before, "nothing written by a refusal");

    // A hand edit holds the text now: the revision it replaced may go, the hand edit may not.
    std::fs::write(root.join(ADA), "Coffee.\n").unwrap();
    assert_fails(
        run(memory(root).args(["redact", ADA, "4", "--yes"])),
        4,
        "revision 4",
    );
    let (code, _, stderr) = run(memory(root).args(["redact", ADA, "3", "--yes"]));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(cat(root, ADA), "Coffee.\n");
}

#[test]
fn redact_takes_a_notes_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let note = "personalities/ada/notes/trips/kyoto.md";
    for updates in [
        r#"[{"action":"create","store":"memory","note":"trips/kyoto.md","content":"Door code 1234."}]"#,
        r#"[{"action":"replace","store":"memory","note":"trips/kyoto.md","content":"Temples at dawn."}]"#,
    ] {
        let (code, _, stderr) = sync(root, "ada", "grace", updates);
        assert_eq!(code, 0, "{stderr}");
    }
    let (code, _, stderr) = run(memory(root).args(["redact", note, "1"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("revision 1 of {note}")),
        "{stderr}"
    );
    let (code, stdout, stderr) = run(memory(root).args(["redact", note, "1", "--yes"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with(&format!("{note}: revision 1 redacted")),
        "{stdout}"
    );
    let log = log_json(root, note);
    assert!(log[1]["redacted_at"].is_u64(), "{log:?}");
    assert_eq!(log[0]["redacted_at"], Value::Null);
    let (code, stdout, _) = run(memory(root).args(["notes", "log", note]));
    assert_eq!(code, 0);
    assert!(
        stdout
            .lines()
            .nth(1)
            .is_some_and(|line| line.contains("redacted")),
        "{stdout}"
    );
    assert!(
        !snapshot(root)
            .values()
            .any(|bytes| String::from_utf8_lossy(bytes).contains("Door code")),
        "the erased text is left nowhere under the root"
    );
    assert_eq!(cat(root, note), "Temples at dawn.\n");
    assert_fails(
        run(memory(root).args(["redact", note, "2", "--yes"])),
        4,
        "holds the text the document has now",
    );
    assert_fails(
        run(memory(root).args(["redact", "personalities/ada/notes/../USER.md", "1"])),
        2,
        "invalid note path",
    );
}

#[test]
fn a_hand_edit_heads_the_log_as_an_external_revision() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    three_revisions(root);
    std::fs::write(root.join(ADA), "Tea.\n\nEdited in vim.\n").unwrap();

    let log = log_json(root, ADA);
    assert_eq!(log.len(), 4);
    assert_eq!(
        (
            &log[0]["number"],
            &log[0]["surface"],
            &log[0]["personality"]
        ),
        (&json!(4), &json!("external"), &Value::Null)
    );
    assert_eq!(log[0]["updates"], json!([]));
    let (code, stdout, _) = run(memory(root).args(["log", ADA, "--limit", "1"]));
    assert_eq!(code, 0);
    assert!(
        stdout.contains(" external ") && stdout.trim_end().ends_with("hand edit"),
        "{stdout}"
    );
    let (code, stdout, _) = run(memory(root).args(["diff", ADA]));
    assert_eq!(code, 0);
    assert!(stdout.contains("+Edited in vim.\n"), "{stdout}");

    // The next write records it, then itself.
    let (code, _, stderr) = sync(
        root,
        "ada",
        "grace",
        r#"[{"action":"add","store":"memory","content":"More."}]"#,
    );
    assert_eq!(code, 0, "{stderr}");
    let log = log_json(root, ADA);
    let heads: Vec<(&Value, &Value)> = log
        .iter()
        .take(2)
        .map(|r| (&r["number"], &r["surface"]))
        .collect();
    assert_eq!(
        heads,
        [(&json!(5), &json!("cli")), (&json!(4), &json!("external"))]
    );

    // The hand edit can be reverted away like any change.
    let (code, _, stderr) = run(memory(root).args(["revert", ADA, "3"]));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(cat(root, ADA), "Tea.\n");
}

#[test]
fn bad_history_arguments_exit_2_and_name_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    three_revisions(root);
    let before = snapshot(root);
    assert_fails(
        run(memory(root).args(["log", "notes.md"])),
        2,
        "\"notes.md\" is not a document",
    );
    assert_fails(
        run(memory(root).args(["revert", "users/../x/USER.md", "1"])),
        2,
        "is not a document",
    );
    assert_fails(
        run(memory(root).args(["log", "personalities/a b/MEMORY.md"])),
        2,
        "invalid personality id",
    );
    // A note's folder with a path the note rule refuses names the rule.
    assert_fails(
        run(memory(root).args(["log", "personalities/ada/notes/../USER.md"])),
        2,
        "invalid note path \"../USER.md\"",
    );
    assert_fails(
        run(memory(root).args(["purge", "users/u1/notes/.x.md.history.jsonl", "--yes"])),
        2,
        "starts with '.'",
    );
    assert_fails(
        run(memory(root).args(["diff", ADA, "x"])),
        2,
        "\"x\" is not a revision number",
    );
    assert_fails(run(memory(root).args(["revert", ADA, "-1"])), 2, "-1");
    assert_fails(
        run(memory(root).args(["revert", ADA, "two"])),
        2,
        "\"two\" is not a revision number",
    );
    assert_fails(
        run(memory(root).args(["diff", ADA, "9"])),
        2,
        "no revision 9: revisions 1 to 3 are kept",
    );
    assert_fails(
        run(memory(root).args(["diff", ADA, "1", "9"])),
        2,
        "no revision 9",
    );
    assert_fails(
        run(memory(root).args(["revert", ADA, "9"])),
        2,
        "no revision 9",
    );
    assert_fails(run(memory(root).args(["revert", ADA])), 2, "REVISION");
    assert_fails(
        run(memory(root).args(["log", ADA, "--limit", "0"])),
        2,
        "--limit",
    );
    assert_fails(run(memory(root).args(["log", ADA, "--text"])), 2, "--json");
    assert_fails(
        run(memory(root).args(["diff", "MEMORY.md"])),
        2,
        "no revisions to compare",
    );
    assert_eq!(snapshot(root), before, "nothing written");
    // A personality configured global writes MEMORY.md: its own file is not what a revert
    // through the wiring would write.
    let config = root.join("memory.toml");
    std::fs::write(
        &config,
        "[providers.files]\nkind = \"markdown\"\nroot = \".\"\n[personalities.ada]\nmemory_scope = \"global\"\n",
    )
    .unwrap();
    let before = snapshot(root);
    assert_fails(
        run(configured(root, &config).args(["revert", ADA, "1"])),
        2,
        "global scope, so its writes go to MEMORY.md",
    );
    assert_eq!(snapshot(root), before, "nothing written");
    let (code, stdout, _) = run(memory(root).args(["log", "MEMORY.md"]));
    assert_eq!(code, 0);
    assert!(stdout.contains("MEMORY.md has no revisions"), "{stdout}");
    let (code, stdout, _) = run(memory(root).args(["log", "--json", "MEMORY.md"]));
    assert_eq!((code, stdout.trim()), (0, "[]"));
}
