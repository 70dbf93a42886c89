//! The Memory page's API over a markdown wiring: reads, guarded saves, refusals and access.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use memory_core::{
    DocumentId, IfMatch, MemoryProvider, MemoryUpdate, PersonalityId, Store, UserId,
};
use memory_web::{Access, MAX_BODY_BYTES, router};
use memory_wiring::{Config, Memory};
use serde_json::{Value, json};
use tempfile::TempDir;
use tower::ServiceExt;

const HOST: &str = "127.0.0.1:8700";

/// Personality ada keeps her own MEMORY.md with small caps; bob shares the global one.
fn wiring() -> (TempDir, Memory) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("memory.toml");
    let config = Config::parse(
        r#"
        [providers.files]
        kind = "markdown"
        root = "memory"

        [personalities.ada]
        caps.memory = { soft = 40, hard = 80 }

        [personalities.bob]
        memory_scope = "global"

        [mcp]
        personality = "ada"
        user = "grace"
        "#,
        &file,
    )
    .unwrap();
    (dir, Memory::new(config))
}

async fn add(memory: &Memory, personality: &str, user: &str, store: Store, text: &str) {
    let ctx = memory.context(
        PersonalityId::new(personality).unwrap(),
        UserId::new(user).unwrap(),
    );
    memory
        .sync(&ctx, &[MemoryUpdate::add(store, text)], &IfMatch::NONE)
        .await
        .unwrap();
}

async fn send(memory: &Memory, access: Access, request: Request<Body>) -> (StatusCode, Value) {
    let response = router(memory.clone(), access)
        .oneshot(request)
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, body)
}

async fn get(memory: &Memory, uri: &str) -> (StatusCode, Value) {
    let request = Request::get(uri).header(header::HOST, HOST);
    send(
        memory,
        Access::loopback(),
        request.body(Body::empty()).unwrap(),
    )
    .await
}

async fn put(memory: &Memory, body: Value) -> (StatusCode, Value) {
    let request = Request::put("/api/document")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/json");
    let request = request.body(Body::from(body.to_string())).unwrap();
    send(memory, Access::loopback(), request).await
}

async fn text_of(memory: &Memory, document: DocumentId) -> String {
    memory.read(&document).await.unwrap().text
}

fn ada_memory() -> DocumentId {
    DocumentId::PersonalityMemory {
        personality: PersonalityId::new("ada").unwrap(),
    }
}

#[tokio::test]
async fn the_page_and_its_assets_are_embedded() {
    let (_dir, memory) = wiring();
    for (uri, content_type, marker) in [
        (
            "/",
            "text/html; charset=utf-8",
            "<select id=\"personality\"",
        ),
        ("/app.js", "text/javascript; charset=utf-8", "/api/document"),
        ("/style.css", "text/css; charset=utf-8", "textarea"),
    ] {
        let request = Request::get(uri).header(header::HOST, HOST);
        let response = router(memory.clone(), Access::loopback())
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{uri}");
        assert_eq!(response.headers()[header::CONTENT_TYPE], content_type);
        if uri == "/" {
            let policy = response.headers()[header::CONTENT_SECURITY_POLICY]
                .to_str()
                .unwrap();
            assert!(policy.contains("script-src 'self'"), "{policy}");
        }
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        assert!(String::from_utf8_lossy(&bytes).contains(marker), "{uri}");
    }
}

#[tokio::test]
async fn the_directory_offers_configured_and_stored_ids() {
    let (_dir, memory) = wiring();
    add(&memory, "cleo", "alan", Store::Memory, "Cleo's note.").await;
    add(&memory, "cleo", "alan", Store::User, "Alan likes chess.").await;

    let (status, body) = get(&memory, "/api/directory").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let ids: Vec<&str> = body["personalities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ada", "bob", "cleo"]);
    assert_eq!(body["personalities"][1]["scope"], "global");
    assert_eq!(body["personalities"][0]["provider"], "files");
    assert_eq!(body["personalities"][0]["kind"], "markdown");
    assert_eq!(body["users"], json!(["alan", "grace"]));
    assert_eq!(body["default_personality"], "ada");
    assert_eq!(body["default_user"], "grace");
}

