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
//! // The identity map lives with the default provider.
//! let identity: Identity = "telegram:12345".parse()?;
//! memory.identities().await?.link(&identity, &ctx.user, false).await?;
//! assert_eq!(memory.resolve(&identity).await?, Some(ctx.user.clone()));
//! # Ok(())
//! # }
//! ```

mod config;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use memory_core::{
    Document, DocumentId, EventBus, Identity, IdentityMap, IfMatch, MemoryContext, MemoryError,
    MemoryProvider, MemoryUpdate, PersonalityId, Prefetch, Subscription, SyncReport, UserId,
};
use memory_markdown::MarkdownProvider;
use memory_postgres::PostgresProvider;
use memory_redis::RedisProvider;
use memory_tools::MemoryTools;
use memory_vector::{Embedder, VectorProvider};
use tokio::sync::OnceCell;

pub use config::{
    CONFIG_ENV, Config, DEFAULT_PROVIDER, McpConfig, PersonalityConfig, ProviderConfig, ROOT_ENV,
    default_root,
};

/// The providers of a [`Config`], connected on first use, and a [`MemoryProvider`] that routes
/// each call to the provider of the call's personality. Cheap to clone; clones share the
/// connections.
///
/// Routing rules:
/// - `prefetch` and `sync` go to the personality's provider. A configured personality's
///   `memory_scope` and caps replace the context's, and its `max_chars` caps the context's:
///   where memory lives and how large it may grow are the deployment's decisions, not the
///   caller's.
/// - `read` of a personality's own `MEMORY.md` goes to that personality's provider; every other
///   document (the global memory, users' profiles) to the default provider. `list` agrees with
///   `read`.
/// - `subscribe` sees the writes made through this handle.
#[derive(Clone)]
pub struct Memory {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    backends: BTreeMap<String, OnceCell<Backend>>,
    events: EventBus,
}

/// One connected provider, with the capabilities the wiring needs from its concrete type.
#[derive(Clone)]
struct Backend {
    provider: Arc<dyn MemoryProvider>,
    identities: Arc<dyn IdentityMap>,
    vector: Option<Arc<VectorProvider>>,
}

impl Backend {
    fn storage<P: MemoryProvider + IdentityMap + 'static>(provider: P) -> Backend {
        let provider = Arc::new(provider);
        Backend {
            provider: provider.clone(),
            identities: provider,
            vector: None,
        }
    }
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("providers", &self.inner.config.providers.keys())
            .field("default_provider", &self.inner.config.default_provider)
            .finish_non_exhaustive()
    }
}

impl Memory {
    /// The wiring of `config`. Connects nothing: each provider is opened on first use, so a
    /// provider that is down fails only the calls that need it.
    pub fn new(config: Config) -> Memory {
        let backends = config
            .providers
            .keys()
            .map(|name| (name.clone(), OnceCell::new()))
            .collect();
        Memory {
            inner: Arc::new(Inner {
                config,
                backends,
                events: EventBus::new(),
            }),
        }
    }

    /// The config it was built from.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// A context for `personality` speaking to `user`, with the personality's configured scope,
    /// caps and prefetch budget.
    pub fn context(&self, personality: PersonalityId, user: UserId) -> MemoryContext {
        let settings = self.inner.config.personality(&personality);
        MemoryContext::new(personality, user)
            .with_scope(settings.memory_scope)
            .with_budgets(settings.budgets)
            .with_max_chars(settings.max_chars)
    }

    /// The provider named `name`, connected.
    ///
    /// # Errors
    /// [`MemoryError::Config`] for a name that is not configured; whatever connecting fails
    /// with.
    pub async fn provider(&self, name: &str) -> Result<Arc<dyn MemoryProvider>, MemoryError> {
        Ok(self.backend(name).await?.provider.clone())
    }

    /// The provider `personality`'s documents are read and written through, connected.
    ///
    /// # Errors
    /// Whatever connecting it fails with.
    pub async fn provider_for(
        &self,
        personality: &PersonalityId,
    ) -> Result<Arc<dyn MemoryProvider>, MemoryError> {
        self.provider(self.inner.config.provider_of(personality))
            .await
    }

    /// The vector provider named `name`, connected.
    ///
    /// # Errors
    /// [`MemoryError::Config`] when `name` is not a configured vector provider.
    pub async fn vector(&self, name: &str) -> Result<Arc<VectorProvider>, MemoryError> {
        self.backend(name).await?.vector.clone().ok_or_else(|| {
            config_error(format!(
                "provider {name:?} is a {} provider, not a vector one",
                self.inner.config.providers[name].kind()
            ))
        })
    }

