//! `memory mcp`: the memory tools over the Model Context Protocol, on stdio, served by the same
//! definition as `/mcp` on `memory serve` ([`memory_web::McpServer`]).
//!
//! stdout carries the protocol and nothing else; every message for people goes to stderr.

use memory_core::Store;
use memory_tools::MemoryTools;
use memory_web::{McpServer, resource_uri};
use rmcp::ServiceExt;

/// Serves `tools` on stdin/stdout until the client closes the connection.
pub async fn serve(tools: MemoryTools) -> Result<(), String> {
    let ctx = tools.context();
    let [memory, user] =
        [Store::Memory, Store::User].map(|store| resource_uri(&ctx.document(store)));
    eprintln!(
        "memory mcp: serving the memory of personality {} for user {} ({memory} and {user})",
        ctx.personality, ctx.user
    );
    let running = McpServer::new(tools)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|err| format!("the MCP session did not start: {err}"))?;
    running
        .waiting()
        .await
        .map_err(|err| format!("the MCP session failed: {err}"))?;
    Ok(())
}
