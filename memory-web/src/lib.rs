#![doc = include_str!("../README.md")]

mod api;
mod auth;
mod conditional;
mod deployment;
mod etag;
mod headers;
mod mcp;
mod openapi;
mod ops;
mod page;
mod problem;
mod replay;
mod request;
mod settings;
mod state;
mod wire;

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::Semaphore;
use tokio_util::task::TaskTracker;
use tower_http::cors::{AllowOrigin, CorsLayer};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use auth::{Access, MIN_TOKEN_CHARS, Principal, TOKEN_ENV, key_sha256, mint_key};
pub use deployment::{Deployment, Placement, ProviderInfo, Standalone, tools};
pub use headers::{IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED, REQUEST_ID};
pub use mcp::{MCP_IDEMPOTENCY_META, McpServer, resource_uri};
pub use problem::{PROBLEM_JSON, Problem, ProblemDocument, ProblemKind};
pub use settings::{
    ApiKey, MAX_CONCURRENT_REQUESTS, MAX_READ_TIMEOUT, RESERVED_KEY_NAMES, Scope, Settings,
    check_key_name,
};

use problem::Answered;
use state::App;

/// The memory service: the `/v1` API, `/mcp`, the Memory page and `/metrics`, over one
/// [`Deployment`].
pub struct Service {
    router: Router,
    tasks: TaskTracker,
    shutdown_timeout: Duration,
    header_timeout: Duration,
    max_connections: usize,
}

impl Service {
    /// The service over `deployment`, guarded by `access`, within the limits of `settings`;
    /// `access_log` writes one JSON line per request on stderr.
    pub fn new(
        deployment: Arc<dyn Deployment>,
        settings: &Settings,
        access: Access,
        access_log: bool,
    ) -> Service {
        let (api, document) = documented();
        // True to this server's access: without keys, no operation declares security.
        let openapi_json = openapi::served_json(&document, access.has_keys());
        let metrics = Arc::new(ops::Metrics::new());
        let tasks = TaskTracker::new();
        let app = App {
            memory: deployment.memory(),
            deployment,
            cors_origins: Arc::new(settings.cors_origins.clone()),
            metrics: Arc::clone(&metrics),
            openapi: Arc::new(openapi_json),
            diffs: Arc::new(Semaphore::new(
                std::thread::available_parallelism().map_or(1, usize::from),
            )),
            tasks: tasks.clone(),
        };
        let shapes = openapi::write_shapes(&document);
        // A tool call past the request timeout may have written: answered as a write's is.
        let mut timed_writes: HashSet<(Method, String)> = shapes.keys().cloned().collect();
        timed_writes.extend(mcp::ROUTES.map(|route| (Method::POST, route.to_owned())));
        let writes = replay::Writes {
            replays: replay::Replays::default(),
            tasks: tasks.clone(),
            shapes: Arc::new(shapes),
        };
        let operations = ops::Operations {
            metrics,
            access_log,
        };
        let admission = ops::Admission {
            permits: Arc::new(Semaphore::new(settings.max_concurrent_requests)),
            request_timeout: settings.request_timeout,
            writes: Arc::new(timed_writes),
            max_concurrent: settings.max_concurrent_requests,
        };
        let receiving = ops::Receiving {
            body_timeout: settings.body_timeout,
            max_body_bytes: settings.max_body_bytes,
        };
        let api = api
            .route("/v1/openapi.json", get(openapi_document))
            .route("/metrics", get(metrics_text))
            .fallback(not_found)
            .method_not_allowed_fallback(method_not_allowed)
            .layer(axum::middleware::from_fn(ops::never_cached));
        let mut router = page::routes()
            .merge(mcp::routes(mcp::transport(settings.max_body_bytes)))
            .merge(api)
            .with_state(app)
            .layer(DefaultBodyLimit::max(settings.max_body_bytes))
            // On routes only: a method a route does not take is answered 405 before anything.
            .route_layer(axum::middleware::from_fn_with_state(writes, replay::writes))
            .route_layer(axum::middleware::from_fn_with_state(
                Arc::new(openapi::query_parameters(&document)),
                request::known_query,
            ))
            .layer(axum::middleware::from_fn_with_state(admission, ops::admit))
            // Before admission: a body sent slowly, or never, holds no place.
            .layer(axum::middleware::from_fn_with_state(
                receiving,
                ops::receive,
            ))
            .layer(axum::middleware::from_fn_with_state(access, auth::identify));
        if !settings.cors_origins.is_empty() {
            router = router.layer(cors(&settings.cors_origins));
        }
        let router = router.layer(axum::middleware::from_fn_with_state(
            operations,
            ops::operate,
        ));
        Service {
            router,
            tasks,
            shutdown_timeout: settings.shutdown_timeout,
            header_timeout: settings.header_timeout,
            max_connections: settings.max_connections,
        }
    }

