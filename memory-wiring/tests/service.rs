//! The `/v1` API over a markdown wiring (the `serve` feature: the wiring as memory-web's
//! `Deployment`), called through the router: the turn cycle, documents with ETag and If-Match,
//! history and revert, idempotent writes, keys and their restrictions, and the OpenAPI document
//! a server serves. (`memory-cli/tests/service.rs` calls a real `memory serve` over real HTTP;
//! memory-web's own tests serve a provider built in code.)

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use memory_core::{
    DocumentId, IfMatch, MemoryProvider, MemoryUpdate, PersonalityId, Store, UserId,
};
use memory_web::{Access, Service, key_sha256};
use memory_wiring::{Config, Memory};
use serde_json::{Value, json};
use tempfile::TempDir;
use tower::ServiceExt;

const HOST: &str = "127.0.0.1:8700";

/// Personality ada keeps her own MEMORY.md with small caps; bob shares the global one.
fn wiring_with(extra: &str) -> (TempDir, Memory) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("memory.toml");
    let config = Config::parse(
        &format!(
            r#"
            [providers.files]
            kind = "markdown"
            root = "memory"

            [personalities.ada]
            caps.memory = {{ soft = 40, hard = 80 }}

            [personalities.bob]
            memory_scope = "global"

            [mcp]
            personality = "ada"
            user = "grace"
            {extra}
            "#
        ),
        &file,
    )
    .unwrap();
    (dir, Memory::new(config))
}

fn wiring() -> (TempDir, Memory) {
    wiring_with("")
}

/// The service over `memory`, with its config's `[serve]` settings.
fn service_over(memory: &Memory, access: Access) -> Service {
    let settings = memory.config().serve.settings().unwrap();
    Service::new(Arc::new(memory.clone()), &settings, access, false)
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

/// One answer: status, headers, body as JSON (null when not JSON).
struct Answer {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Value,
}

/// A request to a keyless loopback service over `memory`.
struct Call {
    request: axum::http::request::Builder,
    body: Option<Value>,
    /// The body's `Content-Type`: `application/json` unless told; `None` sends none.
    content_type: Option<String>,
}

fn call(method: &str, uri: &str) -> Call {
    Call {
        request: Request::builder()
            .method(method)
            .uri(uri)
            .header(header::HOST, HOST),
        body: None,
        content_type: Some("application/json".to_owned()),
    }
}

/// A GET of `uri` naming `host` in its `Host` header.
fn call_host(uri: &str, host: &str) -> Call {
    Call {
        request: Request::get(uri).header(header::HOST, host),
        body: None,
        content_type: None,
    }
}

impl Call {
    fn json(mut self, body: Value) -> Call {
        self.body = Some(body);
        self
    }

    /// The body's `Content-Type`, or none.
    fn content_type(mut self, value: Option<&str>) -> Call {
        self.content_type = value.map(str::to_owned);
        self
    }

    fn header(mut self, name: &str, value: &str) -> Call {
        self.request = self.request.header(name, value);
        self
    }

    async fn send(self, memory: &Memory) -> Answer {
        self.send_to(memory, Access::loopback()).await
    }

    async fn send_to(self, memory: &Memory, access: Access) -> Answer {
        let service = service_over(memory, access);
        self.send_via(&service).await
    }

    async fn send_via(self, service: &Service) -> Answer {
        let request = match (self.body, self.content_type) {
            (Some(body), Some(content_type)) => self
                .request
                .header(header::CONTENT_TYPE, content_type)
                .body(Body::from(body.to_string())),
            (Some(body), None) => self.request.body(Body::from(body.to_string())),
            (None, _) => self.request.body(Body::empty()),
        };
        let response = service.router().oneshot(request.unwrap()).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            body,
        }
    }
}

async fn text_of(memory: &Memory, document: DocumentId) -> String {
    memory.read(&document).await.unwrap().text
}

fn ada_memory() -> DocumentId {
    DocumentId::PersonalityMemory {
        personality: PersonalityId::new("ada").unwrap(),
    }
}

fn grace() -> DocumentId {
    DocumentId::user(&UserId::new("grace").unwrap())
}

async fn prefetch(memory: &Memory, personality: &str, user: &str) -> Value {
    let answer = call("POST", "/v1/prefetch")
        .json(json!({"personality": personality, "user": user}))
        .send(memory)
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    answer.body
}

fn etag(answer: &Answer) -> String {
    answer.headers[header::ETAG].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_page_and_its_assets_are_embedded_and_call_v1() {
    let (_dir, memory) = wiring();
    let service = service_over(&memory, Access::loopback());
    for (uri, content_type, marker) in [
        (
            "/",
            "text/html; charset=utf-8",
            "<select id=\"personality\"",
        ),
        ("/app.js", "text/javascript; charset=utf-8", "/v1/prefetch"),
        ("/style.css", "text/css; charset=utf-8", "textarea"),
    ] {
        let request = Request::get(uri).header(header::HOST, HOST);
        let response = service
            .router()
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
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains(marker), "{uri}");
        assert!(!text.contains("/api/"), "{uri} still calls the old API");
    }
}

#[tokio::test]
async fn the_directory_offers_configured_and_stored_ids_a_page_at_a_time() {
    let (_dir, memory) = wiring();
    add(&memory, "cleo", "alan", Store::Memory, "Cleo's note.").await;
    add(&memory, "cleo", "alan", Store::User, "Alan likes chess.").await;

    let answer = call("GET", "/v1/personalities").send(&memory).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let body = answer.body;
    let ids: Vec<&str> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ada", "bob", "cleo"]);
    assert_eq!(body["items"][1]["scope"], "global");
    assert_eq!(body["items"][0]["provider"], "files");
    assert_eq!(body["items"][0]["kind"], "markdown");
    assert_eq!(body["items"][0]["recall"], false);
    assert_eq!(body["default"], "ada");
    assert_eq!(body["next_after"], Value::Null);

    let users = call("GET", "/v1/users").send(&memory).await.body;
    assert_eq!(users["items"], json!([{"id": "alan"}, {"id": "grace"}]));
    assert_eq!(users["default"], "grace");

    // Pages follow one another by cursor, with a Link to the next.
    let first = call("GET", "/v1/personalities?limit=2").send(&memory).await;
    assert_eq!(first.body["items"].as_array().unwrap().len(), 2);
    assert_eq!(first.body["next_after"], "bob");
    let link = first.headers[header::LINK].to_str().unwrap();
    assert_eq!(link, "</v1/personalities?limit=2&after=bob>; rel=\"next\"");
    let second = call("GET", "/v1/personalities?limit=2&after=bob")
        .send(&memory)
        .await;
    assert_eq!(second.body["items"][0]["id"], "cleo");
    assert_eq!(second.body["next_after"], Value::Null);
    assert!(second.headers.get(header::LINK).is_none());
    for bad in [
        "limit=0",
        "limit=501",
        "limit=-1",
        "limit=x",
        "page=2",
        "limit=1&limit=2",
    ] {
        let answer = call("GET", &format!("/v1/users?{bad}")).send(&memory).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(answer.body["kind"], "invalid-input", "{bad}");
    }
}

