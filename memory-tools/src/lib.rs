#![doc = include_str!("../README.md")]

// `MemoryTools`, the entry point: one conversation's tools, the versions the model viewed,
// and the dispatch of a call to its tool; `ToolOutput`, what a call gives back.
mod dispatch;
// What the model is told about each tool before it calls: `Tool`, names, descriptions and
// JSON Schemas, and the bounds they give.
mod definitions;
// A call's arguments: checked against its tool's schema, then parsed into the tool's own type.
mod arguments;
// One room per tool (`tools/view.rs`, `tools/add.rs`, ...): what it does with the provider.
mod tools;
// Every sentence the model reads back from a call (`wording/view.rs`, ...), so that the
// wording is reviewed in one place.
mod wording;

pub use definitions::{
    DEFAULT_HISTORY_RESULTS, DEFAULT_SEARCH_RESULTS, MAX_HISTORY_RESULTS, MAX_SEARCH_RESULTS, Tool,
    ToolDefinition,
};
pub use dispatch::{MemoryTools, ToolOutput, view_token};
pub use tools::history::{MAX_DIFF_CHARS, MAX_HISTORY_CHARS};
