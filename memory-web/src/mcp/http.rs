//! `/mcp`: the Streamable HTTP route. Each request is opened here (whose memory, which key,
//! its idempotency key) after the service's guards (origin, message, scopes), then handed to
//! the rmcp transport that runs [`McpServer`] on it.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::{Json, Router};
use memory_core::{IdempotencyKey, Identity, PersonalityId, UserId};
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;

use super::McpServer;
use crate::auth::{Caller, Principal};
use crate::deployment::Deployment;
use crate::ops::Metrics;
use crate::problem::Problem;
use crate::replay::idempotency_key;
use crate::request::path_param;
use crate::settings::Scope;
use crate::state::App;

/// Whose memory one `/mcp` request opens, and what its key may do there: put in the request's
/// extensions by [`mcp`], read by [`McpServer`] through rmcp's copy of the request parts.
#[derive(Clone)]
pub(super) struct Opened {
    pub(super) deployment: Arc<dyn Deployment>,
    pub(super) personality: PersonalityId,
    pub(super) user: UserId,
    pub(super) can_read: bool,
    pub(super) can_write: bool,
    pub(super) key_name: String,
    /// The request's `Idempotency-Key`, for its tool call.
    pub(super) key: Option<IdempotencyKey>,
    pub(super) metrics: Arc<Metrics>,
}

/// The rmcp transport `/mcp` hands each request to, after the route has opened it.
pub(crate) type Transport = StreamableHttpService<McpServer, NeverSessionManager>;

/// The Streamable HTTP transport, stateless (no `Mcp-Session-Id`: every request stands
/// alone) and answering plain JSON. Host, Origin and body size are checked before it, by the
/// service's own rules, so its own checks are off.
pub(crate) fn transport(max_body_bytes: usize) -> Arc<Transport> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(max_body_bytes);
    Arc::new(StreamableHttpService::new(
        || Ok(McpServer::per_request()),
        Arc::new(NeverSessionManager::default()),
        config,
    ))
}

/// The routes of `/mcp`: the pair a restricted key is limited to, a personality and user, a
/// personality and a linked platform account.
pub(crate) const ROUTES: [&str; 3] = [
    "/mcp",
    "/mcp/{personality}/{user}",
    "/mcp/{personality}/{platform}/{platform_user}",
];

/// The `/mcp` routes and the protected-resource metadata that points clients at bearer keys.
pub(crate) fn routes(transport: Arc<Transport>) -> Router<App> {
    ROUTES
        .into_iter()
        .fold(Router::new(), |router, route| {
            router.route(
                route,
                any(mcp).layer(axum::Extension(Arc::clone(&transport))),
            )
        })
        .route(
            "/.well-known/oauth-protected-resource",
            get(protected_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/{*resource}",
            get(protected_resource),
        )
}

/// `/mcp`: checks the request as every route of the service is checked (key, scope, whose
/// memory, Origin), then hands it to the MCP transport with what it opened.
async fn mcp(
    State(app): State<App>,
    axum::Extension(transport): axum::Extension<Arc<Transport>>,
    request: Request,
) -> Response {
    let request = match open(&app, request).await {
        Ok(request) => request,
        Err(problem) => return problem,
    };
    // On a task of its own, tracked for shutdown: a tool call that started runs to its end
    // even when its client goes away or its time is up, as every write of the service does.
    let answer = app
        .tasks
        .spawn(async move { transport.handle(request).await.into_response() });
    answer.await.unwrap_or_else(|_| {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            crate::problem::ProblemKind::Memory(memory_core::ErrorKind::OutcomeUnknown),
            "the MCP request failed inside the server; a tool call in it may or may not have \
             written",
        )
        .into_response()
    })
}

async fn open(app: &App, request: Request) -> Result<Request, Response> {
    let (mut parts, body) = request.into_parts();
    // Already read whole, within the body limit and timeout, by the service's receive layer.
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .map_err(|err| Problem::invalid(format!("the body could not be read: {err}")))
        .map_err(IntoResponse::into_response)?;
    if parts.method != Method::POST {
        let mut response = Problem::new(
            StatusCode::METHOD_NOT_ALLOWED,
            crate::problem::ProblemKind::MethodNotAllowed,
            format!(
                "/mcp takes POST only: this server is stateless (no sessions to open with GET \
                 or close with DELETE); send each JSON-RPC message in a POST, {}",
                "with Accept: application/json, text/event-stream"
            ),
        )
        .into_response();
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return Err(response);
    }
    check_origin(app, &parts).map_err(IntoResponse::into_response)?;
    check_message(&parts, &body).map_err(IntoResponse::into_response)?;
    let principal = caller(&parts).map_err(|problem| challenge(problem, &parts))?;
    let (can_read, can_write) = (principal.has(Scope::Read), principal.has(Scope::Write));
    if !can_read && !can_write {
        return Err(Problem::forbidden(format!(
            "key {:?} has neither the read nor the write scope the memory tools need",
            principal.name
        ))
        .into_response());
    }
    let (personality, user) = whose(app, &mut parts, &principal)
        .await
        .map_err(IntoResponse::into_response)?;
    principal
        .check_pair(&personality, &user)
        .map_err(IntoResponse::into_response)?;
    let key = idempotency_key(&parts.headers).map_err(IntoResponse::into_response)?;
    parts.extensions.insert(Opened {
        deployment: Arc::clone(&app.deployment),
        personality,
        user,
        can_read,
        can_write,
        key_name: principal.name.clone(),
        key,
        metrics: Arc::clone(&app.metrics),
    });
    Ok(Request::from_parts(parts, axum::body::Body::from(body)))
}