    /// The router, for serving it another way or calling it in tests.
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// Serves on `listener` until `shutdown` completes; then stops accepting, lets the
    /// requests in flight and every write started finish (up to the config's
    /// `shutdown_timeout_ms`), and returns.
    ///
    /// Each connection must send a request's headers whole within `header_timeout_ms` of the
    /// request before (or of its opening), else it is closed: so a client that trickles
    /// headers, or a connection left idle, holds nothing for long. At most `max_connections`
    /// are open at once; more wait in the listen queue.
    ///
    /// # Errors
    /// None so far: a failure to accept a connection is waited out (the machine's limit on
    /// open files, or a connection reset before it was accepted).
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(self.header_timeout);
        let connections = Arc::new(Semaphore::new(self.max_connections));
        let open = hyper_util::server::graceful::GracefulShutdown::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                () = &mut shutdown => break,
                accepted = accept(&listener, &connections) => accepted,
            };
            let Some((stream, place)) = accepted else {
                continue;
            };
            // Answers are written whole; waiting to fill a segment only delays them.
            let _ = stream.set_nodelay(true);
            let service = hyper_util::service::TowerToHyperService::new(self.router.clone());
            let connection = open.watch(http.serve_connection(
                hyper_util::rt::TokioIo::new(wire::Wire::new(stream)),
                service,
            ));
            tokio::spawn(async move {
                // A connection's end (closed, timed out, reset) is the client's business.
                let _ = connection.await;
                drop(place);
            });
        }
        drop(listener);
        let stopping = Instant::now();
        // Connections in flight get until the shutdown timeout; then they are dropped.
        let _ = tokio::time::timeout(self.shutdown_timeout, open.shutdown()).await;
        self.tasks.close();
        let left = self.shutdown_timeout.saturating_sub(stopping.elapsed());
        let _ = tokio::time::timeout(left, self.tasks.wait()).await;
        Ok(())
    }
}

/// The next connection, with its place among those open at once; `None` when accepting
/// failed, after a pause when the failure is the machine's (out of file descriptors, say), so
/// the loop does not spin.
async fn accept(
    listener: &tokio::net::TcpListener,
    connections: &Arc<Semaphore>,
) -> Option<(tokio::net::TcpStream, tokio::sync::OwnedSemaphorePermit)> {
    let place = Arc::clone(connections).acquire_owned().await.ok()?;
    match listener.accept().await {
        Ok((stream, _)) => Some((stream, place)),
        Err(error) => {
            let reset = matches!(
                error.kind(),
                std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::ConnectionReset
            );
            if !reset {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            None
        }
    }
}

/// The OpenAPI document of the `/v1` API, as `/v1/openapi.json` serves it.
pub fn openapi_json() -> String {
    documented().1.to_pretty_json().unwrap_or_default()
}

/// The `/v1` routes and their finished OpenAPI document.
fn documented() -> (Router<App>, utoipa::openapi::OpenApi) {
    let (api, document) = routes().split_for_parts();
    (api, openapi::finish(document))
}

/// Every `/v1` operation, with its OpenAPI annotations.
fn routes() -> OpenApiRouter<App> {
    OpenApiRouter::with_openapi(<openapi::ApiDoc as utoipa::OpenApi>::openapi())
        .routes(routes!(api::turn::prefetch))
        .routes(routes!(api::turn::sync))
        .routes(routes!(api::turn::search))
        .merge(api::documents::routes())
        .routes(routes!(api::identities::list))
        .routes(routes!(
            api::identities::resolve,
            api::identities::link,
            api::identities::unlink
        ))
        .routes(routes!(api::directory::personalities))
        .routes(routes!(api::directory::users))
        .routes(routes!(api::health::health))
        .routes(routes!(api::health::ready))
}

async fn openapi_document(State(app): State<App>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        app.openapi.as_str().to_owned(),
    )
        .into_response()
}

async fn metrics_text(State(app): State<App>, _caller: auth::MetricsReader) -> Response {
    (
        [(header::CONTENT_TYPE, ops::OPENMETRICS)],
        app.metrics.render(),
    )
        .into_response()
}

async fn not_found() -> Problem {
    Problem::not_found(
        "no such route: the API is under /v1 (see /v1/openapi.json), the Memory page at /",
    )
}

async fn method_not_allowed() -> Response {
    let mut response = Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        ProblemKind::MethodNotAllowed,
        "this route does not take that method; the Allow header lists the ones it takes",
    )
    .into_response();
    response
        .extensions_mut()
        .insert(Answered("method-not-allowed"));
    response
}

fn cors(origins: &[String]) -> CorsLayer {
    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|origin| HeaderValue::from_str(origin).ok())
        .collect();
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::IF_MATCH,
            header::IF_NONE_MATCH,
            IDEMPOTENCY_KEY,
            REQUEST_ID,
        ])
        .expose_headers([
            header::ETAG,
            header::LINK,
            header::RETRY_AFTER,
            header::LOCATION,
            IDEMPOTENT_REPLAYED,
            REQUEST_ID,
        ])
        .max_age(Duration::from_secs(600))
}
