//! Versions as HTTP entity tags: a document's version is its strong `ETag`, and `If-Match`
//! (RFC 9110) guards a write with it.

use axum::http::{HeaderMap, StatusCode, header};
use memory_core::Version;

use crate::etag::is_etag_token;
use crate::problem::Problem;

/// What an `If-Match` header asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IfMatch {
    /// `*`: any version (an explicit opt-out of the guard).
    Any,
    /// Exactly this version.
    Version(Version),
}

impl IfMatch {
    /// The version it requires, if one.
    pub(crate) fn version(&self) -> Option<Version> {
        match self {
            IfMatch::Any => None,
            IfMatch::Version(version) => Some(version.clone()),
        }
    }
}

/// The `If-Match` header: absent, `*`, or one strong entity tag; a version without its quotes
/// is taken too (clients that copy the `version` field send it so).
///
/// # Errors
/// 400 naming the header for anything else (a weak tag, a list).
pub(crate) fn if_match(headers: &HeaderMap) -> Result<Option<IfMatch>, Problem> {
    let mut values = headers.get_all(header::IF_MATCH).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    let refuse = || {
        Problem::invalid(
            "If-Match takes * or one entity tag, the ETag this API sent (with or without its double quotes): If-Match: \"<version>\"; weak tags (W/) and lists are not taken",
        )
    };
    if values.next().is_some() {
        return Err(refuse());
    }
    let text = value.to_str().map_err(|_| refuse())?.trim();
    if text == "*" {
        return Ok(Some(IfMatch::Any));
    }
    let token = text
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or(text);
    if !is_etag_token(token) {
        return Err(refuse());
    }
    Ok(Some(IfMatch::Version(Version::new(token))))
}

/// `If-Match` where the operation requires one (a replace: one computed from an old read would
/// erase what others wrote since).
///
/// # Errors
/// 428 when it is absent; 400 as [`if_match`] for a malformed one.
pub(crate) fn required_if_match(headers: &HeaderMap) -> Result<IfMatch, Problem> {
    if_match(headers)?.ok_or_else(|| {
        Problem::invalid_with(
            StatusCode::PRECONDITION_REQUIRED,
            "a replace needs If-Match: the ETag of the version it was made from (or * to overwrite whatever is there)",
        )
    })
}

/// Whether `If-None-Match` names `version` (or is `*`): a `GET` then answers `304`.
pub(crate) fn none_match(headers: &HeaderMap, version: &Version) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .any(|tag| {
            tag == "*" || {
                let tag = tag.strip_prefix("W/").unwrap_or(tag);
                tag.strip_prefix('"')
                    .and_then(|rest| rest.strip_suffix('"'))
                    .is_some_and(|token| token == version.as_str())
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etag::etag;

    fn headers(name: header::HeaderName, values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(name.clone(), value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn if_match_takes_star_or_one_strong_tag() {
        let parse = |values: &[&str]| if_match(&headers(header::IF_MATCH, values));
        assert_eq!(parse(&[]).unwrap(), None);
        assert_eq!(parse(&["*"]).unwrap(), Some(IfMatch::Any));
        assert_eq!(
            parse(&["\"3\""]).unwrap(),
            Some(IfMatch::Version(Version::new("3")))
        );
        assert_eq!(
            parse(&["3"]).unwrap(),
            Some(IfMatch::Version(Version::new("3"))),
            "a version without its quotes"
        );
        for bad in [
            &["W/\"3\""][..],
            &["\"3\", \"4\""],
            &["\"\""],
            &["\"1\"", "\"2\""],
            &["a b"],
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.detail.contains("If-Match"), "{bad:?}");
        }
    }

    #[test]
    fn etags_quote_versions_and_none_match_compares_them() {
        let version = Version::new("ab12");
        assert_eq!(etag(&version).unwrap(), "\"ab12\"");
        assert!(etag(&Version::new("has space")).is_none());
        assert!(none_match(
            &headers(header::IF_NONE_MATCH, &["\"x\", W/\"ab12\""]),
            &version
        ));
        assert!(none_match(
            &headers(header::IF_NONE_MATCH, &["*"]),
            &version
        ));
        assert!(!none_match(
            &headers(header::IF_NONE_MATCH, &["\"ab1\""]),
            &version
        ));
    }
}
