//! `memory mcp`: the memory tools over the Model Context Protocol, on stdio.
//!
//! stdout carries the protocol and nothing else; every message for people goes to stderr.

use std::sync::Arc;

use memory_core::{DocumentId, Store};
use memory_tools::MemoryTools;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

/// One conversation's memory tools, and the two documents they edit as resources.
#[derive(Clone)]
struct MemoryServer {
    tools: Arc<MemoryTools>,
    /// `MEMORY.md` then `USER.md`, with their resource URIs.
    documents: Arc<[(String, DocumentId); 2]>,
}

/// The URI of a document as a resource: `memory://` and its path in the markdown layout.
fn resource_uri(document: &DocumentId) -> String {
    format!("memory://{}", document.relative_path())
}

/// Serves `tools` on stdin/stdout until the client closes the connection.
pub async fn serve(tools: MemoryTools) -> Result<(), String> {
    let ctx = tools.context();
    let documents = [Store::Memory, Store::User].map(|store| {
        let id = ctx.document(store);
        (resource_uri(&id), id)
    });
    eprintln!(
        "memory mcp: serving the memory of personality {} for user {} ({} and {})",
        ctx.personality, ctx.user, documents[0].0, documents[1].0
    );
    let server = MemoryServer {
        tools: Arc::new(tools),
        documents: Arc::new(documents),
    };
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

impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new(
            "agent-memory",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(
            "Durable memory across conversations. MEMORY.md holds your notes, USER.md what you \
             know about the user. Add what is worth remembering with memory_add; keep the files \
             short with memory_replace, memory_remove and, after memory_view, \
             memory_consolidate. Every change is kept: memory_history shows the latest and \
             undoes a bad one.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .tools
            .definitions()
            .into_iter()
            .map(|definition| {
                Tool::new(
                    definition.name,
                    definition.description,
                    definition.input_schema,
                )
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.tools.offered(&request.name).is_none() {
            return Err(ErrorData::invalid_params(
                format!("there is no tool named {:?}", request.name),
                None,
            ));
        }
        let arguments = request
            .arguments
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        let output = self.tools.call(&request.name, arguments).await;
        let content = vec![ContentBlock::text(output.text)];
        Ok(CallToolResponse::Complete(if output.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources = self
            .documents
            .iter()
            .map(|(uri, id)| {
                let (name, description) = match id.store() {
                    Store::Memory => ("MEMORY.md", "The agent's notes"),
                    Store::User => ("USER.md", "What the agent knows about the user"),
                };
                Resource::new(uri, name)
                    .with_description(format!("{description} ({id})"))
                    .with_mime_type("text/markdown")
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some((uri, id)) = self.documents.iter().find(|(uri, _)| *uri == request.uri) else {
            let served: Vec<&str> = self.documents.iter().map(|(uri, _)| uri.as_str()).collect();
            return Err(ErrorData::resource_not_found(
                format!(
                    "{} is not served here; the resources are {}",
                    request.uri,
                    served.join(" and ")
                ),
                None,
            ));
        };
        let document = self
            .tools
            .document(id.store())
            .await
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        let contents =
            ResourceContents::text(document.text, uri.clone()).with_mime_type("text/markdown");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}
