//! The `/v1` API: the turn cycle, documents by their layout path, history, search, identities,
//! the directory and health, and the OpenAPI document their annotations make. Every handler
//! reads and writes through the deployment's memory, the agent's own path: one home per
//! document, the personality's scope and caps, one write path.

pub(crate) mod directory;
pub(crate) mod documents;
pub(crate) mod health;
pub(crate) mod identities;
pub(crate) mod turn;
mod write_params;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use memory_core::{Caps, Document, DocumentReport, MemoryContext, Store, Surface, Version};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::headers::IDEMPOTENT_REPLAYED;
use crate::openapi::{ApiDoc, finish};
use crate::state::App;

/// The OpenAPI document of the `/v1` API, as `/v1/openapi.json` serves it.
pub fn openapi_json() -> String {
    documented().1.to_pretty_json().unwrap_or_default()
}

/// The `/v1` routes and their finished OpenAPI document.
pub(crate) fn documented() -> (Router<App>, utoipa::openapi::OpenApi) {
    let (api, document) = routes().split_for_parts();
    (api, finish(document))
}

/// Every `/v1` operation, with its OpenAPI annotations.
fn routes() -> OpenApiRouter<App> {
    OpenApiRouter::with_openapi(<ApiDoc as utoipa::OpenApi>::openapi())
        .routes(routes!(turn::prefetch))
        .routes(routes!(turn::sync))
        .routes(routes!(turn::search))
        .merge(documents::routes())
        .routes(routes!(identities::list))
        .routes(routes!(
            identities::resolve,
            identities::link,
            identities::unlink
        ))
        .routes(routes!(directory::personalities))
        .routes(routes!(directory::users))
        .routes(routes!(health::health))
        .routes(routes!(health::ready))
}

/// Where a write comes from, as its revisions record it: `api` unless the caller says it is
/// an agent's tool call, the Memory page or a command line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum WriteSurface {
    /// Code calling the API (the default).
    #[default]
    Api,
    /// An agent's memory tool call.
    Tool,
    /// The Memory page, or another page a person edits in.
    Web,
    /// A command line.
    Cli,
}

impl From<WriteSurface> for Surface {
    fn from(surface: WriteSurface) -> Surface {
        match surface {
            WriteSurface::Api => Surface::Api,
            WriteSurface::Tool => Surface::Tool,
            WriteSurface::Web => Surface::Web,
            WriteSurface::Cli => Surface::Cli,
        }
    }
}

/// The caller's session (a conversation id), recorded in the revisions a write makes: 1 to 256
/// chars, no control characters.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub(crate) struct Session(String);

impl Session {
    /// The longest session, in chars.
    const MAX_CHARS: usize = 256;
}

impl TryFrom<String> for Session {
    type Error = String;

    fn try_from(session: String) -> Result<Self, String> {
        let chars = session.chars().count();
        if chars == 0 || chars > Session::MAX_CHARS || session.chars().any(char::is_control) {
            return Err(format!(
                "session must be 1 to {} chars without control characters",
                Session::MAX_CHARS
            ));
        }
        Ok(Session(session))
    }
}

/// The rule of [`Session`], for the OpenAPI document: `char::is_control` is Unicode's Cc,
/// U+0000 to U+001F and U+007F to U+009F.
impl utoipa::PartialSchema for Session {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .pattern(Some(format!(
                "^[^\\x00-\\x1f\\x7f-\\x9f]{{1,{}}}$",
                Session::MAX_CHARS
            )))
            .description(Some(
                "The caller's session (a conversation id), recorded in the revisions the write makes.",
            ))
            .into()
    }
}

impl utoipa::ToSchema for Session {}

/// Who a write records as its origin: `surface` and `session`.
pub(crate) fn origin(
    ctx: MemoryContext,
    surface: Option<WriteSurface>,
    session: Option<Session>,
) -> MemoryContext {
    let ctx = ctx.with_surface(surface.unwrap_or_default().into());
    match session {
        Some(Session(session)) => ctx.with_session(session),
        None => ctx,
    }
}

/// One document as the API shows it: its text and what guards a write to it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct DocumentView {
    /// Its path in the layout: `MEMORY.md`, `personalities/<id>/MEMORY.md` or
    /// `users/<id>/USER.md`.
    pub path: String,
    /// Which store it is: `memory` or `user`.
    pub store: Store,
    /// Its text; empty when it was never written.
    pub text: String,
    /// Its version: the `ETag`, what `If-Match` and `if_match` take.
    pub version: Version,
    /// Where the provider keeps it: a path or a key.
    pub location: String,
    /// When its text was last written, in milliseconds since the Unix epoch (the provider's
    /// clock); null when never written, or when written at a time before 1970 or past the year
    /// 9999 (a clock set far off, which the text forms show as unknown).
    pub modified: Option<u64>,
}

impl From<Document> for DocumentView {
    fn from(document: Document) -> DocumentView {
        DocumentView {
            path: document.id.relative_path(),
            store: document.id.store(),
            text: document.text,
            version: document.version,
            location: document.location,
            modified: document
                .modified
                .and_then(memory_core::raw::shown_unix_millis),
        }
    }
}

/// One document of a conversation, with the caps the personality writes it under.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct PairDocument {
    #[serde(flatten)]
    pub document: DocumentView,
    /// Its byte caps for this personality: over `soft` a write lands and says so, over `hard`
    /// it is refused.
    pub caps: Caps,
}

