//! The commands whose bodies have a file of their own.

// `memory log`, `diff`, `revert` and `purge`: one document's history.
pub mod history;
// `memory migrate`: every document and identity link from one provider to another.
pub mod migrate;
// `memory mcp`: the memory tools over MCP on stdio, or a relay to a remote `/mcp`.
pub mod mcp;
// `memory demo`: a scripted agent session on the markdown default.
pub mod demo;
