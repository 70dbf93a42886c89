//! How [`Memory`] routes each call of the provider contract: every document to its home, a
//! call whose two documents live apart checked whole before either is written, and the
//! personality's configured settings applied.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use memory_core::raw::{Receipts, plan_sync, revert_by_replace};
use memory_core::{
    Document, DocumentId, DocumentReport, IfMatch, MemoryContext, MemoryError, MemoryProvider,
    MemoryUpdate, NewestNotes, NoteMeta, NoteScope, Prefetch, Purged, Revision, Store,
    Subscription, Surface, SyncReport, Version, is_blank,
};

#[cfg(feature = "recall")]
use crate::connections::Backend;
use crate::memory::Memory;

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

impl Memory {
    /// The provider that stores `document`'s bytes (a note's: the home of the document its
    /// scope sits beside): what reads go to, a recall provider's model not being needed.
    async fn storage_provider(
        &self,
        document: &DocumentId,
    ) -> Result<Arc<dyn MemoryProvider>, MemoryError> {
        let config = &self.inner.config;
        self.provider(config.storage_of(config.home_of(document)))
            .await
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
        let mut parts: Vec<(Store, _)> = Vec::with_capacity(2);
        let mut planned = Vec::with_capacity(batches.len());
        for batch in &batches {
            let store = batch.document().store();
            let provider = self.provider(route.provider_of(store)).await?;
            let receipts = match batch.key() {
                Some(_) => provider.receipts(batch.document()).await?,
                None => Receipts::default(),
            };
            let current = provider.read(batch.document()).await?;
            planned.push(batch.plan(current, &receipts, &planned)?);
            // A store's document and notes are one part, written by one call to their home.
            if parts.last().is_none_or(|(last, _)| *last != store) {
                parts.push((store, provider));
            }
        }
        let mut report = SyncReport::default();
        for (store, provider) in parts {
            let positions: Vec<usize> = (0..updates.len())
                .filter(|&i| updates[i].store() == store)
                .collect();
            let mine: Vec<MemoryUpdate> = positions.iter().map(|&i| updates[i].clone()).collect();
            let guard = if_match.of_store(store);
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
        let user_scope = user.scope();
        let user = user_home.read(&user);
        // Each scope's notes from the home of the document they sit beside; with recall, the
        // memory scope's come with it, from the listing it ranked them from.
        let user_notes = user_home.newest_notes(&user_scope, Store::User);
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
                let (memory, user, user_notes) = tokio::try_join!(recalled, user, user_notes)?;
                (memory.prefetch(ctx, &user, &user_notes), user)
            }
            _ => {
                let memory_scope = memory.scope();
                let memory_notes = through.provider.newest_notes(&memory_scope, Store::Memory);
                let (memory, user, memory_notes, user_notes) = tokio::try_join!(
                    through.provider.read(&memory),
                    user,
                    memory_notes,
                    user_notes
                )?;
                let notes = NewestNotes::merged([&memory_notes, &user_notes]);
                (Prefetch::from_documents(ctx, &memory, &user, &notes), user)
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
        MemoryError::NoteNotFound {
            index,
            action,
            scope,
            path,
        } => MemoryError::NoteNotFound {
            index: at(index),
            action,
            scope,
            path,
        },
        MemoryError::NoteExists {
            index,
            action,
            scope,
            path,
        } => MemoryError::NoteExists {
            index: at(index),
            action,
            scope,
            path,
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

    /// From the provider that stores its bytes: a recall provider's model is not needed to
    /// read a document whole.
    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        self.storage_provider(document).await?.read(document).await
    }

    async fn receipts(&self, document: &DocumentId) -> Result<Receipts, MemoryError> {
        self.storage_provider(document)
            .await?
            .receipts(document)
            .await
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

    /// From the provider that stores the notes' bytes: the home of the document their scope
    /// sits beside.
    async fn notes(&self, scope: &NoteScope, prefix: &str) -> Result<Vec<NoteMeta>, MemoryError> {
        let home = self.storage_provider(&scope.document()).await?;
        home.notes(scope, prefix).await
    }

    /// From the same provider as `notes`.
    async fn newest_notes(
        &self,
        scope: &NoteScope,
        store: Store,
    ) -> Result<NewestNotes, MemoryError> {
        let home = self.storage_provider(&scope.document()).await?;
        home.newest_notes(scope, store).await
    }

    /// From the provider that stores the document's bytes, as `read`: a recall provider keeps
    /// no history of its own.
    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<Vec<Revision>, MemoryError> {
        self.storage_provider(document)
            .await?
            .history(document, limit)
            .await
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

    async fn redact(&self, document: &DocumentId, number: u64) -> Result<Revision, MemoryError> {
        let home = self.inner.config.home_of(document);
        self.provider(home).await?.redact(document, number).await
    }

    fn subscribe(&self) -> Subscription {
        self.inner.events.subscribe()
    }

    /// The longest deadline of the providers connected so far: a call connects its providers
    /// on its first send, so a resend is bounded by those it goes to.
    fn deadline(&self) -> Option<Duration> {
        self.inner
            .connections
            .connected()
            .filter_map(|backend| backend.provider.deadline())
            .max()
    }
}