#[tokio::test]
async fn prefetch_shows_both_documents_whole_and_what_the_agent_sees() {
    let (dir, memory) = wiring();
    add(&memory, "ada", "grace", Store::Memory, "Project: Lovelace.").await;
    add(&memory, "ada", "grace", Store::User, "Name: Grace.").await;

    let body = prefetch(&memory, "ada", "grace").await;
    let stored = memory.read(&ada_memory()).await.unwrap();
    assert_eq!(body["memory"]["text"], stored.text);
    assert_eq!(body["memory"]["version"], stored.version.as_str());
    assert_eq!(body["memory"]["path"], "personalities/ada/MEMORY.md");
    assert_eq!(body["memory"]["store"], "memory");
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
        body["context"],
        "## About You\n\nName: Grace.\n\n## Memory\n\nProject: Lovelace."
    );
    assert_eq!(body["personality"]["provider"], "files");
    assert_eq!(body["personality"]["recall"], false);
    assert_eq!(body["warnings"], json!([]));

    // max_chars keeps the tail, as in process.
    let cut = call("POST", "/v1/prefetch")
        .json(json!({"personality": "ada", "user": "grace", "max_chars": 40}))
        .send(&memory)
        .await;
    let context = cut.body["context"].as_str().unwrap();
    assert!(context.starts_with("[...truncated"), "{context}");
    assert!(context.ends_with("Lovelace."), "{context}");
    assert!(context.chars().count() <= 40, "{context}");

    // A document never written reads as empty, with a version a first write can use.
    let body = prefetch(&memory, "ada", "nobody").await;
    assert_eq!(body["user"]["text"], "");
    assert_eq!(body["user"]["modified"], Value::Null);
    assert!(body["user"]["version"].is_string());
    // A global-scope personality reads the global MEMORY.md.
    let body = prefetch(&memory, "bob", "grace").await;
    assert_eq!(body["memory"]["path"], "MEMORY.md");
    assert_eq!(body["personality"]["scope"], "global");
}

#[tokio::test]
async fn sync_is_the_agents_write_path_and_reports_as_memory_sync_does() {
    let (_dir, memory) = wiring();
    let answer = call("POST", "/v1/sync")
        .json(json!({
            "personality": "ada", "user": "grace",
            "updates": [
                {"action": "add", "store": "user", "content": "Name: Grace."},
                {"action": "add", "store": "memory", "content": "Planning Kyoto in May."}
            ],
            "session": "conversation-7"
        }))
        .send(&memory)
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let documents = answer.body["documents"].as_array().unwrap();
    assert_eq!(documents.len(), 2);
    assert_eq!(documents[0]["store"], "memory");
    assert_eq!(documents[0]["written"], true);
    assert_eq!(
        documents[1]["document"],
        json!({"kind": "user-profile", "user": "grace"})
    );
    // What the agent reads next turn, in process.
    let ctx = memory.context(
        PersonalityId::new("ada").unwrap(),
        UserId::new("grace").unwrap(),
    );
    let seen = memory.prefetch(&ctx).await.unwrap();
    assert_eq!(
        seen.context.unwrap(),
        "## About You\n\nName: Grace.\n\n## Memory\n\nPlanning Kyoto in May."
    );
    let revisions = memory.history(&grace(), 1).await.unwrap();
    assert_eq!(revisions[0].surface, memory_core::Surface::Api);
    assert_eq!(revisions[0].session.as_deref(), Some("conversation-7"));

    // A stale if_match refuses the whole call with 412, naming the current version.
    let stale = call("POST", "/v1/sync")
        .json(json!({
            "personality": "ada", "user": "grace",
            "updates": [{"action": "replace", "store": "user", "content": "Name: G."}],
            "if_match": {"user": "not-the-version"}
        }))
        .send(&memory)
        .await;
    assert_eq!(
        stale.status,
        StatusCode::PRECONDITION_FAILED,
        "{}",
        stale.body
    );
    assert_eq!(stale.body["kind"], "precondition-failed");
    assert_eq!(stale.body["code"], "stale-version");
    assert_eq!(stale.body["document"], "users/grace/USER.md");
    assert_eq!(
        stale.body["current_version"],
        memory.read(&grace()).await.unwrap().version.as_str()
    );
    assert_eq!(
        stale.headers[header::CONTENT_TYPE],
        "application/problem+json"
    );
    assert_eq!(text_of(&memory, grace()).await, "Name: Grace.\n");

    // Refusals name the update and write nothing; caps apply as to the agent.
    let refused = call("POST", "/v1/sync")
        .json(json!({
            "personality": "ada", "user": "grace",
            "updates": [{"action": "add", "store": "memory", "content": "x".repeat(90)}]
        }))
        .send(&memory)
        .await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        refused.body
    );
    assert_eq!(refused.body["kind"], "refused");
    assert_eq!(refused.body["code"], "hard-cap-exceeded");
    assert!(
        refused.body["detail"]
            .as_str()
            .unwrap()
            .contains("hard cap of 80")
    );
    let blank = call("POST", "/v1/sync")
        .json(json!({
            "personality": "ada", "user": "grace",
            "updates": [{"action": "add", "store": "memory", "content": "  "}]
        }))
        .send(&memory)
        .await;
    assert_eq!(blank.status, StatusCode::BAD_REQUEST, "{}", blank.body);
    assert!(blank.body["detail"].as_str().unwrap().contains("update #0"));
    assert_eq!(
        text_of(&memory, ada_memory()).await,
        "Planning Kyoto in May.\n"
    );
}

#[tokio::test]
async fn a_syncs_own_caps_tighten_the_personalitys_and_never_loosen_them() {
    let (_dir, memory) = wiring();
    let sync = |content: String, caps: Value| {
        call("POST", "/v1/sync").json(json!({
            "personality": "ada", "user": "grace",
            "updates": [{"action": "add", "store": "memory", "content": content}],
            "caps": caps
        }))
    };
    // Tighter than ada's 40/80: refused at the call's 30, the document untouched.
    let refused = sync("x".repeat(50), json!({"memory": {"hard": 30}}))
        .send(&memory)
        .await;
    assert_eq!(
        refused.body["code"], "hard-cap-exceeded",
        "{}",
        refused.body
    );
    assert!(
        refused.body["detail"]
            .as_str()
            .unwrap()
            .contains("hard cap of 30")
    );
    // The numbers as members, for code: never parsed out of `detail`.
    assert_eq!(
        (
            &refused.body["document"],
            &refused.body["bytes"],
            &refused.body["hard_cap"]
        ),
        (
            &json!("personalities/ada/MEMORY.md"),
            &json!(51),
            &json!(30)
        )
    );
    assert_eq!(text_of(&memory, ada_memory()).await, "");
    // Looser than ada's: her 80 still refuses.
    let loose = sync(
        "x".repeat(90),
        json!({"memory": {"soft": 1000, "hard": 1000}}),
    )
    .send(&memory)
    .await;
    assert_eq!(loose.body["code"], "hard-cap-exceeded", "{}", loose.body);
    assert!(
        loose.body["detail"]
            .as_str()
            .unwrap()
            .contains("hard cap of 80")
    );
    // The call's soft cap is the report's: 20 bytes is over 10, under ada's 40.
    let soft = sync("y".repeat(20), json!({"memory": {"soft": 10}}))
        .send(&memory)
        .await;
    assert_eq!(soft.status, StatusCode::OK, "{}", soft.body);
    assert_eq!(soft.body["documents"][0]["over_soft_cap"], true);
    // Caps that say nothing sensible are the client's mistake, named.
    for (caps, names) in [
        (json!({"memory": {"soft": 50, "hard": 20}}), "caps.memory"),
        (json!({"memory": {"sfot": 5}}), "sfot"),
        (json!({"user": {"hard": -1}}), "hard"),
    ] {
        let bad = sync("z".into(), caps).send(&memory).await;
        assert!(bad.status.is_client_error(), "{}", bad.body);
        assert_eq!(bad.body["kind"], "invalid-input", "{}", bad.body);
        assert!(
            bad.body["detail"].as_str().unwrap().contains(names),
            "{}",
            bad.body
        );
    }
    assert_eq!(
        text_of(&memory, ada_memory()).await,
        format!("{}\n", "y".repeat(20))
    );
}