#[tokio::test]
async fn a_pair_shows_both_documents_and_what_the_agent_sees() {
    let (dir, memory) = wiring();
    add(&memory, "ada", "grace", Store::Memory, "Project: Lovelace.").await;
    add(&memory, "ada", "grace", Store::User, "Name: Grace.").await;

    let (status, body) = get(&memory, "/api/pair?personality=ada&user=grace").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let stored = memory.read(&ada_memory()).await.unwrap();
    assert_eq!(body["memory"]["text"], stored.text);
    assert_eq!(body["memory"]["version"], stored.version.as_str());
    assert_eq!(body["memory"]["path"], "personalities/ada/MEMORY.md");
    assert_eq!(body["memory"]["title"], "MEMORY.md of personality 'ada'");
    let location = body["memory"]["location"].as_str().unwrap();
    assert!(
        location.starts_with(dir.path().to_str().unwrap()),
        "{location}"
    );
    assert!(body["memory"]["modified"].as_u64().unwrap() > 1_700_000_000_000);
    assert_eq!(body["memory"]["caps"], json!({ "soft": 40, "hard": 80 }));
    assert_eq!(body["user"]["text"], "Name: Grace.\n");
    assert_eq!(body["user"]["path"], "users/grace/USER.md");
    assert_eq!(
        body["prefetch"],
        "## About You\n\nName: Grace.\n\n## Memory\n\nProject: Lovelace."
    );
    assert_eq!(body["provider"], "files");
    assert_eq!(body["recall"], false);

    // A document never written reads as empty, with a version a first save can use.
    let (status, body) = get(&memory, "/api/pair?personality=ada&user=nobody").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["text"], "");
    assert_eq!(body["user"]["modified"], Value::Null);
    assert!(body["user"]["version"].is_string());
}

