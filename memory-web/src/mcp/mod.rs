//! The memory tools over the Model Context Protocol: one server definition for `memory mcp`
//! (stdio, one conversation per process) and `/mcp` on `memory serve` (Streamable HTTP,
//! stateless, any personality and user a key may open).
//!
//! Over HTTP the server keeps nothing between requests: each request names whose memory it
//! opens (the URL), who asks (the key), and, for a write that must land once, its idempotency
//! key. So any server of a deployment answers any request, and a restart loses nothing.
//!
//! This file is the server definition; `http` is `/mcp`: the route that opens each request and
//! the guards before it (key, origin, message).

mod http;

use http::Opened;
pub(crate) use http::{ROUTES, routes, transport};

use std::sync::Arc;

use axum::http::request::Parts;
use memory_core::{DocumentId, IdempotencyKey, Store};
use memory_tools::{MemoryTools, Tool};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, Tool as McpTool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

/// The `_meta` field of a `tools/call` that names the call for exactly-once delivery, as the
/// `Idempotency-Key` header does for the whole request.
pub const MCP_IDEMPOTENCY_META: &str = "agent-memory/idempotency-key";

/// What the server tells a client about itself and its tools.
const INSTRUCTIONS: &str = "Durable memory across conversations. MEMORY.md holds your notes, \
    USER.md what you know about the user. Add what is worth remembering with memory_add; keep \
    the files short with memory_replace, memory_remove and, after memory_view, \
    memory_consolidate. Keep longer topics in notes, one file each, with memory_notes. Every \
    change is kept: memory_history shows the latest and undoes a bad one.";

/// The MCP server of the memory tools: the tools, and the conversation's `MEMORY.md` and
/// `USER.md` as resources.
#[derive(Clone)]
pub struct McpServer {
    /// The one conversation of a stdio server; `None` over HTTP, where each request carries
    /// its own ([`Opened`]).
    conversation: Option<Arc<MemoryTools>>,
}

impl McpServer {
    /// The server of one conversation: `memory mcp` on stdio. Its tools keep what the model
    /// viewed between calls, as a conversation's tools do.
    pub fn new(tools: MemoryTools) -> McpServer {
        McpServer {
            conversation: Some(Arc::new(tools)),
        }
    }

    /// The server `/mcp` runs for each request, with the conversation its route opened.
    fn per_request() -> McpServer {
        McpServer { conversation: None }
    }

    /// The tools of the request in `context`, with what an HTTP request adds: the key's name
    /// and where to count its calls.
    async fn open(&self, context: &RequestContext<RoleServer>) -> Result<Turn, ErrorData> {
        if let Some(tools) = &self.conversation {
            return Ok(Turn {
                tools: Arc::clone(tools),
                opened: None,
            });
        }
        let opened = context
            .extensions
            .get::<Parts>()
            .and_then(|parts| parts.extensions.get::<Opened>())
            .cloned()
            .ok_or_else(|| {
                ErrorData::internal_error("the request reached MCP without its route", None)
            })?;
        let tools = crate::deployment::tools(
            &*opened.deployment,
            opened.personality.clone(),
            opened.user.clone(),
        )
        .await
        .map_err(|err| ErrorData::internal_error(err.to_string(), None))?
        .with_access(opened.can_read, opened.can_write);
        Ok(Turn {
            tools: Arc::new(tools),
            opened: Some(opened),
        })
    }
}

/// One request's tools, and its route's facts over HTTP.
struct Turn {
    tools: Arc<MemoryTools>,
    opened: Option<Opened>,
}

impl Turn {
    /// The conversation's two documents, with their resource URIs.
    fn documents(&self) -> [(String, DocumentId); 2] {
        let ctx = self.tools.context();
        [Store::Memory, Store::User].map(|store| {
            let id = ctx.document(store);
            (resource_uri(&id), id)
        })
    }

    fn can_read(&self) -> bool {
        self.opened.as_ref().is_none_or(|opened| opened.can_read)
    }

    /// The name of the request's key (`local` on stdio, or without keys).
    fn key_name(&self) -> &str {
        self.opened
            .as_ref()
            .map_or("local", |opened| opened.key_name.as_str())
    }

    fn count(&self, tool: &'static str, outcome: &'static str) {
        if let Some(opened) = &self.opened {
            opened.metrics.tool_call(tool, outcome);
        }
    }
}

/// The URI of a document as a resource: `memory://` and its path in the markdown layout.
pub fn resource_uri(document: &DocumentId) -> String {
    format!("memory://{}", document.relative_path())
}

