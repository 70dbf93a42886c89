//! A markdown provider as a provider table of `memory.toml` configures it.

use std::path::PathBuf;

use async_trait::async_trait;
use memory_core::raw::{BackendConfig, Opened, ResolveFields};
use memory_core::{MemoryError, PersonalityId, Retention, UserId};
use serde::Deserialize;

use crate::layout::{Layout, METIS_DIR, login_user, workspace_personality};
use crate::provider::MarkdownProvider;

/// `kind = "markdown"`: the files under `root`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkdownConfig {
    /// The root directory (`~/` and relative paths resolved by the wiring); in the Metis
    /// layout, the workspace.
    pub root: PathBuf,
    /// How many revisions of each document its journal keeps.
    #[serde(default)]
    pub history: Retention,
    /// How documents map onto files (default `ethos`).
    #[serde(default)]
    pub layout: LayoutName,
    /// In the Metis layout, the personality whose `MEMORY.md` the workspace's is (default:
    /// [`workspace_personality`] of the root).
    #[serde(default)]
    pub personality: Option<PersonalityId>,
    /// In the Metis layout, the user whose `USER.md` the workspace's is (default: the login
    /// user, [`login_user`]).
    #[serde(default)]
    pub user: Option<UserId>,
}

/// `layout = "..."` in a markdown provider's table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LayoutName {
    /// [`Layout::Ethos`].
    #[default]
    Ethos,
    /// [`Layout::Metis`]: `root` is a Metis workspace, its documents in `.metis/`.
    Metis,
}

impl MarkdownConfig {
    /// The layout this table describes, with the Metis layout's defaults filled in.
    ///
    /// # Errors
    /// [`MemoryError::Config`] for `personality` or `user` in Ethos's layout (which holds every
    /// personality and user), or when the login user a Metis workspace defaults to is unknown.
    pub fn layout(&self) -> Result<Layout, MemoryError> {
        match self.layout {
            LayoutName::Ethos => {
                if self.personality.is_some() || self.user.is_some() {
                    return Err(MemoryError::Config {
                        message: format!(
                            "the markdown provider at {} sets `personality` or `user`, which only a Metis workspace (layout = \"metis\") takes: Ethos's layout holds every personality and user",
                            self.root.display()
                        ),
                    });
                }
                Ok(Layout::Ethos)
            }
            LayoutName::Metis => Ok(Layout::Metis {
                personality: self
                    .personality
                    .clone()
                    .unwrap_or_else(|| workspace_personality(&self.root)),
                user: match &self.user {
                    Some(user) => user.clone(),
                    None => login_user()?,
                },
            }),
        }
    }
}

#[async_trait]
impl BackendConfig for MarkdownConfig {
    fn resolve(&mut self, fields: &mut dyn ResolveFields) -> Result<(), MemoryError> {
        fields.path("root", &mut self.root)?;
        self.layout().map(drop)
    }

    /// Beside the files: `<root>/.recall-index`, or `<workspace>/.metis/recall-index` in a
    /// Metis workspace, where the workspace's own files are not disturbed.
    fn default_index_dir(&self) -> Option<PathBuf> {
        Some(match self.layout {
            LayoutName::Ethos => self.root.join(".recall-index"),
            LayoutName::Metis => self.root.join(METIS_DIR).join("recall-index"),
        })
    }

    async fn open(&self) -> Result<Opened, MemoryError> {
        Ok(Opened::of(
            MarkdownProvider::new(&self.root)
                .with_layout(self.layout()?)
                .with_retention(self.history),
        ))
    }
}