#[tokio::test]
async fn a_save_with_the_loaded_version_is_what_the_agent_reads_next() {
    let (_dir, memory) = wiring();
    add(&memory, "ada", "grace", Store::Memory, "Typo: Lovelase.").await;
    let (_, view) = get(&memory, "/api/pair?personality=ada&user=grace").await;

    let (status, body) = put(
        &memory,
        json!({
            "personality": "ada", "user": "grace", "store": "memory",
            "text": "Project: Lovelace.", "version": view["memory"]["version"],
        }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["written"], true);
    assert_eq!(body["over_soft_cap"], false);
    assert_eq!(body["document"]["text"], "Project: Lovelace.\n");
    assert_ne!(body["document"]["version"], view["memory"]["version"]);

    let ctx = memory.context(
        PersonalityId::new("ada").unwrap(),
        UserId::new("grace").unwrap(),
    );
    let seen = memory.prefetch(&ctx).await.unwrap();
    assert_eq!(seen.context.unwrap(), "## Memory\n\nProject: Lovelace.");
    assert_eq!(seen.memory.version.as_str(), body["document"]["version"]);

    // Saving the same text again writes nothing.
    let (status, again) = put(
        &memory,
        json!({
            "personality": "ada", "user": "grace", "store": "memory",
            "text": "Project: Lovelace.", "version": body["document"]["version"],
        }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["written"], false);
}

#[tokio::test]
async fn a_save_over_a_newer_version_is_refused_and_writes_nothing() {
    let (_dir, memory) = wiring();
    add(&memory, "ada", "grace", Store::User, "Name: Grace.").await;
    let (_, view) = get(&memory, "/api/pair?personality=ada&user=grace").await;
    // The agent writes after the page loaded.
    add(&memory, "ada", "grace", Store::User, "Lives in Arlington.").await;

    let (status, body) = put(
        &memory,
        json!({
            "personality": "ada", "user": "grace", "store": "user",
            "text": "Name: Grace Hopper.", "version": view["user"]["version"],
        }),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["kind"], "conflict");
    let message = body["error"].as_str().unwrap();
    assert!(message.contains("USER.md of user 'grace'"), "{message}");
    assert!(message.contains("nothing was written"), "{message}");
    let user = DocumentId::user(&UserId::new("grace").unwrap());
    assert_eq!(
        text_of(&memory, user).await,
        "Name: Grace.\n\nLives in Arlington.\n"
    );
}

#[tokio::test]
async fn a_global_scope_personality_edits_the_global_memory() {
    let (_dir, memory) = wiring();
    let (_, view) = get(&memory, "/api/pair?personality=bob&user=grace").await;
    assert_eq!(view["memory"]["path"], "MEMORY.md");
    assert_eq!(view["memory"]["title"], "the global MEMORY.md");

    let (status, body) = put(
        &memory,
        json!({
            "personality": "bob", "user": "grace", "store": "memory",
            "text": "Shared fact.", "version": view["memory"]["version"],
        }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        text_of(&memory, DocumentId::GlobalMemory).await,
        "Shared fact.\n"
    );
}

#[tokio::test]
async fn caps_apply_to_saves_as_to_the_agent() {
    let (_dir, memory) = wiring();
    let (_, view) = get(&memory, "/api/pair?personality=ada&user=grace").await;
    let version = &view["memory"]["version"];

    let over_hard = "x".repeat(81);
    let (status, body) = put(
        &memory,
        json!({"personality": "ada", "user": "grace", "store": "memory", "text": over_hard, "version": version}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["kind"], "refused");
    assert!(body["error"].as_str().unwrap().contains("hard cap of 80"));
    assert_eq!(text_of(&memory, ada_memory()).await, "");

    let over_soft = "y".repeat(50);
    let (status, body) = put(
        &memory,
        json!({"personality": "ada", "user": "grace", "store": "memory", "text": over_soft, "version": version}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["over_soft_cap"], true);
}

#[tokio::test]
async fn ids_are_validated_and_nothing_outside_the_documents_is_reachable() {
    let (dir, memory) = wiring();
    std::fs::write(dir.path().join("secret.txt"), "not memory").unwrap();

    for uri in [
        "/api/pair?personality=..%2F..%2Fetc&user=grace",
        "/api/pair?personality=ada&user=a%2Fb",
        "/api/pair?personality=ada",
    ] {
        let (status, body) = get(&memory, uri).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {body}");
        assert_eq!(body["kind"], "invalid-input", "{uri}");
    }
    let (_, body) = get(&memory, "/api/pair?personality=..%2F..%2Fetc&user=grace").await;
    let message = body["error"].as_str().unwrap();
    assert!(
        message.contains("invalid personality id \"../../etc\""),
        "{message}"
    );

    let (status, body) = put(
        &memory,
        json!({"personality": "ada", "user": "../grace", "store": "user", "text": "x", "version": "0"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"].as_str().unwrap().contains("invalid user id"));
    let (status, body) = put(
        &memory,
        json!({"personality": "ada", "user": "grace", "store": "secret", "text": "x", "version": "0"}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body["error"].as_str().unwrap().contains("store"), "{body}");

    for uri in [
        "/secret.txt",
        "/memory.toml",
        "/../secret.txt",
        "/assets/app.js",
        "/api/documents/secret.txt",
    ] {
        let (status, _) = get(&memory, uri).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri}");
    }
    assert!(memory.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn oversized_and_non_json_bodies_are_refused() {
    let (_dir, memory) = wiring();
    let (_, view) = get(&memory, "/api/pair?personality=bob&user=grace").await;
    let huge = "z".repeat(MAX_BODY_BYTES + 1);
    let (status, _) = put(
        &memory,
        json!({"personality": "bob", "user": "grace", "store": "memory", "text": huge, "version": view["memory"]["version"]}),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);

    // A form post (what another site could send without asking) is not JSON.
    let request = Request::put("/api/document")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from(r#"{"personality":"bob"}"#))
        .unwrap();
    let (status, body) = send(&memory, Access::loopback(), request).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
    assert!(memory.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_loopback_server_answers_only_to_loopback_host_names() {
    let (_dir, memory) = wiring();
    for host in [
        "evil.example",
        "evil.example:8700",
        "localhost.evil.example",
    ] {
        let request = Request::get("/api/directory").header(header::HOST, host);
        let (status, body) = send(
            &memory,
            Access::loopback(),
            request.body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{host}");
        assert_eq!(body["kind"], "forbidden-host");
    }
    for host in ["localhost:8700", "[::1]:8700", "127.0.0.1"] {
        let request = Request::get("/api/directory").header(header::HOST, host);
        let (status, _) = send(
            &memory,
            Access::loopback(),
            request.body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{host}");
    }
}

#[tokio::test]
async fn a_remote_server_needs_its_token_for_the_api() {
    let (_dir, memory) = wiring();
    let token = "0123456789abcdef-token";
    let access =
        Access::for_address("0.0.0.0:8700".parse().unwrap(), true, Some(token.into())).unwrap();
    let request = |uri: &str, authorization: Option<&str>| {
        let mut request = Request::get(uri).header(header::HOST, "memory.example:8700");
        if let Some(value) = authorization {
            request = request.header(header::AUTHORIZATION, value);
        }
        request.body(Body::empty()).unwrap()
    };
    for authorization in [None, Some("Bearer wrong"), Some(token)] {
        let (status, body) = send(
            &memory,
            access.clone(),
            request("/api/directory", authorization),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{authorization:?}");
        assert_eq!(body["kind"], "unauthorized");
    }
    let bearer = format!("Bearer {token}");
    let (status, _) = send(
        &memory,
        access.clone(),
        request("/api/directory", Some(&bearer)),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // The page holds no memory: it loads, then asks for the token.
    let (status, _) = send(&memory, access, request("/", None)).await;
    assert_eq!(status, StatusCode::OK);
}

/// With cyd's memory on a second root and every USER.md in the first, the page shows cyd the
/// one USER.md every personality reads, and a save from cyd's page lands there.
#[tokio::test]
async fn the_page_reads_and_saves_each_document_in_its_home() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::parse(
        r#"
        default_provider = "files"
        [providers.files]
        kind = "markdown"
        root = "memory"
        [providers.elsewhere]
        kind = "markdown"
        root = "elsewhere"
        [personalities.cyd]
        provider = "elsewhere"
        "#,
        &dir.path().join("memory.toml"),
    )
    .unwrap();
    let memory = Memory::new(config);
    add(&memory, "ada", "grace", Store::User, "Allergic to peanuts.").await;
    add(&memory, "cyd", "grace", Store::Memory, "cyd's note").await;

    let (status, pair) = get(&memory, "/api/pair?personality=cyd&user=grace").await;
    assert_eq!(status, StatusCode::OK, "{pair}");
    assert_eq!(pair["user"]["text"], "Allergic to peanuts.\n");
    assert_eq!(pair["memory"]["text"], "cyd's note\n");
    assert_eq!(pair["provider"], "elsewhere");
    assert_eq!(
        pair["prefetch"],
        "## About You\n\nAllergic to peanuts.\n\n## Memory\n\ncyd's note"
    );
    let home = dir.path().join("memory/users/grace/USER.md");
    assert_eq!(pair["user"]["location"], home.display().to_string());

    let (status, saved) = put(
        &memory,
        json!({"personality": "cyd", "user": "grace", "store": "user",
               "text": "Allergic to peanuts and sesame.", "version": pair["user"]["version"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{saved}");
    assert_eq!(
        std::fs::read_to_string(&home).unwrap(),
        "Allergic to peanuts and sesame.\n"
    );
    assert!(!dir.path().join("elsewhere/users").exists());
    let (_, ada) = get(&memory, "/api/pair?personality=ada&user=grace").await;
    assert_eq!(ada["user"]["text"], "Allergic to peanuts and sesame.\n");
    assert_eq!(ada["warnings"], json!([]));

    // A profile left in cyd's own provider is pointed out on cyd's page, not shown as USER.md.
    let stray = dir.path().join("elsewhere/users/grace/USER.md");
    std::fs::create_dir_all(stray.parent().unwrap()).unwrap();
    std::fs::write(&stray, "Vegetarian.\n").unwrap();
    let (_, cyd) = get(&memory, "/api/pair?personality=cyd&user=grace").await;
    assert_eq!(cyd["user"]["text"], "Allergic to peanuts and sesame.\n");
    let warning = cyd["warnings"][0].as_str().unwrap_or_default();
    assert!(
        warning.contains("also has a copy in provider \"elsewhere\""),
        "{cyd}"
    );
}

async fn post_revert(memory: &Memory, body: Value) -> (StatusCode, Value) {
    let request = Request::post("/api/revert")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/json");
    let request = request.body(Body::from(body.to_string())).unwrap();
    send(memory, Access::loopback(), request).await
}

const ADA_MEMORY: &str = "/api/history?path=personalities/ada/MEMORY.md";

/// The page's `number`s of a history answer, newest first.
fn numbers(history: &Value) -> Vec<u64> {
    history["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|revision| revision["number"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn history_lists_revisions_newest_first_with_their_diffs() {
    let (_dir, memory) = wiring();
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    add(&memory, "ada", "grace", Store::Memory, "Project: Lovelase.").await;
    let (_, view) = get(&memory, "/api/pair?personality=ada&user=grace").await;
    let (status, saved) = put(
        &memory,
        json!({
            "personality": "ada", "user": "grace", "store": "memory",
            "text": "Project: Lovelace.\n\nDue in March.", "version": view["memory"]["version"],
        }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{saved}");

    let (status, history) = get(&memory, ADA_MEMORY).await;
    assert_eq!(status, StatusCode::OK, "{history}");
    assert_eq!(history["path"], "personalities/ada/MEMORY.md");
    assert_eq!(history["title"], "MEMORY.md of personality 'ada'");
    assert_eq!(numbers(&history), [2, 1]);
    assert_eq!(history["more"], false);

    // The page's save: from the web, a replace, what the document holds now.
    let newest = &history["revisions"][0];
    assert_eq!(newest["surface"], "web");
    assert_eq!(newest["actions"], json!(["replace"]));
    assert_eq!(newest["personality"], "ada");
    assert_eq!(newest["user"], "grace");
    assert_eq!(newest["version"], saved["document"]["version"]);
    assert_eq!(newest["tombstone"], false);
    assert_eq!(newest["oldest_kept"], false);
    assert_eq!(
        (
            newest["bytes_before"].as_u64(),
            newest["bytes_after"].as_u64()
        ),
        (Some(19), Some(34))
    );
    let time = newest["time"].as_u64().unwrap();
    assert!(time >= started.saturating_sub(1000), "{time} < {started}");
    assert!(newest.get("text").is_none(), "no full text: {newest}");
    let diff = newest["diff"].as_str().unwrap();
    assert!(diff.starts_with("--- #1\n+++ #2\n"), "{diff}");
    assert!(
        diff.contains("-Project: Lovelase.\n+Project: Lovelace.\n+\n+Due in March.\n"),
        "{diff}"
    );

    // The first write: the agent's add, its diff from the empty document.
    let first = &history["revisions"][1];
    assert_eq!(first["surface"], "api");
    assert_eq!(first["actions"], json!(["add"]));
    assert_eq!(first["bytes_before"], 0);
    assert_eq!(first["oldest_kept"], false);
    let diff = first["diff"].as_str().unwrap();
    assert!(diff.contains("+++ #1\n"), "{diff}");
    assert!(diff.contains("+Project: Lovelase.\n"), "{diff}");

    // A limit lists the newest only, still with the diff from the one before it.
    let (status, limited) = get(&memory, &format!("{ADA_MEMORY}&limit=1")).await;
    assert_eq!(status, StatusCode::OK, "{limited}");
    assert_eq!(numbers(&limited), [2]);
    assert_eq!(limited["more"], true);
    assert_eq!(
        limited["revisions"][0]["diff"],
        history["revisions"][0]["diff"]
    );

    // A document never written has no history; the global one is reached by its own path.
    let (status, empty) = get(&memory, "/api/history?path=MEMORY.md").await;
    assert_eq!(status, StatusCode::OK, "{empty}");
    assert_eq!(empty["revisions"], json!([]));
}

#[tokio::test]
async fn history_shows_a_hand_edit_and_says_when_older_revisions_were_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::parse(
        r#"
        [providers.files]
        kind = "markdown"
        root = "memory"
        history = { keep = 2 }
        "#,
        &dir.path().join("memory.toml"),
    )
    .unwrap();
    let memory = Memory::new(config);
    for text in ["One.", "Two.", "Three."] {
        add(&memory, "ada", "grace", Store::Memory, text).await;
    }
    let (status, history) = get(&memory, ADA_MEMORY).await;
    assert_eq!(status, StatusCode::OK, "{history}");
    assert_eq!(numbers(&history), [3, 2]);
    let oldest = &history["revisions"][1];
    assert_eq!(oldest["oldest_kept"], true, "{oldest}");
    assert!(oldest.get("diff").is_none(), "#1 is pruned: {oldest}");
    assert!(history["revisions"][0]["diff"].is_string());

    // An edit made outside agent-memory heads the history, as the next write will record it.
    let file = dir.path().join("memory/personalities/ada/MEMORY.md");
    std::fs::write(&file, "Rewritten by hand.\n").unwrap();
    let (status, history) = get(&memory, ADA_MEMORY).await;
    assert_eq!(status, StatusCode::OK, "{history}");
    assert_eq!(numbers(&history), [4, 3, 2]);
    let external = &history["revisions"][0];
    assert_eq!(external["surface"], "external");
    assert_eq!(external["personality"], Value::Null);
    let diff = external["diff"].as_str().unwrap();
    assert!(diff.contains("+Rewritten by hand.\n"), "{diff}");
}

#[tokio::test]
async fn history_takes_only_a_document_path() {
    let (dir, memory) = wiring();
    std::fs::write(dir.path().join("secret.txt"), "not memory").unwrap();
    for uri in [
        "/api/history",
        "/api/history?path=secret.txt",
        "/api/history?path=..%2Fsecret.txt",
        "/api/history?path=personalities%2F..%2FMEMORY.md",
        "/api/history?path=users%2Fgrace%2FMEMORY.md",
        "/api/history?path=%2Fetc%2Fpasswd",
        "/api/history?path=MEMORY.md&limit=many",
    ] {
        let (status, body) = get(&memory, uri).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {body}");
        assert_eq!(body["kind"], "invalid-input", "{uri}");
    }
    let (_, body) = get(&memory, "/api/history?path=secret.txt").await;
    let message = body["error"].as_str().unwrap();
    assert!(message.contains("users/<id>/USER.md"), "{message}");

    // More than the page may list at once is cut to the most it may.
    for text in ["a", "b", "c"] {
        add(&memory, "ada", "grace", Store::Memory, text).await;
    }
    let (status, body) = get(&memory, &format!("{ADA_MEMORY}&limit=100000")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(numbers(&body), [3, 2, 1]);
}

#[tokio::test]
async fn a_revert_restores_the_text_as_a_revision_from_the_web() {
    let (_dir, memory) = wiring();
    add(&memory, "ada", "grace", Store::Memory, "Project: Lovelace.").await;
    // A bad rewrite by the agent.
    let ctx = memory.context(
        PersonalityId::new("ada").unwrap(),
        UserId::new("grace").unwrap(),
    );
    memory
        .sync(
            &ctx,
            &[MemoryUpdate::replace(Store::Memory, "Forgot everything.")],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    let (_, view) = get(&memory, "/api/pair?personality=ada&user=grace").await;

    let (status, body) = post_revert(
        &memory,
        json!({"personality": "ada", "user": "grace", "store": "memory",
               "number": 1, "version": view["memory"]["version"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["written"], true);
    assert_eq!(body["document"]["text"], "Project: Lovelace.\n");
    assert_eq!(body["document"]["path"], "personalities/ada/MEMORY.md");
    assert_eq!(text_of(&memory, ada_memory()).await, "Project: Lovelace.\n");
    let seen = memory.prefetch(&ctx).await.unwrap();
    assert_eq!(seen.context.unwrap(), "## Memory\n\nProject: Lovelace.");

    let (_, history) = get(&memory, ADA_MEMORY).await;
    assert_eq!(numbers(&history), [3, 2, 1]);
    let revert = &history["revisions"][0];
    assert_eq!(revert["surface"], "web");
    assert_eq!(revert["actions"], json!(["replace"]));
    assert_eq!(revert["version"], body["document"]["version"]);
    let diff = revert["diff"].as_str().unwrap();
    assert!(
        diff.contains("-Forgot everything.\n+Project: Lovelace.\n"),
        "{diff}"
    );

    // The revert can be reverted: it is a revision like any other.
    let (status, again) = post_revert(
        &memory,
        json!({"personality": "ada", "user": "grace", "store": "memory",
               "number": 2, "version": body["document"]["version"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["document"]["text"], "Forgot everything.\n");
}

#[tokio::test]
async fn a_stale_revert_is_refused_and_writes_nothing() {
    let (_dir, memory) = wiring();
    add(&memory, "ada", "grace", Store::User, "Name: Grace.").await;
    add(&memory, "ada", "grace", Store::User, "Prefers tea.").await;
    let (_, view) = get(&memory, "/api/pair?personality=ada&user=grace").await;
    // The agent writes after the page loaded.
    add(&memory, "ada", "grace", Store::User, "Lives in Arlington.").await;
    let (_, before) = get(&memory, "/api/history?path=users/grace/USER.md").await;

    let (status, body) = post_revert(
        &memory,
        json!({"personality": "ada", "user": "grace", "store": "user",
               "number": 1, "version": view["user"]["version"]}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["kind"], "conflict");
    let message = body["error"].as_str().unwrap();
    assert!(message.contains("USER.md of user 'grace'"), "{message}");
    let user = DocumentId::user(&UserId::new("grace").unwrap());
    assert_eq!(
        text_of(&memory, user).await,
        "Name: Grace.\n\nPrefers tea.\n\nLives in Arlington.\n"
    );
    let (_, after) = get(&memory, "/api/history?path=users/grace/USER.md").await;
    assert_eq!(after, before, "no revision was recorded");
    assert_eq!(numbers(&after), [3, 2, 1]);
}

#[tokio::test]
async fn a_revert_to_a_revision_not_kept_is_refused() {
    let (_dir, memory) = wiring();
    add(&memory, "ada", "grace", Store::Memory, "Kept.").await;
    let (_, view) = get(&memory, "/api/pair?personality=ada&user=grace").await;
    let version = &view["memory"]["version"];

    for number in [0, 2, 99] {
        let (status, body) = post_revert(
            &memory,
            json!({"personality": "ada", "user": "grace", "store": "memory",
                   "number": number, "version": version}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{number}: {body}");
        assert_eq!(body["kind"], "invalid-input");
        let message = body["error"].as_str().unwrap();
        assert!(message.contains("nothing was written"), "{message}");
    }
    assert_eq!(text_of(&memory, ada_memory()).await, "Kept.\n");
    let (_, history) = get(&memory, ADA_MEMORY).await;
    assert_eq!(numbers(&history), [1]);

    // A purge leaves a tombstone: listed as such, with nothing to revert to.
    memory
        .purge(&ada_memory(), memory_core::Surface::Cli)
        .await
        .unwrap();
    let (status, history) = get(&memory, ADA_MEMORY).await;
    assert_eq!(status, StatusCode::OK, "{history}");
    assert_eq!(numbers(&history), [2]);
    let tombstone = &history["revisions"][0];
    assert_eq!(tombstone["tombstone"], true);
    assert_eq!(tombstone["surface"], "cli");
    assert!(tombstone.get("diff").is_none(), "{tombstone}");
    let (_, view) = get(&memory, "/api/pair?personality=ada&user=grace").await;
    let (status, body) = post_revert(
        &memory,
        json!({"personality": "ada", "user": "grace", "store": "memory",
               "number": 2, "version": view["memory"]["version"]}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("tombstone"),
        "{body}"
    );
    assert!(memory.list().await.unwrap().is_empty());

    // Bodies that are not a revert are refused before anything is read.
    for bad in [
        json!({"personality": "ada", "user": "grace", "store": "memory", "number": -1, "version": "0"}),
        json!({"personality": "ada", "user": "grace", "store": "memory", "number": 1}),
        json!({"personality": "ada", "user": "../x", "store": "memory", "number": 1, "version": "0"}),
        json!({"personality": "ada", "user": "grace", "store": "memory", "number": 1, "version": "0", "text": "x"}),
    ] {
        let (status, body) = post_revert(&memory, bad.clone()).await;
        assert!(status.is_client_error(), "{bad}: {status}");
        assert_eq!(body["kind"], "invalid-input", "{bad}");
    }
}

#[tokio::test]
async fn history_and_revert_are_guarded_and_never_cached() {
    let (_dir, memory) = wiring();
    add(&memory, "ada", "grace", Store::Memory, "Private.").await;
    let revert_body = json!({"personality": "ada", "user": "grace", "store": "memory",
                             "number": 1, "version": "0"})
    .to_string();
    let request = |method: &str, uri: &str, host: &str, authorization: Option<&str>| {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::HOST, host)
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(value) = authorization {
            request = request.header(header::AUTHORIZATION, value);
        }
        let body = if method == "POST" {
            Body::from(revert_body.clone())
        } else {
            Body::empty()
        };
        request.body(body).unwrap()
    };
    let routes = [("GET", ADA_MEMORY), ("POST", "/api/revert")];

    for (method, uri) in routes {
        let (status, body) = send(
            &memory,
            Access::loopback(),
            request(method, uri, "evil.example", None),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {uri}");
        assert_eq!(body["kind"], "forbidden-host");
    }

    let token = "0123456789abcdef-token";
    let access =
        Access::for_address("0.0.0.0:8700".parse().unwrap(), true, Some(token.into())).unwrap();
    for (method, uri) in routes {
        for authorization in [None, Some("Bearer wrong")] {
            let (status, body) = send(
                &memory,
                access.clone(),
                request(method, uri, "memory.example", authorization),
            )
            .await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {uri}");
            assert_eq!(body["kind"], "unauthorized");
        }
    }
    assert_eq!(text_of(&memory, ada_memory()).await, "Private.\n");

    let bearer = format!("Bearer {token}");
    let response = router(memory.clone(), access)
        .oneshot(request("GET", ADA_MEMORY, "memory.example", Some(&bearer)))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[header::CACHE_CONTROL], "no-store");

    // A form post (what another site could send without asking) is not JSON: no revert.
    let request = Request::post("/api/revert")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(revert_body.clone()))
        .unwrap();
    let (status, _) = send(&memory, Access::loopback(), request).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // Only POST reverts.
    let (status, _) = get(&memory, "/api/revert").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
}