#[tokio::test]
async fn documents_carry_their_version_as_etag_and_writes_are_guarded_by_if_match() {
    let (_dir, memory) = wiring();
    add(&memory, "ada", "grace", Store::User, "Name: Grace.").await;
    let uri = "/v1/documents/users/grace/USER.md";
    let read = call("GET", uri).send(&memory).await;
    assert_eq!(read.status, StatusCode::OK);
    let version = memory.read(&grace()).await.unwrap().version;
    assert_eq!(etag(&read), format!("\"{version}\""));
    assert_eq!(read.body["text"], "Name: Grace.\n");
    assert_eq!(read.headers[header::CACHE_CONTROL], "no-store");
    let unchanged = call("GET", uri)
        .header("if-none-match", &etag(&read))
        .send(&memory)
        .await;
    assert_eq!(unchanged.status, StatusCode::NOT_MODIFIED);

    // A replace without If-Match is refused: it would erase what others wrote since.
    let bare = call("PUT", uri)
        .json(json!({"text": "x"}))
        .send(&memory)
        .await;
    assert_eq!(
        bare.status,
        StatusCode::PRECONDITION_REQUIRED,
        "{}",
        bare.body
    );
    // The agent writes after the person loaded the document: the stale save is refused.
    add(&memory, "ada", "grace", Store::User, "Lives in Arlington.").await;
    let stale = call("PUT", uri)
        .header("if-match", &etag(&read))
        .json(json!({"text": "Name: Grace Hopper."}))
        .send(&memory)
        .await;
    assert_eq!(
        stale.status,
        StatusCode::PRECONDITION_FAILED,
        "{}",
        stale.body
    );
    let current = memory.read(&grace()).await.unwrap().version;
    assert_eq!(etag(&stale), format!("\"{current}\""));
    assert_eq!(
        text_of(&memory, grace()).await,
        "Name: Grace.\n\nLives in Arlington.\n"
    );

    let saved = call("PUT", uri)
        .header("if-match", &etag(&stale))
        .json(json!({"text": "Name: Grace Hopper.", "surface": "web"}))
        .send(&memory)
        .await;
    assert_eq!(saved.status, StatusCode::OK, "{}", saved.body);
    assert_eq!(saved.body["written"], true);
    assert_eq!(
        etag(&saved),
        format!("\"{}\"", saved.body["version_after"].as_str().unwrap())
    );
    assert_eq!(text_of(&memory, grace()).await, "Name: Grace Hopper.\n");
    // `*` overwrites whatever is there.
    let any = call("PUT", uri)
        .header("if-match", "*")
        .json(json!({"text": "Name: G."}))
        .send(&memory)
        .await;
    assert_eq!(any.status, StatusCode::OK, "{}", any.body);
    for bad in ["W/\"x\"", "two words", "\"a\", \"b\""] {
        let answer = call("PUT", uri)
            .header("if-match", bad)
            .json(json!({"text": "never"}))
            .send(&memory)
            .await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{bad}");
        assert!(answer.body["detail"].as_str().unwrap().contains("If-Match"));
    }
    assert_eq!(text_of(&memory, grace()).await, "Name: G.\n");
}

#[tokio::test]
async fn updates_by_path_name_their_store_and_a_misrouted_write_is_refused() {
    let (_dir, memory) = wiring();
    let uri = "/v1/documents/personalities/ada/MEMORY.md/updates";
    let added = call("POST", uri)
        .json(
            json!({"updates": [{"action": "add", "store": "memory", "content": "One."},
                                 {"action": "add", "store": "memory", "content": "Two."}]}),
        )
        .send(&memory)
        .await;
    assert_eq!(added.status, StatusCode::OK, "{}", added.body);
    assert_eq!(text_of(&memory, ada_memory()).await, "One.\n\nTwo.\n");
    let wrong = call("POST", uri)
        .json(json!({"updates": [{"action": "add", "store": "user", "content": "x"}]}))
        .send(&memory)
        .await;
    assert_eq!(
        wrong.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        wrong.body
    );
    assert!(
        wrong.body["detail"]
            .as_str()
            .unwrap()
            .contains("update #0 names store \"user\"")
    );
    // Caps of the owner apply by path too.
    let over = call("POST", uri)
        .json(json!({"updates": [{"action": "add", "store": "memory", "content": "z".repeat(80)}]}))
        .send(&memory)
        .await;
    assert_eq!(
        over.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        over.body
    );
    assert_eq!(over.body["kind"], "refused");
    assert!(
        over.body["detail"]
            .as_str()
            .unwrap()
            .contains("hard cap of 80")
    );
    // An empty batch writes nothing, but a stale If-Match still refuses it (RFC 9110).
    let empty = call("POST", uri)
        .header("if-match", "\"stale\"")
        .json(json!({"updates": []}))
        .send(&memory)
        .await;
    assert_eq!(
        empty.status,
        StatusCode::PRECONDITION_FAILED,
        "{}",
        empty.body
    );
    // bob has global scope: his own file is not where his writes go.
    let misrouted = call("POST", "/v1/documents/personalities/bob/MEMORY.md/updates")
        .json(json!({"updates": [{"action": "add", "store": "memory", "content": "x"}]}))
        .send(&memory)
        .await;
    assert_eq!(
        misrouted.status,
        StatusCode::BAD_REQUEST,
        "{}",
        misrouted.body
    );
    assert!(
        misrouted.body["detail"]
            .as_str()
            .unwrap()
            .contains("global scope")
    );
    let global = call("POST", "/v1/documents/MEMORY.md/updates")
        .json(json!({"updates": [{"action": "add", "store": "memory", "content": "Shared."}]}))
        .send(&memory)
        .await;
    assert_eq!(global.status, StatusCode::OK, "{}", global.body);
    assert_eq!(
        text_of(&memory, DocumentId::GlobalMemory).await,
        "Shared.\n"
    );
    assert!(
        !memory
            .list()
            .await
            .unwrap()
            .iter()
            .any(|d| d.relative_path() == "personalities/bob/MEMORY.md")
    );
}

