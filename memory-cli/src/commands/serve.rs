//! `memory serve`: the memory service (the HTTP API, /metrics and the Memory page) on one
//! address until SIGTERM or Ctrl-C, then the writes in flight finished.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use memory_wiring::Memory;

use super::settle;
use crate::failure::Failure;

/// Serve the memory service: the HTTP API under /v1 (its OpenAPI document at
/// /v1/openapi.json), /metrics, and the Memory page at /.
///
/// Binds 127.0.0.1 unless told otherwise; without API keys it then serves this machine
/// only. Any other address refuses to start without keys: configure them under
/// [serve.keys] in memory.toml (memory key new prints a line), or pass --token for one
/// admin key. SIGTERM or Ctrl-C stops accepting, lets requests in flight and writes
/// finish, then exits.
///
/// Example: memory serve --port 8700
#[derive(clap::Args)]
pub struct ServeArgs {
    /// The port; 0 picks a free one.
    #[arg(long, default_value_t = 8700)]
    port: u16,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Accepted for older scripts and ignored: keys decide who may call a reachable
    /// address.
    #[arg(long, hide = true)]
    allow_remote: bool,
    /// One admin API key (at least 16 chars), besides those of [serve.keys]; prefer the
    /// environment variable, which other users cannot see in the process list.
    #[arg(long, env = memory_web::TOKEN_ENV, hide_env_values = true)]
    token: Option<String>,
    /// Write one JSON line per request on stderr (time, request id, method, path, route,
    /// status, duration, key name, error kind).
    #[arg(long)]
    access_log: bool,
}

/// `memory serve`: `memory` served with `settings` (the config's `[serve]`) until a stop
/// signal; prints the page's URL on stdout, the rest on stderr.
pub async fn run(
    memory: Memory,
    settings: &memory_web::Settings,
    args: ServeArgs,
) -> Result<(), Failure> {
    let ServeArgs {
        port,
        bind,
        allow_remote: _,
        token,
        access_log,
    } = args;
    // An empty MEMORY_SERVE_TOKEN is no token, as an unset one.
    let token = token.filter(|token| !token.is_empty());
    let address = SocketAddr::new(bind, port);
    let access = memory_web::Access::new(address, settings, token.as_deref())?;
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|err| Failure::other(format!("cannot listen on {address}: {err}")))?;
    let local = listener
        .local_addr()
        .map_err(|err| Failure::other(format!("cannot tell the address listened on: {err}")))?;
    // Tests and scripts read this one line to find the port, and may close stdout after it:
    // the rest goes to stderr.
    println!("Memory page: http://{local}/");
    eprintln!("API: http://{local}/v1 (OpenAPI document: http://{local}/v1/openapi.json)");
    if access.has_keys() {
        eprintln!(
            "The API needs a key (Authorization: Bearer <key>); the page asks for it once, or open it with #token=<key> appended."
        );
    }
    let service = memory_web::Service::new(Arc::new(memory.clone()), settings, access, access_log);
    service
        .serve(listener, stop_signal())
        .await
        .map_err(|err| Failure::other(format!("the memory service stopped: {err}")))?;
    settle(&memory).await;
    Ok(())
}

/// Completes on Ctrl-C or SIGTERM (what service managers and containers send to stop).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