/// A response with `ETag` for `version`.
pub(crate) fn with_etag(mut response: Response, version: &Version) -> Response {
    if let Some(etag) = crate::etag::etag(version) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
}

/// One document's write report as a response: its `ETag` is the version after the write, and
/// a report replayed from an earlier call with the same key is marked as a replay.
pub(crate) fn report_response(report: DocumentReport) -> Response {
    let replayed = report.replayed;
    let version = report.version_after.clone();
    let mut response = with_etag(axum::Json(report).into_response(), &version);
    if replayed {
        response
            .headers_mut()
            .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    response
}

/// `Link: <...>; rel="next"` for a page that has more after it, as GitHub paginates.
pub(crate) fn with_next_link(mut response: Response, next: Option<String>) -> Response {
    if let Some(next) = next
        && let Ok(value) = HeaderValue::from_str(&format!("<{next}>; rel=\"next\""))
    {
        response.headers_mut().insert(header::LINK, value);
    }
    response
}

/// Percent-encodes `text` for a query string value.
pub(crate) fn query_value(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Whole numbers as clients send them: JSON Schema's `integer` admits `3.0`, and a query string
/// carries text, so a count or a revision number is taken from an integer, a number without a
/// fraction, or text holding one, from 0 to `i64::MAX` (what the OpenAPI document's `int64`
/// promises).
pub(crate) mod whole {
    use serde::de::{Deserializer, Error, Unexpected, Visitor};

    /// The largest whole number taken.
    const MAX: u64 = i64::MAX as u64;

    /// `text` as a whole number, if it is one in range.
    pub(crate) fn parse(text: &str) -> Option<u64> {
        match text.parse::<u64>() {
            Ok(n) => (n <= MAX).then_some(n),
            Err(_) => text.parse::<f64>().ok().and_then(from_f64),
        }
    }

    fn from_f64(n: f64) -> Option<u64> {
        // 2^63 is the first float past i64::MAX.
        (n.fract() == 0.0 && (0.0..9_223_372_036_854_775_808.0).contains(&n)).then_some(n as u64)
    }

    struct Whole;

    impl Visitor<'_> for Whole {
        type Value = u64;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "a whole number from 0 to {MAX}")
        }

        fn visit_u64<E: Error>(self, n: u64) -> Result<u64, E> {
            if n <= MAX {
                Ok(n)
            } else {
                Err(E::invalid_value(Unexpected::Unsigned(n), &self))
            }
        }

        fn visit_i64<E: Error>(self, n: i64) -> Result<u64, E> {
            u64::try_from(n).map_err(|_| E::invalid_value(Unexpected::Signed(n), &self))
        }

        fn visit_f64<E: Error>(self, n: f64) -> Result<u64, E> {
            from_f64(n).ok_or_else(|| E::invalid_value(Unexpected::Float(n), &self))
        }

        fn visit_str<E: Error>(self, text: &str) -> Result<u64, E> {
            parse(text).ok_or_else(|| E::invalid_value(Unexpected::Str(text), &self))
        }
    }

    /// For `#[serde(deserialize_with)]` on a required field.
    pub(crate) fn required<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        d.deserialize_any(Whole)
    }

    /// For `#[serde(default, deserialize_with)]` on an optional field: `null` is none.
    pub(crate) fn optional<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        d.deserialize_option(Optional)
    }

    struct Optional;

    impl<'de> Visitor<'de> for Optional {
        type Value = Option<u64>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "null or a whole number from 0 to {MAX}")
        }

        fn visit_none<E: Error>(self) -> Result<Option<u64>, E> {
            Ok(None)
        }

        fn visit_unit<E: Error>(self) -> Result<Option<u64>, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<u64>, D::Error> {
            d.deserialize_any(Whole).map(Some)
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn whole_numbers_come_as_integers_floats_or_text() {
            #[derive(serde::Deserialize)]
            struct Holder {
                #[serde(deserialize_with = "required")]
                n: u64,
            }
            let n = |json: &str| serde_json::from_str::<Holder>(json).map(|h| h.n);
            assert_eq!(n(r#"{"n": 3}"#).unwrap(), 3);
            assert_eq!(n(r#"{"n": 3.0}"#).unwrap(), 3);
            assert_eq!(n(r#"{"n": "3"}"#).unwrap(), 3);
            assert_eq!(n(r#"{"n": 9223372036854775807}"#).unwrap(), MAX);
            for bad in ["-1", "3.5", "9223372036854775808", "1e30", "\"x\"", "null"] {
                assert!(n(&format!(r#"{{"n": {bad}}}"#)).is_err(), "{bad}");
            }
            #[derive(serde::Deserialize)]
            struct Maybe {
                #[serde(default, deserialize_with = "optional")]
                n: Option<u64>,
            }
            let maybe = |json: &str| serde_json::from_str::<Maybe>(json).map(|m| m.n);
            assert_eq!(maybe(r#"{"n": null}"#).unwrap(), None);
            assert_eq!(maybe("{}").unwrap(), None);
            assert_eq!(maybe(r#"{"n": 2.0}"#).unwrap(), Some(2));
            assert!(maybe(r#"{"n": -2}"#).is_err());
            assert_eq!(parse("12"), Some(12));
            assert_eq!(parse("12.0"), Some(12));
            assert_eq!(parse("-1"), None);
        }
    }
}

/// The default and largest page of a listing.
pub(crate) const DEFAULT_PAGE: usize = 50;
pub(crate) const MAX_PAGE: usize = 500;
