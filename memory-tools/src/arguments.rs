//! A call's arguments: checked against the types its tool's schema gives them, then parsed
//! into the tool's own type ([`Call`]), so each tool's arguments are checked against its own
//! fields.

use memory_core::Store;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::definitions::{NoteCommand, Tool, ToolDefinition};
use crate::wording;

/// The call of `tool` (offered as `definition`) with `arguments`, parsed; or what the model
/// reads when the arguments are not the tool's.
pub(crate) fn parse(
    tool: Tool,
    definition: &ToolDefinition,
    arguments: Value,
) -> Result<Call, String> {
    if let Err(reason) = check_arguments(definition, &arguments) {
        return Err(wording::invalid_arguments(tool.name(), reason));
    }
    serde_json::from_value(json!({"name": tool.name(), "arguments": arguments}))
        .map_err(|error| wording::invalid_arguments(tool.name(), error))
}

/// Checks `arguments` against the types `definition`'s schema gives each argument, so a
/// refusal names the argument and says what it takes in the model's terms ("`limit` must be
/// an integer from 1 to 20"), which a deserializer's message does not. Missing and unknown
/// arguments are left to the deserializer, whose messages name them.
fn check_arguments(definition: &ToolDefinition, arguments: &Value) -> Result<(), String> {
    let Some(arguments) = arguments.as_object() else {
        return Err(wording::arguments_not_an_object(arguments));
    };
    let properties = definition
        .input_schema
        .get("properties")
        .and_then(Value::as_object);
    for (name, value) in arguments {
        let Some(schema) = properties.and_then(|properties| properties.get(name)) else {
            continue;
        };
        match schema.get("type").and_then(Value::as_str) {
            Some("string") => {
                let Some(text) = value.as_str() else {
                    return Err(wording::not_a_string(name, value));
                };
                if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
                    && !allowed.iter().any(|allowed| allowed.as_str() == Some(text))
                {
                    return Err(wording::not_one_of(name, allowed, text));
                }
            }
            Some("integer") => {
                let minimum = schema.get("minimum").and_then(Value::as_u64);
                let maximum = schema.get("maximum").and_then(Value::as_u64);
                let within = value.as_u64().is_some_and(|number| {
                    minimum.is_none_or(|minimum| number >= minimum)
                        && maximum.is_none_or(|maximum| number <= maximum)
                });
                if !within {
                    return Err(wording::not_a_whole_number(name, minimum, maximum, value));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// `file` as the tools name it.
#[derive(Debug)]
pub(crate) struct File(pub(crate) Store);

impl<'de> Deserialize<'de> for File {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        match name.as_str() {
            "MEMORY.md" => Ok(File(Store::Memory)),
            "USER.md" => Ok(File(Store::User)),
            _ => Err(serde::de::Error::custom(wording::not_a_file(&name))),
        }
    }
}

/// A call, parsed: the tool's name picks the variant, so each tool's arguments are checked
/// against their own fields.
#[derive(Deserialize)]
#[serde(tag = "name", content = "arguments")]
pub(crate) enum Call {
    #[serde(rename = "memory_view")]
    View(ViewArgs),
    #[serde(rename = "memory_add")]
    Add(AddArgs),
    #[serde(rename = "memory_replace")]
    Replace(ReplaceArgs),
    #[serde(rename = "memory_remove")]
    Remove(RemoveArgs),
    #[serde(rename = "memory_consolidate")]
    Consolidate(ConsolidateArgs),
    #[serde(rename = "memory_history")]
    History(HistoryArgs),
    #[serde(rename = "memory_notes")]
    Notes(NotesArgs),
    #[serde(rename = "memory_search")]
    Search(SearchArgs),
}

/// `memory_view`'s.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ViewArgs {
    pub(crate) query: Option<String>,
}

/// `memory_add`'s.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AddArgs {
    pub(crate) file: File,
    pub(crate) entry: String,
}

/// `memory_replace`'s.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReplaceArgs {
    pub(crate) file: File,
    pub(crate) old: String,
    pub(crate) new: String,
}

/// `memory_remove`'s.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RemoveArgs {
    pub(crate) file: File,
    pub(crate) substring: String,
}

/// `memory_consolidate`'s.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConsolidateArgs {
    pub(crate) file: File,
    pub(crate) content: String,
    pub(crate) viewed: Option<String>,
}

/// `memory_history`'s.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HistoryArgs {
    pub(crate) file: File,
    pub(crate) limit: Option<usize>,
    pub(crate) revert_to: Option<u64>,
}

/// `memory_search`'s.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArgs {
    pub(crate) query: String,
    pub(crate) k: Option<usize>,
}

/// `memory_notes`'s: the command, and the arguments it takes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NotesArgs {
    pub(crate) command: NoteCommand,
    pub(crate) path: Option<String>,
    pub(crate) content: Option<String>,
    pub(crate) old: Option<String>,
    pub(crate) new: Option<String>,
    pub(crate) to: Option<String>,
    pub(crate) viewed: Option<String>,
}
