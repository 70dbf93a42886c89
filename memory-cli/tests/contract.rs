//! The HTTP API against its own OpenAPI document: Schemathesis (from PyPI, pinned with hashes
//! in `tests/schemathesis/requirements.lock`) runs every operation of the document a real
//! `memory serve` serves, including the stateful phase along the document's links, with every
//! check (no 5xx, responses and status codes as documented, authentication enforced, ...).
//! The settings and the few documented exceptions are `tests/schemathesis/schemathesis.toml`.
//!
//! Needs bash, Python 3.11 with venv, and the embedding model (`scripts/provision-model`), so
//! that every personality recalls and search answers; `scripts/test` provides them. Without
//! them it fails, or skips loudly with `MEMORY_SKIP_MISSING_SERVICES=1`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Server, write_config};
use memory_conformance::services::skip_or_fail;

const KEY: &str = "contract-admin-key-0123456789";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Why the contract test cannot run here, if it cannot.
fn missing() -> Option<String> {
    // Where the server will look for the default model.
    let model = memory_vector::ModelConfig::from_env();
    if !model.is_provisioned() {
        return Some(format!(
            "no embedding model in {} (scripts/provision-model)",
            model.model_dir.display()
        ));
    }
    if Command::new("python3").arg("--version").output().is_err() {
        return Some("no python3 on PATH".into());
    }
    None
}

#[test]
fn schemathesis_finds_the_api_true_to_its_openapi_document() {
    if let Some(why) = missing() {
        skip_or_fail(&format!("the API contract test cannot run: {why}"));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Every personality recalls (so search answers) but bob, who shares the global memory.
    let config = write_config(
        dir.path(),
        &format!(
            r#"
            default_provider = "recall"
            users_provider = "files"
            [providers.files]
            kind = "markdown"
            root = "memory"
            [providers.recall]
            kind = "vector"
            source = "files"
            [personalities.bob]
            provider = "files"
            memory_scope = "global"
            [serve.keys]
            contract = {{ sha256 = "{}", scopes = ["admin"] }}
            "#,
            memory_web::key_sha256(KEY)
        ),
    );
    let server = Server::start(&config);
    let reports = dir.path().join("reports");
    let out = Command::new("bash")
        .arg(workspace().join("tests/schemathesis/run.sh"))
        .arg(format!("http://{}", server.address))
        .env("MEMORY_API_KEY", KEY)
        .env("SCHEMATHESIS_REPORT_DIR", &reports)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "schemathesis found the API untrue to its document:\n{stdout}\n{stderr}"
    );
    let summary: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("schemathesis:") || line.starts_with("  "))
        .collect();
    let generated: u64 = summary
        .iter()
        .find_map(|line| {
            line.strip_prefix("schemathesis: ")?
                .split_once(" test cases generated")?
                .0
                .parse()
                .ok()
        })
        .expect("the summary names the number of generated requests");
    assert!(generated > 1000, "only {generated} requests were generated");
    assert!(
        stdout.contains("stateful=success"),
        "the stateful phase did not run: {stdout}"
    );
    println!("{}", summary.join("\n"));
}
