//! The service over a provider built in code, with no `memory.toml`: the turn cycle, the
//! directory, health, the identity map, search with and without recall, and the memory tools,
//! on their own and over `/mcp`, all through the one provider given.

use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use memory_core::{
    DocumentId, Identity, MemoryError, MemoryProvider, PersonalityId, Recall, Recalled,
    RecalledEntry, UserId,
};
use memory_markdown::MarkdownProvider;
use memory_web::{Access, Deployment, Service, Settings, Standalone};
use serde_json::{Value, json};
use tempfile::TempDir;
use tower::ServiceExt;

/// A markdown provider in a fresh directory, served as `files` of kind `markdown`.
fn files() -> (TempDir, Standalone) {
    let dir = tempfile::tempdir().unwrap();
    let files = Arc::new(MarkdownProvider::new(dir.path()));
    let deployment = Standalone::new(files.clone(), files).named("files", "markdown");
    (dir, deployment)
}

/// `method uri` with `body` to a keyless loopback service over `deployment`: status and JSON.
async fn send(
    deployment: &Standalone,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let service = Service::new(
        Arc::new(deployment.clone()),
        &Settings::default(),
        Access::loopback(),
        false,
    );
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::HOST, "127.0.0.1:8700")
        // What an MCP client sends; the /v1 routes answer JSON either way.
        .header(header::ACCEPT, "application/json, text/event-stream");
    let request = match body {
        Some(body) => request
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string())),
        None => request.body(Body::empty()),
    };
    let response = service.router().oneshot(request.unwrap()).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn the_turn_cycle_reads_and_writes_the_provider_given() {
    let (dir, deployment) = files();
    let (status, body) = send(
        &deployment,
        "POST",
        "/v1/sync",
        Some(json!({"personality": "ada", "user": "grace", "updates": [
            {"action": "add", "store": "memory", "content": "Likes tea."},
            {"action": "add", "store": "user", "content": "Name: Grace."},
        ]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The contract's default context: ada keeps her own MEMORY.md.
    let written = std::fs::read_to_string(dir.path().join("personalities/ada/MEMORY.md")).unwrap();
    assert!(written.contains("Likes tea."), "{written}");

    let (status, body) = send(
        &deployment,
        "POST",
        "/v1/prefetch",
        Some(json!({"personality": "ada", "user": "grace"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body["context"].as_str().unwrap().contains("Likes tea."),
        "{body}"
    );
    assert!(
        body["context"].as_str().unwrap().contains("Name: Grace."),
        "{body}"
    );
    assert_eq!(
        body["personality"],
        json!({"id": "ada", "provider": "files", "kind": "markdown", "scope": "per-personality", "recall": false})
    );
}

#[tokio::test]
async fn the_directory_and_health_show_the_provider_given() {
    let (_dir, deployment) = files();
    // Nothing is configured: a personality is listed once it holds a document.
    let (status, body) = send(&deployment, "GET", "/v1/personalities", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["items"], json!([]));
    assert_eq!(body["default"], Value::Null);
    let ctx = deployment.context(
        PersonalityId::new("bob").unwrap(),
        UserId::new("al").unwrap(),
    );
    deployment
        .memory()
        .sync(
            &ctx,
            &[memory_core::MemoryUpdate::add(
                memory_core::Store::Memory,
                "Plays chess.",
            )],
            &memory_core::IfMatch::NONE,
        )
        .await
        .unwrap();
    let (_, body) = send(&deployment, "GET", "/v1/personalities", None).await;
    assert_eq!(body["items"][0]["id"], "bob", "{body}");

    let (status, body) = send(&deployment, "GET", "/v1/health/ready", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"status": "ok", "providers": [{"name": "files", "kind": "markdown", "ready": true}]})
    );
}

/// The health checks read through the provider given: one that fails is reported as not
/// ready, naming why.
#[tokio::test]
async fn health_reports_a_provider_that_fails() {
    let dir = tempfile::tempdir().unwrap();
    // A root under a regular file cannot be read.
    let blocked = dir.path().join("file");
    std::fs::write(&blocked, "not a directory").unwrap();
    let files = Arc::new(MarkdownProvider::new(blocked.join("memory")));
    let deployment = Standalone::new(files.clone(), files);
    let (status, body) = send(&deployment, "GET", "/v1/health/ready", None).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["providers"][0]["name"], "memory", "{body}");
    assert_eq!(body["providers"][0]["kind"], "custom", "{body}");
    assert_eq!(body["providers"][0]["ready"], false, "{body}");
    assert!(body["providers"][0]["error"].is_string(), "{body}");
}

#[tokio::test]
async fn identities_live_in_the_map_given() {
    let (_dir, deployment) = files();
    let (status, body) = send(
        &deployment,
        "PUT",
        "/v1/identities/telegram/12345",
        Some(json!({"user": "grace"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let identity: Identity = "telegram:12345".parse().unwrap();
    let map = deployment.identities().await.unwrap();
    assert_eq!(
        map.resolve(&identity).await.unwrap(),
        Some(UserId::new("grace").unwrap())
    );
    let (status, body) = send(&deployment, "GET", "/v1/identities/telegram/12345", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"], "grace", "{body}");
}

/// Finds the entries holding every word of the query, for the test.
struct Grep(Arc<MarkdownProvider>);

#[async_trait]
impl Recall for Grep {
    async fn search(
        &self,
        document: &DocumentId,
        query: &str,
        limit: usize,
    ) -> Result<Recalled, MemoryError> {
        let text = self.0.read(document).await?.text;
        let ranked = text
            .lines()
            .filter(|entry| query.split_whitespace().all(|word| entry.contains(word)))
            .take(limit)
            .map(RecalledEntry::of_document)
            .collect();
        Ok(Recalled {
            ranked,
            ..Recalled::default()
        })
    }
}

#[tokio::test]
async fn search_uses_the_recall_given_and_is_refused_without_one() {
    let (dir, deployment) = files();
    let search = json!({"personality": "ada", "query": "tea"});
    let (status, body) = send(&deployment, "POST", "/v1/search", Some(search.clone())).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("provider \"files\" (markdown)"),
        "{body}"
    );

    let files = Arc::new(MarkdownProvider::new(dir.path()));
    let recalling = deployment.with_recall(Arc::new(Grep(files)));
    let (status, body) = send(
        &recalling,
        "POST",
        "/v1/sync",
        Some(json!({"personality": "ada", "user": "grace", "updates": [
            {"action": "add", "store": "memory", "content": "Likes green tea."},
            {"action": "add", "store": "memory", "content": "Drives a bus."},
        ]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = send(&recalling, "POST", "/v1/search", Some(search)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let ranked = body["ranked"].as_array().unwrap();
    assert_eq!(ranked.len(), 1, "{body}");
    assert!(
        ranked[0].as_str().unwrap().contains("Likes green tea."),
        "{body}"
    );
    assert_eq!(
        body["ranked_from"],
        json!(["personalities/ada/MEMORY.md"]),
        "each entry names its document: {body}"
    );
    let (_, body) = send(&recalling, "GET", "/v1/personalities", None).await;
    assert_eq!(body["items"][0]["recall"], true, "{body}");
}

/// The tools of a conversation over the deployment write through the provider given, and
/// offer `memory_search` when it recalls.
#[tokio::test]
async fn the_memory_tools_of_a_conversation_use_the_provider_given() {
    let (dir, deployment) = files();
    let tools = memory_web::tools(
        &deployment,
        PersonalityId::new("ada").unwrap(),
        UserId::new("grace").unwrap(),
    )
    .await
    .unwrap();
    let names: Vec<&str> = tools.tools().into_iter().map(|tool| tool.name()).collect();
    assert!(!names.contains(&"memory_search"), "{names:?}");
    let added = tools
        .call(
            "memory_add",
            json!({"file": "MEMORY.md", "entry": "Likes tea."}),
        )
        .await;
    assert!(!added.is_error, "{}", added.text);
    let written = std::fs::read_to_string(dir.path().join("personalities/ada/MEMORY.md")).unwrap();
    assert!(written.contains("Likes tea."), "{written}");

    let files = Arc::new(MarkdownProvider::new(dir.path()));
    let recalling = deployment.with_recall(Arc::new(Grep(files)));
    let tools = memory_web::tools(
        &recalling,
        PersonalityId::new("ada").unwrap(),
        UserId::new("grace").unwrap(),
    )
    .await
    .unwrap();
    let names: Vec<&str> = tools.tools().into_iter().map(|tool| tool.name()).collect();
    assert!(names.contains(&"memory_search"), "{names:?}");
}