#[tokio::test]
async fn a_keyed_write_lands_once_and_its_repeat_gets_the_first_answer() {
    let (_dir, memory) = wiring();
    let service = service_over(&memory, Access::loopback());
    let sync = |content: &str| {
        call("POST", "/v1/sync")
            .header("idempotency-key", "turn-1")
            .json(json!({"personality": "ada", "user": "grace",
                         "updates": [{"action": "add", "store": "memory", "content": content}]}))
    };
    let first = sync("Booked the train.").send_via(&service).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert!(first.headers.get("idempotent-replayed").is_none());
    let again = sync("Booked the train.").send_via(&service).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body, first.body, "the first answer, again");
    assert_eq!(text_of(&memory, ada_memory()).await, "Booked the train.\n");
    // The same key on another request is refused, and writes nothing.
    let other = sync("Booked the ferry.").send_via(&service).await;
    assert_eq!(
        other.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        other.body
    );
    assert_eq!(other.body["kind"], "refused");
    assert_eq!(other.body["code"], "key-reused");

    // Another server of the deployment (no shared cache): the receipts stored with the
    // document replay the first call, and refuse the key with other updates.
    let elsewhere = service_over(&memory, Access::loopback());
    let repeat = sync("Booked the train.").send_via(&elsewhere).await;
    assert_eq!(repeat.status, StatusCode::OK, "{}", repeat.body);
    assert_eq!(repeat.headers["idempotent-replayed"], "true");
    assert_eq!(repeat.body["documents"][0]["replayed"], true);
    assert_eq!(
        repeat.body["documents"][0]["version_after"],
        first.body["documents"][0]["version_after"]
    );
    let reused = sync("Booked the ferry.").send_via(&elsewhere).await;
    assert_eq!(
        reused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        reused.body
    );
    assert!(reused.body["detail"].as_str().unwrap().contains("turn-1"));
    assert_eq!(reused.body["code"], "key-reused");
    assert_eq!(text_of(&memory, ada_memory()).await, "Booked the train.\n");
    let revisions = memory.history(&ada_memory(), 10).await.unwrap();
    assert_eq!(revisions.len(), 1);
    assert_eq!(
        revisions[0].idempotency_key.as_ref().unwrap().as_str(),
        "turn-1"
    );

    for bad in ["", "has space", &"k".repeat(129)] {
        let answer = call("POST", "/v1/sync")
            .header("idempotency-key", bad)
            .json(json!({"personality": "ada", "user": "grace", "updates": []}))
            .send_via(&service)
            .await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{bad:?}: {}",
            answer.body
        );
        assert!(
            answer.body["detail"]
                .as_str()
                .unwrap()
                .contains("idempotency key")
        );
    }
}

const ADA_REVISIONS: &str = "/v1/documents/personalities/ada/MEMORY.md/revisions";

fn numbers(page: &Value) -> Vec<u64> {
    page["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|revision| revision["number"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn revisions_list_newest_first_with_diffs_and_page_by_number() {
    let (_dir, memory) = wiring();
    add(&memory, "ada", "grace", Store::Memory, "Project: Lovelase.").await;
    let read = call("GET", "/v1/documents/personalities/ada/MEMORY.md")
        .send(&memory)
        .await;
    let saved = call("PUT", "/v1/documents/personalities/ada/MEMORY.md")
        .header("if-match", &etag(&read))
        .json(json!({"text": "Project: Lovelace.\n\nDue in March.", "surface": "web"}))
        .send(&memory)
        .await;
    assert_eq!(saved.status, StatusCode::OK, "{}", saved.body);

    let page = call("GET", &format!("{ADA_REVISIONS}?diff=true"))
        .send(&memory)
        .await
        .body;
    assert_eq!(page["path"], "personalities/ada/MEMORY.md");
    assert_eq!(numbers(&page), [2, 1]);
    assert_eq!(page["next_before"], Value::Null);
    let newest = &page["revisions"][0];
    assert_eq!(newest["surface"], "web");
    assert_eq!(newest["updates"][0]["action"], "replace");
    assert_eq!(newest["personality"], "ada");
    assert_eq!(newest["version"], saved.body["version_after"]);
    assert_eq!(newest["tombstone"], false);
    assert_eq!(newest["oldest_kept"], false);
    assert!(
        newest.get("text").is_none(),
        "no text unless asked: {newest}"
    );
    let diff = newest["diff"].as_str().unwrap();
    assert!(
        diff.starts_with("--- personalities/ada/MEMORY.md@1\n+++ personalities/ada/MEMORY.md@2\n"),
        "{diff}"
    );
    assert!(
        diff.contains("-Project: Lovelase.\n+Project: Lovelace.\n+\n+Due in March.\n"),
        "{diff}"
    );
    assert!(
        page["revisions"][1]["diff"]
            .as_str()
            .unwrap()
            .contains("+Project: Lovelase.\n")
    );

    let first = call("GET", &format!("{ADA_REVISIONS}?limit=1&text=true"))
        .send(&memory)
        .await;
    assert_eq!(numbers(&first.body), [2]);
    assert_eq!(first.body["next_before"], 2);
    assert_eq!(
        first.body["revisions"][0]["text"],
        "Project: Lovelace.\n\nDue in March.\n"
    );
    assert!(
        first.headers[header::LINK]
            .to_str()
            .unwrap()
            .contains("before=2")
    );
    let second = call("GET", &format!("{ADA_REVISIONS}?limit=1&before=2"))
        .send(&memory)
        .await;
    assert_eq!(numbers(&second.body), [1]);

    let one = call("GET", &format!("{ADA_REVISIONS}/1"))
        .send(&memory)
        .await;
    assert_eq!(one.status, StatusCode::OK);
    assert_eq!(one.body["text"], "Project: Lovelase.\n");
    let none = call("GET", &format!("{ADA_REVISIONS}/9"))
        .send(&memory)
        .await;
    assert_eq!(none.status, StatusCode::NOT_FOUND);

    let diff = call(
        "GET",
        "/v1/documents/personalities/ada/MEMORY.md/diff?from=1&to=2",
    )
    .send(&memory)
    .await;
    assert_eq!(diff.status, StatusCode::OK, "{}", diff.body);
    assert_eq!(diff.body["from"], 1);
    assert!(
        diff.body["diff"]
            .as_str()
            .unwrap()
            .contains("+Due in March.")
    );
    let newest = call("GET", "/v1/documents/personalities/ada/MEMORY.md/diff")
        .send(&memory)
        .await;
    assert_eq!(newest.body["diff"], diff.body["diff"]);
    // Without `from`, `to` is compared with the revision before it.
    let second = call("GET", "/v1/documents/personalities/ada/MEMORY.md/diff?to=2")
        .send(&memory)
        .await;
    assert_eq!(second.body["diff"], diff.body["diff"]);
    // A revision not kept is not there.
    let missing = call(
        "GET",
        "/v1/documents/personalities/ada/MEMORY.md/diff?from=9",
    )
    .send(&memory)
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.body);
    for bad in ["from=x", "ffrom=1", "from=-1", "to=9223372036854775808"] {
        let answer = call(
            "GET",
            &format!("/v1/documents/personalities/ada/MEMORY.md/diff?{bad}"),
        )
        .send(&memory)
        .await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{bad}: {}",
            answer.body
        );
    }
}

