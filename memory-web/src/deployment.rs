//! What the service serves: a memory provider, and what its deployment says about it (each
//! personality's settings, where its memory is kept and recalled, the identity map). The
//! wiring of `memory.toml` is one deployment; [`Standalone`] makes one of any provider built in
//! code.

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::{
    DocumentId, IdentityMap, MemoryContext, MemoryError, MemoryProvider, MemoryScope,
    PersonalityId, Recall, Store, UserId,
};
use memory_tools::MemoryTools;

/// One provider of a deployment, as the directory and the health checks show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderInfo {
    /// Its name (in `memory.toml`, the provider's table).
    pub name: String,
    /// Its kind: `markdown`, `postgres`, `redis` or `vector`, or what a program serving its
    /// own provider calls it.
    pub kind: String,
    /// Whether it recalls: a prefetch with a query picks entries, and search works.
    pub recalls: bool,
}

/// Where one personality's memory is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Its own `MEMORY.md` or the global one.
    pub scope: MemoryScope,
    /// The provider the personality uses.
    pub provider: ProviderInfo,
    /// The provider its `MEMORY.md` is read and written through: its own, or the one keeping
    /// the global `MEMORY.md` when its scope is global.
    pub memory_through: ProviderInfo,
}

/// What [`Service`](crate::Service) serves: the memory, and what the deployment says about it.
///
/// The wiring of `memory.toml` (`memory_wiring::Memory`, with its `serve` feature) is one;
/// [`Standalone`] is one for any provider built in code. The methods with defaults are what a deployment that
/// configures nothing answers: every personality with the contract's default context, none
/// listed before it holds a document, no default conversation.
#[async_trait]
pub trait Deployment: Send + Sync {
    /// The memory every document operation goes through.
    fn memory(&self) -> Arc<dyn MemoryProvider>;

    /// A context for `personality` speaking to `user`, with the settings the deployment gives
    /// the personality (scope, caps, prefetch budget).
    fn context(&self, personality: PersonalityId, user: UserId) -> MemoryContext {
        MemoryContext::new(personality, user)
    }

    /// A context that writes `document`, named by its path, with its owner's settings.
    ///
    /// # Errors
    /// [`MemoryError::Misrouted`] when the deployment sends that document's writes elsewhere.
    fn writing(&self, document: &DocumentId) -> Result<(MemoryContext, Store), MemoryError> {
        Ok(MemoryContext::writing(document))
    }

    /// The personalities the deployment configures, listed even before they hold a document
    /// (as are [`Deployment::defaults`]).
    fn personalities(&self) -> Vec<PersonalityId> {
        Vec::new()
    }

    /// The personality and user a client opens when it names none (`[mcp]` in
    /// `memory.toml`).
    fn defaults(&self) -> (Option<PersonalityId>, Option<UserId>) {
        (None, None)
    }

    /// Every provider, each one probed by the health checks.
    fn providers(&self) -> Vec<ProviderInfo>;

    /// Where `personality`'s memory is kept.
    fn placement(&self, personality: &PersonalityId) -> Placement;

    /// Reads one document from the storage of the provider named `name` (one of
    /// [`Deployment::providers`]), to tell whether it answers.
    ///
    /// # Errors
    /// Whatever connecting or reading fails with.
    async fn probe(&self, name: &str) -> Result<(), MemoryError>;

    /// What `personality`'s `MEMORY.md` is recalled with: `None` when it is read through a
    /// provider that does not recall (which is then not connected).
    ///
    /// # Errors
    /// Whatever connecting the provider fails with.
    async fn recall(
        &self,
        personality: &PersonalityId,
    ) -> Result<Option<Arc<dyn Recall>>, MemoryError>;

    /// The identity map: platform accounts linked to users.
    ///
    /// # Errors
    /// Whatever connecting the provider keeping it fails with.
    async fn identities(&self) -> Result<Arc<dyn IdentityMap>, MemoryError>;
}

/// The memory tools of one conversation of `personality` with `user` in `deployment`, with
/// `memory_search` when its `MEMORY.md` is recalled.
///
/// # Errors
/// Whatever connecting the provider of its `MEMORY.md` fails with.
pub async fn tools(
    deployment: &dyn Deployment,
    personality: PersonalityId,
    user: UserId,
) -> Result<MemoryTools, MemoryError> {
    let recall = deployment.recall(&personality).await?;
    Ok(
        MemoryTools::new(deployment.memory(), deployment.context(personality, user))
            .maybe_with_recall(recall),
    )
}

/// A deployment of one provider built in code: every personality with the contract's default
/// context, the identity map given, recall if given.
///
/// The crate's documentation serves one over a markdown provider.
#[derive(Clone)]
pub struct Standalone {
    memory: Arc<dyn MemoryProvider>,
    identities: Arc<dyn IdentityMap>,
    recall: Option<Arc<dyn Recall>>,
    info: ProviderInfo,
}

impl Standalone {
    /// `memory`, with `identities` as its identity map (a store usually keeps both: pass it
    /// twice), shown as provider `memory` of kind `custom`.
    pub fn new(memory: Arc<dyn MemoryProvider>, identities: Arc<dyn IdentityMap>) -> Standalone {
        Standalone {
            memory,
            identities,
            recall: None,
            info: ProviderInfo {
                name: "memory".to_owned(),
                kind: "custom".to_owned(),
                recalls: false,
            },
        }
    }

    /// Recalls every `MEMORY.md` with `recall` (search, prefetch with a query).
    #[must_use]
    pub fn with_recall(mut self, recall: Arc<dyn Recall>) -> Standalone {
        self.recall = Some(recall);
        self.info.recalls = true;
        self
    }

    /// Shows the provider under `name` and `kind` (in the directory and the health checks).
    #[must_use]
    pub fn named(mut self, name: impl Into<String>, kind: impl Into<String>) -> Standalone {
        self.info.name = name.into();
        self.info.kind = kind.into();
        self
    }
}

impl std::fmt::Debug for Standalone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Standalone")
            .field("provider", &self.info)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Deployment for Standalone {
    fn memory(&self) -> Arc<dyn MemoryProvider> {
        Arc::clone(&self.memory)
    }

    fn providers(&self) -> Vec<ProviderInfo> {
        vec![self.info.clone()]
    }

    fn placement(&self, _personality: &PersonalityId) -> Placement {
        Placement {
            scope: MemoryScope::default(),
            provider: self.info.clone(),
            memory_through: self.info.clone(),
        }
    }

    /// Its one provider, whatever the name.
    async fn probe(&self, _name: &str) -> Result<(), MemoryError> {
        self.memory.read(&DocumentId::GlobalMemory).await.map(drop)
    }

    async fn recall(
        &self,
        _personality: &PersonalityId,
    ) -> Result<Option<Arc<dyn Recall>>, MemoryError> {
        Ok(self.recall.clone())
    }

    async fn identities(&self) -> Result<Arc<dyn IdentityMap>, MemoryError> {
        Ok(Arc::clone(&self.identities))
    }
}
