//! Load: requests per second at several numbers of concurrent clients, each on its own
//! connection, reads for a fixed time and keyed adds to one document, then the adds looked for.

use std::time::{Duration, Instant};

use memory_core::{DocumentId, MemoryProvider, PersonalityId};
use memory_wiring::Memory;

use super::client::{
    Client, add_body, add_call, expect_ok, expect_tool_ok, mcp_path, prefetch_body, view_call,
};
use super::{PREFETCH_LOAD, PREFETCH_PERSONALITY, SYNC_ADDS};
use crate::backends::BoxError;
use crate::stats::Samples;

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

/// What a load level sends: a read, for [`PREFETCH_LOAD`], or one keyed add, [`SYNC_ADDS`]
/// in all; over `/v1` or over `/mcp`.
#[derive(Debug, Clone, Copy)]
pub enum Call {
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
pub async fn read_load(
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
        latencies.append(&task.await??);
    }
    Ok(level(call.name(), clients, latencies, started.elapsed(), 0))
}

/// [`SYNC_ADDS`] keyed adds (`call`) to one document, split between `clients` clients at
/// once; then every acknowledged add is looked for in the document.
pub async fn add_load(
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
        latencies.append(&samples);
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
