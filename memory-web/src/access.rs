//! Who may talk to the page: this machine only by default, anyone holding the token otherwise.

use std::net::SocketAddr;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use memory_core::MemoryError;

use crate::api::ApiError;

/// The environment variable `memory serve` reads the token from when `--token` is not given.
pub const TOKEN_ENV: &str = "MEMORY_SERVE_TOKEN";

/// The shortest token accepted: long enough that guessing it over the network is hopeless.
pub const MIN_TOKEN_CHARS: usize = 16;

/// The access rules of one server.
///
/// - Every request must name the host it was bound to as a loopback name (`localhost`,
///   `127.0.0.1`, `[::1]`) when the server is on a loopback address: a web page elsewhere that
///   points its own domain at 127.0.0.1 (DNS rebinding) is refused.
/// - With a token, every API request must carry `Authorization: Bearer <token>`. The page
///   itself (HTML, script, style) holds no memory and is served to anyone who may connect.
#[derive(Clone)]
pub struct Access {
    loopback: bool,
    token: Option<String>,
}

/// Shows whether a token is set, never the token: `Debug` output ends up in logs.
impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("loopback", &self.loopback)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .finish()
    }
}

impl Access {
    /// The rules for a server bound to `address`.
    ///
    /// Memory is personal, so a reachable address needs both `allow_remote` (the operator
    /// meant it) and a token of at least [`MIN_TOKEN_CHARS`] chars (strangers on the network
    /// cannot read or rewrite it). A token given for a loopback address is required too.
    ///
    /// # Errors
    /// [`MemoryError::Config`] saying which of the two is missing, or that the token is short.
    pub fn for_address(
        address: SocketAddr,
        allow_remote: bool,
        token: Option<String>,
    ) -> Result<Access, MemoryError> {
        let loopback = address.ip().is_loopback();
        let refuse = |message: String| Err(MemoryError::Config { message });
        if !loopback && !allow_remote {
            return refuse(format!(
                "{address} is reachable from other machines; pass --allow-remote (with a token) to serve memory there, or bind 127.0.0.1"
            ));
        }
        match &token {
            None if !loopback => {
                return refuse(format!(
                    "serving on {address} needs a token: pass --token or set {TOKEN_ENV}"
                ));
            }
            Some(token) if token.chars().count() < MIN_TOKEN_CHARS => {
                return refuse(format!(
                    "the token is {} chars; use at least {MIN_TOKEN_CHARS} random ones",
                    token.chars().count()
                ));
            }
            _ => {}
        }
        Ok(Access { loopback, token })
    }

    /// The rules of a loopback server without a token: what tests and local use get.
    pub fn loopback() -> Access {
        Access {
            loopback: true,
            token: None,
        }
    }

    fn refusal(&self, request: &Request) -> Option<ApiError> {
        if self.loopback && !names_loopback(request.headers()) {
            return Some(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden-host",
                "this server answers only to localhost, 127.0.0.1 or [::1] in the Host header",
            ));
        }
        let needs_token = request.uri().path().starts_with("/api/");
        match &self.token {
            Some(token) if needs_token && !bearer_is(request.headers(), token) => {
                Some(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    "this server needs its token: send Authorization: Bearer <token>",
                ))
            }
            _ => None,
        }
    }
}

/// The middleware applying [`Access`] to every request.
pub(crate) async fn guard(State(access): State<Access>, request: Request, next: Next) -> Response {
    match access.refusal(&request) {
        Some(refusal) => axum::response::IntoResponse::into_response(refusal),
        None => next.run(request).await,
    }
}

fn names_loopback(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => host.split(':').next().unwrap_or_default(),
    };
    matches!(name, "localhost" | "127.0.0.1" | "::1")
}

fn bearer_is(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .is_some_and(|given| constant_time_eq(given.as_bytes(), token.as_bytes()))
}

/// Compares without stopping at the first difference, so response times do not reveal how
/// much of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn loopback_needs_nothing_and_reachable_addresses_need_flag_and_token() {
        assert!(Access::for_address(address("127.0.0.1:1"), false, None).is_ok());
        assert!(Access::for_address(address("[::1]:1"), false, None).is_ok());
        let open = Access::for_address(address("0.0.0.0:1"), false, Some("x".repeat(20)));
        assert!(open.unwrap_err().to_string().contains("--allow-remote"));
        let tokenless = Access::for_address(address("192.168.1.5:1"), true, None);
        assert!(tokenless.unwrap_err().to_string().contains(TOKEN_ENV));
        let short = Access::for_address(address("0.0.0.0:1"), true, Some("secret".into()));
        assert!(short.unwrap_err().to_string().contains("6 chars"));
        let remote = Access::for_address(address("0.0.0.0:1"), true, Some("x".repeat(16)));
        assert!(!remote.unwrap().loopback);
    }

    #[test]
    fn host_names_are_parsed_with_and_without_ports() {
        for (host, loopback) in [
            ("localhost:8700", true),
            ("127.0.0.1", true),
            ("[::1]:8700", true),
            ("localhost.evil.example", false),
            ("evil.example:8700", false),
            ("127.0.0.1.nip.io", false),
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, host.parse().unwrap());
            assert_eq!(names_loopback(&headers), loopback, "{host}");
        }
        assert!(!names_loopback(&HeaderMap::new()));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
    }
}
