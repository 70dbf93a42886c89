//! `/mcp` on `memory serve`, from outside: the tools over HTTP are the tools over stdio; 32 MCP
//! sessions adding through two servers over one PostgreSQL or one Redis Cluster, one server
//! killed (`kill -9`) and restarted mid-run, every add present exactly once; `memory mcp
//! --remote` relaying stdio to a keyed server. (Each client's own suite covers the rest: every
//! tool on every backend, the auth matrix, bad input; clients/python, clients/typescript.)

mod common;

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use memory_conformance::services::Service;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};
use tokio::process::Command;

use common::{Server, request, shared, write_config};

type Client = RunningService<RoleClient, ()>;

/// `memory mcp` with `args` and `env`, as an MCP client starts it.
async fn child(args: &[&str], env: &[(&str, &str)]) -> Client {
    let mut command = Command::new(env!("CARGO_BIN_EXE_memory"));
    command.args(args).env_remove("MEMORY_API_KEY");
    for (name, value) in env {
        command.env(name, value);
    }
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    ().serve(transport).await.unwrap()
}

/// An MCP client of `url`, with `key` as its bearer key.
async fn http(url: &str, key: Option<&str>) -> Client {
    let mut config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(key) = key {
        config = config.auth_header(key);
    }
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

/// What a client is offered: the tools and resources, as JSON, for comparing whole.
async fn offered(client: &Client) -> (Value, Value) {
    let tools = client.list_tools(None).await.unwrap();
    let resources = client.list_resources(None).await.unwrap();
    (
        serde_json::to_value(tools.tools).unwrap(),
        serde_json::to_value(resources.resources).unwrap(),
    )
}

fn markdown(dir: &Path) -> std::path::PathBuf {
    write_config(
        dir,
        &format!(
            "[providers.files]\nkind = \"markdown\"\nroot = \"{}\"\n",
            dir.join("root").display()
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_over_http_are_the_tools_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let config = markdown(dir.path());
    let server = Server::start(&config);
    let config = config.to_str().unwrap();
    let stdio = child(
        &[
            "--config",
            config,
            "mcp",
            "--personality",
            "coder",
            "--user",
            "ada",
        ],
        &[],
    )
    .await;
    let over_http = http(&format!("{}mcp/coder/ada", server.url()), None).await;
    let (tools, resources) = offered(&stdio).await;
    assert_eq!(tools.as_array().unwrap().len(), 7, "{tools:#}");
    assert_eq!(offered(&over_http).await, (tools, resources));
    let stdio_info = stdio.peer_info().unwrap();
    let http_info = over_http.peer_info().unwrap();
    assert_eq!(stdio_info.instructions, http_info.instructions);
    assert_eq!(stdio_info.capabilities, http_info.capabilities);
}

/// A keyed server's `/mcp`, through `memory mcp --remote`: the remote's tools and results
/// unchanged, the key from `MEMORY_API_KEY`; a wrong key fails the start, naming the URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_mcp_remote_relays_stdio_to_a_keyed_server() {
    let dir = tempfile::tempdir().unwrap();
    let key = "amk_relay_test_key_0123456789abcdef";
    let config = write_config(
        dir.path(),
        &format!(
            "[providers.files]\nkind = \"markdown\"\nroot = \"{}\"\n\n[serve.keys.agents]\n\
             sha256 = \"{}\"\nscopes = [\"read\", \"write\"]\n",
            dir.path().join("root").display(),
            memory_web::key_sha256(key)
        ),
    );
    let server = Server::start(&config);
    let url = format!("{}mcp/coder/ada", server.url());
    let relayed = child(&["mcp", "--remote", &url], &[("MEMORY_API_KEY", key)]).await;
    let direct = http(&url, Some(key)).await;
    assert_eq!(offered(&relayed).await, offered(&direct).await);
    let arguments = json!({"file": "USER.md", "entry": "Relayed: prefers tea."});
    let added = relayed
        .call_tool(
            CallToolRequestParams::new("memory_add")
                .with_arguments(arguments.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_eq!(added.is_error, Some(false), "{added:?}");
    let text = std::fs::read_to_string(dir.path().join("root/users/ada/USER.md")).unwrap();
    assert_eq!(text, "Relayed: prefers tea.\n");

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_memory"))
        .args(["mcp", "--remote", &url])
        .env("MEMORY_API_KEY", "amk_not_a_key_of_this_server_000")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&url), "{stderr}");
}

const SESSIONS: usize = 32;
const ADDS: usize = 8;

/// One JSON-RPC message to `/mcp/ada/grace` at `address`: its result, or why there is none.
async fn post(address: &str, message: &Value) -> Result<Value, String> {
    let answer = request("POST", "/mcp/ada/grace")
        .header("accept", "application/json, text/event-stream")
        .json(message)
        .send(address)
        .await
        .map_err(|err| format!("{address}: {err}"))?;
    if answer.status != 200 {
        return Err(format!("{address}: {} {}", answer.status, answer.detail()));
    }
    let reply = answer.json();
    match reply.get("result") {
        Some(result) => Ok(result.clone()),
        None => Err(format!("{address}: {reply}")),
    }
}

/// 32 sessions, each initializing and then adding 8 unique lines through two servers over
/// one provider, every add keyed by `_meta` and resent to the other server until answered;
/// once 96 adds are acknowledged, one server is killed with SIGKILL (writes in flight cut off
/// wherever they were) and started again. Every add is in `MEMORY.md` exactly once.
async fn thirty_two_sessions_through_two_servers(config: &Path) {
    let servers = Arc::new(Mutex::new(vec![
        Server::start(config),
        Server::start(config),
    ]));
    let addresses: Arc<RwLock<Vec<String>>> = Arc::new(RwLock::new(
        servers
            .lock()
            .unwrap()
            .iter()
            .map(|server| server.address.clone())
            .collect(),
    ));
    let acknowledged = Arc::new(AtomicUsize::new(0));
    let resent = Arc::new(AtomicUsize::new(0));
    let address = {
        let addresses = Arc::clone(&addresses);
        move |n: usize| addresses.read().unwrap()[n % 2].clone()
    };
    let sessions: Vec<_> = (0..SESSIONS)
        .map(|session| {
            let (address, acknowledged, resent) = (
                address.clone(),
                Arc::clone(&acknowledged),
                Arc::clone(&resent),
            );
            tokio::spawn(async move {
                let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": format!("session-{session}"), "version": "1"}}});
                post(&address(session), &initialize).await.unwrap();
                for n in 0..ADDS {
                    let call = json!({"jsonrpc": "2.0", "id": n + 1, "method": "tools/call",
                        "params": {"name": "memory_add",
                                   "arguments": {"file": "MEMORY.md",
                                                 "entry": format!("session {session} line {n}")},
                                   "_meta": {"agent-memory/idempotency-key":
                                             format!("mcp-{session}-{n}")}}});
                    let mut attempt = 0;
                    loop {
                        match post(&address(session + n + attempt), &call).await {
                            Ok(result) if result["isError"] == false => break,
                            outcome => {
                                attempt += 1;
                                resent.fetch_add(1, Ordering::Relaxed);
                                assert!(attempt < 100, "session {session} add {n}: {outcome:?}");
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                        }
                    }
                    acknowledged.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    while acknowledged.load(Ordering::Relaxed) < 96 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    {
        let mut servers = servers.lock().unwrap();
        servers[0].child.kill().unwrap();
        servers[0].child.wait().unwrap();
        let restarted = Server::start(config);
        addresses.write().unwrap()[0] = restarted.address.clone();
        servers[0] = restarted;
    }
    for session in sessions {
        session.await.unwrap();
    }
    let view = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                      "params": {"uri": "memory://personalities/ada/MEMORY.md"}});
    let read = post(&address(1), &view).await.unwrap();
    let text = read["contents"][0]["text"].as_str().unwrap().to_owned();
    for session in 0..SESSIONS {
        for n in 0..ADDS {
            let line = format!("session {session} line {n}");
            let times = text.lines().filter(|l| *l == line).count();
            assert_eq!(times, 1, "{line:?} is there {times} times");
        }
    }
    assert_eq!(
        text.lines().filter(|l| !l.is_empty()).count(),
        SESSIONS * ADDS
    );
    assert!(
        resent.load(Ordering::Relaxed) > 0,
        "killing a server under 32 sessions cut some calls off"
    );
    println!(
        "{} adds through two servers, one killed and restarted: each present once; {} resends",
        SESSIONS * ADDS,
        resent.load(Ordering::Relaxed)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_sessions_through_two_servers_over_postgres_one_killed() {
    if let Some(shared) = shared(Service::Postgres) {
        thirty_two_sessions_through_two_servers(&shared.config).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_sessions_through_two_servers_over_a_redis_cluster_one_killed() {
    if let Some(shared) = shared(Service::RedisCluster) {
        thirty_two_sessions_through_two_servers(&shared.config).await;
    }
}
