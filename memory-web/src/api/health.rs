//! Health: liveness and each provider's readiness, for load balancers and operators.

use std::time::Duration;

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::settings::Scope;
use crate::state::App;

/// How long a provider has to answer a readiness probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether the service is up, and each provider with it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Health {
    /// `ok` when every provider answers, `degraded` when one does not (the others are
    /// still served).
    status: HealthStatus,
    /// Each configured provider.
    providers: Vec<ProviderHealth>,
}

/// The service's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum HealthStatus {
    /// Every provider answers.
    Ok,
    /// At least one provider does not answer.
    Degraded,
}

/// One provider's readiness.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ProviderHealth {
    /// Its name in the config.
    name: String,
    /// Its kind: `markdown`, `postgres`, `redis` or `vector` (or what a program serving its
    /// own provider calls it).
    kind: String,
    /// Whether it answered a read within 2 s (a vector provider: its source).
    ready: bool,
    /// Why not, when it did not: shown to a key with the `metrics` scope (or on a server
    /// without keys) only, since an error may name hosts and paths.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Reads one document from each provider's storage, all at once; each failure's text when
/// `detailed`.
async fn probe(app: &App, detailed: bool) -> Health {
    let probes = app
        .deployment
        .providers()
        .into_iter()
        .map(|provider| async move {
            let answered =
                tokio::time::timeout(PROBE_TIMEOUT, app.deployment.probe(&provider.name)).await;
            let error = match answered {
                Ok(Ok(_)) => None,
                Ok(Err(err)) => Some(err.to_string()),
                Err(_) => Some(format!("no answer within {} s", PROBE_TIMEOUT.as_secs())),
            };
            ProviderHealth {
                name: provider.name,
                kind: provider.kind,
                ready: error.is_none(),
                error: error.filter(|_| detailed),
            }
        });
    let providers = futures::future::join_all(probes).await;
    let status = if providers.iter().all(|provider| provider.ready) {
        HealthStatus::Ok
    } else {
        HealthStatus::Degraded
    };
    Health { status, providers }
}

/// Liveness: answers 200 while the service runs, with each provider's readiness.
#[utoipa::path(
    get,
    path = "/v1/health",
    tag = "health",
    operation_id = "health",
    responses((status = 200, description = "The service runs; `status` says whether every provider answers", body = Health)),
    security(())
)]
pub(crate) async fn health(State(app): State<App>, caller: Extension<Caller>) -> Json<Health> {
    Json(probe(&app, operator(&caller)).await)
}

/// Whether `caller` may read why a provider is not ready.
fn operator(caller: &Caller) -> bool {
    caller
        .principal()
        .is_some_and(|principal| principal.has(Scope::Metrics))
}

/// Readiness: 200 when every provider answers, 503 (with `Retry-After`) when one does not.
#[utoipa::path(
    get,
    path = "/v1/health/ready",
    tag = "health",
    operation_id = "ready",
    responses(
        (status = 200, description = "Every provider answers", body = Health),
        (status = 503, description = "A provider does not answer", body = Health),
    ),
    security(())
)]
pub(crate) async fn ready(State(app): State<App>, caller: Extension<Caller>) -> Response {
    let health = probe(&app, operator(&caller)).await;
    if health.status == HealthStatus::Ok {
        return Json(health).into_response();
    }
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, Json(health)).into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}
