//! The memory service: prefetch and a one-add sync over HTTP (keep-alive) beside the same calls
//! in process, and requests per second at several numbers of concurrent clients. The service
//! (`memory_web::Service`) runs in this process on a loopback port; the load generator is this
//! process too, on the same 2 cores, so the figures include the client's own cost.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use memory_core::{
    DocumentId, IdempotencyKey, IfMatch, MemoryProvider, MemoryUpdate, PersonalityId, Store,
    sync_exactly_once,
};
use memory_web::{Access, Service, Settings};
use memory_wiring::{Config, Memory};
use serde_json::json;

use crate::backends::{Backend, BoxError};
use crate::stats::Samples;
use crate::workloads::{ctx, entry, text_of_size};

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

/// One level of load.
pub struct Load {
    /// `prefetch`, `sync`, `mcp memory_view` or `mcp memory_add`.
    pub operation: &'static str,
    /// Concurrent clients, each on its own keep-alive connection.
    pub clients: usize,
    /// Requests answered 200.
    pub requests: usize,
    /// Requests per second over the level.
    pub per_second: f64,
    /// Latency of each request.
    pub latencies: Samples,
    /// Acknowledged adds missing from the document afterwards (sync only).
    pub lost: usize,
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

/// One keep-alive connection to the service.
struct Client {
    sender: SendRequest<Full<Bytes>>,
    host: String,
}

impl Client {
    async fn connect(address: std::net::SocketAddr) -> Result<Client, BoxError> {
        let stream = tokio::net::TcpStream::connect(address).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        Ok(Client {
            sender,
            host: address.to_string(),
        })
    }

    /// POSTs `body` (JSON) to `path`, with `key` as its `Idempotency-Key`; the status and
    /// the body.
    async fn post(
        &mut self,
        path: &str,
        body: Bytes,
        key: Option<&str>,
    ) -> Result<(u16, Bytes), BoxError> {
        match key {
            Some(key) => {
                self.post_with(path, body, &[("idempotency-key", key)])
                    .await
            }
            None => self.post_with(path, body, &[]).await,
        }
    }

    /// One JSON-RPC message to `/mcp` at `path`; the status and the body.
    async fn mcp(&mut self, path: &str, message: Bytes) -> Result<(u16, Bytes), BoxError> {
        let accept = [("accept", "application/json, text/event-stream")];
        self.post_with(path, message, &accept).await
    }

    async fn post_with(
        &mut self,
        path: &str,
        body: Bytes,
        headers: &[(&str, &str)],
    ) -> Result<(u16, Bytes), BoxError> {
        let mut request = hyper::Request::post(path)
            .header("host", &self.host)
            .header("content-type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.sender.ready().await?;
        let response = self
            .sender
            .send_request(request.body(Full::new(body))?)
            .await?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }
}

fn prefetch_body(personality: &str) -> Bytes {
    Bytes::from(
        json!({"personality": personality, "user": "bench", "query": crate::workloads::QUERY, "max_chars": 1 << 20})
            .to_string(),
    )
}

/// Prefetch as `memory_view` renders it: no query.
fn view_body(personality: &str) -> Bytes {
    Bytes::from(json!({"personality": personality, "user": "bench"}).to_string())
}

/// The `/mcp` path of `personality`'s memory for the bench's user.
fn mcp_path(personality: &str) -> String {
    format!("/mcp/{personality}/bench")
}

/// A `tools/call` of `memory_view`.
fn view_call() -> Bytes {
    Bytes::from(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "memory_view", "arguments": {}}})
        .to_string(),
    )
}

/// A `tools/call` of `memory_add` of `content` to MEMORY.md, keyed by `key` in `_meta`.
fn add_call(content: &str, key: &str) -> Bytes {
    Bytes::from(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "memory_add",
                          "arguments": {"file": "MEMORY.md", "entry": content},
                          "_meta": {(memory_web::MCP_IDEMPOTENCY_META): key}}})
        .to_string(),
    )
}

/// Whether a `/mcp` answer is a tool result that is not an error.
fn expect_tool_ok((status, body): (u16, Bytes), what: &str) -> Result<(), BoxError> {
    let reply: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    if status == 200 && reply["result"]["isError"] == false {
        Ok(())
    } else {
        Err(format!(
            "{what} over /mcp answered {status}: {}",
            String::from_utf8_lossy(&body)
        )
        .into())
    }
}

