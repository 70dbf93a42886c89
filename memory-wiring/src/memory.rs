//! [`Memory`]: the wiring's one handle, what it answers about a config's personalities and
//! providers, and the tools it gives an agent. How it routes each call is `routing`'s.

use std::sync::Arc;

use memory_core::raw::EventBus;
use memory_core::{
    DocumentId, Identity, IdentityMap, MemoryContext, MemoryError, MemoryProvider, MemoryScope,
    NoteScope, PersonalityId, Recall, Store, UserId,
};
use memory_tools::MemoryTools;
#[cfg(feature = "recall")]
use memory_vector::VectorProvider;

use crate::config::Config;
#[cfg(feature = "recall")]
use crate::connections::config_error;
use crate::connections::{Backend, Connections};

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
    pub(crate) inner: Arc<Inner>,
}

/// What every clone of a [`Memory`] shares.
pub(crate) struct Inner {
    /// The wiring's configuration, as parsed.
    pub(crate) config: Config,
    /// Each provider's connection, made on first use.
    pub(crate) connections: Connections,
    /// The writes made through the handle, for `subscribe`.
    pub(crate) events: EventBus,
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
        Memory {
            inner: Arc::new(Inner {
                connections: Connections::of(&config),
                config,
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
    /// [`MemoryError::Misrouted`] for a personality's own `MEMORY.md` (or a note beside it)
    /// when the config gives the personality global scope: its writes go to the global
    /// `MEMORY.md` (and its notes), never this file.
    pub fn writing(&self, document: &DocumentId) -> Result<(MemoryContext, Store), MemoryError> {
        let (ctx, store) = MemoryContext::writing(document);
        // A note goes where the document its scope sits beside goes.
        if let DocumentId::PersonalityMemory { personality } = document.scope().document()
            && self.inner.config.personality(&personality).memory_scope == MemoryScope::Global
        {
            let routed = match document.note_path() {
                Some(path) => NoteScope::GlobalMemory.note(path.clone()),
                None => DocumentId::GlobalMemory,
            };
            return Err(MemoryError::Misrouted {
                document: document.clone(),
                routed,
                personality,
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
    /// provider ([`ProviderConfig::recalls`](crate::ProviderConfig::recalls)).
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
        for backend in self.inner.connections.connected() {
            if let Some(vector) = &backend.vector {
                warnings.extend(vector.settle().await);
            }
        }
        warnings
    }

    /// The provider named `name`, connected.
    pub(crate) async fn backend(&self, name: &str) -> Result<&Backend, MemoryError> {
        self.inner.connections.get(&self.inner.config, name).await
    }
}
