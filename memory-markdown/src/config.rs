//! A markdown provider as a provider table of `memory.toml` configures it.

use std::path::PathBuf;

use async_trait::async_trait;
use memory_core::raw::{BackendConfig, Opened, ResolveFields};
use memory_core::{MemoryError, Retention};
use serde::Deserialize;

use crate::MarkdownProvider;

/// `kind = "markdown"`: the files under `root`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkdownConfig {
    /// The root directory (`~/` and relative paths resolved by the wiring).
    pub root: PathBuf,
    /// How many revisions of each document its journal keeps.
    #[serde(default)]
    pub history: Retention,
}

#[async_trait]
impl BackendConfig for MarkdownConfig {
    fn resolve(&mut self, fields: &mut dyn ResolveFields) -> Result<(), MemoryError> {
        fields.path("root", &mut self.root)
    }

    /// Beside the files: `<root>/.recall-index`.
    fn default_index_dir(&self) -> Option<PathBuf> {
        Some(self.root.join(".recall-index"))
    }

    async fn open(&self) -> Result<Opened, MemoryError> {
        Ok(Opened::of(
            MarkdownProvider::new(&self.root).with_retention(self.history),
        ))
    }
}
