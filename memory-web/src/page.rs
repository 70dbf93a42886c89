//! The Memory page: one small page, its script and style, compiled into the binary. It holds
//! no memory (it calls `/v1` like any client), so it is served to anyone who may connect.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::state::App;

/// Only our own files, only from this origin: nothing the page shows can run code.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

pub(crate) fn routes() -> Router<App> {
    Router::new()
        .route("/", get(index))
        .route("/app.js", get(script))
        .route("/style.css", get(style))
}

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
