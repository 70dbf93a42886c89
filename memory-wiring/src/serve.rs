//! The wiring served over HTTP (the `serve` feature): [`Memory`] is a memory-web
//! [`Deployment`], and the `[serve]` table of `memory.toml` its [`Settings`].

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::{
    DocumentId, IdentityMap, MemoryContext, MemoryError, MemoryProvider, PersonalityId, Recall,
    Store, UserId,
};
use memory_web::{Deployment, Placement, ProviderInfo, Settings};

use crate::Memory;
use crate::config::{Config, ServeTable};

impl ServeTable {
    /// The service's settings this table gives ([`Settings::from_toml`]); the defaults when
    /// the file has none.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    ///
    /// use memory_web::{Access, Service};
    /// use memory_wiring::{Config, Memory};
    ///
    /// let config = Config::load(None)?;
    /// let settings = config.serve.settings()?;
    /// let address: std::net::SocketAddr = "127.0.0.1:8700".parse()?;
    /// let access = Access::new(address, &settings, None)?;
    /// let listener = tokio::net::TcpListener::bind(address).await?;
    /// Service::new(Arc::new(Memory::new(config)), &settings, access, false)
    ///     .serve(listener, std::future::pending())
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`MemoryError::Config`] starting `<file>:<line>:` naming the setting at fault: a key's
    /// mistake at the key's own line, a limit's at the table's.
    pub fn settings(&self) -> Result<Settings, MemoryError> {
        match self.written() {
            None => Ok(Settings::default()),
            Some(written) => Settings::from_toml(written.text)
                .map_err(|err| written.error(err.span, &err.message)),
        }
    }
}

/// The wiring of `memory.toml`: each personality with its configured settings, each document
/// in its home, recall through vector providers.
#[async_trait]
impl Deployment for Memory {
    fn memory(&self) -> Arc<dyn MemoryProvider> {
        Arc::new(self.clone())
    }

    fn context(&self, personality: PersonalityId, user: UserId) -> MemoryContext {
        Memory::context(self, personality, user)
    }

    fn writing(&self, document: &DocumentId) -> Result<(MemoryContext, Store), MemoryError> {
        Memory::writing(self, document)
    }

    fn personalities(&self) -> Vec<PersonalityId> {
        self.config().personalities.keys().cloned().collect()
    }

    fn defaults(&self) -> (Option<PersonalityId>, Option<UserId>) {
        let mcp = &self.config().mcp;
        (mcp.personality.clone(), mcp.user.clone())
    }

    fn providers(&self) -> Vec<ProviderInfo> {
        let config = self.config();
        config
            .providers
            .keys()
            .map(|name| info(config, name))
            .collect()
    }

    fn placement(&self, personality: &PersonalityId) -> Placement {
        let config = self.config();
        Placement {
            scope: config.personality(personality).memory_scope,
            provider: info(config, config.provider_of(personality)),
            memory_through: info(config, config.memory_provider_of(personality)),
        }
    }

    async fn probe(&self, name: &str) -> Result<(), MemoryError> {
        let storage = self.config().storage_of(name);
        self.provider(storage)
            .await?
            .read(&DocumentId::GlobalMemory)
            .await
            .map(drop)
    }

    async fn recall(
        &self,
        personality: &PersonalityId,
    ) -> Result<Option<Arc<dyn Recall>>, MemoryError> {
        self.recall_of(personality).await
    }

    async fn identities(&self) -> Result<Arc<dyn IdentityMap>, MemoryError> {
        Memory::identities(self).await
    }
}

/// The provider named `name` in `config`.
fn info(config: &Config, name: &str) -> ProviderInfo {
    let provider = &config.providers[name];
    ProviderInfo {
        name: name.to_owned(),
        kind: provider.kind().to_owned(),
        recalls: provider.recalls(),
    }
}