fn add_body(personality: &str, content: &str) -> Bytes {
    Bytes::from(
        json!({"personality": personality, "user": "bench",
               "updates": [{"action": "add", "store": "memory", "content": content}]})
        .to_string(),
    )
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

fn expect_ok((status, body): (u16, Bytes), what: &str) -> Result<(), BoxError> {
    if status == 200 {
        Ok(())
    } else {
        Err(format!(
            "{what} over HTTP answered {status}: {}",
            String::from_utf8_lossy(&body)
        )
        .into())
    }
}

/// What a load level sends: a read, for [`PREFETCH_LOAD`], or one keyed add, [`SYNC_ADDS`]
/// in all; over `/v1` or over `/mcp`.
#[derive(Debug, Clone, Copy)]
enum Call {
    Prefetch,
    Sync,
    McpView,
    McpAdd,
}

impl Call {
    fn name(self) -> &'static str {
        match self {
            Call::Prefetch => "prefetch",
            Call::Sync => "sync",
            Call::McpView => "mcp memory_view",
            Call::McpAdd => "mcp memory_add",
        }
    }

    /// Sends it once on `client`: a read of the prefetch personality's memory, or an add of
    /// `content` to `personality`'s, keyed by `key`; an error unless it succeeded.
    async fn send(
        self,
        client: &mut Client,
        personality: &str,
        content: &str,
        key: &str,
    ) -> Result<(), BoxError> {
        match self {
            Call::Prefetch => expect_ok(
                client
                    .post("/v1/prefetch", prefetch_body(PREFETCH_PERSONALITY), None)
                    .await?,
                "prefetch",
            ),
            Call::Sync => expect_ok(
                client
                    .post("/v1/sync", add_body(personality, content), Some(key))
                    .await?,
                "sync",
            ),
            Call::McpView => expect_tool_ok(
                client
                    .mcp(&mcp_path(PREFETCH_PERSONALITY), view_call())
                    .await?,
                "memory_view",
            ),
            Call::McpAdd => expect_tool_ok(
                client
                    .mcp(&mcp_path(personality), add_call(content, key))
                    .await?,
                "memory_add",
            ),
        }
    }
}

/// `clients` clients sending `call` (a read) for [`PREFETCH_LOAD`], all at once.
async fn read_load(
    address: std::net::SocketAddr,
    clients: usize,
    call: Call,
) -> Result<Load, BoxError> {
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            tokio::spawn(async move {
                let mut client = Client::connect(address).await?;
                let mut latencies = Samples::default();
                while started.elapsed() < PREFETCH_LOAD {
                    latencies.time(call.send(&mut client, "", "", "")).await?;
                }
                Ok::<_, BoxError>(latencies)
            })
        })
        .collect();
    let mut latencies = Samples::default();
    for task in tasks {
        for sample in task.await??.samples() {
            latencies.push(*sample);
        }
    }
    Ok(level(call.name(), clients, latencies, started.elapsed(), 0))
}

/// [`SYNC_ADDS`] keyed adds (`call`) to one document, split between `clients` clients at
/// once; then every acknowledged add is looked for in the document.
async fn add_load(
    address: std::net::SocketAddr,
    memory: &Memory,
    clients: usize,
    call: Call,
) -> Result<Load, BoxError> {
    let personality = format!("load-{}-{clients}", call.name().replace(' ', "-"));
    let started = Instant::now();
    let per_client = SYNC_ADDS.div_ceil(clients);
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let personality = personality.clone();
            tokio::spawn(async move {
                let mut connection = Client::connect(address).await?;
                let mut latencies = Samples::default();
                let mut acknowledged = Vec::new();
                for n in 0..per_client {
                    let content = format!("client {client} add {n}");
                    let key = format!("{personality}-{client}-{n}");
                    latencies
                        .time(call.send(&mut connection, &personality, &content, &key))
                        .await?;
                    acknowledged.push(content);
                }
                Ok::<_, BoxError>((latencies, acknowledged))
            })
        })
        .collect();
    let mut latencies = Samples::default();
    let mut acknowledged = Vec::new();
    for task in tasks {
        let (samples, adds) = task.await??;
        for sample in samples.samples() {
            latencies.push(*sample);
        }
        acknowledged.extend(adds);
    }
    let elapsed = started.elapsed();
    let lost = missing(memory, &personality, &acknowledged).await?;
    Ok(level(call.name(), clients, latencies, elapsed, lost))
}

/// How many of `acknowledged` are not lines of `personality`'s MEMORY.md.
async fn missing(
    memory: &Memory,
    personality: &str,
    acknowledged: &[String],
) -> Result<usize, BoxError> {
    let document = DocumentId::PersonalityMemory {
        personality: PersonalityId::new(personality)?,
    };
    let text = memory.read(&document).await?.text;
    let present: std::collections::HashSet<&str> = text.lines().collect();
    Ok(acknowledged
        .iter()
        .filter(|add| !present.contains(add.as_str()))
        .count())
}

fn level(
    operation: &'static str,
    clients: usize,
    latencies: Samples,
    elapsed: Duration,
    lost: usize,
) -> Load {
    let requests = latencies.samples().len();
    Load {
        operation,
        clients,
        requests,
        per_second: requests as f64 / elapsed.as_secs_f64(),
        latencies,
        lost,
    }
}
