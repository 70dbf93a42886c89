//! The headers a write takes, declared once for the OpenAPI document: every write's
//! `Idempotency-Key`, and the `If-Match` of those a document's version guards. The handlers
//! read the headers from the request themselves (`crate::conditional`, `crate::replay`); these
//! types only describe them, so they are never built. `If-Match` holds `*` or an entity tag,
//! quoted or not.
#![allow(dead_code)]

use memory_core::IdempotencyKey;
use utoipa::IntoParams;

/// A write that a repeat with the same key answers from the first response.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub(crate) struct Keyed {
    /// Names this write: a repeat is answered with the first response
    #[param(rename = "Idempotency-Key")]
    idempotency_key: Option<IdempotencyKey>,
}

/// A keyed write that the document's version may guard.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub(crate) struct Guarded {
    /// The ETag the document must still be at, or *
    #[param(rename = "If-Match", pattern = r#"^(\*|"[!#-~]+"|[!#-~]+)$"#)]
    if_match: Option<String>,
    /// Names this write: a repeat is answered with the first response
    #[param(rename = "Idempotency-Key")]
    idempotency_key: Option<IdempotencyKey>,
}

/// A keyed write of a whole new text, which must name the version it was made from.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub(crate) struct Replacing {
    /// The ETag of the version the new text was made from, or *
    #[param(rename = "If-Match", pattern = r#"^(\*|"[!#-~]+"|[!#-~]+)$"#)]
    if_match: String,
    /// Names this write: a repeat is answered with the first response
    #[param(rename = "Idempotency-Key")]
    idempotency_key: Option<IdempotencyKey>,
}
