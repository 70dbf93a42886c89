//! `memory serve` end to end: the server as a process, its refusals, and the Memory page (a
//! client of the `/v1` API) in headless Chromium driven by Playwright
//! (`tests/browser/memory-page.mjs`): editing, a stale save refused, a document's history with
//! its diffs, and reverts (a stale one refused); a note created, refused over an agent's write,
//! reverted, renamed and deleted; a revision redacted from the command line, listed without its
//! text.
//!
//! The browser test needs Debian's `chromium` (installed by `scripts/test-prerequisites.sh`), Node
//! and playwright-core (installed here with `npm ci` when absent). Without them it fails, or
//! skips loudly with `MEMORY_SKIP_MISSING_SERVICES=1`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Server, memory_bin};
use memory_conformance::services::skip_or_fail;
use tempfile::TempDir;

/// A config with two personalities (ada on her own MEMORY.md, bob on the global one) and the
/// documents a person would come to fix.
fn seeded() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("memory.toml");
    std::fs::write(
        &config,
        r#"
        [providers.files]
        kind = "markdown"
        root = "memory"

        [personalities.bob]
        memory_scope = "global"

        [mcp]
        personality = "ada"
        user = "grace"
        "#,
    )
    .unwrap();
    let root = dir.path().join("memory");
    for (path, text) in [
        (
            "personalities/ada/MEMORY.md",
            "Project: the Lovelase notes, due in March.\n\nGrace reviews drafts on Mondays.\n",
        ),
        (
            "users/grace/USER.md",
            "Name: Grace.\n\nWorks on compilers; prefers short answers.\n",
        ),
        ("users/alan/USER.md", "Name: Alan.\n"),
        (
            "MEMORY.md",
            "Team-wide: the build server restarts at 02:00 UTC.\n",
        ),
    ] {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    (dir, config)
}

fn cat(config: &Path, document: &str) -> String {
    let out = Command::new(memory_bin())
        .arg("--config")
        .arg(config)
        .args(["cat", document])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn serve_answers_on_loopback_and_prints_where() {
    let (_dir, config) = seeded();
    let server = Server::start(&config);
    assert!(
        server.url().starts_with("http://127.0.0.1:"),
        "{}",
        server.url()
    );
    let (status, body) = server.request("GET", "/v1/users", None);
    assert!(status.ends_with("200 OK"), "{status}: {body}");
    assert!(
        body.contains(r#""items":[{"id":"alan"},{"id":"grace"}]"#),
        "{body}"
    );
    let (status, _) = server.request("GET", "/", None);
    assert!(status.ends_with("200 OK"), "{status}");
}

#[test]
fn serve_refuses_a_reachable_address_without_keys() {
    let (_dir, config) = seeded();
    let serve = |token: Option<&str>| {
        let mut cmd = Command::new(memory_bin());
        cmd.arg("--config")
            .arg(&config)
            .args(["serve", "--port", "0", "--bind", "0.0.0.0"])
            .env_remove(memory_web::TOKEN_ENV);
        if let Some(token) = token {
            cmd.env(memory_web::TOKEN_ENV, token);
        }
        let out = cmd.output().unwrap();
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    };
    let (code, stderr) = serve(None);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("needs API keys"), "{stderr}");
    assert!(stderr.contains("[serve.keys]"), "{stderr}");
    let (code, stderr) = serve(Some("short"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("at least 16"), "{stderr}");
}

#[test]
fn a_recall_personality_gets_a_query_box_and_a_queried_prefetch() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("memory.toml");
    std::fs::write(
        &config,
        "default_provider = \"files\"\n[providers.files]\nkind = \"markdown\"\nroot = \"m\"\n\
         [providers.recall]\nkind = \"vector\"\nsource = \"files\"\nrecall = { k = 1 }\n\
         [personalities.coder]\nprovider = \"recall\"\n",
    )
    .unwrap();
    let server = Server::start(&config);
    let pair = r#"{"personality":"coder","user":"ada"}"#;
    let (status, body) = server.request("POST", "/v1/prefetch", Some(pair));
    assert!(status.ends_with("200 OK"), "{status}: {body}");
    let view: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(view["personality"]["recall"], true);

    let text = "The staging database is PostgreSQL 17 on db-staging.\n\n\
                Ada prefers answers without emoji.\n\n\
                Release builds take 51 minutes cold.\n";
    let save = serde_json::json!({
        "personality": "coder", "user": "ada",
        "updates": [{"action": "replace", "store": "memory", "content": text}],
        "if_match": {"memory": view["memory"]["version"]},
    });
    let (status, body) = server.request("POST", "/v1/sync", Some(&save.to_string()));
    assert!(status.ends_with("200 OK"), "{status}: {body}");

    let query = serde_json::json!({
        "personality": "coder", "user": "ada",
        "query": "which database does staging use?",
    });
    let (status, body) = server.request("POST", "/v1/prefetch", Some(&query.to_string()));
    assert!(status.ends_with("200 OK"), "{status}: {body}");
    let view: serde_json::Value = serde_json::from_str(&body).unwrap();
    let prefetch = view["context"].as_str().unwrap();
    assert!(prefetch.contains("staging database"), "{prefetch}");
    assert!(!prefetch.contains("emoji"), "{prefetch}");
    // The editor still gets the whole document.
    assert_eq!(view["memory"]["text"], text);
}

/// What the browser test needs, or why it cannot run.
fn browser_tools() -> Result<PathBuf, String> {
    let chromium = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if !chromium.exists() {
        return Err(format!(
            "no Chromium at {} (apt-get install chromium, or set CHROMIUM)",
            chromium.display()
        ));
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Err("no node on PATH".to_owned());
    }
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    if !scripts.join("node_modules/playwright-core").exists() {
        let installed = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&scripts)
            .status()
            .map_err(|err| format!("cannot run npm: {err}"))?;
        if !installed.success() {
            return Err(format!("npm ci in {} failed", scripts.display()));
        }
    }
    Ok(chromium)
}

