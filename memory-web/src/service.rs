//! [`Service`]: the `/v1` API, `/mcp`, the Memory page and `/metrics` assembled into one
//! router over a [`Deployment`], with the layers every request passes (access, admission,
//! bodies, replays of keyed writes, known query parameters, CORS, metrics and the access log).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::Semaphore;
use tokio_util::task::TaskTracker;
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::auth::{self, Access};
use crate::deployment::Deployment;
use crate::headers::{IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED, REQUEST_ID};
use crate::problem::{Answered, Problem, ProblemKind};
use crate::settings::Settings;
use crate::state::App;
use crate::{api, mcp, openapi, ops, page, replay, request};

/// The memory service: the `/v1` API, `/mcp`, the Memory page and `/metrics`, over one
/// [`Deployment`].
pub struct Service {
    pub(crate) router: Router,
    pub(crate) tasks: TaskTracker,
    pub(crate) shutdown_timeout: Duration,
    pub(crate) header_timeout: Duration,
    pub(crate) max_connections: usize,
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
        let (api, document) = api::documented();
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
