//! Errors as RFC 9457 problem documents (`application/problem+json`), each carrying its kind
//! from the one classification ([`memory_core::ErrorKind`]), or one of the few kinds only HTTP
//! has (no key, a key without the scope, no such route).

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use memory_core::{ErrorKind, MemoryError, Version};
use serde::Serialize;
use utoipa::ToSchema;

/// The media type of every error body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// Seconds a client is told to wait before retrying a busy or unavailable call.
const RETRY_AFTER_SECONDS: &str = "1";

/// What kind of failure a problem is: a memory error's [`ErrorKind`], or one only HTTP has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    /// A memory error, classified as everywhere else.
    Memory(ErrorKind),
    /// No valid API key was sent where one is needed (401).
    Unauthorized,
    /// The key lacks the scope, or may not touch that user or personality (403); also a
    /// request naming a host other than this machine to a server without keys.
    Forbidden,
    /// No such route, or no such identity link (404).
    NotFound,
    /// The route does not take that method (405).
    MethodNotAllowed,
}

impl ProblemKind {
    /// The stable name clients match on: `invalid-input`, `precondition-failed`, ...,
    /// `unauthorized`, `forbidden`, `not-found`, `method-not-allowed`.
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::Memory(kind) => kind.name(),
            ProblemKind::Unauthorized => "unauthorized",
            ProblemKind::Forbidden => "forbidden",
            ProblemKind::NotFound => "not-found",
            ProblemKind::MethodNotAllowed => "method-not-allowed",
        }
    }

    fn title(self) -> &'static str {
        match self {
            ProblemKind::Memory(kind) => match kind {
                ErrorKind::InvalidInput => "The request is invalid",
                ErrorKind::Refused => "Refused as memory stands",
                ErrorKind::PreconditionFailed => "The document changed since that version",
                ErrorKind::Conflict => "Conflict with what is stored",
                ErrorKind::Busy => "Busy: retry later",
                ErrorKind::Unavailable => "Unavailable: retry later",
                ErrorKind::OutcomeUnknown => "The write may or may not have landed",
                ErrorKind::PartiallyApplied => "Part of the call landed",
                ErrorKind::Corrupt => "Stored data is corrupt",
                ErrorKind::Config => "The server is misconfigured",
                _ => "Error",
            },
            ProblemKind::Unauthorized => "A valid API key is required",
            ProblemKind::Forbidden => "Forbidden",
            ProblemKind::NotFound => "Not found",
            ProblemKind::MethodNotAllowed => "Method not allowed",
        }
    }

    /// Every kind's name, for the OpenAPI document.
    pub(crate) fn all_names() -> Vec<&'static str> {
        ErrorKind::ALL
            .into_iter()
            .map(ProblemKind::Memory)
            .chain([
                ProblemKind::Unauthorized,
                ProblemKind::Forbidden,
                ProblemKind::NotFound,
                ProblemKind::MethodNotAllowed,
            ])
            .map(ProblemKind::name)
            .collect()
    }
}

/// An error response: an RFC 9457 problem document and the headers that go with it.
#[derive(Debug, Clone)]
pub struct Problem(Box<ProblemDocument>);

impl std::ops::Deref for Problem {
    type Target = ProblemDocument;

    fn deref(&self) -> &ProblemDocument {
        &self.0
    }
}

/// An RFC 9457 problem document: what went wrong, in words for people (`detail`) and as a
/// `kind` for code.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Problem)]
pub struct ProblemDocument {
    /// `urn:agent-memory:problem:<kind>`.
    #[serde(rename = "type")]
    pub type_uri: String,
    /// A short summary of the kind.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong and what to do, naming the document, update or field.
    pub detail: String,
    /// The kind: one of the classification's (`invalid-input`, `refused`,
    /// `precondition-failed`, `conflict`, `busy`, `unavailable`, `outcome-unknown`,
    /// `partially-applied`, `corrupt`, `config`) or `unauthorized`, `forbidden`,
    /// `not-found`, `method-not-allowed`.
    pub kind: String,
    /// Which error this is within its kind, stable for code to match on: a memory error's
    /// code (`no-match`, `ambiguous-match`, `hard-cap-exceeded`, `stale-version`,
    /// `identity-taken`, `key-reused`, ...), also `key-reused` for an `Idempotency-Key` sent
    /// with another request. Absent for problems only HTTP has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Whether sending the same request again later can succeed (busy, unavailable); an
    /// `outcome-unknown` write may be repeated only with the same `Idempotency-Key`.
    pub retryable: bool,
    /// For `precondition-failed` and `hard-cap-exceeded`: the document's layout path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
    /// For `precondition-failed`: the document's version now (also its `ETag`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_version: Option<Version>,
    /// For `hard-cap-exceeded`: the UTF-8 bytes the document would have had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<usize>,
    /// For `hard-cap-exceeded`: the hard cap it would have gone over, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hard_cap: Option<usize>,
    #[serde(skip)]
    #[schema(ignore)]
    headers: Vec<(HeaderName, HeaderValue)>,
}

