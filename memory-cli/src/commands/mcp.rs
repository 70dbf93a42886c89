//! `memory mcp`: the memory tools over the Model Context Protocol, on stdio, served by the same
//! definition as `/mcp` on `memory serve` ([`memory_web::McpServer`]).
//!
//! stdout carries the protocol and nothing else; every message for people goes to stderr.

use std::sync::Arc;

use memory_core::{PersonalityId, Store, UserId};
use memory_tools::MemoryTools;
use memory_web::{McpServer, resource_uri};
use memory_wiring::Memory;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};

use crate::failure::Failure;

/// Serve the memory tools to an MCP client over stdio, for one personality and user.
///
/// Tools: memory_view, memory_add, memory_replace, memory_remove, memory_consolidate,
/// memory_history, and memory_search where the personality's provider can recall. Their
/// writes are revisions with surface tool. Resources: the two documents. Logs go to stderr.
///
/// With --remote, relays stdio to a remote `memory serve`'s /mcp instead (no config
/// needed): for MCP clients that only start local processes.
///
/// Example: memory mcp --personality ada --user grace
#[derive(clap::Args)]
// The help text's `[mcp]` is the config's table, as a user writes it, not a link.
#[allow(rustdoc::broken_intra_doc_links)]
pub struct McpArgs {
    /// The personality whose memory is served (default: [mcp] personality in the config).
    #[arg(long, conflicts_with = "remote")]
    personality: Option<String>,
    /// The user whose profile is served (default: [mcp] user in the config).
    #[arg(long, conflicts_with = "remote")]
    user: Option<String>,
    /// The URL of a remote /mcp (`http(s)://HOST/mcp/<personality>/<user>`) to relay to;
    /// its API key comes from the environment variable MEMORY_API_KEY.
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,
}

/// `memory mcp`: the tools of the personality and user given, or of `[mcp]`'s defaults, served
/// on stdio.
pub async fn run(memory: &Memory, args: McpArgs) -> Result<(), Failure> {
    let McpArgs {
        personality, user, ..
    } = args;
    let defaults = &memory.config().mcp;
    let missing = |what: &str| {
        Failure::invalid(format!(
            "memory mcp needs a {what}: pass --{what} or set `{what}` under [mcp] in the config"
        ))
    };
    let personality = match personality {
        Some(id) => PersonalityId::new(id)?,
        None => (defaults.personality.clone()).ok_or_else(|| missing("personality"))?,
    };
    let user = match user {
        Some(id) => UserId::new(id)?,
        None => (defaults.user.clone()).ok_or_else(|| missing("user"))?,
    };
    let tools = memory.tools(personality, user).await?;
    serve(tools).await.map_err(Failure::other)
}

/// `memory mcp --remote <url>`: stdio relayed to `url`, with the key of [`API_KEY_ENV`]; no
/// config is read.
pub async fn run_remote(url: &str) -> Result<(), Failure> {
    let key = std::env::var(API_KEY_ENV).ok();
    relay(url, key).await.map_err(Failure::other)
}

/// Serves `tools` on stdin/stdout until the client closes the connection.
async fn serve(tools: MemoryTools) -> Result<(), String> {
    let ctx = tools.context();
    let [memory, user] =
        [Store::Memory, Store::User].map(|store| resource_uri(&ctx.document(store)));
    eprintln!(
        "memory mcp: serving the memory of personality {} for user {} ({memory} and {user})",
        ctx.personality, ctx.user
    );
    on_stdio(McpServer::new(tools)).await
}

/// Runs `server` on stdin/stdout until the client closes the connection.
async fn on_stdio(server: impl ServerHandler) -> Result<(), String> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|err| format!("the MCP session did not start: {err}"))?;
    running
        .waiting()
        .await
        .map_err(|err| format!("the MCP session failed: {err}"))?;
    Ok(())
}

/// The environment variable `memory mcp --remote` takes the remote server's API key from.
const API_KEY_ENV: &str = "MEMORY_API_KEY";

/// Relays MCP on stdin/stdout to the Streamable HTTP endpoint at `url` (sending `key` as a
/// bearer key) until the local client closes the connection: the tools, their results and
/// the resources are the remote server's, unchanged.
async fn relay(url: &str, key: Option<String>) -> Result<(), String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(key) = key.filter(|key| !key.is_empty()) {
        config = config.auth_header(key);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    let remote = ()
        .serve(transport)
        .await
        .map_err(|err| format!("could not open the MCP server at {url}: {err}"))?;
    let info = remote
        .peer_info()
        .ok_or_else(|| format!("the MCP server at {url} did not say what it serves"))?;
    eprintln!("memory mcp: relaying to {url}");
    let mut served = ServerConfig::new(info.capabilities.clone())
        .with_instructions(info.instructions.clone().unwrap_or_default());
    if let Some(server) = info.server_info.clone() {
        served = served.with_server_info(server);
    }
    let relay = Relay {
        url: url.into(),
        remote: remote.peer().clone(),
        info: served,
    };
    let served = on_stdio(relay).await;
    let _ = remote.cancel().await;
    served
}

/// A local MCP server whose every answer is the remote server's.
#[derive(Clone)]
struct Relay {
    url: Arc<str>,
    remote: Peer<RoleClient>,
    info: ServerConfig,
}

impl Relay {
    /// The remote's own JSON-RPC error unchanged; a failure to reach it as an internal error
    /// naming the URL.
    fn error(&self, err: ServiceError) -> ErrorData {
        match err {
            ServiceError::McpError(error) => error,
            other => ErrorData::internal_error(
                format!("the MCP server at {} did not answer: {other}", self.url),
                None,
            ),
        }
    }
}

impl ServerHandler for Relay {
    fn get_info(&self) -> ServerConfig {
        self.info.clone()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.remote
            .list_tools(request)
            .await
            .map_err(|err| self.error(err))
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The caller's _meta (its idempotency key among it) goes on, wherever rmcp put it.
        if request.meta.is_none() && !context.meta.0.is_empty() {
            request.meta = Some(context.meta);
        }
        self.remote
            .call_tool_once(request)
            .await
            .map_err(|err| self.error(err))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.remote
            .list_resources(request)
            .await
            .map_err(|err| self.error(err))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.remote
            .read_resource_once(request)
            .await
            .map_err(|err| self.error(err))
    }
}
