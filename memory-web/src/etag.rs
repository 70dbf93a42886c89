//! A document's version as an HTTP entity tag (RFC 9110): what a response's `ETag` carries and
//! what `If-Match`, `If-None-Match` and a 412 problem compare with. Below both `conditional`
//! (the request headers) and `problem` (the 412's `ETag`), which use it.

use axum::http::HeaderValue;
use memory_core::Version;

/// Whether `token` may stand between an entity tag's quotes (RFC 9110 `etagc`, ASCII).
pub(crate) fn is_etag_token(token: &str) -> bool {
    !token.is_empty()
        && token
            .bytes()
            .all(|b| b == b'!' || (b'#'..=b'~').contains(&b))
}

/// `"<version>"`, or `None` for a version an entity tag cannot carry (no backend makes one:
/// they are hex hashes and counters).
pub(crate) fn etag(version: &Version) -> Option<HeaderValue> {
    let token = version.as_str();
    is_etag_token(token)
        .then(|| HeaderValue::from_str(&format!("\"{token}\"")).ok())
        .flatten()
}
