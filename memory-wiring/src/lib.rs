//! Agent memory wired from a config: named providers, one per personality, behind one handle.
//!
//! ```
//! # use memory_core::*;
//! # use memory_wiring::{Config, Memory};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let file = dir.path().join("memory.toml");
//! let config = Config::parse(r#"
//!     default_provider = "files"
//!
//!     [providers.files]
//!     kind = "markdown"
//!     root = "memory"                 # relative to the config file
//!
//!     [personalities.ada]
//!     memory_scope = "global"
//!     max_chars = 4000
//!     caps.memory = { soft = 2048, hard = 4096 }
//! "#, &file)?;
//! let memory = Memory::new(config);
//!
//! // One handle for the agent loop: every call goes to the personality's provider, with the
//! // personality's scope and caps.
//! let ctx = memory.context(PersonalityId::new("ada")?, UserId::new("grace")?);
//! memory.sync(&ctx, &[MemoryUpdate::add(Store::Memory, "Likes tea.")], &IfMatch::NONE).await?;
//! assert!(dir.path().join("memory/MEMORY.md").exists()); // ada's scope is global
//!
//! // The identity map lives with the users' profiles (the default provider unless
//! // `users_provider` says otherwise).
//! let identity: Identity = "telegram:12345".parse()?;
//! memory.identities().await?.link(&identity, &ctx.user, false).await?;
//! assert_eq!(memory.resolve(&identity).await?, Some(ctx.user.clone()));
//! # Ok(())
//! # }
//! ```

mod backends;
mod config;
mod connections;
mod memory;
mod routing;
#[cfg(feature = "serve")]
mod serve;

pub use backends::{FEATURES, rebuild_with};
pub use config::{
    CONFIG_ENV, Config, DEFAULT_PROVIDER, McpConfig, PersonalityConfig, ProviderConfig, ROOT_ENV,
    ServeTable, default_root,
};
pub use memory::Memory;

/// The workspace README's Rust examples, compiled and run as doctests so they cannot rot. They
/// live here because this crate depends on every other one they use.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct WorkspaceReadme;
