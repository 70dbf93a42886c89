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

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use memory_core::raw::{EventBus, Receipts, plan_sync, revert_by_replace};
use memory_core::{
    Document, DocumentId, DocumentReport, Identity, IdentityMap, IfMatch, MemoryContext,
    MemoryError, MemoryProvider, MemoryScope, MemoryUpdate, PersonalityId, Prefetch, Purged,
    Recall, Revision, Store, Subscription, Surface, SyncReport, UserId, Version, is_blank,
};
use memory_tools::MemoryTools;
#[cfg(feature = "recall")]
use memory_vector::{Embedder, VectorProvider};
use tokio::sync::OnceCell;

pub use backends::FEATURES;
pub use config::{
    CONFIG_ENV, Config, DEFAULT_PROVIDER, McpConfig, PersonalityConfig, ProviderConfig, ROOT_ENV,
    ServeTable, default_root,
};

/// What to do to get a build with `feature`, for messages that refuse what this build lacks.
pub fn rebuild_with(feature: &str) -> String {
    format!(
        "rebuild with the cargo feature {feature:?} (the memory command, in a checkout of agent-memory: cargo install --locked --path memory-cli --features {feature})"
    )
}

/// The providers of a [`Config`], connected on first use, and a [`MemoryProvider`] that routes
/// each call to where its documents live. Cheap to clone; clones share the connections.
///
/// One home per document ([`Config::home_of`]): a personality's `MEMORY.md` lives in that
/// personality's provider; every `USER.md`, the global `MEMORY.md` and the identity map live in
/// the users provider, whatever the personality, so the agent of any personality and the person
/// reading the files see one and the same document. Every call resolves where its documents live
/// once ([`Config::provider_for`]) and goes there:
/// - `prefetch` and `sync` use the personality's settings: a configured personality's
///   `memory_scope` and caps replace the context's, and its `max_chars` caps the context's
///   (where memory lives and how large it may grow are the deployment's decisions, not the
///   caller's).
/// - A `sync` whose two documents live in different providers checks every refusal (malformed
///   updates, `if_match`, caps, edits that match nothing) against both before it writes
///   either, then writes `MEMORY.md` first; if writing `USER.md` then fails, the error is
///   [`MemoryError::PartiallyApplied`] naming what landed.
/// - `read` and `list` go to each document's home; reads that need no recall (`read`, `list`,
///   `prefetch` without a query) go to the provider storing its bytes, so a recall provider's
///   model is loaded only by what needs it.
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
    #[cfg(feature = "recall")]
    vector: Option<Arc<VectorProvider>>,
}

impl Backend {
    /// What it recalls with, when it is a vector provider.
    fn recall(&self) -> Option<Arc<dyn Recall>> {
        #[cfg(feature = "recall")]
        if let Some(vector) = &self.vector {
            return Some(vector.clone());
        }
        None
    }
}

/// Where the two documents of one call live, resolved once for the call.
struct Route<'a> {
    /// The call's context with the personality's settings applied.
    ctx: MemoryContext,
    /// The provider its `MEMORY.md` is read and written through.
    memory: &'a str,
    /// The provider its `USER.md` is read and written through.
    user: &'a str,
}