impl ServerHandler for McpServer {
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
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let turn = self.open(&context).await?;
        let tools = turn
            .tools
            .definitions()
            .into_iter()
            .map(|definition| {
                McpTool::new(
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
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let turn = self.open(&context).await?;
        let Some(tool) = turn.tools.offered(&request.name) else {
            turn.count("other", "refused");
            return Err(not_offered(&request.name, &turn));
        };
        let meta_key = request
            .meta
            .as_ref()
            .and_then(|meta| meta.0.get(MCP_IDEMPOTENCY_META))
            .or_else(|| context.meta.0.get(MCP_IDEMPOTENCY_META));
        let key = match meta_key {
            Some(value) => {
                let value = value.as_str().ok_or_else(|| {
                    ErrorData::invalid_params(
                        format!("_meta.{MCP_IDEMPOTENCY_META} must be a string"),
                        None,
                    )
                })?;
                Some(IdempotencyKey::new(value).map_err(|err| {
                    ErrorData::invalid_params(format!("_meta.{MCP_IDEMPOTENCY_META}: {err}"), None)
                })?)
            }
            None => turn.opened.as_ref().and_then(|opened| opened.key.clone()),
        };
        let arguments = request
            .arguments
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        let output = turn.tools.call_keyed(tool.name(), arguments, key).await;
        turn.count(tool.name(), if output.is_error { "error" } else { "ok" });
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
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let turn = self.open(&context).await?;
        if !turn.can_read() {
            return Ok(ListResourcesResult::with_all_items(Vec::new()));
        }
        let mut resources: Vec<Resource> = turn
            .documents()
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
        // Each note of the two scopes, named as the prompt's index names it.
        let notes = turn
            .tools
            .notes()
            .await
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        let ctx = turn.tools.context();
        resources.extend(notes.into_iter().map(|(store, note)| {
            let id = ctx.document(store).scope().note(note.path.clone());
            let mut resource = Resource::new(resource_uri(&id), format!("{store}/{}", note.path))
                .with_mime_type("text/markdown");
            if !note.description.is_empty() {
                resource = resource.with_description(note.description);
            }
            resource
        }));
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let turn = self.open(&context).await?;
        if !turn.can_read() {
            return Err(ErrorData::invalid_request(
                format!(
                    "reading {} needs the read scope, which key {:?} lacks",
                    request.uri,
                    turn.key_name()
                ),
                None,
            ));
        }
        let documents = turn.documents();
        let found = match documents.iter().find(|(uri, _)| *uri == request.uri) {
            Some((_, id)) => Some(
                turn.tools
                    .document(id.store())
                    .await
                    .map_err(|err| ErrorData::internal_error(err.to_string(), None))?,
            ),
            // A note of the conversation's scopes that exists.
            None => match note_of(&request.uri) {
                Some(note) => turn
                    .tools
                    .note(&note)
                    .await
                    .map_err(|err| ErrorData::internal_error(err.to_string(), None))?
                    .filter(|read| !read.text.trim().is_empty()),
                None => None,
            },
        };
        let Some(document) = found else {
            let served: Vec<&str> = documents.iter().map(|(uri, _)| uri.as_str()).collect();
            return Err(ErrorData::resource_not_found(
                format!(
                    "{} is not served here; the resources are {} and the notes resources/list \
                     names",
                    request.uri,
                    served.join(" and ")
                ),
                None,
            ));
        };
        let uri = &request.uri;
        let contents =
            ResourceContents::text(document.text, uri.clone()).with_mime_type("text/markdown");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// The note a resource URI names (`memory://<its layout path>`), if it names one.
fn note_of(uri: &str) -> Option<DocumentId> {
    let path = uri.strip_prefix("memory://")?;
    DocumentId::parse_relative_path(path)
        .ok()
        .flatten()
        .filter(|id| id.note_path().is_some())
}

/// The JSON-RPC error for a tool this request may not call: one its key's scopes withhold
/// (naming the scope), or none of that name here (naming the ones there are).
fn not_offered(name: &str, turn: &Turn) -> ErrorData {
    let offered: Vec<&str> = turn.tools.tools().into_iter().map(Tool::name).collect();
    let message = match Tool::named(name) {
        Some(tool) if turn.opened.is_some() => {
            let scope = if tool.writes() { "write" } else { "read" };
            format!(
                "{name} needs the {scope} scope, which key {:?} lacks; nothing was written. \
                 This key may call: {}",
                turn.key_name(),
                offered.join(", ")
            )
        }
        _ => format!(
            "there is no tool named {name:?} here; the memory tools are {}",
            offered.join(", ")
        ),
    };
    ErrorData::invalid_params(message, None)
}