#[tokio::test]
async fn a_revert_is_a_revision_guarded_like_a_save() {
    let (_dir, memory) = wiring();
    add(&memory, "ada", "grace", Store::Memory, "Project: Lovelace.").await;
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
    let revert = "/v1/documents/personalities/ada/MEMORY.md/revert";
    let stale = call("POST", revert)
        .header("if-match", "\"stale\"")
        .json(json!({"number": 1}))
        .send(&memory)
        .await;
    assert_eq!(
        stale.status,
        StatusCode::PRECONDITION_FAILED,
        "{}",
        stale.body
    );
    assert_eq!(text_of(&memory, ada_memory()).await, "Forgot everything.\n");

    let read = call("GET", "/v1/documents/personalities/ada/MEMORY.md")
        .send(&memory)
        .await;
    let reverted = call("POST", revert)
        .header("if-match", &etag(&read))
        .json(json!({"number": 1, "surface": "web"}))
        .send(&memory)
        .await;
    assert_eq!(reverted.status, StatusCode::OK, "{}", reverted.body);
    assert_eq!(text_of(&memory, ada_memory()).await, "Project: Lovelace.\n");
    let seen = memory.prefetch(&ctx).await.unwrap();
    assert_eq!(seen.context.unwrap(), "## Memory\n\nProject: Lovelace.");
    let page = call("GET", ADA_REVISIONS).send(&memory).await.body;
    assert_eq!(numbers(&page), [3, 2, 1]);
    assert_eq!(page["revisions"][0]["surface"], "web");

    // A revision not kept is not there (404), as for a GET of it; revision 0 is no revision
    // (400); nothing is written either way.
    for (number, status) in [(9, StatusCode::NOT_FOUND), (0, StatusCode::BAD_REQUEST)] {
        let answer = call("POST", revert)
            .json(json!({"number": number}))
            .send(&memory)
            .await;
        assert_eq!(answer.status, status, "{number}: {}", answer.body);
        assert!(
            answer.body["detail"]
                .as_str()
                .unwrap()
                .contains("nothing was written")
        );
    }
    for bad in [
        json!({"number": -1}),
        json!({}),
        json!({"number": 1, "text": "x"}),
        json!({"number": 1e30}),
    ] {
        let answer = call("POST", revert).json(bad.clone()).send(&memory).await;
        assert!(answer.status.is_client_error(), "{bad}: {}", answer.status);
        assert_eq!(answer.body["kind"], "invalid-input", "{bad}");
    }
    assert_eq!(
        numbers(&call("GET", ADA_REVISIONS).send(&memory).await.body),
        [3, 2, 1]
    );
}