impl Route<'_> {
    fn provider_of(&self, store: Store) -> &str {
        match store {
            Store::Memory => self.memory,
            Store::User => self.user,
        }
    }
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("providers", &self.inner.config.providers.keys())
            .field("default_provider", &self.inner.config.default_provider)
            .field("users_provider", &self.inner.config.users_provider)
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

    /// A context that writes `document`, named by its path (the command line, the HTTP API),
    /// through the wiring: with its owner's settings, its other id a placeholder that
    /// revisions do not record.
    ///
    /// # Errors
    /// [`MemoryError::Misrouted`] for a personality's own `MEMORY.md` when the config gives the
    /// personality global scope: its writes go to the global `MEMORY.md`, never this file.
    pub fn writing(&self, document: &DocumentId) -> Result<(MemoryContext, Store), MemoryError> {
        let (ctx, store) = MemoryContext::writing(document);
        if let DocumentId::PersonalityMemory { personality } = document
            && self.inner.config.personality(personality).memory_scope == MemoryScope::Global
        {
            return Err(MemoryError::Misrouted {
                document: document.clone(),
                routed: DocumentId::GlobalMemory,
                personality: personality.clone(),
            });
        }
        Ok((ctx, store))
    }

    /// The provider named `name`, connected.
    ///
    /// # Errors
    /// [`MemoryError::Config`] for a name that is not configured; whatever connecting fails
    /// with.
    pub async fn provider(&self, name: &str) -> Result<Arc<dyn MemoryProvider>, MemoryError> {
        Ok(self.backend(name).await?.provider.clone())
    }

    /// The vector provider named `name`, connected.
    ///
    /// # Errors
    /// [`MemoryError::Config`] when `name` is not a configured vector provider.
    #[cfg(feature = "recall")]
    pub async fn vector(&self, name: &str) -> Result<Arc<VectorProvider>, MemoryError> {
        self.backend(name).await?.vector.clone().ok_or_else(|| {
            config_error(format!(
                "provider {name:?} is a {} provider, not a vector one",
                self.inner.config.providers[name].kind()
            ))
        })
    }

    /// The recall of the provider named `name`, connected: `None` unless it is a vector
    /// provider ([`ProviderConfig::recalls`]).
    ///
    /// # Errors
    /// [`MemoryError::Config`] for a name that is not configured; whatever connecting fails
    /// with.
    pub async fn recall(&self, name: &str) -> Result<Option<Arc<dyn Recall>>, MemoryError> {
        Ok(self.backend(name).await?.recall())
    }

    /// The agent tools for one conversation of `personality` with `user`: through this
    /// handle (so each document goes to its home), with the personality's scope and caps, and
    /// with `memory_search` when its `MEMORY.md` is read through a vector provider.
    ///
    /// # Errors
    /// Whatever connecting that vector provider fails with; any other provider is connected
    /// by the tools' first call that needs it.
    pub async fn tools(
        &self,
        personality: PersonalityId,
        user: UserId,
    ) -> Result<MemoryTools, MemoryError> {
        let recall = self.recall_of(&personality).await?;
        Ok(
            MemoryTools::new(Arc::new(self.clone()), self.context(personality, user))
                .maybe_with_recall(recall),
        )
    }

    /// What `personality`'s `MEMORY.md` is recalled with: the recall of the provider it is
    /// read through, connected only when that is a vector provider; else `None`.
    ///
    /// # Errors
    /// Whatever connecting that provider fails with.
    pub async fn recall_of(
        &self,
        personality: &PersonalityId,
    ) -> Result<Option<Arc<dyn Recall>>, MemoryError> {
        let config = &self.inner.config;
        let through = config.memory_provider_of(personality);
        if !config.providers[through].recalls() {
            return Ok(None);
        }
        self.recall(through).await
    }

    /// The identity map, kept in the users provider beside every `USER.md` (with its source,
    /// for a vector one).
    ///
    /// # Errors
    /// Whatever connecting the users provider fails with.
    pub async fn identities(&self) -> Result<Arc<dyn IdentityMap>, MemoryError> {
        self.identities_of(&self.inner.config.users_provider).await
    }

    /// The identity map kept by the provider named `name` (its source's, for a vector one):
    /// what `memory migrate` copies.
    ///
    /// # Errors
    /// [`MemoryError::Config`] for a name that is not configured; whatever connecting fails
    /// with.
    pub async fn identities_of(&self, name: &str) -> Result<Arc<dyn IdentityMap>, MemoryError> {
        // From the provider storing it: a recall provider's model is not needed for links.
        let storage = self.inner.config.storage_of(name);
        Ok(self.backend(storage).await?.identities.clone())
    }

    /// The user `identity` is linked to, if any.
    ///
    /// # Errors
    /// Whatever the identity map fails with.
    pub async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        self.identities().await?.resolve(identity).await
    }

    /// Waits for the work providers do after acknowledging a write (a recall index catching up
    /// with its source) and returns the warnings of what failed. A short-lived process (a CLI
    /// command, a hook) calls it before exiting; nothing is lost if it does not, since the next
    /// query catches up.
    pub async fn settle(&self) -> Vec<String> {
        #[cfg_attr(not(feature = "recall"), allow(unused_mut))]
        let mut warnings = Vec::new();
        #[cfg(feature = "recall")]
        for cell in self.inner.backends.values() {
            if let Some(vector) = cell.get().and_then(|backend| backend.vector.as_ref()) {
                warnings.extend(vector.settle().await);
            }
        }
        warnings
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
        let config = &self.inner.config.providers[name];
        #[cfg(feature = "recall")]
        if let ProviderConfig::Vector {
            source,
            index_dir,
            model,
            recall,
        } = config
        {
            return self.connect_vector(source, index_dir, model, *recall).await;
        }
        let opened = match config.backend() {
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
        source: &str,
        index_dir: &std::path::Path,
        model: &memory_vector::ModelConfig,
        recall: memory_vector::RecallConfig,
    ) -> Result<Backend, MemoryError> {
        // Config parsing refuses a vector source, so this recursion is one level deep.
        let source = Box::pin(self.backend(source)).await?.clone();
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

    /// Where the documents of `ctx` live, with the personality's settings applied to it.
    fn route(&self, ctx: &MemoryContext) -> Route<'_> {
        let config = &self.inner.config;
        let mut ctx = ctx.clone();
        if let Some(settings) = config.personalities.get(&ctx.personality) {
            ctx.scope = settings.memory_scope;
            ctx.budgets = settings.budgets.tightest(ctx.budgets);
            ctx.max_chars = ctx.max_chars.min(settings.max_chars);
        }
        let through = |store| config.provider_for(&ctx.personality, &ctx.document(store));
        let (memory, user) = (through(Store::Memory), through(Store::User));
        Route { ctx, memory, user }
    }

    /// A call whose two documents live in different providers. Every refusal of both is
    /// checked against what they hold now before anything is written; then each provider
    /// writes its own, `MEMORY.md` first. Only a writer changing a document between the check
    /// and its write can fail the second after the first landed: that is
    /// [`MemoryError::PartiallyApplied`], and repeating the call with the same idempotency key
    /// completes it (the part that landed is not checked or written again).
    async fn sync_apart(
        &self,
        route: &Route<'_>,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        let batches = plan_sync(&route.ctx, updates, if_match)?;
        let mut parts = Vec::with_capacity(batches.len());
        for batch in &batches {
            let store = batch.document().store();
            let provider = self.provider(route.provider_of(store)).await?;
            let receipts = match batch.key() {
                Some(_) => provider.receipts(batch.document()).await?,
                None => Receipts::default(),
            };
            batch.plan(provider.read(batch.document()).await?, &receipts)?;
            parts.push((store, provider));
        }
        let mut report = SyncReport::default();
        for (store, provider) in parts {
            let positions: Vec<usize> = (0..updates.len())
                .filter(|&i| updates[i].store() == store)
                .collect();
            let mine: Vec<MemoryUpdate> = positions.iter().map(|&i| updates[i].clone()).collect();
            let guard = IfMatch::only(store, if_match.for_store(store).cloned());
            match provider.sync(&route.ctx, &mine, &guard).await {
                Ok(part) => {
                    report.documents.extend(part.documents);
                    report.warnings.extend(part.warnings);
                    report.retries += part.retries;
                }
                Err(err) => {
                    let err = renumber(err, &positions);
                    let landed: Vec<DocumentReport> = report
                        .documents
                        .into_iter()
                        .filter(|document| document.written)
                        .collect();
                    return Err(if landed.is_empty() {
                        err
                    } else {
                        MemoryError::PartiallyApplied {
                            landed,
                            source: Box::new(err),
                        }
                    });
                }
            }
        }
        Ok(report)
    }

    /// The prefetch of a call whose two documents live in different providers: `MEMORY.md` as
    /// its provider renders it (recalled for the query, through a vector provider), `USER.md`
    /// in full from its home.
    async fn prefetch_apart(&self, route: &Route<'_>) -> Result<Prefetch, MemoryError> {
        let ctx = &route.ctx;
        let query = ctx.query.as_deref().filter(|query| !is_blank(query));
        let through = self.backend(route.memory).await?;
        let user_home = self.provider(route.user).await?;
        let (memory, user) = (ctx.document(Store::Memory), ctx.document(Store::User));
        let user = user_home.read(&user);
        let (mut prefetch, user) = match (query, through) {
            #[cfg(feature = "recall")]
            (
                Some(query),
                Backend {
                    vector: Some(vector),
                    ..
                },
            ) => {
                let recalled = vector.recalled_memory(&memory, query);
                let (memory, user) = tokio::try_join!(recalled, user)?;
                (memory.prefetch(ctx, &user), user)
            }
            _ => {
                let (memory, user) = tokio::try_join!(through.provider.read(&memory), user)?;
                (Prefetch::from_documents(ctx, &memory, &user), user)
            }
        };
        prefetch
            .warnings
            .extend(self.stray_copy(route, &user).await);
        Ok(prefetch)
    }

    /// A warning when the personality's own provider holds another, non-blank copy of
    /// `profile` (written there before profiles had one home, or before `users_provider`
    /// changed): the agent does not read it, so it must be merged, not silently hidden. A copy
    /// that cannot be read is no reason to fail the prefetch.
    async fn stray_copy(&self, route: &Route<'_>, profile: &Document) -> Option<String> {
        let config = &self.inner.config;
        let own = config.storage_of(route.memory);
        let copy = self
            .provider(own)
            .await
            .ok()?
            .read(&profile.id)
            .await
            .ok()?;
        (!is_blank(&copy.text) && copy.text != profile.text).then(|| {
            format!(
                "{} also has a copy in provider {own:?} ({}), which the agent does not read: \
                 profiles live in {:?} ({}); merge the copy into it, e.g. with `memory migrate \
                 --from {own} --to {}`",
                profile.id,
                copy.location,
                config.users_provider,
                profile.location,
                config.users_provider
            )
        })
    }
}