#[test]
fn the_page_edits_memory_in_a_browser_and_refuses_a_stale_save() {
    let chromium = match browser_tools() {
        Ok(chromium) => chromium,
        Err(why) => {
            skip_or_fail(&format!("the browser test cannot run: {why}"));
            return;
        }
    };
    let (_dir, config) = seeded();
    let server = Server::start(&config);
    let edited = "Project: the Lovelace notes, due in March.\n\nGrace reviews drafts on Mondays.\n\nFixed in the browser: the project name.\n\nMarkup stays text: <b>not bold</b>";

    let mut driver = Command::new("node");
    driver
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/memory-page.mjs"))
        .env("MEMORY_PAGE_URL", server.url())
        .env("MEMORY_BIN", memory_bin())
        .env("MEMORY_CONFIG", &config)
        .env("CHROMIUM", &chromium)
        .env("EDITED_MEMORY", edited);
    let out = driver.output().unwrap();
    assert!(
        out.status.success(),
        "the browser script failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // The agent's own read path sees the revert to the seeded text and the agent's write after
    // it; the stale revert left it alone.
    assert_eq!(
        cat(&config, "personalities/ada/MEMORY.md"),
        "Project: the Lovelase notes, due in March.\n\nGrace reviews drafts on Mondays.\n\n\
         Agent: the review moved to Tuesdays.\n"
    );
    // The history holds the seeded text, the browser's edit (a replace stores the text
    // newline-terminated, as every write does) and the revert, both from the web, and the
    // agent's write; the refused revert recorded nothing.
    let (status, body) = server.request(
        "GET",
        "/v1/documents/personalities/ada/MEMORY.md/revisions?diff=true",
        None,
    );
    assert!(status.ends_with("200 OK"), "{status}: {body}");
    let history: serde_json::Value = serde_json::from_str(&body).unwrap();
    let listed: Vec<(u64, &str)> = history["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["number"].as_u64().unwrap(),
                r["surface"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(listed.len(), 4, "{history}");
    assert_eq!(&listed[1..], [(3, "web"), (2, "web"), (1, "external")]);
    let edit = history["revisions"][2]["diff"].as_str().unwrap();
    for line in edited.lines().filter(|line| !line.is_empty()) {
        assert!(edit.contains(line), "{line:?} not in {edit}");
    }
    let user = cat(&config, "users/grace/USER.md");
    assert!(
        user.contains("Agent: she asked for the slides by Friday."),
        "{user}"
    );
    assert!(!user.contains("Prefers tea."), "{user}");

    // The note the page made, moved and deleted: gone from disk, and its history (at its last
    // path, from the web) is the move and the delete, the move keeping its text.
    let notes = config
        .parent()
        .unwrap()
        .join("memory/personalities/ada/notes");
    assert!(!notes.join("travel/kyoto.md").exists());
    assert!(!notes.join("trips/kyoto.md").exists());
    let (status, body) = server.request(
        "GET",
        "/v1/documents/personalities/ada/revisions/notes/travel/kyoto.md?text=true",
        None,
    );
    assert!(status.ends_with("200 OK"), "{status}: {body}");
    let history: serde_json::Value = serde_json::from_str(&body).unwrap();
    let moves: Vec<(&str, &str)> = history["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["surface"].as_str().unwrap(),
                r["updates"][0]["action"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(moves, [("web", "delete"), ("web", "rename")], "{history}");
    assert_eq!(
        history["revisions"][1]["text"],
        "# Kyoto\nTemples at dawn.\n"
    );
}
