//! The Memory page: one small page and a JSON API to read and fix what an agent remembers,
//! served by `memory serve`.
//!
//! The page is a view of the documents the agent reads, never a copy: it reads each document
//! from its home (as [`Memory`]'s `read` does) and saves through [`Memory`]'s `sync`, the
//! agent's own write path (routing, scope, caps), as a `replace` guarded by the version the
//! editor loaded. A save over
//! a newer version is refused with HTTP 409, never applied.
//!
//! Endpoints (JSON in and out; errors are `{"error": <message>, "kind": <kind>}`):
//! - `GET /api/directory`: the personalities and users the memory knows.
//! - `GET /api/pair?personality=<id>&user=<id>[&query=<text>]`: both documents of that
//!   conversation (text, version, location, last modified, caps), the rendered prefetch and its
//!   warnings (a recall index still catching up).
//! - `PUT /api/document`: `{"personality", "user", "store": "memory"|"user", "text",
//!   "version"}` saves one document if it is still at `version`.
//! - `GET /api/history?path=<layout path>[&limit=N]`: one document's kept revisions, newest
//!   first (20 unless `limit` says otherwise, at most 100), each with its unified diff.
//! - `POST /api/revert`: `{"personality", "user", "store", "number", "version"}` puts one
//!   document back to revision `number`'s text if it is still at `version`: a guarded
//!   `replace`, itself a revision.
//!
//! Every write the page makes is recorded with the surface `web` in the document's history.
//!
//! Nothing else is served but the embedded page (`/`, `/app.js`, `/style.css`): the one path an
//! endpoint takes names a document in the layout (`users/<id>/USER.md`, ...), never a file, so
//! nothing outside the configured documents can be read or written.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use memory_web::Access;
//! use memory_wiring::{Config, Memory};
//!
//! let memory = Memory::new(Config::load(None)?);
//! let address: std::net::SocketAddr = "127.0.0.1:8700".parse()?;
//! let access = Access::for_address(address, false, None)?;
//! let listener = tokio::net::TcpListener::bind(address).await?;
//! memory_web::serve(listener, memory, access, std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```

mod access;
mod api;

use std::future::Future;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use memory_wiring::Memory;

pub use access::{Access, MIN_TOKEN_CHARS, TOKEN_ENV};

/// The largest request body accepted, in bytes: far above any sensible document (hard caps
/// are a few KiB), small enough that no request can exhaust memory.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The page and its API over `memory`, guarded by `access`.
pub fn router(memory: Memory, access: Access) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/app.js", get(script))
        .route("/style.css", get(style))
        .nest("/api", api::routes(memory))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(access, access::guard))
}

/// Serves [`router`] on `listener` until `shutdown` completes.
///
/// # Errors
/// Whatever accepting connections fails with.
pub async fn serve(
    listener: tokio::net::TcpListener,
    memory: Memory,
    access: Access,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(memory, access))
        .with_graceful_shutdown(shutdown)
        .await
}

/// Only our own files, only from this origin: nothing the page shows can run code.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

async fn index() -> Response {
    let mut response = asset(
        "text/html; charset=utf-8",
        include_str!("../assets/index.html"),
    );
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    response
}

async fn script() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/app.js"),
    )
}

async fn style() -> Response {
    asset(
        "text/css; charset=utf-8",
        include_str!("../assets/style.css"),
    )
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}
