//! What the wiring needs of a storage backend's configuration: the one trait a backend crate
//! implements for `memory.toml` to name it (`kind = "..."`), beside one line in the wiring's
//! registration list.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;

use crate::error::MemoryError;
use crate::identity::IdentityMap;
use crate::provider::MemoryProvider;

/// A backend opened from its configuration: the provider, and its identity map (usually the
/// same value).
pub struct Opened {
    /// The documents.
    pub provider: Arc<dyn MemoryProvider>,
    /// The identity map kept beside them.
    pub identities: Arc<dyn IdentityMap>,
}

impl Opened {
    /// A provider that is its own identity map.
    pub fn of<P: MemoryProvider + IdentityMap + 'static>(provider: P) -> Opened {
        let provider = Arc::new(provider);
        Opened {
            provider: provider.clone(),
            identities: provider,
        }
    }
}

/// How the wiring resolves the text of a configuration's fields as the file wrote them.
pub trait ResolveFields {
    /// `value` of field `key` with each `${VAR}` replaced by the environment variable (for
    /// secrets kept out of the file).
    ///
    /// # Errors
    /// [`MemoryError::Config`] naming the file, line and variable when one is unset.
    fn text(&mut self, key: &str, value: &mut String) -> Result<(), MemoryError>;

    /// `value` of field `key` as [`ResolveFields::text`], then `~/` as the home directory and
    /// a relative path as relative to the configuration file's folder.
    ///
    /// # Errors
    /// As [`ResolveFields::text`].
    fn path(&mut self, key: &str, value: &mut PathBuf) -> Result<(), MemoryError>;
}

/// A storage backend's configuration, as a provider table of `memory.toml` gives it
/// (deserialized from the table, `kind` aside).
#[async_trait]
pub trait BackendConfig: Send + Sync {
    /// Resolves the fields that hold text from the file: `${VAR}`s in URLs, paths.
    ///
    /// # Errors
    /// Whatever `fields` fails with.
    fn resolve(&mut self, fields: &mut dyn ResolveFields) -> Result<(), MemoryError>;

    /// Where a recall index over this backend goes when its configuration does not say
    /// (markdown: beside the files); `None` when it must say.
    fn default_index_dir(&self) -> Option<PathBuf> {
        None
    }

    /// Connects (or opens) the backend.
    ///
    /// # Errors
    /// [`MemoryError::Config`] for a configuration it cannot use; [`MemoryError::Unavailable`]
    /// when its storage cannot be reached.
    async fn open(&self) -> Result<Opened, MemoryError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::InMemoryIdentityMap;
    use crate::reference::InMemoryProvider;

    /// A backend that says nothing of where a recall index goes.
    struct Silent;

    #[async_trait]
    impl BackendConfig for Silent {
        fn resolve(&mut self, _: &mut dyn ResolveFields) -> Result<(), MemoryError> {
            Ok(())
        }

        async fn open(&self) -> Result<Opened, MemoryError> {
            Ok(Opened {
                provider: Arc::new(InMemoryProvider::new()),
                identities: Arc::new(InMemoryIdentityMap::default()),
            })
        }
    }

    /// Unless a backend says, a recall index over it has no default home: its configuration
    /// must name one (an empty path would put the index in the working directory).
    #[test]
    fn a_backend_gives_no_index_dir_unless_it_says() {
        assert_eq!(Silent.default_index_dir(), None);
    }
}
