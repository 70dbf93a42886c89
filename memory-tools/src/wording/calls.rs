//! Calls refused before any tool runs: a tool not offered, arguments the tool does not take,
//! a write from a caller who may only read.

use std::fmt::Display;

use serde_json::Value;

/// A call of a tool not offered here.
pub(crate) fn no_such_tool(name: &str, offered: &[&str]) -> String {
    format!(
        "There is no tool named {name:?} here; the memory tools are {}.",
        offered.join(", ")
    )
}

/// A call whose arguments `tool` does not take, for `reason`.
pub(crate) fn invalid_arguments(tool: &str, reason: impl Display) -> String {
    format!("Invalid arguments for {tool}: {reason}. Nothing was written.")
}

/// Why arguments that are not a JSON object are refused.
pub(crate) fn arguments_not_an_object(arguments: &Value) -> String {
    format!(
        "the arguments must be a JSON object of named arguments, not {}",
        kind_of(arguments)
    )
}

/// Why a `file` other than the two is refused.
pub(crate) fn not_a_file(name: &str) -> String {
    format!("file is {name:?}; it must be \"MEMORY.md\" or \"USER.md\"")
}

/// Why the argument `name`, whose schema says string, is refused.
pub(crate) fn not_a_string(name: &str, value: &Value) -> String {
    format!("`{name}` must be a string, not {}", kind_of(value))
}

/// Why the string `text` is refused for the argument `name`, which takes one of `allowed`.
pub(crate) fn not_one_of(name: &str, allowed: &[Value], text: &str) -> String {
    let allowed: Vec<String> = allowed.iter().map(Value::to_string).collect();
    format!(
        "`{name}` must be one of {}, not {text:?}",
        allowed.join(" or ")
    )
}

/// Why `value` is refused for the argument `name`, which takes a whole number within
/// `minimum` and `maximum`.
pub(crate) fn not_a_whole_number(
    name: &str,
    minimum: Option<u64>,
    maximum: Option<u64>,
    value: &Value,
) -> String {
    let range = match (minimum, maximum) {
        (Some(minimum), Some(maximum)) => format!(" from {minimum} to {maximum}"),
        (Some(minimum), None) => format!(" of at least {minimum}"),
        _ => String::new(),
    };
    format!(
        "`{name}` must be a whole number{range}, not {}",
        kind_of(value)
    )
}

/// A JSON value as a refusal names it: its kind, and the value itself when short.
fn kind_of(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".to_owned(),
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "the number",
        Value::String(_) => "the string",
        Value::Array(_) => return "a list".to_owned(),
        Value::Object(_) => return "an object".to_owned(),
    };
    let shown = value.to_string();
    if shown.len() <= 40 {
        format!("{kind} {shown}")
    } else {
        kind.to_owned()
    }
}

/// `memory_history`'s `revert_to` from a caller who may only read.
pub(crate) const REVERT_NEEDS_WRITE: &str = "Not reverted: revert_to writes, and this \
    connection may only read the memory. Nothing was written.";
