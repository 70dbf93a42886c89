//! The layouts of the systems this project comes from (../shared/docs/seeds/): a Metis
//! workspace's `.metis/` read and written in place, and Ethos's first layout, whose root
//! `USER.md` is warned about and moved.

use std::path::Path;

use memory_markdown::workspace_personality;

use super::{assert_fails, configured, snapshot};
use crate::common::run;

/// A memory.toml in `dir` whose one provider is the Metis workspace `workspace`, with `extra`
/// lines in its table.
fn metis_config(dir: &Path, workspace: &Path, extra: &str) -> std::path::PathBuf {
    let config = dir.join("memory.toml");
    std::fs::write(
        &config,
        format!(
            "[providers.workspace]\nkind = \"markdown\"\nroot = {:?}\nlayout = \"metis\"\n{extra}\n",
            workspace.display().to_string()
        ),
    )
    .unwrap();
    config
}

fn show(dir: &Path, config: &Path, personality: &str, user: &str) -> (i32, String, String) {
    run(configured(dir, config).args(["show", "--personality", personality, "--user", user]))
}

#[test]
fn a_metis_workspace_is_read_and_written_where_metis_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("app");
    std::fs::create_dir(&workspace).unwrap();
    let config = metis_config(
        dir.path(),
        &workspace,
        "personality = \"app\"\nuser = \"grace\"",
    );
    let metis = workspace.join(".metis");

    let (code, stdout, stderr) = show(dir.path(), &config, "app", "grace");
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("(nothing remembered yet)"), "{stdout}");
    assert!(
        !metis.exists(),
        ".metis/ is created by the first write, not by a read"
    );

    let updates = r#"[{"action":"add","store":"memory","content":"Build with make."},
                      {"action":"add","store":"user","content":"Prefers short answers."}]"#;
    let (code, _, stderr) = run(configured(dir.path(), &config)
        .args(["sync", "--personality", "app", "--user", "grace"])
        .write_stdin(updates));
    assert_eq!(code, 0, "{stderr}");
    let read = |name: &str| std::fs::read_to_string(metis.join(name)).unwrap();
    assert_eq!(read("MEMORY.md"), "Build with make.\n");
    assert_eq!(read("USER.md"), "Prefers short answers.\n");

    // A hand edit (Metis's own write) is what the next prompt shows.
    std::fs::write(metis.join("MEMORY.md"), "Build with ninja.\n").unwrap();
    let (code, stdout, _) = show(dir.path(), &config, "app", "grace");
    assert_eq!(code, 0);
    assert!(
        stdout.ends_with(
            "## About You\n\nPrefers short answers.\n\n## Memory\n\nBuild with ninja.\n"
        ),
        "{stdout}"
    );

    // History sees the hand edit, and a revert writes the file Metis reads.
    let (code, stdout, stderr) =
        run(configured(dir.path(), &config).args(["log", "personalities/app/MEMORY.md"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("external"), "{stdout}");
    let (code, _, stderr) =
        run(configured(dir.path(), &config).args(["revert", "personalities/app/MEMORY.md", "1"]));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(read("MEMORY.md"), "Build with make.\n");

    // What has no place in the workspace is refused by name, and nothing is touched.
    let before = snapshot(dir.path());
    for (personality, user, names) in [
        ("bob", "grace", "personalities/bob/MEMORY.md"),
        ("app", "alan", "users/alan/USER.md"),
    ] {
        let refused = run(configured(dir.path(), &config)
            .args(["sync", "--personality", personality, "--user", user])
            .write_stdin(r#"[{"action":"add","store":"memory","content":"x"},{"action":"add","store":"user","content":"y"}]"#));
        assert_fails(refused, 2, names);
        let (code, _, stderr) = show(dir.path(), &config, personality, user);
        assert_eq!(code, 2);
        assert!(
            stderr.contains("has no place in the Metis workspace")
                && stderr.contains("personality 'app'")
                && stderr.contains("user 'grace'"),
            "{stderr}"
        );
    }
    assert_fails(
        run(configured(dir.path(), &config).args(["cat", "MEMORY.md"])),
        2,
        "MEMORY.md has no place",
    );
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn a_metis_workspace_defaults_to_the_drop_ins_ids() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("my project");
    std::fs::create_dir_all(workspace.join(".metis")).unwrap();
    std::fs::write(workspace.join(".metis/MEMORY.md"), "Tests: pytest -q\n").unwrap();
    std::fs::write(workspace.join(".metis/USER.md"), "Name: Grace.\n").unwrap();
    let config = metis_config(dir.path(), &workspace, "");
    let personality = workspace_personality(&workspace);
    assert!(
        personality.as_str().starts_with("my-project-"),
        "{personality}"
    );

    let shown = |login: &str| {
        run(configured(dir.path(), &config).env("LOGNAME", login).args([
            "show",
            "--personality",
            personality.as_str(),
            "--user",
            "grace",
        ]))
    };
    let (code, stdout, stderr) = shown("grace");
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.ends_with("## About You\n\nName: Grace.\n\n## Memory\n\nTests: pytest -q\n"));
    // The login name picks whose profile the workspace's USER.md is.
    let (code, _, stderr) = shown("alan");
    assert_eq!(code, 2);
    assert!(stderr.contains("user 'alan''s USER.md"), "{stderr}");

    let (code, stdout, stderr) = run(configured(dir.path(), &config)
        .env("LOGNAME", "grace")
        .args(["cat", &format!("personalities/{personality}/MEMORY.md")]));
    assert_eq!((code, stdout.as_str()), (0, "Tests: pytest -q\n"));
    assert!(stderr.contains(".metis/MEMORY.md"), "{stderr}");

    // Ethos's layout holds every id: naming one there is a mistake in the file.
    let ethos = dir.path().join("ethos.toml");
    std::fs::write(
        &ethos,
        "[providers.files]\nkind = \"markdown\"\nroot = \"files\"\nuser = \"grace\"\n",
    )
    .unwrap();
    assert_fails(
        run(configured(dir.path(), &ethos).args(["cat", "MEMORY.md"])),
        2,
        "only a Metis workspace",
    );
}

/// Ethos's first layout: `MEMORY.md` and `USER.md` at the root, and a global-scope
/// personality (`memoryScope: global`), as `~/.ethos/` held them.
fn first_layout(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("ethos");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("MEMORY.md"), "Working on the Kyoto trip.\n").unwrap();
    std::fs::write(root.join("USER.md"), "Name: Grace.\nPrefers trains.\n").unwrap();
    let config = dir.join("memory.toml");
    std::fs::write(
        &config,
        "[providers.files]\nkind = \"markdown\"\nroot = \"ethos\"\n\n[personalities.ada]\nmemory_scope = \"global\"\n",
    )
    .unwrap();
    config
}

/// The prompt Ethos's first-layout provider built from those two files: `## About You` with
/// USER.md and `## Memory` with MEMORY.md, each trimmed, joined by a blank line.
const ETHOS_PROMPT: &str =
    "## About You\n\nName: Grace.\nPrefers trains.\n\n## Memory\n\nWorking on the Kyoto trip.";

#[test]
fn ethos_first_layouts_user_md_is_warned_about_then_moved_by_hash() {
    let dir = tempfile::tempdir().unwrap();
    let config = first_layout(dir.path());
    let root_user = dir.path().join("ethos/USER.md");

    let (code, stdout, stderr) = show(dir.path(), &config, "ada", "grace");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.ends_with("## Memory\n\nWorking on the Kyoto trip.\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("About You"), "{stdout}");
    assert!(
        stderr.contains(&root_user.display().to_string())
            && stderr.contains("is not read")
            && stderr.contains("memory migrate --root-user <id>"),
        "{stderr}"
    );
    // With only the USER.md, the warning is all there is to see, never silence.
    std::fs::remove_file(dir.path().join("ethos/MEMORY.md")).unwrap();
    let (code, stdout, stderr) = show(dir.path(), &config, "ada", "grace");
    assert_eq!(code, 0);
    assert!(stdout.contains("(nothing remembered yet)"), "{stdout}");
    assert!(stderr.contains("memory migrate --root-user"), "{stderr}");
    std::fs::write(
        dir.path().join("ethos/MEMORY.md"),
        "Working on the Kyoto trip.\n",
    )
    .unwrap();

    // A profile already there with other lines is left alone, and so is the root file.
    let profile = dir.path().join("ethos/users/grace/USER.md");
    std::fs::create_dir_all(profile.parent().unwrap()).unwrap();
    std::fs::write(&profile, "Allergic to peanuts.\n").unwrap();
    let migrate = || run(configured(dir.path(), &config).args(["migrate", "--root-user", "grace"]));
    assert_fails(migrate(), 3, "--force");
    assert!(root_user.exists());
    std::fs::remove_file(&profile).unwrap();

    let (code, stdout, stderr) = migrate();
    assert_eq!(code, 0, "{stderr}");
    let moved = "Name: Grace.\nPrefers trains.\n";
    assert!(
        stdout.contains("users/grace/USER.md")
            && stdout.contains(&memory_core::raw::sha256_hex(moved)),
        "{stdout}"
    );
    assert_eq!(std::fs::read_to_string(&profile).unwrap(), moved);
    assert!(!root_user.exists(), "moved, not copied");

    // Afterwards the prompt is Ethos's, and nothing is left to warn about.
    let (code, stdout, stderr) = show(dir.path(), &config, "ada", "grace");
    assert_eq!(code, 0);
    assert!(stdout.ends_with(&format!("{ETHOS_PROMPT}\n")), "{stdout}");
    assert!(!stderr.contains("not read"), "{stderr}");
    let (code, stdout, _) =
        run(configured(dir.path(), &config).args(["log", "users/grace/USER.md"]));
    assert_eq!(code, 0);
    assert!(stdout.contains("cli"), "the move is a revision: {stdout}");

    assert_fails(migrate(), 2, "no USER.md at the root");
    assert_fails(
        run(configured(dir.path(), &config).args(["migrate", "--root-user", "a/b"])),
        2,
        "a/b",
    );
}