    /// The agent tools for one conversation of `personality` with `user`: on the personality's
    /// provider, with its scope and caps, and with `memory_search` when that provider can
    /// recall.
    ///
    /// # Errors
    /// Whatever connecting the personality's provider fails with.
    pub async fn tools(
        &self,
        personality: PersonalityId,
        user: UserId,
    ) -> Result<MemoryTools, MemoryError> {
        let backend = self
            .backend(self.inner.config.provider_of(&personality))
            .await?;
        let tools = MemoryTools::new(backend.provider.clone(), self.context(personality, user));
        Ok(match &backend.vector {
            Some(vector) => tools.with_recall(vector.clone()),
            None => tools,
        })
    }

    /// The identity map, kept with the default provider (with its source, for a vector one).
    ///
    /// # Errors
    /// Whatever connecting the default provider fails with.
    pub async fn identities(&self) -> Result<Arc<dyn IdentityMap>, MemoryError> {
        let default = &self.inner.config.default_provider;
        Ok(self.backend(default).await?.identities.clone())
    }

    /// The user `identity` is linked to, if any.
    ///
    /// # Errors
    /// Whatever the identity map fails with.
    pub async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        self.identities().await?.resolve(identity).await
    }

    async fn backend(&self, name: &str) -> Result<&Backend, MemoryError> {
        let cell = self.inner.backends.get(name).ok_or_else(|| {
            let names: Vec<&str> = self.inner.backends.keys().map(String::as_str).collect();
            config_error(format!(
                "no provider is named {name:?} (configured: {})",
                names.join(", ")
            ))
        })?;
        cell.get_or_try_init(|| self.connect(name)).await
    }

    async fn connect(&self, name: &str) -> Result<Backend, MemoryError> {
        Ok(match &self.inner.config.providers[name] {
            ProviderConfig::Markdown { root } => Backend::storage(MarkdownProvider::new(root)),
            ProviderConfig::Postgres(config) => {
                Backend::storage(PostgresProvider::connect(config).await?)
            }
            ProviderConfig::Redis(config) => {
                Backend::storage(RedisProvider::connect(config).await?)
            }
            ProviderConfig::Vector {
                source,
                index_dir,
                model,
                recall,
            } => {
                // Config parsing refuses a vector source, so this recursion is one level deep.
                let source = Box::pin(self.backend(source)).await?.clone();
                let model = model.clone();
                let embedder = tokio::task::spawn_blocking(move || Embedder::load(&model))
                    .await
                    .map_err(|err| MemoryError::unavailable("the embedding model", err))??;
                let vector = Arc::new(
                    VectorProvider::open(source.provider, index_dir, Arc::new(embedder), *recall)
                        .await?,
                );
                Backend {
                    provider: vector.clone(),
                    identities: source.identities,
                    vector: Some(vector),
                }
            }
        })
    }

    /// The provider of `personality` and the context with the personality's settings applied.
    async fn route(
        &self,
        ctx: &MemoryContext,
    ) -> Result<(Arc<dyn MemoryProvider>, MemoryContext), MemoryError> {
        let config = &self.inner.config;
        let mut ctx = ctx.clone();
        if let Some(settings) = config.personalities.get(&ctx.personality) {
            ctx.scope = settings.memory_scope;
            ctx.budgets = settings.budgets;
            ctx.max_chars = ctx.max_chars.min(settings.max_chars);
        }
        let provider = self.provider_for(&ctx.personality).await?;
        Ok((provider, ctx))
    }

    /// The provider that holds `document` for this wiring.
    fn holder_of(&self, document: &DocumentId) -> &str {
        let config = &self.inner.config;
        match document {
            DocumentId::PersonalityMemory { personality } => config.provider_of(personality),
            _ => &config.default_provider,
        }
    }
}

fn config_error(message: String) -> MemoryError {
    MemoryError::Config { message }
}

#[async_trait]
impl MemoryProvider for Memory {
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        let (provider, ctx) = self.route(ctx).await?;
        provider.prefetch(&ctx).await
    }

    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        let (provider, ctx) = self.route(ctx).await?;
        let report = provider.sync(&ctx, updates, if_match).await?;
        self.inner.events.publish(&report);
        Ok(report)
    }

    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        self.provider(self.holder_of(document))
            .await?
            .read(document)
            .await
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        let mut holders: Vec<&str> = vec![&self.inner.config.default_provider];
        holders.extend(
            self.inner
                .config
                .personalities
                .keys()
                .map(|p| self.inner.config.provider_of(p)),
        );
        holders.sort_unstable();
        holders.dedup();
        let mut documents = Vec::new();
        for name in holders {
            let held = self.provider(name).await?.list().await?;
            documents.extend(held.into_iter().filter(|id| self.holder_of(id) == name));
        }
        documents.sort();
        Ok(documents)
    }

    fn subscribe(&self) -> Subscription {
        self.inner.events.subscribe()
    }
}

/// The workspace README's Rust examples, compiled and run as doctests so they cannot rot. They
/// live here because this crate depends on every other one they use.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct WorkspaceReadme;
