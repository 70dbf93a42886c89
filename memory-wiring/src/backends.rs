//! The storage backends a provider table can name, registered in one place: adding one is its
//! crate (with a [`memory_core::raw::BackendConfig`] for its configuration) and one line of
//! [`storage_backends!`] below, with the cargo feature that builds it.

use memory_core::raw::BackendConfig;
use memory_markdown::MarkdownConfig;
#[cfg(feature = "postgres")]
use memory_postgres::PostgresConfig;
#[cfg(feature = "redis")]
use memory_redis::RedisConfig;
#[cfg(feature = "recall")]
use memory_vector::{ModelConfig, ModelName, RecallConfig};
use serde::Deserialize;

/// Generates, from one list of `Variant(Config) = "kind"` lines (each but markdown built only
/// with its cargo feature): [`ProviderConfig`] with one variant per storage backend this build
/// has (and `Vector`, the recall index over one of them, with the `recall` feature), its
/// `kind()`, the backend behind each variant, the file's form the parser reads, and
/// [`feature_lacking`] for the kinds this build lacks.
macro_rules! storage_backends {
    ($($(#[$doc:meta])* $variant:ident($config:ty) = $kind:literal $(if feature $feature:literal)?,)+) => {
        /// How to build one named provider.
        #[derive(Debug, Clone)]
        pub enum ProviderConfig {
            $($(#[$doc])* $(#[cfg(feature = $feature)])? $variant($config),)+
            /// A recall index over another (non-vector) provider, which stays the source of
            /// truth.
            #[cfg(feature = "recall")]
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
                    $($(#[cfg(feature = $feature)])? ProviderConfig::$variant(_) => $kind,)+
                    #[cfg(feature = "recall")]
                    ProviderConfig::Vector { .. } => "vector",
                }
            }

            /// Whether it is a vector provider: one that recalls (`memory_search`, search over
            /// HTTP, prefetch with a query).
            pub fn recalls(&self) -> bool {
                #[cfg(feature = "recall")]
                if matches!(self, ProviderConfig::Vector { .. }) {
                    return true;
                }
                false
            }

            /// The storage backend it configures; `None` for a vector provider.
            pub fn backend(&self) -> Option<&dyn BackendConfig> {
                match self {
                    $($(#[cfg(feature = $feature)])? ProviderConfig::$variant(config) => Some(config),)+
                    #[cfg(feature = "recall")]
                    ProviderConfig::Vector { .. } => None,
                }
            }
        }

        /// The kinds of storage backend this build has, as written in the file.
        #[cfg(feature = "recall")]
        pub(crate) const STORAGE_KINDS: &[&str] = &[$($(#[cfg(feature = $feature)])? $kind),+];

        /// The cargo features of this crate that add provider kinds, each with whether this
        /// build has it. Markdown is always built.
        pub const FEATURES: &[(&str, bool)] = &[
            $($(($feature, cfg!(feature = $feature)),)?)+
            ("recall", cfg!(feature = "recall")),
        ];

        /// The cargo feature that builds the provider kind `kind`, when this build lacks it;
        /// `None` for a kind it has, or one that does not exist.
        pub(crate) fn feature_lacking(kind: &str) -> Option<&'static str> {
            match kind {
                $($(#[cfg(not(feature = $feature))] $kind => Some($feature),)?)+
                #[cfg(not(feature = "recall"))]
                "vector" => Some("recall"),
                _ => None,
            }
        }

        /// A provider table as the file writes it.
        #[derive(Deserialize)]
        #[serde(tag = "kind")]
        pub(crate) enum RawProvider {
            $($(#[cfg(feature = $feature)])? #[serde(rename = $kind)] $variant($config),)+
            #[cfg(feature = "recall")]
            #[serde(rename = "vector")]
            Vector(RawVector),
        }

        impl RawProvider {
            /// A storage backend's table as its configuration, still to resolve; `None` for
            /// a vector provider.
            pub(crate) fn storage(&self) -> Option<ProviderConfig> {
                match self {
                    $($(#[cfg(feature = $feature)])? RawProvider::$variant(config) => Some(ProviderConfig::$variant(config.clone())),)+
                    #[cfg(feature = "recall")]
                    RawProvider::Vector(_) => None,
                }
            }
        }

        impl ProviderConfig {
            /// The storage backend it configures, to resolve its fields.
            pub(crate) fn backend_mut(&mut self) -> Option<&mut dyn BackendConfig> {
                match self {
                    $($(#[cfg(feature = $feature)])? ProviderConfig::$variant(config) => Some(config),)+
                    #[cfg(feature = "recall")]
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
    Postgres(PostgresConfig) = "postgres" if feature "postgres",
    /// Redis.
    Redis(RedisConfig) = "redis" if feature "redis",
}

/// A `kind = "vector"` table as the file writes it.
#[cfg(feature = "recall")]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawVector {
    pub(crate) source: String,
    pub(crate) index_dir: Option<String>,
    #[serde(default)]
    pub(crate) model: ModelName,
    pub(crate) model_dir: Option<String>,
    pub(crate) ort_library: Option<String>,
    #[serde(default)]
    pub(crate) recall: RecallConfig,
}

/// What to do to get a build with `feature`, for messages that refuse what this build lacks.
pub fn rebuild_with(feature: &str) -> String {
    format!(
        "rebuild with the cargo feature {feature:?} (the memory command, in a checkout of agent-memory: cargo install --locked --path memory-cli --features {feature})"
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use memory_core::MemoryError;

    use crate::Config;

    /// Each kind behind a feature, with whether this build has it: a build lacking one refuses
    /// a file naming it (at the line of its `kind`, naming the feature); one having it does not.
    #[test]
    fn a_kind_this_build_lacks_is_refused_naming_its_feature() {
        for (kind, feature, built) in [
            ("postgres", "postgres", cfg!(feature = "postgres")),
            ("redis", "redis", cfg!(feature = "redis")),
            ("vector", "recall", cfg!(feature = "recall")),
        ] {
            assert_eq!(super::feature_lacking(kind), (!built).then_some(feature));
            let text = format!(
                "[providers.files]\nkind = \"markdown\"\nroot = \"m\"\n\n[providers.other]\nkind = \"{kind}\"\nurl = \"x\"\n"
            );
            let parsed = Config::parse(&text, Path::new("memory.toml"));
            let lacking = format!("this build has no {kind} provider");
            match parsed {
                Err(MemoryError::Config { message }) if !built => {
                    assert!(message.starts_with("memory.toml:6: "), "{message}");
                    assert!(message.contains(&lacking), "{message}");
                    assert!(
                        message.contains(&format!("--features {feature}")),
                        "{message}"
                    );
                }
                Err(MemoryError::Config { message }) => {
                    assert!(!message.contains(&lacking), "{message}")
                }
                other => assert!(built, "{kind}: {other:?}"),
            }
        }
        assert_eq!(super::feature_lacking("markdown"), None);
        assert_eq!(super::feature_lacking("sqlite"), None, "not a kind at all");
    }
}
