//! `memory serve` as a process, over real HTTP on loopback: bad input of every kind is a 4xx
//! problem document that writes nothing; every route under every key and restriction; 32
//! clients adding to one document with some connections dropped mid-response, on markdown,
//! PostgreSQL and Redis; two servers over one provider, a retry landing on the other one;
//! SIGTERM while 16 clients write; a provider that is down; the time and concurrency limits;
//! metrics, the access log and CORS.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use memory_conformance::services::Service;
use serde_json::{Value, json};
use tempfile::TempDir;

use common::{Request, Server, request, shared, write_config};

/// The version of `path` and the number of its revisions, through the server.
async fn state(address: &str, path: &str, key: Option<&str>) -> (String, usize) {
    let read = request("GET", &format!("/v1/documents/{path}"))
        .key(key)
        .send(address)
        .await
        .unwrap();
    assert_eq!(read.status, 200, "{path}");
    let revisions = request("GET", &format!("/v1/documents/{path}/revisions?limit=100"))
        .key(key)
        .send(address)
        .await
        .unwrap();
    let count = revisions.json()["revisions"].as_array().unwrap().len();
    (read.json()["version"].as_str().unwrap().to_owned(), count)
}

const SEEDED: [&str; 2] = ["users/grace/USER.md", "personalities/ada/MEMORY.md"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_4xx_problem_naming_it_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "[providers.files]\nkind = \"markdown\"\nroot = \"memory\"\n[personalities.ada]\ncaps.memory = { hard = 200 }\n",
    );
    std::fs::write(dir.path().join("secret.txt"), "not memory").unwrap();
    let server = Server::start(&config);
    let address = server.address.as_str();
    let seed = request("POST", "/v1/sync").json(&json!({
        "personality": "ada", "user": "grace",
        "updates": [{"action": "add", "store": "user", "content": "Name: Grace."},
                    {"action": "add", "store": "memory", "content": "Project: Lovelace."}]
    }));
    assert_eq!(seed.send(address).await.unwrap().status, 200);

    let sync =
        |body: &str| request("POST", "/v1/sync").raw("application/json", body.as_bytes().to_vec());
    let big = format!(
        r#"{{"personality":"ada","user":"grace","updates":[{{"action":"add","store":"memory","content":"{}"}}]}}"#,
        "x".repeat(2 * 1024 * 1024)
    );
    let mut invalid_utf8 =
        br#"{"personality":"ada","user":"grace","updates":[{"action":"add","store":"memory","content":""#
            .to_vec();
    invalid_utf8.extend_from_slice(&[0xff, 0xfe]);
    invalid_utf8.extend_from_slice(br#""}]}"#);
    let cases: Vec<(&str, Request, u16, &str)> = vec![
        (
            "malformed JSON",
            sync(r#"{"personality":"ada","#),
            400,
            "EOF while parsing",
        ),
        (
            "not JSON at all",
            request("POST", "/v1/sync").raw("text/plain", b"personality=ada".to_vec()),
            415,
            "Content-Type",
        ),
        (
            "a form post",
            request("POST", "/v1/sync").raw(
                "application/x-www-form-urlencoded",
                b"personality=ada&user=grace".to_vec(),
            ),
            415,
            "application/json",
        ),
        (
            "an oversized body",
            sync(&big),
            413,
            "limit of 1048576 bytes",
        ),
        (
            "invalid UTF-8 in the body",
            request("POST", "/v1/sync").raw("application/json", invalid_utf8),
            400,
            "invalid unicode",
        ),
        (
            "a bad personality id",
            sync(
                r#"{"personality":"../x","user":"grace","updates":[{"action":"add","store":"memory","content":"x"}]}"#,
            ),
            400,
            "invalid personality id \"../x\"",
        ),
        (
            "an unknown field",
            sync(r#"{"personality":"ada","user":"grace","updates":[],"store":"memory"}"#),
            422,
            "unknown field `store`",
        ),
        (
            "an unknown field in an update",
            sync(
                r#"{"personality":"ada","user":"grace","updates":[{"action":"add","store":"memory","content":"x","when":"now"}]}"#,
            ),
            422,
            "unknown field `when`",
        ),
        (
            "an unknown action",
            sync(
                r#"{"personality":"ada","user":"grace","updates":[{"action":"append","store":"memory"}]}"#,
            ),
            422,
            "unknown variant `append`",
        ),
        (
            "a note path that escapes its scope",
            sync(
                r#"{"personality":"ada","user":"grace","updates":[{"action":"create","store":"memory","note":"../USER.md","content":"x"}]}"#,
            ),
            422,
            "invalid note path \"../USER.md\"",
        ),
        (
            "an update of a note that does not exist",
            sync(
                r#"{"personality":"ada","user":"grace","updates":[{"action":"delete","store":"memory","note":"kyoto.md"}]}"#,
            ),
            404,
            "needs the note kyoto.md",
        ),
        (
            "a note's update sent to a document's route",
            request("POST", "/v1/documents/users/grace/USER.md/updates").json(&json!({
                "updates": [{"action": "create", "store": "user", "note": "diet.md", "content": "x"}]
            })),
            422,
            "send a note's updates to its own route",
        ),
        (
            "a missing field",
            sync(r#"{"personality":"ada","updates":[]}"#),
            422,
            "missing field `user`",
        ),
        (
            "a blank add",
            sync(
                r#"{"personality":"ada","user":"grace","updates":[{"action":"add","store":"memory","content":" "}]}"#,
            ),
            400,
            "update #0",
        ),
        (
            "a NUL in the text",
            sync(
                r#"{"personality":"ada","user":"grace","updates":[{"action":"add","store":"memory","content":"a\u0000b"}]}"#,
            ),
            400,
            "NUL",
        ),
        (
            "past the hard cap",
            sync(&format!(
                r#"{{"personality":"ada","user":"grace","updates":[{{"action":"add","store":"memory","content":"{}"}}]}}"#,
                "y".repeat(300)
            )),
            422,
            "hard cap of 200",
        ),
        (
            "a huge number",
            request("POST", "/v1/prefetch")
                .json(&json!({"personality": "ada", "user": "grace", "max_chars": 1e300})),
            422,
            "max_chars",
        ),
        (
            "a negative number",
            request("POST", "/v1/documents/users/grace/USER.md/revert")
                .json(&json!({"number": -1})),
            422,
            "number",
        ),
        (
            "a revision to redact that is no number",
            request(
                "POST",
                "/v1/documents/users/grace/USER.md/revisions/two/redact",
            ),
            400,
            "\"two\" is not a revision number",
        ),
        (
            "a number past int64",
            request(
                "GET",
                "/v1/documents/users/grace/USER.md/revisions?before=9223372036854775808",
            ),
            400,
            "before",
        ),
        (
            "a negative limit",
            request(
                "GET",
                "/v1/documents/users/grace/USER.md/revisions?limit=-1",
            ),
            400,
            "limit",
        ),
        (
            "a limit over the most",
            request(
                "GET",
                "/v1/documents/users/grace/USER.md/revisions?limit=101",
            ),
            400,
            "limit must be 1 to 100",
        ),
        (
            "a duplicate query parameter",
            request("GET", "/v1/users?limit=1&limit=2"),
            400,
            "duplicate field `limit`",
        ),
        (
            "an unknown query parameter",
            request("GET", "/v1/users?page=2"),
            400,
            "unknown query parameter \"page\"",
        ),
        (
            "a query parameter where the route takes none",
            request("GET", "/v1/documents/users/grace/USER.md?x=1"),
            400,
            "takes none",
        ),
        (
            "invalid UTF-8 in a query parameter",
            request("GET", "/v1/users?after=%FF"),
            400,
            "not percent-encoded UTF-8",
        ),
        (
            "a bad user id in the path",
            request("GET", "/v1/documents/users/a.b/USER.md"),
            400,
            "invalid user id \"a.b\"",
        ),
        (
            "`..` as an id",
            request("PUT", "/v1/documents/users/../USER.md")
                .header("if-match", "*")
                .json(&json!({"text": "overwritten"})),
            400,
            "invalid user id \"..\"",
        ),
        (
            "encoded traversal",
            request(
                "GET",
                "/v1/documents/personalities/..%2F..%2Fsecret.txt/MEMORY.md",
            ),
            400,
            "invalid personality id \"../../secret.txt\"",
        ),
        (
            "encoded dots",
            request("DELETE", "/v1/documents/users/%2e%2e/USER.md"),
            400,
            "invalid user id \"..\"",
        ),
        (
            "invalid UTF-8 in the path",
            request("GET", "/v1/documents/users/%ff%fe/USER.md"),
            400,
            "UTF-8",
        ),
        (
            "a path outside the layout",
            request("GET", "/v1/documents/../../secret.txt"),
            404,
            "no such route",
        ),
        (
            "a replace without If-Match",
            request("PUT", "/v1/documents/users/grace/USER.md").json(&json!({"text": "x"})),
            428,
            "If-Match",
        ),
        (
            "a malformed If-Match",
            request("PUT", "/v1/documents/users/grace/USER.md")
                .header("if-match", "W/\"1\"")
                .json(&json!({"text": "x"})),
            400,
            "If-Match",
        ),
        (
            "a malformed Idempotency-Key",
            request("POST", "/v1/documents/users/grace/USER.md/updates")
                .header("idempotency-key", "two words")
                .json(&json!({"updates": [{"action": "add", "store": "user", "content": "x"}]})),
            400,
            "idempotency key",
        ),
        (
            "an update for the other store",
            request("POST", "/v1/documents/users/grace/USER.md/updates")
                .json(&json!({"updates": [{"action": "add", "store": "memory", "content": "x"}]})),
            422,
            "names store \"memory\"",
        ),
        (
            "a control character in If-Match",
            request("PUT", "/v1/documents/users/grace/USER.md")
                .header("if-match", "\x01")
                .json(&json!({"text": "x"})),
            400,
            "if-match holds the control character 0x01",
        ),
        (
            "a DEL in Idempotency-Key",
            request("POST", "/v1/sync")
                .header("idempotency-key", "\x7f")
                .json(&json!({"personality": "ada", "user": "grace",
                    "updates": [{"action": "add", "store": "user", "content": "x"}]})),
            400,
            "idempotency-key holds the control character 0x7f",
        ),
        (
            "a method the route does not take",
            request("PATCH", "/v1/documents/users/grace/USER.md").json(&json!({"text": "x"})),
            405,
            "method",
        ),
    ];
    let before: Vec<(String, usize)> = futures_state(address).await;
    let mut checked = 0;
    for (what, case, status, names) in cases {
        let answer = case.send(address).await.unwrap();
        assert_eq!(
            answer.status,
            status,
            "{what}: {}",
            String::from_utf8_lossy(&answer.body)
        );
        assert_eq!(
            answer.header("content-type"),
            Some("application/problem+json"),
            "{what}"
        );
        let problem = answer.json();
        assert!(
            problem["detail"].as_str().unwrap().contains(names),
            "{what}: {names:?} not in {}",
            problem["detail"]
        );
        assert_eq!(problem["status"], status, "{what}");
        assert!(problem["kind"].is_string(), "{what}");
        assert_eq!(
            futures_state(address).await,
            before,
            "{what} wrote something"
        );
        checked += 1;
    }
    // A byte no URL may hold, raw in the path: hyper refuses it before any route.
    let mut raw_path = b"GET /v1/documents/users/gr".to_vec();
    raw_path.push(0xff);
    raw_path
        .extend_from_slice(format!("ace/USER.md HTTP/1.1\r\nhost: {address}\r\n\r\n").as_bytes());
    let answer = common::send_bytes(address, &raw_path).await.unwrap();
    assert_eq!(answer.status, 400);
    assert_eq!(
        answer.header("content-type"),
        Some("application/problem+json")
    );
    assert!(
        answer.detail().contains("request line holds the byte 0xff"),
        "{}",
        answer.detail()
    );
    assert_eq!(answer.json()["kind"], "invalid-input");
    assert!(!dir.path().join("memory/users/../USER.md").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("secret.txt")).unwrap(),
        "not memory"
    );
    println!("bad input: {checked} cases, each a 4xx problem document, nothing written");
}

async fn futures_state(address: &str) -> Vec<(String, usize)> {
    let mut states = Vec::new();
    for path in SEEDED {
        states.push(state(address, path, None).await);
    }
    states
}

/// The keys of the auth matrix, and the scopes and restriction of each.
const KEYS: [(&str, &str, &str); 5] = [
    ("reader", "reader-key-0123456789", r#"scopes = ["read"]"#),
    (
        "writer",
        "writer-key-0123456789",
        r#"scopes = ["read", "write"]"#,
    ),
    ("admin", "admin-key-01234567890", r#"scopes = ["admin"]"#),
    (
        "scraper",
        "scraper-key-012345678",
        r#"scopes = ["metrics"]"#,
    ),
    (
        "alice-app",
        "alice-key-01234567890",
        r#"scopes = ["read", "write"], users = ["alice"], personalities = ["ada"]"#,
    ),
];

fn key_config(dir: &Path) -> PathBuf {
    let mut text =
        String::from("[providers.files]\nkind = \"markdown\"\nroot = \"memory\"\n[serve.keys]\n");
    for (name, key, rest) in KEYS {
        text.push_str(&format!(
            "{name} = {{ sha256 = \"{}\", {rest} }}\n",
            memory_web::key_sha256(key)
        ));
    }
    write_config(dir, &text)
}

/// The scopes a key holds (admin holds them all).
fn holds(key: &str, scope: &str) -> bool {
    let rest = KEYS.iter().find(|(name, _, _)| *name == key).unwrap().2;
    rest.contains(&format!("\"{scope}\"")) || rest.contains("\"admin\"")
}

/// A request for `operation` at `path` (a template of the OpenAPI document) naming personality
/// `p` and user `u` wherever the route takes them.
fn concrete(method: &str, template: &str, operation: &Value, p: &str, u: &str) -> Request {
    let target = template
        .replace("{personality}", p)
        .replace("{user}", u)
        .replace("{platform}", "telegram")
        .replace("{platform_user}", "1")
        .replace("{number}", "1")
        .replace("{note}", "trips/kyoto.md");
    let id = operation["operationId"].as_str().unwrap();
    let body = match id {
        "prefetch" => Some(json!({"personality": p, "user": u})),
        "sync" => Some(json!({"personality": p, "user": u, "updates": []})),
        "search" => Some(json!({"personality": p, "query": "x"})),
        "link_identity" => Some(json!({"user": u})),
        _ if id.starts_with("replace_") || id.starts_with("write_") => Some(json!({"text": "x"})),
        _ if id.starts_with("rename_") => Some(json!({"to": "trips/osaka.md"})),
        _ if id.starts_with("update_") => Some(json!({"updates": []})),
        _ if id.starts_with("revert_") => Some(json!({"number": 1})),
        _ => None,
    };
    let mut request = request(method, &target).header("if-match", "*");
    if let Some(body) = body {
        request = request.json(&body);
    }
    request
}

/// Every route of the served OpenAPI document, the page's files and `/metrics`, under no key, a
/// wrong key and each key: 401 without a valid key where one is needed, 403 for a key without
/// the scope or outside its restriction, anything else (never a 5xx) otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_under_every_key_and_restriction() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&key_config(dir.path()));
    let address = server.address.as_str();
    let spec = request("GET", "/v1/openapi.json")
        .send(address)
        .await
        .unwrap();
    assert_eq!(spec.status, 200, "the OpenAPI document is public");
    let spec = spec.json();

    let mut cells = 0;
    let wrong = Some("not-a-key-0123456789");
    for (template, item) in spec["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let method = method.to_uppercase();
            let needs: Option<String> = operation["security"][0]["api_key"][0]
                .as_str()
                .map(str::to_owned);
            let names_ids = template.contains("{personality}")
                || template.contains("{user}")
                || matches!(
                    operation["operationId"].as_str(),
                    Some("prefetch" | "sync" | "search")
                );
            let send = |key: Option<&str>, p: &str, u: &str| {
                concrete(&method, template, operation, p, u).key(key)
            };
            for key in [None, wrong] {
                let answer = send(key, "ada", "alice").send(address).await.unwrap();
                let expected_public = needs.is_none();
                match expected_public {
                    // Public: answered whatever the key, a wrong one included.
                    true => assert!(
                        answer.status < 400,
                        "{method} {template} is public: {}",
                        answer.status
                    ),
                    false => assert_eq!(answer.status, 401, "{method} {template} {key:?}"),
                }
                cells += 1;
            }
            let Some(needs) = needs else { continue };
            // The global MEMORY.md and its notes are no personality's of alice-app's (ada
            // keeps her own).
            let global = template.starts_with("/v1/documents/")
                && !template.contains("{personality}")
                && !template.contains("{user}");
            for (name, key, _) in KEYS {
                let answer = send(Some(key), "ada", "alice").send(address).await.unwrap();
                assert!(
                    answer.status < 500,
                    "{method} {template} as {name}: {}",
                    answer.status
                );
                if name == "alice-app" && global && holds(name, &needs) {
                    assert_eq!(answer.status, 403, "{method} {template} as {name}");
                } else if holds(name, &needs) {
                    assert!(
                        !matches!(answer.status, 401 | 403),
                        "{method} {template} as {name} (holds {needs}): {} {}",
                        answer.status,
                        answer.detail()
                    );
                } else {
                    assert_eq!(
                        answer.status, 403,
                        "{method} {template} as {name} lacks {needs}"
                    );
                    assert!(
                        answer
                            .detail()
                            .contains(&format!("lacks the {needs} scope"))
                    );
                }
                cells += 1;
                // Outside its restriction: alice's app may not touch cleo's memory or bob's
                // profile, whether or not they exist.
                if name == "alice-app" && names_ids && holds(name, &needs) {
                    for (p, u) in [("cleo", "alice"), ("ada", "bob")] {
                        // A search names a personality only.
                        if operation["operationId"] == "search" && p == "ada" {
                            continue;
                        }
                        let touches = template.contains("{personality}") && p == "cleo"
                            || template.contains("{user}") && u == "bob"
                            || !template.starts_with("/v1/documents/");
                        if !touches {
                            continue;
                        }
                        let answer = send(Some(key), p, u).send(address).await.unwrap();
                        assert_eq!(
                            answer.status,
                            403,
                            "{method} {template} as alice-app for {p}/{u}: {}",
                            answer.detail()
                        );
                        cells += 1;
                    }
                }
            }
        }
    }
    // The page's files hold no memory: public under any key or none; /metrics takes its scope.
    for path in ["/", "/app.js", "/style.css"] {
        for key in [None, Some("reader-key-0123456789")] {
            let answer = request("GET", path).key(key).send(address).await.unwrap();
            assert_eq!(answer.status, 200, "{path} {key:?}");
            cells += 1;
        }
    }
    for (key, status) in [
        (None, 401),
        (wrong, 401),
        (Some("reader-key-0123456789"), 403),
        (Some("scraper-key-012345678"), 200),
        (Some("admin-key-01234567890"), 200),
    ] {
        let answer = request("GET", "/metrics")
            .key(key)
            .send(address)
            .await
            .unwrap();
        assert_eq!(answer.status, status, "/metrics {key:?}");
        cells += 1;
    }
    // What a restricted key lists is its own.
    let linked = request("PUT", "/v1/identities/telegram/9")
        .key(Some("admin-key-01234567890"))
        .json(&json!({"user": "bob"}))
        .send(address)
        .await
        .unwrap();
    assert_eq!(linked.status, 200);
    let hidden = request("GET", "/v1/identities/telegram/9")
        .key(Some("alice-key-01234567890"))
        .send(address)
        .await
        .unwrap();
    assert_eq!(
        hidden.status, 404,
        "a link to bob is not alice-app's to see"
    );
    println!("auth matrix: {cells} route and key combinations checked");
}

/// What one round of writers acknowledged, and what each tried.
struct Round {
    acknowledged: BTreeSet<String>,
    attempted: BTreeSet<String>,
}

/// 32 clients add 8 entries each to one MEMORY.md, each add with its own Idempotency-Key;
/// one send in four drops its connection mid-response and the add is sent again with its key
/// until an answer arrives. Every add is then there exactly once, with one revision each.
async fn thirty_two_clients_add_with_drops(config: &Path) {
    let server = Server::start(config);
    let address = Arc::new(server.address.clone());
    let drops = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..32)
        .map(|client| {
            let (address, drops) = (Arc::clone(&address), Arc::clone(&drops));
            tokio::spawn(async move {
                let mut acknowledged = Vec::new();
                for n in 0..8 {
                    let entry = format!("client {client} entry {n}");
                    let add = request("POST", "/v1/sync")
                        .header("idempotency-key", &format!("c{client}-e{n}"))
                        .json(&json!({"personality": "ada", "user": "grace",
                            "updates": [{"action": "add", "store": "memory", "content": entry}]}));
                    let mut sends = 0;
                    loop {
                        sends += 1;
                        if (client + n + sends) % 4 == 0 && sends < 4 {
                            // Gone mid-response: after a few bytes, or before any.
                            add.send_and_drop(&address, (client as usize * 7) % 24)
                                .await
                                .unwrap();
                            drops.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        let answer = add.send(&address).await.unwrap();
                        assert_eq!(answer.status, 200, "{}", answer.detail());
                        acknowledged.push(entry.clone());
                        break;
                    }
                }
                acknowledged
            })
        })
        .collect();
    let mut acknowledged = Vec::new();
    for client in clients {
        acknowledged.extend(client.await.unwrap());
    }
    let read = request("GET", "/v1/documents/personalities/ada/MEMORY.md")
        .send(&address)
        .await
        .unwrap();
    let text = read.json()["text"].as_str().unwrap().to_owned();
    for entry in &acknowledged {
        assert_eq!(
            text.lines().filter(|line| line == entry).count(),
            1,
            "{entry} is not there exactly once"
        );
    }
    let entries = text.lines().filter(|line| !line.is_empty()).count();
    assert_eq!(entries, 256, "nothing else is there");
    let mut keys = BTreeSet::new();
    let mut before = String::new();
    loop {
        let page = request(
            "GET",
            &format!("/v1/documents/personalities/ada/MEMORY.md/revisions?limit=100{before}"),
        )
        .send(&address)
        .await
        .unwrap()
        .json();
        for revision in page["revisions"].as_array().unwrap() {
            assert!(keys.insert(revision["idempotency_key"].as_str().unwrap().to_owned()));
        }
        match page["next_before"].as_u64() {
            Some(next) => before = format!("&before={next}"),
            None => break,
        }
    }
    assert_eq!(keys.len(), 256, "one revision per add");
    println!(
        "32 clients: {} adds acknowledged, {} connections dropped mid-response and resent, each add present once with one revision",
        acknowledged.len(),
        drops.load(Ordering::Relaxed)
    );
}

fn markdown_config(dir: &TempDir) -> PathBuf {
    write_config(
        dir.path(),
        "[providers.files]\nkind = \"markdown\"\nroot = \"memory\"\nhistory = { keep = 1000 }\n",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_clients_over_http_lose_and_duplicate_nothing_on_markdown() {
    let dir = tempfile::tempdir().unwrap();
    thirty_two_clients_add_with_drops(&markdown_config(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_clients_over_http_lose_and_duplicate_nothing_on_postgres() {
    if let Some(shared) = shared(Service::Postgres) {
        thirty_two_clients_add_with_drops(&shared.config).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_clients_over_http_lose_and_duplicate_nothing_through_pgbouncer() {
    if let Some(shared) = shared(Service::PgBouncer) {
        thirty_two_clients_add_with_drops(&shared.config).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_clients_over_http_lose_and_duplicate_nothing_on_redis() {
    if let Some(shared) = shared(Service::Redis) {
        thirty_two_clients_add_with_drops(&shared.config).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_clients_over_http_lose_and_duplicate_nothing_on_a_redis_cluster() {
    if let Some(shared) = shared(Service::RedisCluster) {
        thirty_two_clients_add_with_drops(&shared.config).await;
    }
}

/// 16 clients add entries until the server goes; SIGTERM mid-run. The server stops accepting,
/// answers what is in flight and exits 0; every add it acknowledged is in the document once,
/// nothing else is, and the document reads whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_while_sixteen_clients_write_keeps_every_acknowledged_add() {
    let dir = tempfile::tempdir().unwrap();
    let config = markdown_config(&dir);
    let server = Server::start(&config);
    let address = Arc::new(server.address.clone());
    let acknowledged_so_far = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..16)
        .map(|client| {
            let (address, counter) = (Arc::clone(&address), Arc::clone(&acknowledged_so_far));
            tokio::spawn(async move {
                let mut round = Round {
                    acknowledged: BTreeSet::new(),
                    attempted: BTreeSet::new(),
                };
                for n in 0.. {
                    let entry = format!("client {client} entry {n}");
                    round.attempted.insert(entry.clone());
                    let add = request("POST", "/v1/sync")
                        .header("idempotency-key", &format!("t{client}-{n}"))
                        .json(&json!({"personality": "ada", "user": "grace",
                            "updates": [{"action": "add", "store": "memory", "content": entry}]}));
                    match add.send(&address).await {
                        Ok(answer) if answer.status == 200 => {
                            round.acknowledged.insert(entry);
                            counter.fetch_add(1, Ordering::Relaxed);
                        }
                        // Refused or cut off by the stop: not acknowledged.
                        Ok(_) => {}
                        Err(_) => break,
                    }
                }
                round
            })
        })
        .collect();
    while acknowledged_so_far.load(Ordering::Relaxed) < 100 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.terminate();
    let exited = tokio::task::spawn_blocking(move || {
        let mut server = server;
        let status = server.child.wait().unwrap();
        (status, server)
    })
    .await
    .unwrap();
    assert!(
        exited.0.success(),
        "memory serve exited {:?} on SIGTERM",
        exited.0
    );
    let mut acknowledged = BTreeSet::new();
    let mut attempted = BTreeSet::new();
    for client in clients {
        let round = client.await.unwrap();
        acknowledged.extend(round.acknowledged);
        attempted.extend(round.attempted);
    }
    let text = std::fs::read_to_string(dir.path().join("memory/personalities/ada/MEMORY.md"))
        .expect("the document reads whole as UTF-8");
    for entry in &acknowledged {
        assert_eq!(
            text.lines().filter(|line| line == entry).count(),
            1,
            "acknowledged {entry:?} is not there exactly once"
        );
    }
    for line in text.lines().filter(|line| !line.is_empty()) {
        assert!(
            attempted.contains(line),
            "{line:?} is no whole entry anyone wrote"
        );
        assert_eq!(
            text.lines().filter(|l| l == &line).count(),
            1,
            "{line:?} twice"
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("memory/personalities/ada"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    println!(
        "SIGTERM: {} adds acknowledged before the stop, each present once; {} lines in the document, all whole",
        acknowledged.len(),
        text.lines().filter(|line| !line.is_empty()).count()
    );
}

/// A provider that is down gives 503 with Retry-After, and the server keeps serving the
/// personalities on the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_is_down_is_503_and_the_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 1 of loopback: connecting is refused at once.
    let config = write_config(
        dir.path(),
        r#"
        default_provider = "files"
        [providers.files]
        kind = "markdown"
        root = "memory"
        [providers.shared]
        kind = "postgres"
        url = "postgres://postgres@127.0.0.1:1/test?sslmode=disable"
        deadline_ms = 1000
        connect_timeout_ms = 300
        [providers.fast]
        kind = "redis"
        url = "redis://127.0.0.1:1"
        deadline_ms = 1000
        [personalities.remote]
        provider = "shared"
        [personalities.quick]
        provider = "fast"
        "#,
    );
    let server = Server::start(&config);
    let address = server.address.as_str();
    for personality in ["remote", "quick"] {
        let answer = request("POST", "/v1/prefetch")
            .json(&json!({"personality": personality, "user": "grace"}))
            .send(address)
            .await
            .unwrap();
        assert_eq!(answer.status, 503, "{personality}: {}", answer.detail());
        assert_eq!(answer.json()["kind"], "unavailable");
        assert_eq!(answer.json()["retryable"], true);
        assert_eq!(answer.header("retry-after"), Some("1"));
        let write = request("POST", "/v1/sync")
            .json(&json!({"personality": personality, "user": "grace",
                "updates": [{"action": "add", "store": "memory", "content": "x"}]}))
            .send(address)
            .await
            .unwrap();
        assert_eq!(write.status, 503, "{personality}: {}", write.detail());
    }
    let served = request("POST", "/v1/sync")
        .json(&json!({"personality": "ada", "user": "grace",
            "updates": [{"action": "add", "store": "memory", "content": "Still here."}]}))
        .send(address)
        .await
        .unwrap();
    assert_eq!(served.status, 200, "{}", served.detail());
    let health = request("GET", "/v1/health").send(address).await.unwrap();
    assert_eq!(health.status, 200);
    let health = health.json();
    assert_eq!(health["status"], "degraded");
    let ready: BTreeMap<&str, bool> = health["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["ready"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        ready,
        BTreeMap::from([("fast", false), ("files", true), ("shared", false)])
    );
    let readiness = request("GET", "/v1/health/ready")
        .send(address)
        .await
        .unwrap();
    assert_eq!(readiness.status, 503);
    assert_eq!(readiness.header("retry-after"), Some("1"));
}

/// A server that accepts connections and never answers: a database that stalls.
async fn stalled_server() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            open.push(stream);
        }
    });
    (address, held)
}

/// A request past `request_timeout_ms` is answered: 503 for a read (nothing was written), 504
/// for a write (it goes on; its outcome is unknown to the answer). Past
/// `max_concurrent_requests` at once, 503 with Retry-After at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_its_time_or_over_the_limit_is_answered_not_held() {
    let (stalled, _held) = stalled_server().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            r#"
            default_provider = "files"
            [providers.files]
            kind = "markdown"
            root = "memory"
            [providers.slow]
            kind = "postgres"
            url = "postgres://postgres@{stalled}/test?sslmode=disable"
            connect_timeout_ms = 1000
            deadline_ms = 1500
            [personalities.slow]
            provider = "slow"
            [serve]
            request_timeout_ms = 400
            max_concurrent_requests = 1
            "#
        ),
    );
    let server = Server::start(&config);
    let address = server.address.clone();
    let read = request("POST", "/v1/prefetch").json(&json!({"personality": "slow", "user": "u"}));
    let started = std::time::Instant::now();
    let answer = read.send(&address).await.unwrap();
    assert_eq!(answer.status, 503, "{}", answer.detail());
    assert_eq!(answer.json()["kind"], "busy");
    assert_eq!(answer.header("retry-after"), Some("1"));
    assert!(answer.detail().contains("400 ms"), "{}", answer.detail());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    // One request at once: a second, while the first waits on the stalled database, is turned
    // away at once instead of queueing.
    let slow = tokio::spawn({
        let address = address.clone();
        async move {
            request("POST", "/v1/prefetch")
                .json(&json!({"personality": "slow", "user": "u"}))
                .send(&address)
                .await
                .unwrap()
        }
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let quick = request("GET", "/v1/documents/users/u/USER.md");
    let turned_away = quick.send(&address).await.unwrap();
    assert_eq!(turned_away.status, 503, "{}", turned_away.detail());
    assert_eq!(turned_away.header("retry-after"), Some("1"));
    assert!(
        turned_away.detail().contains("most requests at once (1)"),
        "{}",
        turned_away.detail()
    );
    assert_eq!(slow.await.unwrap().status, 503);
    assert_eq!(quick.send(&address).await.unwrap().status, 200);

    // A write past its time is answered 504 and goes on: it keeps its place among the requests
    // served at once until it ends, so stalled writes cannot pile up behind their answers.
    let write = request("POST", "/v1/sync")
        .header("idempotency-key", "slow-1")
        .json(&json!({"personality": "slow", "user": "u",
            "updates": [{"action": "add", "store": "memory", "content": "x"}]}));
    let answer = write.send(&address).await.unwrap();
    assert_eq!(answer.status, 504, "{}", answer.detail());
    assert_eq!(answer.json()["kind"], "outcome-unknown");
    assert!(answer.detail().contains("same Idempotency-Key"));
    let behind = quick.send(&address).await.unwrap();
    assert_eq!(
        behind.status,
        503,
        "the write still runs: {}",
        behind.detail()
    );
    // Once the write gives up on the stalled database, the place is free again.
    let freed = std::time::Instant::now();
    loop {
        let answer = quick.send(&address).await.unwrap();
        if answer.status == 200 {
            break;
        }
        assert!(
            freed.elapsed() < Duration::from_secs(30),
            "the write never gave its place back: {}",
            answer.detail()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `/metrics` counts requests by route and status, times them by route and counts errors by
/// kind; `--access-log` writes one JSON line per request, with the request id the client sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_the_access_log_describe_each_request() {
    let dir = tempfile::tempdir().unwrap();
    let config = markdown_config(&dir);
    let log = dir.path().join("access.log");
    let server = Server::start_logging(&config, &["--access-log"], &log);
    let address = server.address.as_str();
    let add = request("POST", "/v1/sync")
        .header("x-request-id", "trace-42")
        .json(&json!({"personality": "ada", "user": "grace",
            "updates": [{"action": "add", "store": "memory", "content": "Noted."}]}));
    let added = add.send(address).await.unwrap();
    assert_eq!(added.status, 200);
    assert_eq!(added.header("x-request-id"), Some("trace-42"));
    let stale = request("POST", "/v1/sync")
        .json(
            &json!({"personality": "ada", "user": "grace", "if_match": {"memory": "old"},
            "updates": [{"action": "add", "store": "memory", "content": "Late."}]}),
        )
        .send(address)
        .await
        .unwrap();
    assert_eq!(stale.status, 412);
    let generated = stale.header("x-request-id").unwrap().to_owned();
    assert_eq!(
        request("GET", "/v1/nowhere")
            .send(address)
            .await
            .unwrap()
            .status,
        404
    );

    let metrics = request("GET", "/metrics").send(address).await.unwrap();
    assert_eq!(metrics.status, 200);
    assert!(
        metrics
            .header("content-type")
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    let text = String::from_utf8(metrics.body).unwrap();
    for expected in [
        r#"memory_http_requests_total{method="POST",route="/v1/sync",status="200"} 1"#,
        r#"memory_http_requests_total{method="POST",route="/v1/sync",status="412"} 1"#,
        r#"memory_http_requests_total{method="GET",route="unmatched",status="404"} 1"#,
        r#"memory_http_request_duration_seconds_count{method="POST",route="/v1/sync"} 2"#,
        r#"memory_http_request_duration_seconds_bucket{le="0.0512",method="POST",route="/v1/sync"}"#,
        r#"memory_http_errors_total{kind="precondition-failed"} 1"#,
        r#"memory_http_errors_total{kind="not-found"} 1"#,
        "# TYPE memory_http_requests_in_flight gauge",
    ] {
        assert!(text.contains(expected), "{expected} not in:\n{text}");
    }

    server.terminate();
    let mut server = server;
    let status = tokio::task::spawn_blocking(move || server.child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success());
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let first = lines
        .iter()
        .find(|l| l["request_id"] == "trace-42")
        .unwrap();
    assert_eq!(first["method"], "POST");
    assert_eq!(first["path"], "/v1/sync");
    assert_eq!(first["route"], "/v1/sync");
    assert_eq!(first["status"], 200);
    assert_eq!(first["key"], "local");
    assert_eq!(first["kind"], Value::Null);
    assert!(first["duration_ms"].as_f64().unwrap() > 0.0);
    assert!(first["time"].as_str().unwrap().ends_with('Z'));
    let refused = lines
        .iter()
        .find(|l| l["request_id"] == generated.as_str())
        .unwrap();
    assert_eq!(refused["status"], 412);
    assert_eq!(refused["kind"], "precondition-failed");
    assert_eq!(lines.len(), 4, "one line per request: {lines:?}");
}

/// Browsers may call the API from another origin only when the config lists it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_answers_only_configured_origins() {
    let dir = tempfile::tempdir().unwrap();
    let preflight = |origin: &str| {
        request("OPTIONS", "/v1/sync")
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "content-type,idempotency-key",
            )
    };
    let closed = Server::start(&markdown_config(&dir));
    let answer = preflight("https://app.example")
        .send(&closed.address)
        .await
        .unwrap();
    assert_eq!(answer.header("access-control-allow-origin"), None);
    drop(closed);

    let config = write_config(
        dir.path(),
        "[providers.files]\nkind = \"markdown\"\nroot = \"memory\"\n[serve]\ncors_origins = [\"https://app.example\"]\n",
    );
    let open = Server::start(&config);
    let answer = preflight("https://app.example")
        .send(&open.address)
        .await
        .unwrap();
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    let allowed = answer.header("access-control-allow-headers").unwrap();
    assert!(allowed.contains("idempotency-key"), "{allowed}");
    let other = preflight("https://evil.example")
        .send(&open.address)
        .await
        .unwrap();
    assert_eq!(other.header("access-control-allow-origin"), None);
    let read = request("GET", "/v1/users")
        .header("origin", "https://app.example")
        .send(&open.address)
        .await
        .unwrap();
    assert_eq!(
        read.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    let exposed = read.header("access-control-expose-headers").unwrap();
    assert!(
        exposed.contains("etag") && exposed.contains("idempotent-replayed"),
        "{exposed}"
    );
}

/// Two `memory serve` processes over one shared provider, as behind a load balancer: 16
/// clients send each keyed add to one server, lose the answer (the connection dropped), and
/// resend it to the other. The second server has never seen the key; the receipts stored with
/// the document make it answer the first call's report as a replay, so every add lands once.
async fn two_servers_share_one_provider(config: &Path) {
    let (a, b) = (Server::start(config), Server::start(config));
    let servers = Arc::new([a.address.clone(), b.address.clone()]);
    let replays = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..16)
        .map(|client| {
            let (servers, replays) = (Arc::clone(&servers), Arc::clone(&replays));
            tokio::spawn(async move {
                for n in 0..8 {
                    let entry = format!("client {client} entry {n}");
                    let add = request("POST", "/v1/sync")
                        .header("idempotency-key", &format!("lb-{client}-{n}"))
                        .json(&json!({"personality": "ada", "user": "grace",
                            "updates": [{"action": "add", "store": "memory", "content": entry}]}));
                    let first = &servers[(client + n) % 2];
                    let second = &servers[(client + n + 1) % 2];
                    // The first answer is lost, after the write began; the retry goes elsewhere.
                    if n % 2 == 0 {
                        let answer = add.send(first).await.unwrap();
                        assert_eq!(answer.status, 200, "{}", answer.detail());
                    } else {
                        add.send_and_drop(first, 0).await.unwrap();
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    let again = add.send(second).await.unwrap();
                    assert_eq!(again.status, 200, "{}", again.detail());
                    if again.header("idempotent-replayed") == Some("true") {
                        replays.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.await.unwrap();
    }
    let read = request("GET", "/v1/documents/personalities/ada/MEMORY.md")
        .send(&servers[0])
        .await
        .unwrap();
    let text = read.json()["text"].as_str().unwrap().to_owned();
    for client in 0..16 {
        for n in 0..8 {
            let entry = format!("client {client} entry {n}");
            assert_eq!(
                text.lines().filter(|line| *line == entry).count(),
                1,
                "{entry} is not there exactly once"
            );
        }
    }
    assert_eq!(text.lines().filter(|line| !line.is_empty()).count(), 128);
    assert!(
        replays.load(Ordering::Relaxed) >= 64,
        "every resend of an add the first server answered is a replay: {}",
        replays.load(Ordering::Relaxed)
    );
    println!(
        "two servers: 128 adds, each sent to both servers, each present once; {} resends answered as replays",
        replays.load(Ordering::Relaxed)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_over_postgres_apply_each_keyed_add_once() {
    if let Some(shared) = shared(Service::Postgres) {
        two_servers_share_one_provider(&shared.config).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_through_pgbouncer_apply_each_keyed_add_once() {
    if let Some(shared) = shared(Service::PgBouncer) {
        two_servers_share_one_provider(&shared.config).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_over_redis_apply_each_keyed_add_once() {
    if let Some(shared) = shared(Service::Redis) {
        two_servers_share_one_provider(&shared.config).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_over_a_redis_cluster_apply_each_keyed_add_once() {
    if let Some(shared) = shared(Service::RedisCluster) {
        two_servers_share_one_provider(&shared.config).await;
    }
}

/// Opens `count` connections and writes `head` on each, then leaves them as they are: clients
/// that stall mid-request.
async fn stalled_clients(address: &str, count: usize, head: &str) -> Vec<tokio::net::TcpStream> {
    use tokio::io::AsyncWriteExt;
    let mut open = Vec::with_capacity(count);
    for _ in 0..count {
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        open.push(stream);
    }
    open
}

/// Everything the server sends on `stream` until it closes it, or `None` when it is still
/// open after `wait`.
async fn until_closed(stream: &mut tokio::net::TcpStream, wait: Duration) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut sent = Vec::new();
    match tokio::time::timeout(wait, stream.read_to_end(&mut sent)).await {
        Ok(_) => Some(String::from_utf8_lossy(&sent).into_owned()),
        Err(_) => None,
    }
}

/// Clients that stall cannot stall the server: bodies that never arrive hold no place among
/// the requests served at once and are answered 408 after `body_timeout_ms`; headers sent
/// slowly (slowloris) and connections left idle are closed after `header_timeout_ms`; and
/// meanwhile health, reads and writes are answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_stall_hold_no_place_and_are_cut_off_in_time() {
    const STALLED: usize = 48;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        r#"
        [providers.files]
        kind = "markdown"
        root = "memory"
        [serve]
        max_concurrent_requests = 8
        body_timeout_ms = 1500
        header_timeout_ms = 1500
        "#,
    );
    let server = Server::start(&config);
    let address = server.address.as_str();
    let sync = |content: &str| {
        request("POST", "/v1/sync").json(&json!({"personality": "ada", "user": "grace",
            "updates": [{"action": "add", "store": "user", "content": content}]}))
    };

    let mut bodies = stalled_clients(
        address,
        STALLED,
        &format!(
            "POST /v1/sync HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{"
        ),
    )
    .await;
    let mut headers = stalled_clients(
        address,
        STALLED,
        &format!("GET /v1/health HTTP/1.1\r\nHost: {address}\r\nX-Slow: aaaa"),
    )
    .await;
    let mut idle = stalled_clients(address, 1, "").await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Six times as many stalled writers as places, and the server still answers.
    let health = request("GET", "/v1/health").send(address).await.unwrap();
    assert_eq!(health.status, 200, "{}", health.detail());
    let added = sync("Name: Grace.").send(address).await.unwrap();
    assert_eq!(added.status, 200, "{}", added.detail());
    let read = request("GET", "/v1/documents/users/grace/USER.md")
        .send(address)
        .await
        .unwrap();
    assert_eq!(read.status, 200, "{}", read.detail());

    // Each body that never came is answered 408, a problem document, and its connection closed.
    let wait = Duration::from_secs(20);
    for stream in &mut bodies {
        let answer = until_closed(stream, wait)
            .await
            .expect("a stalled body is answered and its connection closed");
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(
            answer.contains("application/problem+json") && answer.contains("1500 ms"),
            "{answer}"
        );
    }
    // Headers never finished, and a connection never used: closed.
    for stream in headers.iter_mut().chain(&mut idle) {
        let closed = until_closed(stream, wait).await;
        assert!(closed.is_some(), "a stalled connection is still open");
    }
    // Nothing the stalled writers sent was written.
    let revisions = request("GET", "/v1/documents/users/grace/USER.md/revisions")
        .send(address)
        .await
        .unwrap();
    assert_eq!(revisions.json()["revisions"].as_array().unwrap().len(), 1);
    println!(
        "stalled: {STALLED} bodies answered 408, {STALLED} unfinished headers and 1 idle connection closed; health, a read and a write answered meanwhile"
    );
}

/// More connections than `max_connections` wait to be accepted until one closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_wait_for_one_to_close() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        r#"
        [providers.files]
        kind = "markdown"
        root = "memory"
        [serve]
        max_connections = 4
        header_timeout_ms = 60000
        "#,
    );
    let server = Server::start(&config);
    let address = server.address.clone();
    let mut open = stalled_clients(&address, 4, "").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let health = tokio::spawn({
        let address = address.clone();
        async move { request("GET", "/v1/health").send(&address).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!health.is_finished(), "a fifth connection was served");
    drop(open.pop());
    let answered = tokio::time::timeout(Duration::from_secs(10), health)
        .await
        .expect("served once a connection closed")
        .unwrap()
        .unwrap();
    assert_eq!(answered.status, 200);
}

/// The request method is the client's to choose; `/metrics` labels come from a closed set, so
/// made-up methods cannot grow it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_methods_are_one_metrics_label() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&markdown_config(&dir));
    let address = server.address.as_str();
    for n in 0..40 {
        let answer = request(&format!("MADEUP{n}"), "/v1/health")
            .send(address)
            .await
            .unwrap();
        assert_eq!(answer.status, 405, "{}", answer.detail());
    }
    let metrics = request("GET", "/metrics").send(address).await.unwrap();
    let text = String::from_utf8(metrics.body).unwrap();
    assert!(!text.contains("MADEUP"), "{text}");
    assert!(
        text.contains(
            r#"memory_http_requests_total{method="other",route="/v1/health",status="405"} 40"#
        ),
        "{text}"
    );
}

/// A diff of two large unrelated revisions (quadratic to make smallest) gives up on being
/// smallest at its deadline and runs off the async workers: health is answered while two such
/// diffs run, and both diffs answer, exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_diffs_neither_stall_the_server_nor_run_unbounded() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&markdown_config(&dir));
    let address = server.address.clone();
    let lines =
        |prefix: char| -> String { (0..16_000).map(|n| format!("{prefix}{n:07}\n")).collect() };
    for text in [lines('a'), lines('b')] {
        let put = request("PUT", "/v1/documents/users/x/USER.md")
            .header("if-match", "*")
            .json(&json!({"text": text}));
        let answer = put.send(&address).await.unwrap();
        assert_eq!(answer.status, 200, "{}", answer.detail());
    }
    let diffs: Vec<_> = (0..2)
        .map(|_| {
            let address = address.clone();
            tokio::spawn(async move {
                request("GET", "/v1/documents/users/x/USER.md/diff")
                    .send(&address)
                    .await
                    .unwrap()
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let health = request("GET", "/v1/health").send(&address).await.unwrap();
    assert_eq!(health.status, 200);
    assert!(
        diffs.iter().any(|diff| !diff.is_finished()),
        "health was answered only after the diffs"
    );
    for diff in diffs {
        let answer = tokio::time::timeout(Duration::from_secs(60), diff)
            .await
            .expect("a diff past its deadline ends")
            .unwrap();
        assert_eq!(answer.status, 200, "{}", answer.detail());
        let diff = answer.json()["diff"].as_str().unwrap().to_owned();
        let removed = diff.lines().filter(|l| l.starts_with("-a")).count();
        let added = diff.lines().filter(|l| l.starts_with("+b")).count();
        assert_eq!((removed, added), (16_000, 16_000));
    }
}
