//! What a request carries, read and checked before a handler runs: a JSON body in UTF-8, a
//! query string with only the parameters its operation takes, path parameters, page sizes.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::problem::Problem;

/// A JSON body, refused as a problem document when it is not the JSON the operation takes.
pub(crate) struct Body<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = Problem;

    async fn from_request(request: Request, state: &S) -> Result<Self, Problem> {
        utf8_charset(request.headers())?;
        let axum::Json(value) = axum::Json::<T>::from_request(request, state)
            .await
            .map_err(|rejection: JsonRejection| Problem::from_json(rejection))?;
        Ok(Body(value))
    }
}

/// Refuses a `Content-Type` whose `charset` parameter names anything but UTF-8 (415, naming
/// it): JSON is UTF-8 (RFC 8259), and a body sent as UTF-16 or Latin-1 would otherwise be read
/// as UTF-8, garbled or refused for the wrong reason. No charset, or `utf-8` in any case, is
/// taken; whether the type is JSON at all is the JSON extractor's to say.
pub(crate) fn utf8_charset(headers: &HeaderMap) -> Result<(), Problem> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let Ok(value) = value.to_str() else {
        // Not text: the JSON extractor refuses it as not JSON.
        return Ok(());
    };
    for parameter in value.split(';').skip(1) {
        let Some((name, charset)) = parameter.split_once('=') else {
            continue;
        };
        if !name.trim().eq_ignore_ascii_case("charset") {
            continue;
        }
        let charset = charset.trim();
        let charset = charset
            .strip_prefix('"')
            .and_then(|rest| rest.strip_suffix('"'))
            .unwrap_or(charset);
        if !charset.eq_ignore_ascii_case("utf-8") {
            return Err(Problem::invalid_with(
                axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "the body's charset is {charset:?}: send JSON in UTF-8 (Content-Type: application/json, or application/json; charset=utf-8)"
                ),
            ));
        }
    }
    Ok(())
}

/// A query string, refused as a problem document when it is not what the operation takes (an
/// unknown, repeated or mistyped parameter).
pub(crate) struct Params<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Problem> {
        let axum::extract::Query(value) =
            axum::extract::Query::<T>::from_request_parts(parts, state)
                .await
                .map_err(|rejection: QueryRejection| Problem::from_query(rejection))?;
        Ok(Params(value))
    }
}

/// The value of the path parameter `name`, percent-decoded.
pub(crate) async fn path_param(parts: &mut Parts, name: &str) -> Result<Option<String>, Problem> {
    let params = axum::extract::RawPathParams::from_request_parts(parts, &())
        .await
        .map_err(|rejection| Problem::invalid(rejection.body_text()))?;
    Ok(params
        .iter()
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned()))
}

/// A page size as asked for, checked.
pub(crate) fn page_size(limit: Option<u64>, default: usize, max: usize) -> Result<usize, Problem> {
    match limit.map(|limit| usize::try_from(limit).unwrap_or(usize::MAX)) {
        None => Ok(default),
        Some(limit) if (1..=max).contains(&limit) => Ok(limit),
        Some(_) => Err(Problem::invalid(format!("limit must be 1 to {max}"))),
    }
}

/// The headers of a request, for handlers that read `If-Match` or `Idempotency-Key`.
pub(crate) type Headers = HeaderMap;

/// The query parameters each operation of the OpenAPI document takes, by (method, route
/// template): a parameter it does not take, or a query that is not UTF-8, is refused before
/// the handler runs, whether or not the handler reads a query.
pub(crate) type QueryParameters =
    std::collections::HashMap<(axum::http::Method, String), Vec<String>>;

/// The middleware applying [`QueryParameters`] to the routes of the API.
pub(crate) async fn known_query(
    axum::extract::State(known): axum::extract::State<std::sync::Arc<QueryParameters>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let (Some(query), Some(route)) = (
        request.uri().query(),
        request.extensions().get::<axum::extract::MatchedPath>(),
    ) && let Some(taken) = known.get(&(request.method().clone(), route.as_str().to_owned()))
        && let Err(problem) = check_query(query, taken)
    {
        return problem.into_response();
    }
    next.run(request).await
}

fn check_query(query: &str, taken: &[String]) -> Result<(), Problem> {
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = percent_decoded(name).ok_or_else(|| {
            Problem::invalid("a query parameter's name is not percent-encoded UTF-8")
        })?;
        if percent_decoded(value).is_none() {
            return Err(Problem::invalid(format!(
                "query parameter {name:?} is not percent-encoded UTF-8"
            )));
        }
        if !taken.contains(&name) {
            let takes = match taken {
                [] => "none".to_owned(),
                taken => taken.join(", "),
            };
            return Err(Problem::invalid(format!(
                "unknown query parameter {name:?}: this operation takes {takes}"
            )));
        }
    }
    Ok(())
}

/// `text` percent-decoded (and `+` as a space, as forms write it), if that is UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = text.get(i + 1..i + 3)?;
                decoded.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                decoded.push(b' ');
                i += 1;
            }
            byte => {
                decoded.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod query_tests {
    use super::*;

    #[test]
    fn queries_name_only_what_the_operation_takes_in_utf8() {
        let taken = ["limit".to_owned(), "after".to_owned()];
        assert!(check_query("limit=2&after=b%C3%A9a", &taken).is_ok());
        assert!(check_query("", &taken).is_ok());
        let unknown = check_query("limit=2&page=3", &taken).unwrap_err();
        assert!(unknown.detail.contains("\"page\""), "{}", unknown.detail);
        assert!(
            unknown.detail.contains("limit, after"),
            "{}",
            unknown.detail
        );
        let none = check_query("x=1", &[]).unwrap_err();
        assert!(none.detail.contains("takes none"), "{}", none.detail);
        for bad in ["after=%FF", "after=%E9", "after=%G1", "after=%"] {
            assert!(check_query(bad, &taken).is_err(), "{bad}");
        }
        assert_eq!(percent_decoded("a+b%20c").as_deref(), Some("a b c"));
    }
}
