//! The providers of a config, each connected on first use and shared by every clone of the
//! wiring: a provider that is down fails only the calls that need it.

use std::collections::BTreeMap;
use std::sync::Arc;

use memory_core::{IdentityMap, MemoryError, MemoryProvider, Recall};
#[cfg(feature = "recall")]
use memory_vector::{Embedder, VectorProvider};
use tokio::sync::OnceCell;

use crate::config::Config;
#[cfg(feature = "recall")]
use crate::config::ProviderConfig;

/// One connected provider, with the capabilities the wiring needs from its concrete type.
#[derive(Clone)]
pub(crate) struct Backend {
    /// The documents.
    pub(crate) provider: Arc<dyn MemoryProvider>,
    /// The identity map kept beside them (a vector provider's source's).
    pub(crate) identities: Arc<dyn IdentityMap>,
    /// The same provider as a vector provider, when it is one.
    #[cfg(feature = "recall")]
    pub(crate) vector: Option<Arc<VectorProvider>>,
}

impl Backend {
    /// What it recalls with, when it is a vector provider.
    pub(crate) fn recall(&self) -> Option<Arc<dyn Recall>> {
        #[cfg(feature = "recall")]
        if let Some(vector) = &self.vector {
            return Some(vector.clone());
        }
        None
    }
}

/// Each configured provider's connection, made by the first call that needs it.
pub(crate) struct Connections {
    cells: BTreeMap<String, OnceCell<Backend>>,
}

impl Connections {
    /// One unconnected cell per provider of `config`.
    pub(crate) fn of(config: &Config) -> Connections {
        let cells = config
            .providers
            .keys()
            .map(|name| (name.clone(), OnceCell::new()))
            .collect();
        Connections { cells }
    }

    /// The provider named `name` in `config`, connected.
    ///
    /// # Errors
    /// [`MemoryError::Config`] for a name that is not configured; whatever connecting fails
    /// with.
    pub(crate) async fn get(&self, config: &Config, name: &str) -> Result<&Backend, MemoryError> {
        let cell = self.cells.get(name).ok_or_else(|| {
            let names: Vec<&str> = self.cells.keys().map(String::as_str).collect();
            config_error(format!(
                "no provider is named {name:?} (configured: {})",
                names.join(", ")
            ))
        })?;
        cell.get_or_try_init(|| self.connect(config, name)).await
    }

    /// The providers connected so far.
    pub(crate) fn connected(&self) -> impl Iterator<Item = &Backend> {
        self.cells.values().filter_map(OnceCell::get)
    }

    async fn connect(&self, config: &Config, name: &str) -> Result<Backend, MemoryError> {
        let provider = &config.providers[name];
        #[cfg(feature = "recall")]
        if let ProviderConfig::Vector {
            source,
            index_dir,
            model,
            recall,
        } = provider
        {
            return self
                .connect_vector(config, source, index_dir, model, *recall)
                .await;
        }
        let opened = match provider.backend() {
            Some(backend) => backend.open().await?,
            None => return Err(config_error(format!("{name:?} is no storage backend"))),
        };
        Ok(Backend {
            provider: opened.provider,
            identities: opened.identities,
            #[cfg(feature = "recall")]
            vector: None,
        })
    }

    /// A vector provider over the provider named `source`.
    #[cfg(feature = "recall")]
    async fn connect_vector(
        &self,
        config: &Config,
        source: &str,
        index_dir: &std::path::Path,
        model: &memory_vector::ModelConfig,
        recall: memory_vector::RecallConfig,
    ) -> Result<Backend, MemoryError> {
        // Config parsing refuses a vector source, so this recursion is one level deep.
        let source = Box::pin(self.get(config, source)).await?.clone();
        let model = model.clone();
        let embedder = tokio::task::spawn_blocking(move || Embedder::load(&model))
            .await
            .map_err(|err| MemoryError::unavailable("the embedding model", err))??;
        let vector = Arc::new(
            VectorProvider::open(source.provider, index_dir, Arc::new(embedder), recall).await?,
        );
        Ok(Backend {
            provider: vector.clone(),
            identities: source.identities,
            vector: Some(vector),
        })
    }
}

/// A [`MemoryError::Config`] saying `message`.
pub(crate) fn config_error(message: String) -> MemoryError {
    MemoryError::Config { message }
}
