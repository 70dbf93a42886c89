//! What an operator needs around every request: a request id, a bound on time and on requests
//! at once, metrics in Prometheus' text format, and, when asked for, a JSON access log.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::KeyName;
use crate::headers::{IDEMPOTENCY_KEY, REQUEST_ID};
use crate::problem::{Answered, Problem};

/// The media type of `/metrics`.
pub(crate) const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: &'static str,
    outcome: &'static str,
}

/// The service's metrics.
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
    errors: Family<KindLabels, Counter>,
    in_flight: Gauge,
    tool_calls: Family<ToolLabels, Counter>,
}

fn latency_histogram() -> Histogram {
    // 100 µs to ~13 s.
    Histogram::new(exponential_buckets(0.0001, 2.0, 18))
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<RouteLabels, Histogram>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        let errors = Family::<KindLabels, Counter>::default();
        let in_flight = Gauge::default();
        let tool_calls = Family::<ToolLabels, Counter>::default();
        let mut registry = Registry::with_prefix("memory_http");
        registry.register(
            "requests",
            "Requests answered, by method, route and status",
            requests.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time to answer a request, by method and route",
            latency.clone(),
        );
        registry.register(
            "errors",
            "Error responses, by the kind their problem document names",
            errors.clone(),
        );
        registry.register(
            "requests_in_flight",
            "Requests being answered now",
            in_flight.clone(),
        );
        registry.register(
            "mcp_tool_calls",
            "MCP tool calls on /mcp, by tool (a name the server does not offer is `other`) and \
             outcome (`ok`, `error` for a tool error, `refused` for a call not run)",
            tool_calls.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            errors,
            in_flight,
            tool_calls,
        }
    }

    /// Counts one MCP tool call: `tool` from a closed set (the tool names), `outcome` one of
    /// `ok`, `error`, `refused`.
    pub(crate) fn tool_call(&self, tool: &'static str, outcome: &'static str) {
        self.tool_calls
            .get_or_create(&ToolLabels { tool, outcome })
            .inc();
    }

    /// The registry in Prometheus' (OpenMetrics) text format.
    pub(crate) fn render(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// What the outermost middleware needs: where to count, and whether to log.
#[derive(Clone)]
pub(crate) struct Operations {
    pub metrics: Arc<Metrics>,
    pub access_log: bool,
}

/// The bounds on requests admitted, as [`admit`] keeps them.
#[derive(Clone)]
pub(crate) struct Admission {
    pub permits: Arc<Semaphore>,
    pub request_timeout: Duration,
    /// The writes the API takes, as (method, route template): a write past its time goes on,
    /// a read does not.
    pub writes: Arc<HashSet<(Method, String)>>,
    /// The most requests answered at once (the permits' number).
    pub max_concurrent: usize,
}

/// The bounds on a request's body, as [`receive`] keeps them.
#[derive(Clone, Copy)]
pub(crate) struct Receiving {
    pub body_timeout: Duration,
    pub max_body_bytes: usize,
}

/// A request's place among those served at once. It is given back when the request is
/// answered, or, for a write that goes on past its answer (a timeout, a client gone), when the
/// write ends: writes still running count against the limit, so retries of writes stalled on
/// a backend cannot pile up without bound.
#[derive(Clone)]
pub(crate) struct Place(Arc<std::sync::Mutex<Option<OwnedSemaphorePermit>>>);

impl Place {
    /// The place, for a write to hold until it ends.
    pub(crate) fn take(&self) -> Option<OwnedSemaphorePermit> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// Counts a request in the in-flight gauge until dropped, whether it is answered or its client
/// goes away first.
struct InFlight(Gauge);

impl InFlight {
    fn new(gauge: &Gauge) -> InFlight {
        gauge.inc();
        InFlight(gauge.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The outermost middleware: request id, metrics, access log.
pub(crate) async fn operate(
    State(ops): State<Operations>,
    mut request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let request_id = request
        .headers()
        .get(&REQUEST_ID)
        .and_then(|value| value.to_str().ok())
        .filter(|id| (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(
            || memory_core::IdempotencyKey::generate().to_string(),
            str::to_owned,
        );
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        request.headers_mut().insert(REQUEST_ID, value);
    }
    let method = request.method().clone();
    let method_label = method_label(&method);
    let path = request.uri().path().to_owned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());

    let in_flight = InFlight::new(&ops.metrics.in_flight);
    let mut response = next.run(request).await;
    drop(in_flight);

    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    let route = response
        .extensions()
        .get::<MatchedPath>()
        .map_or(route, |m| m.as_str().to_owned());
    ops.metrics
        .requests
        .get_or_create(&RequestLabels {
            method: method_label.to_owned(),
            route: route.clone(),
            status,
        })
        .inc();
    ops.metrics
        .latency
        .get_or_create(&RouteLabels {
            method: method_label.to_owned(),
            route: route.clone(),
        })
        .observe(elapsed.as_secs_f64());
    let kind = response
        .extensions()
        .get::<Answered>()
        .map(|answered| answered.0);
    if let Some(kind) = kind {
        ops.metrics
            .errors
            .get_or_create(&KindLabels {
                kind: kind.to_owned(),
            })
            .inc();
    }
    if ops.access_log {
        let key = response.extensions().get::<KeyName>().map(|k| k.0.clone());
        let line = serde_json::json!({
            "time": memory_core::format_utc(SystemTime::now()),
            "request_id": request_id,
            "method": method.as_str(),
            "path": path,
            "route": route,
            "status": status,
            "duration_ms": elapsed.as_secs_f64() * 1000.0,
            "key": key,
            "kind": kind,
        });
        eprintln!("{line}");
    }
    response
}

/// The body of a request, read whole before the request is admitted ([`admit`]): a client
/// that sends it slowly, or never, holds no place among the requests served at once, and is
/// answered 408 once `body_timeout` has passed (the connection is closed: the rest of its body
/// would be read as the next request). A body over `max_body_bytes` is answered 413.
pub(crate) async fn receive(
    State(limits): State<Receiving>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let read = axum::body::to_bytes(body, limits.max_body_bytes);
    let body = match tokio::time::timeout(limits.body_timeout, read).await {
        Ok(Ok(body)) => body,
        Ok(Err(error)) => {
            let too_large = error
                .into_inner()
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some();
            let problem = if too_large {
                Problem::invalid_with(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "the request body is over the limit of {} bytes (max_body_bytes); nothing was done",
                        limits.max_body_bytes
                    ),
                )
            } else {
                Problem::invalid("the request body was cut off before its end; nothing was done")
            };
            return problem.into_response();
        }
        Err(_) => {
            let mut response = Problem::invalid_with(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive whole within {} ms; nothing was done: send it again, whole",
                    limits.body_timeout.as_millis()
                ),
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
    };
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// A place among the requests served at once, or 503 at once when there is none; then the
/// request timeout.
pub(crate) async fn admit(
    State(admission): State<Admission>,
    mut request: Request,
    next: Next,
) -> Response {
    let Ok(permit) = admission.permits.clone().try_acquire_owned() else {
        return Problem::busy(format!(
            "the server is answering its most requests at once ({}); retry shortly",
            admission.max_concurrent
        ))
        .into_response();
    };
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|route| route.as_str().to_owned());
    let keyed = request.headers().contains_key(IDEMPOTENCY_KEY);
    let place = Place(Arc::new(std::sync::Mutex::new(Some(permit))));
    request.extensions_mut().insert(place.clone());
    let answered = tokio::time::timeout(admission.request_timeout, next.run(request)).await;
    drop(place);
    answered.unwrap_or_else(|_| {
        let writes = route.is_some_and(|route| admission.writes.contains(&(method.clone(), route)));
        timed_out(writes, keyed, admission.request_timeout)
    })
}

/// The method as a metrics label: one of the methods HTTP defines, else `other`. The client
/// picks the method, and a label per made-up one would grow `/metrics` without bound.
fn method_label(method: &Method) -> &'static str {
    static KNOWN: [Method; 9] = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
        Method::CONNECT,
        Method::TRACE,
    ];
    KNOWN
        .iter()
        .find(|known| *known == method)
        .map_or("other", Method::as_str)
}

/// A request past its time: a read wrote nothing (503, retry); a write goes on to its end
/// (see `replay`), so its outcome is unknown to this answer (504, repeat it with the same
/// `Idempotency-Key` to learn it).
fn timed_out(writes: bool, keyed: bool, timeout: Duration) -> Response {
    if !writes {
        return Problem::busy(format!(
            "the request took longer than {} ms; nothing was written, retry later",
            timeout.as_millis()
        ))
        .into_response();
    }
    Problem::new(
        axum::http::StatusCode::GATEWAY_TIMEOUT,
        crate::problem::ProblemKind::Memory(memory_core::ErrorKind::OutcomeUnknown),
        if keyed {
            format!(
                "the write took longer than {} ms to answer and goes on without this reply; repeat it with the same Idempotency-Key to learn whether it landed",
                timeout.as_millis()
            )
        } else {
            format!(
                "the write took longer than {} ms to answer and goes on without this reply; read the document before repeating it (a write sent with an Idempotency-Key can be repeated safely)",
                timeout.as_millis()
            )
        },
    )
    .into_response()
}

/// `Cache-Control: no-store` on every API answer: memory changes under its readers, and a
/// cached answer would be a stale copy.
pub(crate) async fn never_cached(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    response
        .headers_mut()
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}
