//! What the model is told about each tool: names, descriptions and JSON Schemas.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// One tool as an agent loop hands it to a model: the shape every major model API takes
/// (`name`, `description`, and a JSON Schema for the arguments).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// The name the model calls it by, e.g. `memory_add`.
    pub name: &'static str,
    /// What it does and when to use it, written for the model.
    pub description: &'static str,
    /// A JSON Schema (draft 2020-12) of its arguments: an object with `required` fields and
    /// `additionalProperties: false`.
    pub input_schema: Map<String, Value>,
}

/// What `memory_notes` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum NoteCommand {
    List,
    Read,
    Create,
    Append,
    Replace,
    Write,
    Delete,
    Rename,
}

impl NoteCommand {
    /// Every command, as the tool's schema lists them.
    pub(crate) const ALL: [NoteCommand; 8] = [
        NoteCommand::List,
        NoteCommand::Read,
        NoteCommand::Create,
        NoteCommand::Append,
        NoteCommand::Replace,
        NoteCommand::Write,
        NoteCommand::Delete,
        NoteCommand::Rename,
    ];

    /// Its name in calls.
    pub(crate) fn name(self) -> &'static str {
        match self {
            NoteCommand::List => "list",
            NoteCommand::Read => "read",
            NoteCommand::Create => "create",
            NoteCommand::Append => "append",
            NoteCommand::Replace => "replace",
            NoteCommand::Write => "write",
            NoteCommand::Delete => "delete",
            NoteCommand::Rename => "rename",
        }
    }

    /// Whether it changes a note.
    pub(crate) fn writes(self) -> bool {
        !matches!(self, NoteCommand::List | NoteCommand::Read)
    }
}

/// The memory tools. [`Tool::Search`] exists only where the provider can recall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// `memory_view`: the memory as the agent sees it at the top of its prompt.
    View,
    /// `memory_add`: append an entry.
    Add,
    /// `memory_replace`: the unique-substring edit.
    Replace,
    /// `memory_remove`: drop the lines containing a substring.
    Remove,
    /// `memory_consolidate`: rewrite a whole file, guarded by the last view.
    Consolidate,
    /// `memory_history`: the file's recent revisions with their diffs, and undoing one.
    History,
    /// `memory_notes`: the notes beside the two files, listed, read and written.
    Notes,
    /// `memory_search`: the entries most relevant to a query.
    Search,
}

impl Tool {
    /// Every tool, in the order they are offered.
    pub const ALL: [Tool; 8] = [
        Tool::View,
        Tool::Add,
        Tool::Replace,
        Tool::Remove,
        Tool::Consolidate,
        Tool::History,
        Tool::Notes,
        Tool::Search,
    ];