/// Refuses what the transport would refuse with a bare text answer, each with an answer
/// naming what was wrong: a problem document for the HTTP side (media types), a JSON-RPC
/// error for a body that is not one JSON-RPC message (`-32700` not JSON, `-32600` a batch or
/// not JSON-RPC), as the JSON-RPC specification has them.
fn check_message(parts: &Parts, body: &[u8]) -> Result<(), Refusal> {
    let media = |name: header::HeaderName| -> Vec<String> {
        parts
            .headers
            .get_all(name)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(|item| {
                let essence = item.split(';').next().unwrap_or_default();
                essence.trim().to_ascii_lowercase()
            })
            .collect()
    };
    let content_type = media(header::CONTENT_TYPE);
    if content_type.first().map(String::as_str) != Some("application/json") {
        return Err(Refusal::Problem(Problem::invalid_with(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the JSON-RPC message with Content-Type: application/json",
        )));
    }
    crate::request::utf8_charset(&parts.headers).map_err(Refusal::Problem)?;
    let accept = media(header::ACCEPT);
    let takes = |wanted: &str| accept.iter().any(|item| item == wanted);
    if !(takes("application/json") && takes("text/event-stream")) {
        return Err(Refusal::Problem(Problem::invalid_with(
            StatusCode::NOT_ACCEPTABLE,
            "MCP's Streamable HTTP needs Accept: application/json, text/event-stream (this \
             server answers application/json)",
        )));
    }
    let refuse = |code: i64, message: String| {
        let error = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": code, "message": message},
        });
        Refusal::JsonRpc(StatusCode::BAD_REQUEST, error)
    };
    let message: serde_json::Value = serde_json::from_slice(body)
        .map_err(|err| refuse(-32700, format!("Parse error: the body is not JSON ({err})")))?;
    if message.is_array() {
        return Err(refuse(
            -32600,
            "Invalid Request: a JSON-RPC batch; MCP's Streamable HTTP takes one message per \
             POST"
                .to_owned(),
        ));
    }
    if let Err(err) = serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(message.clone()) {
        return Err(refuse(
            -32600,
            format!("Invalid Request: not a JSON-RPC 2.0 message MCP defines ({err})"),
        ));
    }
    // The transport takes a known method with params it cannot read for a method of its own
    // and answers "method not found": say instead what is wrong with the params.
    let params = message
        .get("params")
        .cloned()
        .unwrap_or(serde_json::Value::Null);
    let wrong = match message.get("method").and_then(serde_json::Value::as_str) {
        Some("tools/call") => serde_json::from_value::<CallToolRequestParams>(params).err(),
        Some("resources/read") => serde_json::from_value::<ReadResourceRequestParams>(params).err(),
        _ => None,
    };
    if let Some(err) = wrong {
        let method = message["method"].as_str().unwrap_or_default();
        let error = json!({
            "jsonrpc": "2.0",
            "id": message.get("id").cloned().unwrap_or(serde_json::Value::Null),
            "error": {
                "code": -32602,
                "message": format!(
                    "Invalid params for {method}: {err} (tools/call takes {{\"name\": \
                     \"memory_add\", \"arguments\": {{...}}}}, resources/read {{\"uri\": \
                     \"memory://...\"}})"
                ),
            },
        });
        return Err(Refusal::JsonRpc(StatusCode::OK, error));
    }
    Ok(())
}

/// The principal of the request, or the 401/403 problem for it.
fn caller(parts: &Parts) -> Result<Arc<Principal>, Problem> {
    match parts.extensions.get::<Caller>() {
        Some(Caller::Known(principal)) => Ok(Arc::clone(principal)),
        Some(Caller::WrongKey) => Err(Problem::new(
            StatusCode::UNAUTHORIZED,
            crate::problem::ProblemKind::Unauthorized,
            "the API key is not valid: send Authorization: Bearer <key> with a key configured \
             under [serve.keys]",
        )),
        Some(Caller::Anonymous) | None => Err(Problem::new(
            StatusCode::UNAUTHORIZED,
            crate::problem::ProblemKind::Unauthorized,
            "the memory tools need a key: send Authorization: Bearer <key>",
        )),
    }
}

