//! One file per command: its arguments and help text (a clap `Args` struct, or a `Subcommand`
//! enum for a group of commands such as `memory identity`) and its body, a `run` that
//! [`crate::cli`] calls with the memory the config wires. Below the list: what several commands
//! share.

// `memory show`: what the agent would see for a personality and a user.
pub mod show;
// `memory cat`: one raw document and its version.
pub mod cat;
// `memory sync`: a JSON array of updates applied, once.
pub mod sync;
// `memory log`, `diff`, `revert`, `redact` and `purge`: one document's history.
pub mod history;
// `memory notes list`, `cat`, `edit`, `move`, `remove` and `log`: a scope's notes.
pub mod notes;
// `memory identity link` and `resolve`: platform accounts and the users they are.
pub mod identity;
// `memory migrate`: every document and identity link from one provider to another.
pub mod migrate;
// `memory reindex`: a vector provider's index rebuilt from its source.
pub mod reindex;
// `memory mcp`: the memory tools over MCP on stdio, or a relay to a remote `/mcp`.
pub mod mcp;
// `memory serve`: the HTTP API, /metrics and the Memory page.
pub mod serve;
// `memory key new`: an API key and the line that configures it.
pub mod key;
// `memory openapi`: the HTTP API's OpenAPI document.
pub mod openapi;
// `memory completions`: a shell's completion script.
pub mod completions;
// `memory man`: the man pages.
pub mod man;
// `memory demo`: a scripted agent session on the markdown default.
pub mod demo;

use memory_core::DocumentId;
use memory_wiring::Memory;

use crate::failure::Failure;
use crate::output::warn;

/// How long a writing command waits for a recall index to catch up with what it wrote.
const SETTLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Lets a recall index catch up with what this process wrote before it ends, so one-shot
/// writers (scripts, hooks) leave it current. Bounded: what is left is caught up by the next
/// query.
pub async fn settle(memory: &Memory) {
    match tokio::time::timeout(SETTLE_TIMEOUT, memory.settle()).await {
        Ok(warnings) => warn(&warnings),
        Err(_) => {
            warn(&["the recall index is still catching up; the next query finishes it".to_owned()])
        }
    }
}

/// A layout path as a document id, with an error that says which part is wrong.
pub fn parse_document(path: &str) -> Result<DocumentId, Failure> {
    DocumentId::parse_relative_path(path)?.ok_or_else(|| {
        Failure::invalid(format!(
            "{path:?} is not a document: expected MEMORY.md, personalities/<id>/MEMORY.md or users/<id>/USER.md, or a note under notes/, personalities/<id>/notes/ or users/<id>/notes/"
        ))
    })
}
