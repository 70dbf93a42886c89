//! The memory service: prefetch and a one-add sync over HTTP (keep-alive) beside the same calls
//! in process, and requests per second at several numbers of concurrent clients. The service
//! (`memory_web::Service`) runs in this process on a loopback port; the load generator is this
//! process too, on the same 2 cores, so the figures include the client's own cost.

// One keep-alive connection to the service, and the bodies and calls it sends.
mod client;
// Requests per second at several numbers of concurrent clients.
mod load;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use memory_core::{
    IdempotencyKey, IfMatch, MemoryProvider, MemoryUpdate, Store, sync_exactly_once,
};
use memory_web::{Access, Service, Settings};
use memory_wiring::{Config, Memory};

use crate::backends::{Backend, BoxError};
use crate::stats::Samples;
use crate::workloads::{ctx, entry, text_of_size};

use client::{
    Client, add_body, add_call, expect_ok, expect_tool_ok, mcp_path, prefetch_body, view_body,
    view_call,
};
use load::{Call, add_load, read_load};

pub use load::Load;

/// What one provider measured over HTTP.
pub struct HttpMeasured {
    /// Prefetch in process (through the wiring, as the service calls it) and over HTTP, in
    /// alternating rounds.
    pub prefetch: (Samples, Samples),
    /// One keyed add in process (`sync_exactly_once`, as the service calls it) and over HTTP.
    pub sync: (Samples, Samples),
    /// Requests per second at each number of clients.
    pub load: Vec<Load>,
    /// `memory_view` over `/mcp` beside `POST /v1/prefetch` without a query (the same reads
    /// and rendering), in alternating rounds: (`/v1`, `/mcp`).
    pub mcp_view: (Samples, Samples),
    /// A keyed `memory_add` over `/mcp` beside a keyed one-add `POST /v1/sync`: (`/v1`,
    /// `/mcp`).
    pub mcp_add: (Samples, Samples),
}

/// The personality the prefetch latency reads; its MEMORY.md has `PREFETCH_BYTES` bytes.
const PREFETCH_PERSONALITY: &str = "http-prefetch";
pub const PREFETCH_BYTES: usize = 1024;

/// How long each prefetch load level runs (a recall personality answers a hundred a second, a
/// markdown one thousands: a time, not a count, bounds every level), and adds in all per sync
/// level.
pub const PREFETCH_LOAD: Duration = Duration::from_secs(2);
pub const SYNC_ADDS: usize = 512;

/// A wiring over `backend`'s storage, as a `memory.toml` would write it.
fn wiring(backend: &Backend, dir: &Path) -> Result<Memory, BoxError> {
    let toml = match backend {
        Backend::Markdown { root } => format!(
            "[providers.p]\nkind = \"markdown\"\nroot = {:?}\n",
            root.join("http")
        ),
        Backend::Postgres { url, schema } => {
            format!("[providers.p]\nkind = \"postgres\"\nurl = {url:?}\nschema = {schema:?}\n")
        }
        Backend::Redis { url, prefix } => {
            format!("[providers.p]\nkind = \"redis\"\nurl = {url:?}\nprefix = {prefix:?}\n")
        }
        Backend::Vector { root, index, .. } => format!(
            "default_provider = \"recall\"\n[providers.files]\nkind = \"markdown\"\nroot = {:?}\n\
             [providers.recall]\nkind = \"vector\"\nsource = \"files\"\nindex_dir = {:?}\n",
            root.join("http"),
            index.join("http")
        ),
    };
    Ok(Memory::new(Config::parse(&toml, &dir.join("memory.toml"))?))
}