#[tokio::test]
async fn purge_erases_a_document_leaving_a_tombstone() {
    let (_dir, memory) = wiring();
    add(&memory, "ada", "grace", Store::User, "Name: Grace.").await;
    let purged = call("DELETE", "/v1/documents/users/grace/USER.md")
        .send(&memory)
        .await;
    assert_eq!(purged.status, StatusCode::OK, "{}", purged.body);
    assert_eq!(purged.body["path"], "users/grace/USER.md");
    assert_eq!(purged.body["bytes"], 13);
    assert_eq!(purged.body["revisions"], 1);
    assert_eq!(purged.body["tombstone"], 2);
    assert_eq!(text_of(&memory, grace()).await, "");
    let page = call(
        "GET",
        "/v1/documents/users/grace/USER.md/revisions?diff=true",
    )
    .send(&memory)
    .await
    .body;
    assert_eq!(numbers(&page), [2]);
    assert_eq!(page["revisions"][0]["tombstone"], true);
    assert!(page["revisions"][0].get("diff").is_none());
    assert!(memory.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn ids_are_validated_and_nothing_outside_the_documents_is_reachable() {
    let (dir, memory) = wiring();
    std::fs::write(dir.path().join("secret.txt"), "not memory").unwrap();
    for (method, uri, body) in [
        (
            "POST",
            "/v1/prefetch",
            json!({"personality": "../../etc", "user": "grace"}),
        ),
        (
            "POST",
            "/v1/prefetch",
            json!({"personality": "ada", "user": "a/b"}),
        ),
        (
            "GET",
            "/v1/documents/personalities/..%2F..%2Fetc/MEMORY.md",
            Value::Null,
        ),
        ("GET", "/v1/documents/users/a.b/USER.md", Value::Null),
        ("GET", "/v1/documents/users/%ff/USER.md", Value::Null),
    ] {
        let mut request = call(method, uri);
        if !body.is_null() {
            request = request.json(body);
        }
        let answer = request.send(&memory).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{uri}: {}",
            answer.body
        );
        assert_eq!(answer.body["kind"], "invalid-input", "{uri}");
    }
    for uri in [
        "/secret.txt",
        "/memory.toml",
        "/../secret.txt",
        "/v1/documents/secret.txt",
        "/v1/documents/users/grace/MEMORY.md",
        "/api/directory",
    ] {
        let answer = call("GET", uri).send(&memory).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(answer.body["kind"], "not-found", "{uri}");
    }
    let answer = call("PATCH", "/v1/documents/users/grace/USER.md")
        .send(&memory)
        .await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(
        answer.headers[header::ALLOW]
            .to_str()
            .unwrap()
            .contains("PUT")
    );
    assert!(memory.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_keyless_loopback_server_answers_only_to_loopback_host_names() {
    let (_dir, memory) = wiring();
    for host in [
        "evil.example",
        "evil.example:8700",
        "localhost.evil.example",
        // Malformed hosts that begin like this machine: only a well-formed loopback host is
        // this machine.
        "localhost:80@evil.example",
        "127.0.0.1:evil.example",
        "[::1]evil.example",
        "[::1]:80@evil.example",
        "localhost:0",
        "localhost:65536",
        "localhost:",
    ] {
        let answer = call_host("/v1/users", host).send(&memory).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{host}");
        assert_eq!(answer.body["kind"], "forbidden");
    }
    for host in [
        "localhost:8700",
        "localhost",
        "[::1]:8700",
        "[::1]",
        "127.0.0.1",
        "127.0.0.1:65535",
        "127.3.2.1:1",
    ] {
        let answer = call_host("/v1/users", host).send(&memory).await;
        assert_eq!(answer.status, StatusCode::OK, "{host}: {}", answer.body);
    }
}

/// A repeat of a keyed write is a request of its own: one that is invalid in itself (an empty
/// `If-Match`, a missing required one, a body in another charset or not declared JSON) gets
/// the answer it gets without the key, never the first request's cached 200 (Schemathesis'
/// ST201); a valid repeat is still replayed.
#[tokio::test]
async fn a_keyed_repeat_is_checked_as_a_request_before_it_is_replayed() {
    let (_dir, memory) = wiring();
    let service = service_over(&memory, Access::loopback());
    let updates_path = "/v1/documents/personalities/ada/MEMORY.md/updates";
    let updates = |key: Option<&str>| {
        let call = call("POST", updates_path)
            .json(json!({"updates": [{"action": "add", "store": "memory", "content": "Packed."}]}));
        match key {
            Some(key) => call.header("idempotency-key", key),
            None => call,
        }
    };
    let first = updates(Some("k-7")).send_via(&service).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);

    // An empty If-Match: 400 without a key, and 400 with the key of a write that landed.
    let unkeyed = updates(None)
        .header("if-match", "")
        .send_via(&service)
        .await;
    assert_eq!(unkeyed.status, StatusCode::BAD_REQUEST, "{}", unkeyed.body);
    let keyed = updates(Some("k-7"))
        .header("if-match", "")
        .send_via(&service)
        .await;
    assert_eq!(keyed.status, StatusCode::BAD_REQUEST, "{}", keyed.body);
    assert_eq!(keyed.body["kind"], "invalid-input");
    assert!(
        keyed.body["detail"].as_str().unwrap().contains("If-Match"),
        "{}",
        keyed.body
    );
    assert!(keyed.headers.get("idempotent-replayed").is_none());

    // The body in another charset, or without a Content-Type: 415 as without the key.
    for content_type in [Some("application/json; charset=utf-16"), None] {
        let unkeyed = updates(None)
            .content_type(content_type)
            .send_via(&service)
            .await;
        let keyed = updates(Some("k-7"))
            .content_type(content_type)
            .send_via(&service)
            .await;
        for answer in [&unkeyed, &keyed] {
            assert_eq!(
                answer.status,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{content_type:?}: {}",
                answer.body
            );
            assert_eq!(answer.body["kind"], "invalid-input");
        }
        assert_eq!(keyed.body["detail"], unkeyed.body["detail"]);
    }

    // A replace needs If-Match: its keyed repeat without one is 428, as without the key.
    let profile = "/v1/documents/users/grace/USER.md";
    let replace = |if_match: Option<&str>| {
        let call = call("PUT", profile)
            .header("idempotency-key", "k-8")
            .json(json!({"text": "Name: Grace."}));
        match if_match {
            Some(if_match) => call.header("if-match", if_match),
            None => call,
        }
    };
    let replaced = replace(Some("*")).send_via(&service).await;
    assert_eq!(replaced.status, StatusCode::OK, "{}", replaced.body);
    let unguarded = replace(None).send_via(&service).await;
    assert_eq!(
        unguarded.status,
        StatusCode::PRECONDITION_REQUIRED,
        "{}",
        unguarded.body
    );

    // A valid repeat is still the first answer, and nothing landed twice.
    let again = updates(Some("k-7")).send_via(&service).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body, first.body);
    let replaced_again = replace(Some("*")).send_via(&service).await;
    assert_eq!(replaced_again.headers["idempotent-replayed"], "true");
    assert_eq!(text_of(&memory, ada_memory()).await, "Packed.\n");
    assert_eq!(text_of(&memory, grace()).await, "Name: Grace.\n");
}

/// JSON is UTF-8: a body declared in another charset is refused with 415 naming it, and
/// nothing is written; UTF-8 in any case, quoted or not, and no charset are taken.
#[tokio::test]
async fn a_body_in_a_charset_other_than_utf8_is_refused() {
    let (_dir, memory) = wiring();
    let sync = || {
        call("POST", "/v1/sync").json(json!({"personality": "ada", "user": "grace",
            "updates": [{"action": "add", "store": "memory", "content": "Café."}]}))
    };
    for (content_type, named) in [
        ("application/json; charset=utf-16", "utf-16"),
        ("application/json; charset=UTF-16LE", "UTF-16LE"),
        ("application/json;charset=\"iso-8859-1\"", "iso-8859-1"),
        ("application/json; charset=us-ascii", "us-ascii"),
        ("application/json; charset=utf8", "utf8"),
    ] {
        let answer = sync().content_type(Some(content_type)).send(&memory).await;
        assert_eq!(
            answer.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{content_type}: {}",
            answer.body
        );
        assert_eq!(answer.body["kind"], "invalid-input");
        assert_eq!(
            answer.headers[header::CONTENT_TYPE],
            "application/problem+json"
        );
        let detail = answer.body["detail"].as_str().unwrap();
        assert!(
            detail.contains(named) && detail.contains("UTF-8"),
            "{detail}"
        );
    }
    assert!(memory.list().await.unwrap().is_empty(), "nothing written");
    for content_type in [
        "application/json",
        "application/json; charset=utf-8",
        "application/json; charset=UTF-8",
        "application/json;charset=\"utf-8\"",
    ] {
        let answer = call("POST", "/v1/prefetch")
            .json(json!({"personality": "ada", "user": "grace"}))
            .content_type(Some(content_type))
            .send(&memory)
            .await;
        assert_eq!(
            answer.status,
            StatusCode::OK,
            "{content_type}: {}",
            answer.body
        );
    }
    let written = sync()
        .content_type(Some("application/json; charset=UTF-8"))
        .send(&memory)
        .await;
    assert_eq!(written.status, StatusCode::OK, "{}", written.body);
    assert_eq!(text_of(&memory, ada_memory()).await, "Café.\n");
}

/// A service with keys: an admin, a reader, a writer restricted to alice and ada, a metrics
/// scraper.
fn keyed(memory: &Memory) -> Service {
    let (_, with_keys) = wiring_with(&format!(
        r#"
        [serve.keys]
        admin = {{ sha256 = "{}", scopes = ["admin"] }}
        reader = {{ sha256 = "{}", scopes = ["read"] }}
        alice-app = {{ sha256 = "{}", scopes = ["read", "write"], users = ["alice"], personalities = ["ada"] }}
        scraper = {{ sha256 = "{}", scopes = ["metrics"] }}
        alice-admin = {{ sha256 = "{}", scopes = ["admin"], users = ["alice"] }}
        "#,
        key_sha256("admin-key"),
        key_sha256("reader-key"),
        key_sha256("alice-key"),
        key_sha256("scraper-key"),
        key_sha256("alice-admin-key"),
    ));
    let settings = with_keys.config().serve.settings().unwrap();
    let access = Access::new("0.0.0.0:8700".parse().unwrap(), &settings, None).unwrap();
    service_over(memory, access)
}

fn as_key(call: Call, key: &str) -> Call {
    call.header("authorization", &format!("Bearer {key}"))
}

#[tokio::test]
async fn keys_hold_scopes_and_restrictions() {
    let (_dir, memory) = wiring();
    add(&memory, "ada", "bob", Store::User, "Bob's secret.").await;
    let service = keyed(&memory);

    let no_key = call("GET", "/v1/users").send_via(&service).await;
    assert_eq!(no_key.status, StatusCode::UNAUTHORIZED);
    assert!(
        no_key.headers[header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
    let wrong = as_key(call("GET", "/v1/users"), "nope")
        .send_via(&service)
        .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    // Public: the page, health and the OpenAPI document.
    for uri in ["/", "/app.js", "/v1/health", "/v1/openapi.json"] {
        let answer = call("GET", uri).send_via(&service).await;
        assert_eq!(answer.status, StatusCode::OK, "{uri}");
    }

    // The reader reads but does not write.
    let read = as_key(call("GET", "/v1/documents/users/bob/USER.md"), "reader-key")
        .send_via(&service)
        .await;
    assert_eq!(read.status, StatusCode::OK);
    let write = as_key(call("POST", "/v1/sync"), "reader-key")
        .json(json!({"personality": "ada", "user": "bob", "updates": [{"action": "add", "store": "user", "content": "x"}]}))
        .send_via(&service)
        .await;
    assert_eq!(write.status, StatusCode::FORBIDDEN, "{}", write.body);
    assert!(
        write.body["detail"]
            .as_str()
            .unwrap()
            .contains("write scope")
    );

    // alice's app reaches alice and ada only; bob's profile is forbidden whether or not it
    // exists, so it learns nothing about it.
    for user in ["bob", "nobody"] {
        let answer = as_key(
            call("GET", &format!("/v1/documents/users/{user}/USER.md")),
            "alice-key",
        )
        .send_via(&service)
        .await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{user}");
        assert_eq!(
            answer.body["detail"],
            format!("key \"alice-app\" may not read or write users/{user}/USER.md")
        );
    }
    let pair = as_key(call("POST", "/v1/prefetch"), "alice-key")
        .json(json!({"personality": "ada", "user": "bob"}))
        .send_via(&service)
        .await;
    assert_eq!(pair.status, StatusCode::FORBIDDEN);
    assert_eq!(
        pair.body["detail"],
        "key \"alice-app\" may not read or write the profile of user 'bob'"
    );
    let other = as_key(call("POST", "/v1/prefetch"), "alice-key")
        .json(json!({"personality": "cleo", "user": "alice"}))
        .send_via(&service)
        .await;
    assert_eq!(other.status, StatusCode::FORBIDDEN);
    assert_eq!(
        other.body["detail"],
        "key \"alice-app\" may not read or write the memory of personality 'cleo'"
    );
    let own = as_key(call("POST", "/v1/sync"), "alice-key")
        .json(json!({"personality": "ada", "user": "alice", "updates": [{"action": "add", "store": "user", "content": "Name: Alice."}]}))
        .send_via(&service)
        .await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.body);
    let users = as_key(call("GET", "/v1/users"), "alice-key")
        .send_via(&service)
        .await;
    assert_eq!(users.body["items"], json!([{"id": "alice"}]));
    assert_eq!(
        users.body["default"],
        Value::Null,
        "grace is not alice's to see"
    );
    // Purging takes admin; the global MEMORY.md is not ada's (her scope is her own).
    let purge = as_key(
        call("DELETE", "/v1/documents/users/alice/USER.md"),
        "alice-key",
    )
    .send_via(&service)
    .await;
    assert_eq!(purge.status, StatusCode::FORBIDDEN);
    let global = as_key(call("GET", "/v1/documents/MEMORY.md"), "alice-key")
        .send_via(&service)
        .await;
    assert_eq!(global.status, StatusCode::FORBIDDEN);

    // Metrics: the scraper and the admin; the scraper reads nothing else.
    let metrics = as_key(call("GET", "/metrics"), "scraper-key")
        .send_via(&service)
        .await;
    assert_eq!(metrics.status, StatusCode::OK);
    assert_eq!(
        as_key(call("GET", "/v1/users"), "scraper-key")
            .send_via(&service)
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        as_key(call("GET", "/metrics"), "reader-key")
            .send_via(&service)
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    let purged = as_key(
        call("DELETE", "/v1/documents/users/alice/USER.md"),
        "admin-key",
    )
    .send_via(&service)
    .await;
    assert_eq!(purged.status, StatusCode::OK);
    assert_eq!(
        text_of(&memory, DocumentId::user(&UserId::new("bob").unwrap())).await,
        "Bob's secret.\n"
    );
}

#[tokio::test]
async fn identities_link_resolve_unlink_and_list_by_key() {
    let (_dir, memory) = wiring();
    let service = keyed(&memory);
    let link = |platform_user: &str, user: &str, key: &str| {
        as_key(
            call("PUT", &format!("/v1/identities/telegram/{platform_user}")),
            key,
        )
        .json(json!({"user": user}))
    };
    let linked = link("12345", "alice", "admin-key").send_via(&service).await;
    assert_eq!(linked.status, StatusCode::OK, "{}", linked.body);
    assert_eq!(linked.body["identity"], "telegram:12345");
    assert_eq!(linked.body["user"], "alice");
    assert_eq!(linked.body["previous"], Value::Null);
    let taken = link("12345", "bob", "admin-key").send_via(&service).await;
    assert_eq!(taken.status, StatusCode::CONFLICT, "{}", taken.body);
    assert_eq!(taken.body["kind"], "conflict");
    assert_eq!(taken.body["code"], "identity-taken");
    // A platform id with a slash, percent-encoded in the path.
    let slashed = link("team%2Fbob", "bob", "admin-key")
        .send_via(&service)
        .await;
    assert_eq!(slashed.status, StatusCode::OK, "{}", slashed.body);
    assert_eq!(slashed.body["platform_user"], "team/bob");
    let resolved = as_key(
        call("GET", "/v1/identities/telegram/team%2Fbob"),
        "reader-key",
    )
    .send_via(&service)
    .await;
    assert_eq!(resolved.body["user"], "bob");
    // alice's app resolves alice's account, not bob's (as if unlinked), and cannot link.
    let hidden = as_key(
        call("GET", "/v1/identities/telegram/team%2Fbob"),
        "alice-key",
    )
    .send_via(&service)
    .await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    assert_eq!(
        link("999", "alice", "alice-key")
            .send_via(&service)
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    let listed = as_key(call("GET", "/v1/identities?limit=1"), "admin-key")
        .send_via(&service)
        .await;
    assert_eq!(listed.body["items"][0]["identity"], "telegram:12345");
    assert_eq!(listed.body["next_after"], "telegram:12345");
    let rest = as_key(
        call("GET", "/v1/identities?after=telegram:12345"),
        "admin-key",
    )
    .send_via(&service)
    .await;
    assert_eq!(rest.body["items"][0]["identity"], "telegram:team/bob");
    let unlinked = as_key(call("DELETE", "/v1/identities/telegram/12345"), "admin-key")
        .send_via(&service)
        .await;
    assert_eq!(unlinked.status, StatusCode::OK);
    assert_eq!(unlinked.body["previous"], "alice");
    let gone = as_key(call("GET", "/v1/identities/telegram/12345"), "admin-key")
        .send_via(&service)
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    let bad = as_key(call("GET", "/v1/identities/tele%20gram/1"), "admin-key")
        .send_via(&service)
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn health_reports_each_provider() {
    let (_dir, memory) = wiring();
    let health = call("GET", "/v1/health").send(&memory).await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(health.body["status"], "ok");
    assert_eq!(
        health.body["providers"],
        json!([{"name": "files", "kind": "markdown", "ready": true}])
    );
    let ready = call("GET", "/v1/health/ready").send(&memory).await;
    assert_eq!(ready.status, StatusCode::OK);
}

/// The document a server serves is true to the access it gives: a keyless loopback server
/// declares no security and no 401 (a client generated from it sends no key); a server with
/// keys serves the committed document, every operation but health naming its scope.
#[tokio::test]
async fn the_served_openapi_document_declares_the_access_the_server_gives() {
    let (_dir, memory) = wiring();
    let keyless = call("GET", "/v1/openapi.json").send(&memory).await;
    assert_eq!(keyless.status, StatusCode::OK);
    let keyless = keyless.body;
    assert!(
        keyless["components"]["securitySchemes"]
            .as_object()
            .is_none_or(|schemes| schemes.is_empty()),
        "{}",
        keyless["components"]["securitySchemes"]
    );
    assert!(keyless.get("security").is_none());
    let description = keyless["info"]["description"].as_str().unwrap();
    assert!(!description.contains("Bearer"), "{description}");
    assert!(description.contains("without keys"), "{description}");
    let mut operations = 0;
    for (path, item) in keyless["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            operations += 1;
            assert!(
                operation.get("security").is_none(),
                "{method} {path}: {}",
                operation["security"]
            );
            let responses = operation["responses"].as_object().unwrap();
            assert!(!responses.contains_key("401"), "{method} {path}");
            assert!(
                responses["403"]["description"]
                    .as_str()
                    .unwrap()
                    .contains("Host"),
                "{method} {path}"
            );
        }
    }
    assert!(operations > 30, "{operations}");

    let keyed = call("GET", "/v1/openapi.json")
        .send_via(&keyed(&memory))
        .await
        .body;
    let committed: Value = serde_json::from_str(&memory_web::openapi_json()).unwrap();
    assert_eq!(
        keyed, committed,
        "a keyed server serves what `memory openapi` prints"
    );
    assert!(keyed["components"]["securitySchemes"]["api_key"].is_object());
    for (path, item) in keyed["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let public = path.starts_with("/v1/health");
            let scoped = operation["security"][0]["api_key"][0].is_string();
            assert_eq!(scoped, !public, "{method} {path}");
            assert!(operation["responses"]["401"].is_object(), "{method} {path}");
        }
    }
}

/// A revision that is not kept says so with one code whichever route asked for it: its GET,
/// a diff from or to it, a revert to it.
#[tokio::test]
async fn a_revision_not_kept_is_revision_not_found_on_every_route() {
    let (_dir, memory) = wiring();
    add(&memory, "ada", "grace", Store::Memory, "Project: Lovelace.").await;
    let base = "/v1/documents/personalities/ada/MEMORY.md";
    for answer in [
        call("GET", &format!("{base}/revisions/99"))
            .send(&memory)
            .await,
        call("GET", &format!("{base}/diff?from=99"))
            .send(&memory)
            .await,
        call("POST", &format!("{base}/revert"))
            .json(json!({"number": 99}))
            .send(&memory)
            .await,
    ] {
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}", answer.body);
        assert_eq!(answer.body["kind"], "not-found", "{}", answer.body);
        assert_eq!(answer.body["code"], "revision-not-found", "{}", answer.body);
        assert!(
            answer.body["detail"].as_str().unwrap().contains("99"),
            "{}",
            answer.body
        );
    }
}

/// An admin key restricted to alice links only what is free, never moves or unlinks a link
/// (it could not check the owner in the same step), and learns nothing of other users' links
/// or writes.
#[tokio::test]
async fn a_restricted_admin_key_never_touches_other_users() {
    let (_dir, memory) = wiring();
    let service = keyed(&memory);
    let link = |platform_user: &str, user: &str, relink: bool, key: &str| {
        as_key(
            call("PUT", &format!("/v1/identities/telegram/{platform_user}")),
            key,
        )
        .json(json!({"user": user, "relink": relink}))
    };
    assert_eq!(
        link("1", "bob", false, "admin-key")
            .send_via(&service)
            .await
            .status,
        StatusCode::OK
    );
    let own = link("2", "alice", false, "alice-admin-key")
        .send_via(&service)
        .await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.body);
    // Taken by bob: refused without naming him.
    let taken = link("1", "alice", false, "alice-admin-key")
        .send_via(&service)
        .await;
    assert_eq!(taken.status, StatusCode::CONFLICT, "{}", taken.body);
    assert!(
        !taken.body["detail"].as_str().unwrap().contains("bob"),
        "{}",
        taken.body
    );
    for (answer, what) in [
        (
            link("1", "alice", true, "alice-admin-key")
                .send_via(&service)
                .await,
            "relink",
        ),
        (
            as_key(
                call("DELETE", "/v1/identities/telegram/2"),
                "alice-admin-key",
            )
            .send_via(&service)
            .await,
            "unlink",
        ),
    ] {
        assert_eq!(
            answer.status,
            StatusCode::FORBIDDEN,
            "{what}: {}",
            answer.body
        );
    }
    let listed = as_key(call("GET", "/v1/identities"), "alice-admin-key")
        .send_via(&service)
        .await;
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 1);
    assert_eq!(listed.body["items"][0]["user"], "alice");
    let resolved = memory
        .resolve(&"telegram:1".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(
        resolved,
        Some(UserId::new("bob").unwrap()),
        "bob's link stayed his"
    );
    assert_eq!(
        as_key(
            call("DELETE", "/v1/documents/users/bob/USER.md"),
            "alice-admin-key"
        )
        .send_via(&service)
        .await
        .status,
        StatusCode::FORBIDDEN
    );

    // Who wrote ada's memory in bob's conversation is not alice-app's to learn.
    let bob_turn = memory
        .context(
            PersonalityId::new("ada").unwrap(),
            UserId::new("bob").unwrap(),
        )
        .with_session("bob-chat-9");
    memory
        .sync(
            &bob_turn,
            &[MemoryUpdate::add(Store::Memory, "Team lunch Friday.")],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    for uri in [ADA_REVISIONS, &format!("{ADA_REVISIONS}/1")] {
        let seen = as_key(call("GET", uri), "alice-key")
            .send_via(&service)
            .await;
        let revision = if seen.body["revisions"].is_array() {
            seen.body["revisions"][0].clone()
        } else {
            seen.body.clone()
        };
        assert_eq!(revision["personality"], "ada", "{uri}");
        assert_eq!(revision["user"], Value::Null, "{uri}: {revision}");
        assert_eq!(revision["session"], Value::Null, "{uri}");
        assert_eq!(revision["idempotency_key"], Value::Null, "{uri}");
    }
    let admin = as_key(call("GET", ADA_REVISIONS), "admin-key")
        .send_via(&service)
        .await;
    assert_eq!(admin.body["revisions"][0]["user"], "bob");
    assert_eq!(admin.body["revisions"][0]["session"], "bob-chat-9");
}

/// Why a provider is not ready may name hosts and paths: only a key with the metrics scope
/// reads it; health itself is public.
#[tokio::test]
async fn health_errors_are_for_operators() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::parse(
        "default_provider = \"files\"\n[providers.files]\nkind = \"markdown\"\nroot = \"m\"\n\
         [providers.down]\nkind = \"redis\"\nurl = \"redis://127.0.0.1:1\"\ndeadline_ms = 500\n",
        &dir.path().join("memory.toml"),
    )
    .unwrap();
    let service = keyed(&Memory::new(config));
    let public = call("GET", "/v1/health").send_via(&service).await;
    assert_eq!(public.status, StatusCode::OK);
    assert_eq!(public.body["status"], "degraded");
    let down = |body: &Value| {
        body["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "down")
            .cloned()
            .unwrap()
    };
    assert_eq!(down(&public.body)["ready"], false);
    assert!(down(&public.body).get("error").is_none(), "{}", public.body);
    let operator = as_key(call("GET", "/v1/health"), "scraper-key")
        .send_via(&service)
        .await;
    assert!(
        down(&operator.body)["error"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1:1")
    );
}
