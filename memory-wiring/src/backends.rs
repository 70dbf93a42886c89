//! The storage backends a provider table can name, registered in one place: adding one is its
//! crate (with a [`memory_core::raw::BackendConfig`] for its configuration) and one line of
//! [`storage_backends!`] below.

use memory_core::raw::BackendConfig;
use memory_markdown::MarkdownConfig;
use memory_postgres::PostgresConfig;
use memory_redis::RedisConfig;
use memory_vector::{ModelConfig, RecallConfig};
use serde::Deserialize;

/// Generates, from one list of `Variant(Config) = "kind"` lines: [`ProviderConfig`] with one
/// variant per storage backend (and `Vector`, the recall index over one of them), its
/// `kind()`, the backend behind each variant, and the file's form the parser reads.
macro_rules! storage_backends {
    ($($(#[$doc:meta])* $variant:ident($config:ty) = $kind:literal,)+) => {
        /// How to build one named provider.
        #[derive(Debug, Clone)]
        pub enum ProviderConfig {
            $($(#[$doc])* $variant($config),)+
            /// A recall index over another (non-vector) provider, which stays the source of
            /// truth.
            Vector {
                /// The name of the source provider.
                source: String,
                /// The LanceDB directory.
                index_dir: std::path::PathBuf,
                /// The embedding model.
                model: ModelConfig,
                /// How queries pick entries.
                recall: RecallConfig,
            },
        }

        impl ProviderConfig {
            /// Its `kind` as written in the file.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(ProviderConfig::$variant(_) => $kind,)+
                    ProviderConfig::Vector { .. } => "vector",
                }
            }

            /// The storage backend it configures; `None` for a vector provider.
            pub fn backend(&self) -> Option<&dyn BackendConfig> {
                match self {
                    $(ProviderConfig::$variant(config) => Some(config),)+
                    ProviderConfig::Vector { .. } => None,
                }
            }
        }

        /// The kinds of storage backend, as written in the file.
        pub(crate) const STORAGE_KINDS: &[&str] = &[$($kind),+];

        /// A provider table as the file writes it.
        #[derive(Deserialize)]
        #[serde(tag = "kind")]
        pub(crate) enum RawProvider {
            $(#[serde(rename = $kind)] $variant($config),)+
            #[serde(rename = "vector")]
            Vector(RawVector),
        }

        impl RawProvider {
            /// A storage backend's table as its configuration, still to resolve; `None` for
            /// a vector provider.
            pub(crate) fn storage(&self) -> Option<ProviderConfig> {
                match self {
                    $(RawProvider::$variant(config) => Some(ProviderConfig::$variant(config.clone())),)+
                    RawProvider::Vector(_) => None,
                }
            }
        }

        impl ProviderConfig {
            /// The storage backend it configures, to resolve its fields.
            pub(crate) fn backend_mut(&mut self) -> Option<&mut dyn BackendConfig> {
                match self {
                    $(ProviderConfig::$variant(config) => Some(config),)+
                    ProviderConfig::Vector { .. } => None,
                }
            }
        }
    };
}

storage_backends! {
    /// Markdown files under a root directory.
    Markdown(MarkdownConfig) = "markdown",
    /// PostgreSQL.
    Postgres(PostgresConfig) = "postgres",
    /// Redis.
    Redis(RedisConfig) = "redis",
}

/// A `kind = "vector"` table as the file writes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawVector {
    pub(crate) source: String,
    pub(crate) index_dir: Option<String>,
    pub(crate) model_dir: Option<String>,
    pub(crate) ort_library: Option<String>,
    #[serde(default)]
    pub(crate) recall: RecallConfig,
}