/// The kind of the problem a response carries, for metrics and the access log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Answered(pub &'static str);

impl Problem {
    /// A problem of `kind` with `status` and `detail`.
    pub fn new(status: StatusCode, kind: ProblemKind, detail: impl Into<String>) -> Problem {
        let mut problem = ProblemDocument {
            type_uri: format!("urn:agent-memory:problem:{}", kind.name()),
            title: kind.title().to_owned(),
            status: status.as_u16(),
            detail: detail.into(),
            kind: kind.name().to_owned(),
            code: None,
            retryable: false,
            document: None,
            current_version: None,
            bytes: None,
            hard_cap: None,
            headers: Vec::new(),
        };
        if let ProblemKind::Memory(kind) = kind
            && kind.retry_can_help()
        {
            problem.retryable = true;
            problem.headers.push((
                header::RETRY_AFTER,
                HeaderValue::from_static(RETRY_AFTER_SECONDS),
            ));
        }
        if kind == ProblemKind::Unauthorized {
            problem.headers.push((
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"memory\""),
            ));
        }
        Problem(Box::new(problem))
    }

    /// This problem with `code` (see [`ProblemDocument::code`]).
    pub fn with_code(mut self, code: &str) -> Problem {
        self.0.code = Some(code.to_owned());
        self
    }

    /// A request that is malformed whatever memory holds (400, `invalid-input`).
    pub fn invalid(detail: impl Into<String>) -> Problem {
        Problem::new(
            StatusCode::BAD_REQUEST,
            ProblemKind::Memory(ErrorKind::InvalidInput),
            detail,
        )
    }

    /// Bad input with a status of its own (408 a body not sent in time, 413 too large, 415 not
    /// JSON, 422 wrong shape, 428 a precondition required): still `invalid-input`.
    pub fn invalid_with(status: StatusCode, detail: impl Into<String>) -> Problem {
        Problem::new(status, ProblemKind::Memory(ErrorKind::InvalidInput), detail)
    }

    /// 404 `not-found`.
    pub fn not_found(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::NOT_FOUND, ProblemKind::NotFound, detail)
    }

    /// 403 `forbidden`.
    pub fn forbidden(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::FORBIDDEN, ProblemKind::Forbidden, detail)
    }

    /// 503 `busy` with `Retry-After`: the server is at its limit, or the request ran out of
    /// time before anything was written.
    pub fn busy(detail: impl Into<String>) -> Problem {
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ProblemKind::Memory(ErrorKind::Busy),
            detail,
        )
    }

    /// A body that is not the JSON the operation takes: 400 malformed, 415 not JSON, 413 too
    /// large, 422 the wrong shape (a missing, unknown or mistyped field).
    pub fn from_json(rejection: JsonRejection) -> Problem {
        let status = match &rejection {
            JsonRejection::JsonSyntaxError(_) => StatusCode::BAD_REQUEST,
            other => other.status(),
        };
        // serde's words for the field at fault, without the framework's preamble.
        let text = rejection.body_text();
        let detail =
            match text.strip_prefix("Failed to deserialize the JSON body into the target type: ") {
                Some(fault) => format!("the body is not what this operation takes: {fault}"),
                None => text,
            };
        Problem::invalid_with(status, detail)
    }

    /// A query string that is not what the operation takes (an unknown, duplicate or mistyped
    /// parameter).
    pub fn from_query(rejection: QueryRejection) -> Problem {
        Problem::invalid(rejection.body_text())
    }
}

impl From<MemoryError> for Problem {
    fn from(err: MemoryError) -> Problem {
        let kind = err.kind();
        let status =
            StatusCode::from_u16(kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        // A revision that is not kept, or a note that does not exist, is a resource that is not
        // there, as for a GET of it.
        if let MemoryError::RevisionNotFound { .. } | MemoryError::NoteNotFound { .. } = &err {
            return Problem::not_found(err.to_string()).with_code(err.code());
        }
        let mut problem =
            Problem::new(status, ProblemKind::Memory(kind), err.to_string()).with_code(err.code());
        if let MemoryError::Conflict {
            document, current, ..
        } = &err
        {
            let body = &mut problem.0;
            body.document = Some(document.relative_path());
            body.current_version = Some(current.clone());
            if let Some(etag) = crate::etag::etag(current) {
                body.headers.push((header::ETAG, etag));
            }
        }
        if let MemoryError::HardCapExceeded {
            document,
            bytes,
            hard_cap,
        } = &err
        {
            let body = &mut problem.0;
            body.document = Some(document.relative_path());
            body.bytes = Some(*bytes);
            body.hard_cap = Some(*hard_cap);
        }
        problem
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let problem = *self.0;
        let status =
            StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let kind = ProblemKind::all_names()
            .into_iter()
            .find(|name| *name == problem.kind)
            .unwrap_or("unknown");
        let mut response = (
            status,
            [(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON))],
            body,
        )
            .into_response();
        for (name, value) in problem.headers {
            response.headers_mut().append(name, value);
        }
        response.extensions_mut().insert(Answered(kind));
        response
    }
}