    /// The name the model calls it by.
    pub fn name(self) -> &'static str {
        match self {
            Tool::View => "memory_view",
            Tool::Add => "memory_add",
            Tool::Replace => "memory_replace",
            Tool::Remove => "memory_remove",
            Tool::Consolidate => "memory_consolidate",
            Tool::History => "memory_history",
            Tool::Notes => "memory_notes",
            Tool::Search => "memory_search",
        }
    }

    /// The tool called `name`, if there is one.
    pub fn named(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|tool| tool.name() == name)
    }

    /// Whether calling it can change a file: true for the tools a read-only caller is not
    /// offered. `memory_history` only reads (its `revert_to` writes, and is offered only to
    /// callers that may write); `memory_notes` is offered to either, each of its commands
    /// checked against the caller's access.
    pub fn writes(self) -> bool {
        matches!(
            self,
            Tool::Add | Tool::Replace | Tool::Remove | Tool::Consolidate
        )
    }

    /// Its definition for a caller who may write (see [`Tool::definition_for`]).
    pub fn definition(self, can_recall: bool) -> ToolDefinition {
        self.definition_for(can_recall, true)
    }

    /// Its definition; `can_recall` adds `memory_view`'s optional query, `can_write` adds
    /// `memory_history`'s `revert_to`.
    pub fn definition_for(self, can_recall: bool, can_write: bool) -> ToolDefinition {
        let file = json!({
            "type": "string",
            "enum": ["MEMORY.md", "USER.md"],
            "description": "MEMORY.md holds your own notes (facts, decisions, lessons); USER.md \
                            holds what you know about the user you are talking to."
        });
        let (description, properties, required): (&'static str, Value, &[&str]) = match self {
            Tool::View if can_recall => (
                "Show your memory exactly as it appears at the top of your prompt, with each \
                 file's size and caps. With a query, show only the MEMORY.md entries most \
                 relevant to it. Call it without a query before memory_consolidate.",
                json!({"query": {
                    "type": "string",
                    "description": "Show only the MEMORY.md entries most relevant to this."
                }}),
                &[],
            ),
            Tool::View => (
                "Show your memory exactly as it appears at the top of your prompt, with each \
                 file's size and caps. Call it before memory_consolidate.",
                json!({}),
                &[],
            ),
            Tool::Add => (
                "Append one entry (a short self-contained paragraph) to MEMORY.md or USER.md. \
                 Use it for something worth remembering in later conversations.",
                json!({"file": file, "entry": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The entry to append, as markdown."
                }}),
                &["file", "entry"],
            ),
            Tool::Replace => (
                "Replace one passage of a file: `old` must occur exactly once in it (quote \
                 enough to be unique); it becomes `new`. Use it to correct or update an entry.",
                json!({"file": file, "old": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Text that occurs exactly once in the file, quoted literally."
                }, "new": {
                    "type": "string",
                    "description": "What replaces it; empty deletes it."
                }}),
                &["file", "old", "new"],
            ),
            Tool::Remove => (
                "Delete every line of a file that contains `substring` (literal, \
                 case-sensitive). Says how many lines went.",
                json!({"file": file, "substring": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The literal text whose lines are deleted."
                }}),
                &["file", "substring"],
            ),
            Tool::Consolidate => (
                "Rewrite a whole file with a shorter version that keeps what matters: merge \
                 duplicates, drop what is stale. Call memory_view (without a query) first and \
                 pass the view token it shows for the file as `viewed`: the rewrite is refused \
                 if the file changed since that view, so nothing another writer added is lost.",
                json!({"file": file, "content": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The complete new text of the file, as markdown."
                }, "viewed": {
                    "type": "string",
                    "description": "The file's view token from your last memory_view (without \
                                    a query)."
                }}),
                &["file", "content"],
            ),
            Tool::History if can_write => (
                "List the latest changes to a file, newest first: when, from where (tool, cli, \
                 web, api, or external for a hand edit) and a diff of each. With revert_to, put \
                 the file back to the text it had after that revision: use it to undo a bad \
                 rewrite (yours or another writer's). The revert is a change of its own, so it \
                 can be undone the same way, and it is refused if the file changes meanwhile.",
                json!({"file": file, "limit": history_limit(), "revert_to": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "A revision number from the list: the file gets back the \
                                    text it had after that revision. Omit to only list."
                }}),
                &["file"],
            ),
            Tool::History => (
                "List the latest changes to a file, newest first: when, from where (tool, cli, \
                 web, api, or external for a hand edit) and a diff of each.",
                json!({"file": file, "limit": history_limit()}),
                &["file"],
            ),
            Tool::Notes => (
                "Your notes: markdown files beside MEMORY.md and USER.md, one topic each, \
                 listed under ## Notes at the top of your prompt and read on demand. A note is \
                 named memory/<path> (yours, beside MEMORY.md) or user/<path> (about the user, \
                 beside USER.md), e.g. memory/projects/kyoto.md. Commands: list (the notes \
                 whose name starts with `path`, or all), read, create (refused if it exists), \
                 append (`content` as a new paragraph), replace (`old`, which must occur \
                 exactly once, becomes `new`), write (the whole text; read the note first and \
                 pass its view token as `viewed`), \
                 delete (its history keeps it), rename (to `to`, in the same scope). Prefer \
                 many small notes to one long file.",
                json!({"command": {
                    "type": "string",
                    "enum": NoteCommand::ALL.map(NoteCommand::name),
                    "description": "What to do."
                }, "path": {
                    "type": "string",
                    "description": "The note, memory/<path> or user/<path>; for list, the \
                                    start of the names to list (memory/projects/), or omit \
                                    for all."
                }, "content": {
                    "type": "string",
                    "description": "For create, append and write: the text, as markdown."
                }, "old": {
                    "type": "string",
                    "description": "For replace: text that occurs exactly once in the note."
                }, "new": {
                    "type": "string",
                    "description": "For replace: what replaces it."
                }, "to": {
                    "type": "string",
                    "description": "For rename: the note's new name, in the same scope."
                }, "viewed": {
                    "type": "string",
                    "description": "For write: the view token your read of the note showed."
                }}),
                &["command"],
            ),
            Tool::Search => (
                "Search MEMORY.md for the entries most relevant to a query, best first. Use it \
                 when what you need is not in the memory shown at the top of your prompt.",
                json!({"query": {
                    "type": "string",
                    "minLength": 1,
                    "description": "What to look for, in words."
                }, "k": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_SEARCH_RESULTS,
                    "default": DEFAULT_SEARCH_RESULTS,
                    "description": "How many entries to return."
                }}),
                &["query"],
            ),
        };
        let mut input_schema = Map::new();
        input_schema.insert("type".into(), json!("object"));
        input_schema.insert("properties".into(), properties);
        input_schema.insert("required".into(), json!(required));
        input_schema.insert("additionalProperties".into(), json!(false));
        ToolDefinition {
            name: self.name(),
            description,
            input_schema,
        }
    }
}

/// The schema of `memory_history`'s `limit`.
fn history_limit() -> Value {
    json!({
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_HISTORY_RESULTS,
        "default": DEFAULT_HISTORY_RESULTS,
        "description": "How many revisions to list, newest first."
    })
}

/// Revisions `memory_history` lists when the call names no `limit`.
pub const DEFAULT_HISTORY_RESULTS: usize = 5;
/// The most revisions one `memory_history` call lists.
pub const MAX_HISTORY_RESULTS: usize = 20;
/// Entries `memory_search` returns when the call names no `k`.
pub const DEFAULT_SEARCH_RESULTS: usize = 5;
/// The most entries one `memory_search` may return.
pub const MAX_SEARCH_RESULTS: usize = 50;
