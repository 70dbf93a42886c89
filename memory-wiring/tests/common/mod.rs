//! What the tests of `memory.toml` share: where the file is said to be, parsing it, and a
//! config that uses every part of the file.

#![allow(dead_code)] // each test file uses its own part

use std::path::Path;

use memory_core::MemoryError;
use memory_wiring::Config;

/// Where every test's `memory.toml` is said to be read from, as messages name it.
pub const ORIGIN: &str = "/etc/agent/memory.toml";

/// `text` parsed as the file at [`ORIGIN`].
pub fn parse(text: &str) -> Result<Config, MemoryError> {
    Config::parse(text, Path::new(ORIGIN))
}

/// The message of the config error `text` gives; panics if it parses.
pub fn config_error(text: &str) -> String {
    match parse(text) {
        Err(MemoryError::Config { message }) => message,
        other => panic!("expected a config error, got {other:?}"),
    }
}

/// Every provider kind, a users provider apart from the default, personalities with their own
/// provider, scope and caps, and `[mcp]`: a secret in a URL comes from the environment.
pub const FULL: &str = r#"
default_provider = "files"
users_provider = "shared"

[providers.files]
kind = "markdown"
root = "memory"

[providers.shared]
kind = "postgres"
url = "postgres://agent:${HOME}@db:5432/agents"
schema = "team_a"

[providers.fast]
kind = "redis"
url = "redis://127.0.0.1:6379"

[providers.recall]
kind = "vector"
source = "files"
model_dir = "~/models/e5"
recall = { k = 4 }

[personalities.ada]
provider = "recall"
max_chars = 4000
caps.memory = { soft = 2048, hard = 4096 }

[personalities.concierge]
provider = "shared"
memory_scope = "global"
caps.user = { hard = 3072 }

[mcp]
personality = "ada"
user = "grace"
"#;
