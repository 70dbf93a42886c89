//! The service's settings read from `memory.toml`'s `[serve]` table: what it accepts, and
//! mistakes named at their line, as every other mistake in the file is.

mod common;

use std::time::Duration;

use memory_core::MemoryError;
use memory_web::{Scope, Settings};
use memory_wiring::Config;

use common::parse;

/// The settings of the file `text`, or the message of its config error.
fn settings(text: &str) -> Result<Settings, String> {
    let read = parse(text).and_then(|config| config.serve.settings());
    match read {
        Ok(settings) => Ok(settings),
        Err(MemoryError::Config { message }) => Err(message),
        Err(other) => panic!("expected a config error, got {other:?}"),
    }
}

/// The message of the config error `text` gives; panics if it reads.
fn error(text: &str) -> String {
    settings(text).expect_err("a mistake")
}

#[test]
fn a_file_without_a_serve_table_has_the_defaults() {
    let read = settings("[providers.files]\nkind = \"markdown\"\nroot = \"/m\"\n").unwrap();
    assert_eq!(read, Settings::default());
    assert_eq!(
        Config::markdown("/m").serve.settings().unwrap(),
        Settings::default()
    );
}

#[test]
fn the_serve_table_is_read() {
    let hash = "c".repeat(64);
    let read = settings(&format!(
        "[serve]\nrequest_timeout_ms = 1500\ncors_origins = [\"https://app.example\"]\n\
         [serve.keys]\nops = {{ sha256 = \"{hash}\", scopes = [\"admin\", \"metrics\"] }}\n"
    ))
    .unwrap();
    assert_eq!(read.request_timeout, Duration::from_millis(1500));
    assert_eq!(read.cors_origins, ["https://app.example"]);
    let ops = &read.keys["ops"];
    assert_eq!(ops.sha256, hash);
    assert!(ops.scopes.contains(&Scope::Admin) && ops.scopes.contains(&Scope::Metrics));
    assert_eq!(read.max_body_bytes, Settings::default().max_body_bytes);
}

/// A setting's mistake names the line of the `[serve]` table; one that is not TOML of the
/// right shape names its own line.
#[test]
fn a_mistake_in_a_setting_names_its_line() {
    let head = "[providers.files]\nkind = \"markdown\"\nroot = \"/m\"\n\n";
    for (table, line, expected) in [
        (
            "[serve]\nmax_body_bytes = 0\n",
            5,
            "serve.max_body_bytes must be at least 1",
        ),
        (
            "[serve]\n\nbody_timeout_ms = 3600001\n",
            5,
            "serve.body_timeout_ms is 3600001",
        ),
        (
            "[serve]\ncors_origins = [\"https://a.example/x\"]\n",
            5,
            "not an origin",
        ),
        (
            "[serve]\nrequest_timeout_ms = 1\nunknown = 2\n",
            7,
            "unknown field `unknown`",
        ),
        ("[serve]\nmax_connections = \"many\"\n", 6, "invalid type"),
    ] {
        let message = error(&format!("{head}{table}"));
        assert!(
            message.starts_with(&format!("/etc/agent/memory.toml:{line}: ")),
            "{table}: line {line}: {message}"
        );
        assert!(message.contains(expected), "{table}: {message}");
    }
    let message = error(&format!("serve = 3\n{head}"));
    assert!(
        message.starts_with("/etc/agent/memory.toml:1: ") && message.contains("invalid type"),
        "{message}"
    );
}

/// A mistake in one of `[serve.keys]` names the key's own line (its name, or the field at
/// fault), not the line of the `[serve]` table that holds it.
#[test]
fn a_mistake_in_a_serve_key_names_its_line() {
    let hash = "a".repeat(64);
    let other = "b".repeat(64);
    // Lines 1 to 8: the table, its settings, a good key.
    let head = format!(
        "[serve]\nrequest_timeout_ms = 30000\nmax_body_bytes = 1048576\n\n[serve.keys]\n# the agents' key\nagents = {{ sha256 = \"{hash}\", scopes = [\"read\"] }}\n\n"
    );
    for (key, line, expected) in [
        (
            "bad = { sha256 = \"xyz\", scopes = [\"read\"] }".to_owned(),
            9,
            "serve.keys.bad.sha256 is not a SHA-256",
        ),
        (
            format!("twin = {{ sha256 = \"{hash}\", scopes = [\"read\"] }}"),
            9,
            "serve.keys.twin.sha256 is the hash of key \"agents\" too",
        ),
        (
            format!("idle = {{ sha256 = \"{other}\", scopes = [] }}"),
            9,
            "serve.keys.idle.scopes is empty",
        ),
        (
            format!("\"a b\" = {{ sha256 = \"{other}\", scopes = [\"read\"] }}"),
            9,
            "key name \"a b\"",
        ),
        (
            format!("local = {{ sha256 = \"{other}\", scopes = [\"read\"] }}"),
            9,
            "memory serve's own",
        ),
        (
            format!("root = {{ sha256 = \"{other}\", scopes = [\"root\"] }}"),
            9,
            "unknown variant `root`",
        ),
        // A key written as a table of its own: the field's line.
        (
            format!(
                "[serve.keys.spread]\nscopes = [\"read\"]\nsha256 = \"{other}\"\nusers = []\n\n\nsha256x = 1"
            ),
            15,
            "unknown field `sha256x`",
        ),
        (
            "[serve.keys.spread]\nscopes = [\"read\"]\n# the hash\nsha256 = \"xyz\"".to_owned(),
            12,
            "serve.keys.spread.sha256 is not a SHA-256",
        ),
        (
            format!("[serve.keys.spread]\nsha256 = \"{other}\"\nscopes = []"),
            11,
            "serve.keys.spread.scopes is empty",
        ),
    ] {
        let message = error(&format!("{head}{key}\n"));
        assert!(
            message.starts_with(&format!("/etc/agent/memory.toml:{line}: ")),
            "{key}: line {line}: {message}"
        );
        assert!(message.contains(expected), "{key}: {message}");
    }
}
