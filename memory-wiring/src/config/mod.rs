//! `memory.toml`: the named providers, the default one, and each personality's settings.
//!
//! [`Config`] and its parts are here. Reading the file is `parse`'s, with `providers` and
//! `personalities` reading their tables and `locator` naming a mistake's line; where each
//! document lives is `homes`'; `[serve]` is kept as written (`serve_table`).

mod homes;
mod locator;
mod parse;
mod personalities;
mod providers;
mod serve_table;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memory_core::{
    Budgets, DEFAULT_MAX_CHARS, MemoryError, MemoryScope, PersonalityId, Retention, UserId,
};
use memory_markdown::{LayoutName, MarkdownConfig};
use serde::Deserialize;

pub use crate::backends::ProviderConfig;
pub use serve_table::ServeTable;

/// The environment variable naming the config file when no `--config` is given.
pub const CONFIG_ENV: &str = "MEMORY_CONFIG";
/// The environment variable naming the markdown root of the default config.
pub const ROOT_ENV: &str = "MEMORY_ROOT";
/// The name of the provider in the default config, and of a config file's provider when it
/// names no `default_provider` and has exactly one.
pub const DEFAULT_PROVIDER: &str = "markdown";

/// A whole wiring: which providers exist, which one is the default, and what each personality
/// uses. Build one with [`Config::load`], [`Config::parse`] or [`Config::markdown`].
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it was read from, for messages; `None` for the built-in default.
    pub origin: Option<PathBuf>,
    /// The providers by name.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// The provider of personalities without one.
    pub default_provider: String,
    /// The home of every user's `USER.md`, of the global `MEMORY.md` and of the identity map,
    /// whatever the personality: `users_provider` in the file, else the default provider.
    pub users_provider: String,
    /// The personalities configured by name; any other personality gets the defaults.
    pub personalities: BTreeMap<PersonalityId, PersonalityConfig>,
    /// Who `memory mcp` serves when its command line does not say.
    pub mcp: McpConfig,
    /// How `memory serve` runs the HTTP service (its API keys and limits), as the file writes
    /// it: memory-web reads it.
    pub serve: ServeTable,
}

/// The `[mcp]` table: the conversation `memory mcp` serves by default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// The personality whose memory the tools edit.
    pub personality: Option<PersonalityId>,
    /// The user whose profile the tools edit.
    pub user: Option<UserId>,
}

/// What one personality uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonalityConfig {
    /// Its provider's name; `None` for the default provider.
    pub provider: Option<String>,
    /// Its own `MEMORY.md` or the global one.
    pub memory_scope: MemoryScope,
    /// Byte caps on its writes.
    pub budgets: Budgets,
    /// The most chars its prefetch renders.
    pub max_chars: usize,
}

impl Default for PersonalityConfig {
    fn default() -> Self {
        PersonalityConfig {
            provider: None,
            memory_scope: MemoryScope::default(),
            budgets: Budgets::default(),
            max_chars: DEFAULT_MAX_CHARS,
        }
    }
}

impl Config {
    /// The config at `explicit`, else at `$MEMORY_CONFIG`, else [`Config::markdown`] at
    /// `$MEMORY_ROOT` or `~/.agent-memory`.
    ///
    /// # Errors
    /// [`MemoryError::Config`] naming the file (and line) when it cannot be read or is wrong.
    pub fn load(explicit: Option<&Path>) -> Result<Config, MemoryError> {
        let from_env = std::env::var_os(CONFIG_ENV).map(PathBuf::from);
        match explicit.map(Path::to_path_buf).or(from_env) {
            Some(path) => Config::from_file(&path),
            None => Ok(Config::markdown(default_root())),
        }
    }

    /// Reads and parses the file at `path`; relative paths in it are relative to its directory.
    ///
    /// # Errors
    /// [`MemoryError::Config`] naming the file when it cannot be read, and the line when it is
    /// wrong.
    pub fn from_file(path: &Path) -> Result<Config, MemoryError> {
        let text = std::fs::read_to_string(path).map_err(|err| MemoryError::Config {
            message: format!("cannot read {}: {err}", path.display()),
        })?;
        Config::parse(&text, path)
    }

    /// The built-in default: one markdown provider at `root`, every personality on it.
    pub fn markdown(root: impl Into<PathBuf>) -> Config {
        let provider = ProviderConfig::Markdown(MarkdownConfig {
            root: root.into(),
            history: Retention::default(),
            layout: LayoutName::Ethos,
            personality: None,
            user: None,
        });
        Config {
            origin: None,
            providers: BTreeMap::from([(DEFAULT_PROVIDER.to_owned(), provider)]),
            default_provider: DEFAULT_PROVIDER.to_owned(),
            users_provider: DEFAULT_PROVIDER.to_owned(),
            personalities: BTreeMap::new(),
            mcp: McpConfig::default(),
            serve: ServeTable::default(),
        }
    }

    /// The settings of `personality`: its own if configured, else the defaults.
    pub fn personality(&self, personality: &PersonalityId) -> PersonalityConfig {
        self.personalities
            .get(personality)
            .cloned()
            .unwrap_or_default()
    }
}

/// `$MEMORY_ROOT`, else `~/.agent-memory`.
pub fn default_root() -> PathBuf {
    std::env::var_os(ROOT_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".agent-memory"))
}

fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from)
}

/// Whether `name` may name a provider: an id.
fn is_name(name: &str) -> bool {
    PersonalityId::new(name).is_ok()
}