fn config_error(message: String) -> MemoryError {
    MemoryError::Config { message }
}

/// `err`, about update `i` of a part of a call, renumbered to that update's position in the
/// whole call (`positions[i]`), which is how errors name updates.
fn renumber(err: MemoryError, positions: &[usize]) -> MemoryError {
    let at = |index: usize| positions.get(index).copied().unwrap_or(index);
    match err {
        MemoryError::InvalidUpdate {
            index,
            document,
            reason,
        } => MemoryError::InvalidUpdate {
            index: at(index),
            document,
            reason,
        },
        MemoryError::NoMatch {
            index,
            document,
            old,
        } => MemoryError::NoMatch {
            index: at(index),
            document,
            old,
        },
        MemoryError::AmbiguousMatch {
            index,
            document,
            old,
            count,
        } => MemoryError::AmbiguousMatch {
            index: at(index),
            document,
            old,
            count,
        },
        other => other,
    }
}

#[async_trait]
impl MemoryProvider for Memory {
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        let mut route = self.route(ctx);
        if route.ctx.query.as_deref().is_none_or(is_blank) {
            // Without a query every provider renders exactly what its storage holds: read it
            // there, so a recall provider's model is not needed (nor loaded) for that.
            let config = &self.inner.config;
            route.memory = config.storage_of(route.memory);
            route.user = config.storage_of(route.user);
        }
        if route.memory != route.user {
            return self.prefetch_apart(&route).await;
        }
        self.provider(route.memory)
            .await?
            .prefetch(&route.ctx)
            .await
    }

    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        let route = self.route(ctx);
        let touches = |store| updates.iter().any(|update| update.store() == store);
        let synced = match (touches(Store::Memory), touches(Store::User)) {
            (true, true) if route.memory != route.user => {
                self.sync_apart(&route, updates, if_match).await
            }
            // One document, or both in one provider: that provider checks and writes it all.
            (false, true) => {
                let provider = self.provider(route.user).await?;
                provider.sync(&route.ctx, updates, if_match).await
            }
            _ => {
                let provider = self.provider(route.memory).await?;
                provider.sync(&route.ctx, updates, if_match).await
            }
        };
        match &synced {
            Ok(report) => self.inner.events.publish(report),
            // What landed is announced like any write, though the call failed.
            Err(MemoryError::PartiallyApplied { landed, .. }) => {
                self.inner.events.publish(&SyncReport {
                    documents: landed.clone(),
                    ..SyncReport::default()
                });
            }
            Err(_) => {}
        }
        synced
    }

    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        // From the provider that stores its bytes: a recall provider's model is not needed to
        // read a document whole.
        let config = &self.inner.config;
        let storage = config.storage_of(config.home_of(document));
        self.provider(storage).await?.read(document).await
    }

    async fn receipts(&self, document: &DocumentId) -> Result<Receipts, MemoryError> {
        let config = &self.inner.config;
        let storage = config.storage_of(config.home_of(document));
        self.provider(storage).await?.receipts(document).await
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        let config = &self.inner.config;
        let mut stores: Vec<&str> = [&config.users_provider, &config.default_provider]
            .into_iter()
            .map(String::as_str)
            .chain(config.personalities.keys().map(|p| config.provider_of(p)))
            .map(|name| config.storage_of(name))
            .collect();
        stores.sort_unstable();
        stores.dedup();
        let mut documents = Vec::new();
        for storage in stores {
            let held = self.provider(storage).await?.list().await?;
            documents.extend(
                held.into_iter()
                    .filter(|id| config.storage_of(config.home_of(id)) == storage),
            );
        }
        documents.sort();
        Ok(documents)
    }

    /// From the provider that stores the document's bytes, as `read`: a recall provider keeps
    /// no history of its own.
    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<Vec<Revision>, MemoryError> {
        let config = &self.inner.config;
        let storage = config.storage_of(config.home_of(document));
        self.provider(storage).await?.history(document, limit).await
    }

    /// The document the personality's settings route `ctx` to (its scope may be configured
    /// global), reverted through `sync` like any write, so recall follows it.
    async fn revert(
        &self,
        ctx: &MemoryContext,
        store: Store,
        number: u64,
        if_match: Option<&Version>,
    ) -> Result<SyncReport, MemoryError> {
        let routed = self.route(ctx).ctx;
        revert_by_replace(self, &routed, store, number, if_match).await
    }

    /// Through the document's home, so a recall provider drops its index rows too.
    async fn purge(&self, document: &DocumentId, surface: Surface) -> Result<Purged, MemoryError> {
        let home = self.inner.config.home_of(document);
        self.provider(home).await?.purge(document, surface).await
    }

    fn subscribe(&self) -> Subscription {
        self.inner.events.subscribe()
    }

    /// The longest deadline of the providers connected so far: a call connects its providers
    /// on its first send, so a resend is bounded by those it goes to.
    fn deadline(&self) -> Option<Duration> {
        self.inner
            .backends
            .values()
            .filter_map(|backend| backend.get()?.provider.deadline())
            .max()
    }
}

/// The workspace README's Rust examples, compiled and run as doctests so they cannot rot. They
/// live here because this crate depends on every other one they use.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct WorkspaceReadme;
