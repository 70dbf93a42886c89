//! The service's own HTTP headers, beside the standard ones.

use axum::http::HeaderName;

/// The request header naming a write: its repeats are answered with the first response.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// The response header marking a replay of a keyed write's first response.
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// The request id header: taken from the request when it carries a sensible one, else made
/// here; sent back on the response and written in the access log.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