/// Measures `backend` over HTTP: latency beside in process, then load at each of `clients`.
pub async fn measure(
    backend: &Backend,
    dir: &Path,
    samples: usize,
    clients: &[usize],
) -> Result<HttpMeasured, BoxError> {
    let memory = wiring(backend, dir)?;
    let service = Service::new(
        Arc::new(memory.clone()),
        &Settings::default(),
        Access::loopback(),
        false,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(service.serve(listener, async {
        let _ = stopped.await;
    }));

    let measured = async {
        let prefetch_ctx = ctx(PREFETCH_PERSONALITY).with_query(crate::workloads::QUERY);
        memory
            .sync(
                &prefetch_ctx,
                &[
                    MemoryUpdate::replace(Store::Memory, text_of_size(PREFETCH_BYTES)),
                    MemoryUpdate::replace(Store::User, "Name: Bench. Prefers short answers."),
                ],
                &IfMatch::NONE,
            )
            .await?;
        let mut client = Client::connect(address).await?;
        let body = prefetch_body(PREFETCH_PERSONALITY);

        // Alternating rounds, so drift in the machine's speed lands on both alike.
        let rounds = 10;
        let per_round = samples.div_ceil(rounds);
        let (mut prefetch_in, mut prefetch_http) = (Samples::default(), Samples::default());
        let (mut sync_in, mut sync_http) = (Samples::default(), Samples::default());
        for _ in 0..per_round {
            memory.prefetch(&prefetch_ctx).await?;
            client.post("/v1/prefetch", body.clone(), None).await?;
        }
        let sync_ctx = ctx("http-sync");
        let mut n = 0;
        for _ in 0..rounds {
            for _ in 0..per_round {
                prefetch_in.time(memory.prefetch(&prefetch_ctx)).await?;
            }
            for _ in 0..per_round {
                let answer = prefetch_http
                    .time(client.post("/v1/prefetch", body.clone(), None))
                    .await?;
                expect_ok(answer, "prefetch")?;
            }
            for _ in 0..per_round {
                n += 1;
                let keyed = sync_ctx
                    .clone()
                    .with_idempotency_key(IdempotencyKey::generate());
                let add = [MemoryUpdate::add(Store::Memory, entry(n))];
                sync_in
                    .time(sync_exactly_once(&memory, &keyed, &add, &IfMatch::NONE))
                    .await?;
            }
            for _ in 0..per_round {
                n += 1;
                let key = IdempotencyKey::generate();
                let answer = sync_http
                    .time(client.post(
                        "/v1/sync",
                        add_body("http-sync", &entry(n)),
                        Some(key.as_str()),
                    ))
                    .await?;
                expect_ok(answer, "sync")?;
            }
        }

        // /mcp beside /v1, call by call: a recall provider indexes after each acknowledged
        // add, and whichever call came second in a batch would wait on the first's indexing.
        let (mut view_v1, mut view_mcp) = (Samples::default(), Samples::default());
        let (mut add_v1, mut add_mcp) = (Samples::default(), Samples::default());
        let (view, path) = (
            view_body(PREFETCH_PERSONALITY),
            mcp_path(PREFETCH_PERSONALITY),
        );
        for _ in 0..rounds * per_round {
            let answer = view_v1
                .time(client.post("/v1/prefetch", view.clone(), None))
                .await?;
            expect_ok(answer, "prefetch")?;
            let answer = view_mcp.time(client.mcp(&path, view_call())).await?;
            expect_tool_ok(answer, "memory_view")?;
            n += 1;
            let key = IdempotencyKey::generate();
            let answer = add_v1
                .time(client.post(
                    "/v1/sync",
                    add_body("http-mcp", &entry(n)),
                    Some(key.as_str()),
                ))
                .await?;
            expect_ok(answer, "sync")?;
            n += 1;
            let key = IdempotencyKey::generate();
            let call = add_call(&entry(n), key.as_str());
            let answer = add_mcp
                .time(client.mcp(&mcp_path("http-mcp"), call))
                .await?;
            expect_tool_ok(answer, "memory_add")?;
        }

        let mut load = Vec::new();
        for (read, add) in [(Call::Prefetch, Call::Sync), (Call::McpView, Call::McpAdd)] {
            for &count in clients {
                load.push(read_load(address, count, read).await?);
                load.push(add_load(address, &memory, count, add).await?);
            }
        }
        Ok::<_, BoxError>(HttpMeasured {
            prefetch: (prefetch_in, prefetch_http),
            sync: (sync_in, sync_http),
            load,
            mcp_view: (view_v1, view_mcp),
            mcp_add: (add_v1, add_mcp),
        })
    }
    .await;
    let _ = stop.send(());
    serving.await??;
    measured
}