/// A 401 with the `WWW-Authenticate` challenge MCP clients look for (RFC 6750, with RFC
/// 9728's `resource_metadata`), so a client that probes for OAuth learns a bearer key is what
/// this server takes.
fn challenge(problem: Problem, parts: &Parts) -> Response {
    let wrong_key = matches!(parts.extensions.get::<Caller>(), Some(Caller::WrongKey));
    let mut response = problem.into_response();
    let metadata = format!(
        "{}/.well-known/oauth-protected-resource{}",
        origin_of(parts),
        parts.uri.path()
    );
    let value = if wrong_key {
        format!(r#"Bearer error="invalid_token", resource_metadata="{metadata}""#)
    } else {
        format!(r#"Bearer resource_metadata="{metadata}""#)
    };
    if let Ok(value) = HeaderValue::from_str(&value) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// `scheme://host` of the request as its client addressed it (behind a proxy, its
/// `X-Forwarded-Proto`).
fn origin_of(parts: &Parts) -> String {
    let text = |name| {
        parts
            .headers
            .get(name)
            .and_then(|value: &HeaderValue| value.to_str().ok())
    };
    let scheme = text("x-forwarded-proto")
        .filter(|proto| matches!(*proto, "http" | "https"))
        .unwrap_or("http");
    let host = text(header::HOST.as_str()).unwrap_or("localhost");
    format!("{scheme}://{host}")
}

/// RFC 9728 protected-resource metadata for `/mcp` and its paths: the resource, and that it
/// takes bearer keys in the `Authorization` header (no authorization server: keys are made
/// with `memory key new`).
async fn protected_resource(request: Request) -> Response {
    let (parts, _) = request.into_parts();
    let resource_path = parts
        .uri
        .path()
        .strip_prefix("/.well-known/oauth-protected-resource")
        .filter(|path| !path.is_empty())
        .unwrap_or("/mcp");
    Json(json!({
        "resource": format!("{}{resource_path}", origin_of(&parts)),
        "bearer_methods_supported": ["header"],
        "resource_name": "agent-memory",
        "resource_documentation": "https://docs.rs/agent-memory-web",
    }))
    .into_response()
}

/// Why a request never reached the transport: a problem document, or a JSON-RPC error with
/// the HTTP status it goes with.
enum Refusal {
    Problem(Problem),
    JsonRpc(StatusCode, serde_json::Value),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Problem(problem) => problem.into_response(),
            Refusal::JsonRpc(status, error) => (status, Json(error)).into_response(),
        }
    }
}

/// Refuses a request whose `Origin` is not one of `[serve] cors_origins`: the MCP
/// specification's guard against DNS rebinding, where a web page elsewhere reaches a server
/// on this machine or network through the browser.
fn check_origin(app: &App, parts: &Parts) -> Result<(), Problem> {
    let Some(origin) = parts.headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let allowed = &app.cors_origins;
    let origin = origin.to_str().unwrap_or("(not text)");
    if allowed.iter().any(|allowed| allowed == origin) {
        return Ok(());
    }
    Err(Problem::forbidden(format!(
        "requests from the web origin {origin:?} are refused: list it in [serve] cors_origins \
         to allow it"
    )))
}

/// Whose memory the request opens: the personality and user in its path, the user linked to
/// the platform account in its path, or the one pair a restricted key is limited to.
async fn whose(
    app: &App,
    parts: &mut Parts,
    principal: &Principal,
) -> Result<(PersonalityId, UserId), Problem> {
    let Some(personality) = path_param(parts, "personality").await? else {
        return principal.only_pair().ok_or_else(|| {
            Problem::invalid(
                "name whose memory to open in the URL: /mcp/<personality>/<user>, or \
                 /mcp/<personality>/<platform>/<platform user id> for a linked account; plain \
                 /mcp is for a key restricted to one personality and one user",
            )
        });
    };
    let personality = PersonalityId::new(personality)?;
    if let Some(user) = path_param(parts, "user").await? {
        return Ok((personality, UserId::new(user)?));
    }
    let platform = path_param(parts, "platform").await?.unwrap_or_default();
    let account = path_param(parts, "platform_user")
        .await?
        .unwrap_or_default();
    let identity = Identity::new(platform, account)?;
    match app
        .deployment
        .identities()
        .await?
        .resolve(&identity)
        .await?
    {
        Some(user) => Ok((personality, user)),
        None => Err(Problem::not_found(format!(
            "no user is linked to {identity}: link it (memory identity link, or PUT \
             /v1/identities/{}/...), or name the user in the URL",
            identity.platform()
        ))),
    }
}
