#![doc = include_str!("../README.md")]

mod api;
mod auth;
mod conditional;
mod deployment;
mod etag;
mod headers;
mod listen;
mod mcp;
mod openapi;
mod ops;
mod page;
mod problem;
mod replay;
mod request;
mod service;
mod settings;
mod state;
mod wire;

pub use api::openapi_json;
pub use auth::{Access, MIN_TOKEN_CHARS, Principal, TOKEN_ENV, key_sha256, mint_key};
pub use deployment::{Deployment, Placement, ProviderInfo, Standalone, tools};
pub use headers::{IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED, REQUEST_ID};
pub use mcp::{MCP_IDEMPOTENCY_META, McpServer, resource_uri};
pub use problem::{PROBLEM_JSON, Problem, ProblemDocument, ProblemKind};
pub use service::Service;
pub use settings::{
    ApiKey, MAX_CONCURRENT_REQUESTS, MAX_READ_TIMEOUT, RESERVED_KEY_NAMES, Scope, Settings,
    SettingsError, check_key_name,
};
