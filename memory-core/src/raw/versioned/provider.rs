//! [`Versioned`]: the memory contract on a [`VersionedStore`].

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use crate::context::MemoryContext;
use crate::document::{Document, DocumentId, NoteScope, Store, Version};
use crate::error::MemoryError;
use crate::history::redaction::{Redaction, plan_redaction};
use crate::history::retention::Retention;
use crate::history::revision::{Purged, Revision, Surface};
use crate::id::UserId;
use crate::idempotency::receipts::Receipts;
use crate::identity::{Identity, IdentityMap};
use crate::note::NoteMeta;
use crate::prefetch::Prefetch;
use crate::prompt::NewestNotes;
use crate::provider::MemoryProvider;
use crate::raw::cas::writer::{CasWriter, LONGEST_DEADLINE};
use crate::raw::events::EventBus;
use crate::raw::kept::{history_view, kept_revisions};
use crate::raw::notes::{Indexed, parse_index};
use crate::raw::versioned::settings::{DEFAULT_MAX_ATTEMPTS, Settings};
use crate::raw::versioned::store::{Connect, StoredHistory, VersionedStore};
use crate::report::{IfMatch, Subscription, SyncReport};
use crate::update::{MemoryUpdate, is_blank};

/// The memory contract on a [`VersionedStore`]. Every call ends within the deadline (see
/// [`Versioned::with_deadline`]); `sync` retries lost races through [`CasWriter`]; history is
/// what the retention keeps, with a hand edit not yet recorded at its head.
pub struct Versioned<S> {
    store: S,
    writer: CasWriter,
    events: EventBus,
    settings: Settings,
    newest: NewestByIndex,
}

/// The newest notes of each scope by the version of its index they were worked out from:
/// a write of a note changes the index's version and time, so a prefetch with no note written
/// since reuses them.
#[derive(Debug, Default)]
struct NewestByIndex(std::sync::Mutex<HashMap<DocumentId, (IndexSeen, Arc<NewestNotes>)>>);

/// The store its notes are labelled with, and the index's version and last write as read.
type IndexSeen = (Store, Version, Option<SystemTime>);

/// The most scopes [`NewestByIndex`] keeps; past it, it starts again.
const NEWEST_KEPT: usize = 1024;

impl NewestByIndex {
    fn get(&self, index: &DocumentId, seen: &IndexSeen) -> Option<Arc<NewestNotes>> {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.get(index)
            .filter(|(kept, _)| kept == seen)
            .map(|(_, newest)| newest.clone())
    }

    /// The version of `index` whose newest notes, labelled with `store`, are kept, and those.
    fn kept(&self, index: &DocumentId, store: Store) -> Option<(Version, Arc<NewestNotes>)> {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.get(index)
            .filter(|((labelled, ..), _)| *labelled == store)
            .map(|((_, version, _), newest)| (version.clone(), newest.clone()))
    }

    fn keep(&self, index: DocumentId, seen: IndexSeen, newest: Arc<NewestNotes>) {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= NEWEST_KEPT && !kept.contains_key(&index) {
            kept.clear();
        }
        kept.insert(index, (seen, newest));
    }
}

impl<S> std::fmt::Debug for Versioned<S>
where
    S: VersionedStore,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Versioned")
            .field("location", &self.store.location())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl<S: VersionedStore> Versioned<S> {
    /// A provider on `store` with the default [`Settings`].
    pub fn new(store: S) -> Self {
        Versioned {
            store,
            writer: CasWriter::new(DEFAULT_MAX_ATTEMPTS),
            events: EventBus::new(),
            settings: Settings::default(),
            newest: NewestByIndex::default(),
        }
    }

    /// Connects a store with `config` (see [`Connect`]) and runs it with the settings the
    /// configuration gives.
    ///
    /// # Errors
    /// Whatever the store's `connect` fails with.
    pub async fn connect(config: &S::Config) -> Result<Self, MemoryError>
    where
        S: Connect,
    {
        let (store, settings) = S::connect(config).await?;
        Ok(Versioned::new(store).with_settings(settings))
    }

    /// Sets every setting at once.
    pub fn with_settings(self, settings: Settings) -> Self {
        self.with_max_attempts(settings.max_attempts)
            .with_deadline(settings.deadline)
            .with_retention(settings.retention)
    }

    /// Sets how many compare-and-swap attempts a `sync` makes before `Contention` (at least 1).
    pub fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.writer = self.writer.with_max_attempts(max_attempts);
        self.settings.max_attempts = self.writer.max_attempts();
        self
    }

    /// Sets how long one call may take in all: reads, lock waits, retries and writes; kept
    /// between 1 ms and [`LONGEST_DEADLINE`].
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        let deadline = deadline.clamp(Duration::from_millis(1), LONGEST_DEADLINE);
        self.writer = self.writer.with_deadline(deadline);
        self.settings.deadline = deadline;
        self
    }

    /// Sets how much of each document's history writes keep; [`Retention::OFF`] records none.
    pub fn with_retention(mut self, retention: Retention) -> Self {
        self.writer = self.writer.with_retention(retention);
        self.settings.retention = retention;
        self
    }

    /// The settings it runs with.
    pub fn settings(&self) -> Settings {
        self.settings
    }

    /// The store, for what only it offers (its pool, its keys).
    pub fn store(&self) -> &S {
        &self.store
    }

    /// `call` bounded by the deadline: past it, `Unavailable` naming `what`, and `after` (what
    /// the caller should know of a write that may have landed) at the end of the message.
    /// `document` and its newest `limit` revisions as stored, read back to the base of the
    /// oldest, newest first.
    async fn stored_history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<StoredHistory, MemoryError> {
        let read = |limit| {
            self.within_deadline(
                || document.to_string(),
                "",
                self.store.history(document, limit),
            )
        };
        let mut stored = read(limit).await?;
        // The oldest read is a change whose base is older still: read back to it.
        if limit != usize::MAX
            && stored
                .recorded
                .last()
                .is_some_and(|oldest| !oldest.stands_alone())
        {
            stored = read(usize::MAX).await?;
        }
        if let Some(pair) = stored
            .recorded
            .windows(2)
            .find(|pair| pair[0].number <= pair[1].number)
        {
            return Err(MemoryError::Corrupt {
                location: stored.location.clone(),
                reason: format!(
                    "its history has revision {} after revision {}: numbers must fall, newest first",
                    pair[1].number, pair[0].number
                ),
            });
        }
        Ok(stored)
    }

    /// `kept` (of `stored`) as `history` shows them, at most `limit`.
    fn shown(&self, stored: &StoredHistory, kept: Vec<Revision>, limit: usize) -> Vec<Revision> {
        history_view(
            kept,
            &stored.current.tip,
            &stored.current.document,
            limit,
            stored.now,
            &self.settings.retention,
        )
    }

    /// The revisions of `stored` that the retention keeps, every text rebuilt.
    fn kept(
        &self,
        stored: &StoredHistory,
        recorded: Vec<Revision>,
    ) -> Result<Vec<Revision>, MemoryError> {
        kept_revisions(
            recorded,
            stored.current.tip.number,
            stored.now,
            &self.settings.retention,
            &stored.location,
        )
    }

    async fn within_deadline<T>(
        &self,
        what: impl FnOnce() -> String,
        after: &str,
        call: impl Future<Output = Result<T, MemoryError>>,
    ) -> Result<T, MemoryError> {
        match tokio::time::timeout(self.settings.deadline, call).await {
            Ok(result) => result,
            Err(_) => Err(MemoryError::Unavailable {
                what: what(),
                message: format!(
                    "no reply within the call's deadline of {} ms{after}",
                    self.settings.deadline.as_millis()
                ),
                source: None,
            }),
        }
    }

    /// The notes of `scope` whose path starts with `prefix`, from its `index` as read: each as
    /// the index lists it, or read (together) where the index does not know all a listing
    /// shows (a line written before the index kept it).
    async fn listed(
        &self,
        scope: &NoteScope,
        index: &Document,
        prefix: &str,
    ) -> Result<Vec<NoteMeta>, MemoryError> {
        let indexed: Vec<Indexed> = parse_index(index)?
            .into_iter()
            .filter(|note| note.path.as_str().starts_with(prefix))
            .collect();
        let unknown: Vec<DocumentId> = indexed
            .iter()
            .filter(|note| note.listed.is_none())
            .map(|note| scope.note(note.path.clone()))
            .collect();
        let mut read = if unknown.is_empty() {
            Vec::new()
        } else {
            self.within_deadline(|| scope.document().to_string(), "", self.read_all(&unknown))
                .await?
        }
        .into_iter();
        let mut listed = Vec::with_capacity(indexed.len());
        for note in indexed {
            if note.listed.is_some() {
                listed.extend(note.meta());
            } else if let Some(document) = read.next()
                && !is_blank(&document.text)
            {
                listed.push(NoteMeta::of(note.path, &document));
            }
        }
        Ok(listed)
    }

    /// The newest notes of `scope` (whose notes belong to `store` of a context) from its
    /// `index` as read; worked out once per version of the index, as every prefetch asks.
    async fn newest_of(
        &self,
        store: Store,
        scope: &NoteScope,
        index: &Document,
    ) -> Result<Arc<NewestNotes>, MemoryError> {
        let seen = (store, index.version.clone(), index.modified);
        if let Some(newest) = self.newest.get(&index.id, &seen) {
            return Ok(newest);
        }
        let listed = self.listed(scope, index, "").await?;
        let newest = Arc::new(NewestNotes::of(listed.iter().map(|note| (store, note))));
        self.newest.keep(index.id.clone(), seen, newest.clone());
        Ok(newest)
    }

    /// The newest notes of the scopes of `ctx`'s pair, each labelled with the store of the
    /// context its notes belong to, read with the pair in one step: an index whose version
    /// is the one its newest notes were kept for is not read again.
    async fn pair_and_newest(
        &self,
        ctx: &MemoryContext,
    ) -> Result<(Document, Document, NewestNotes), MemoryError> {
        let stores = [Store::Memory, Store::User];
        let scopes = stores.map(|store| ctx.document(store).scope());
        let ids = [
            ctx.document(Store::Memory),
            ctx.document(Store::User),
            scopes[0].index(),
            scopes[1].index(),
        ];
        let kept = [
            self.newest.kept(&ids[2], stores[0]),
            self.newest.kept(&ids[3], stores[1]),
        ];
        let known = [
            None,
            None,
            kept[0].as_ref().map(|(version, _)| version),
            kept[1].as_ref().map(|(version, _)| version),
        ];
        let read = self
            .within_deadline(
                || format!("{} and {}", ids[0], ids[1]),
                "",
                self.read_changed(&ids, &known),
            )
            .await?;
        let [memory, user, memory_index, user_index] =
            <[_; 4]>::try_from(read).map_err(|_| self.unanswered(&ids[0]))?;
        let [kept_memory, kept_user] = kept;
        let newest = [
            self.newest_from(stores[0], &scopes[0], memory_index, kept_memory)
                .await?,
            self.newest_from(stores[1], &scopes[1], user_index, kept_user)
                .await?,
        ];
        let (Some(memory), Some(user)) = (memory, user) else {
            return Err(self.unanswered(&ids[0]));
        };
        Ok((
            memory,
            user,
            NewestNotes::merged([&*newest[0], &*newest[1]]),
        ))
    }

    /// The newest notes of `scope` from its `index` as [`VersionedStore::read_changed`]
    /// answered: worked out from it where it was read, else those `kept` for its version.
    async fn newest_from(
        &self,
        store: Store,
        scope: &NoteScope,
        index: Option<Document>,
        kept: Option<(Version, Arc<NewestNotes>)>,
    ) -> Result<Arc<NewestNotes>, MemoryError> {
        match (index, kept) {
            (Some(index), _) => self.newest_of(store, scope, &index).await,
            (None, Some((_, kept))) => Ok(kept),
            (None, None) => Err(self.unanswered(&scope.index())),
        }
    }

    /// `ids` read in one step, exactly one document each.
    async fn read_all(&self, ids: &[DocumentId]) -> Result<Vec<Document>, MemoryError> {
        let documents = self.store.read(ids).await?;
        self.one_each(ids, documents)
    }

    /// [`VersionedStore::read_changed`], exactly one answer each.
    async fn read_changed(
        &self,
        ids: &[DocumentId],
        known: &[Option<&Version>],
    ) -> Result<Vec<Option<Document>>, MemoryError> {
        let documents = self.store.read_changed(ids, known).await?;
        self.one_each(ids, documents)
    }

    /// `answers`, where the store gave one for each of `ids`.
    fn one_each<T>(&self, ids: &[DocumentId], answers: Vec<T>) -> Result<Vec<T>, MemoryError> {
        if answers.len() == ids.len() {
            Ok(answers)
        } else {
            Err(MemoryError::Unavailable {
                what: self.store.location(),
                message: format!(
                    "asked for {} documents, the store answered with {}",
                    ids.len(),
                    answers.len()
                ),
                source: None,
            })
        }
    }

    /// The store left out the text of `document`, which the caller did not have.
    fn unanswered(&self, document: &DocumentId) -> MemoryError {
        MemoryError::Unavailable {
            what: self.store.location(),
            message: format!("the store answered without the text of {document}"),
            source: None,
        }
    }
}

#[async_trait]
impl<S: VersionedStore> MemoryProvider for Versioned<S> {
    /// The pair and its scopes' indexes in one read: the notes' listing comes from the
    /// indexes, so a scope of many notes costs one document more per scope, not a read each,
    /// and an index not written since the last prefetch is not sent again.
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        let (memory, user, notes) = self.pair_and_newest(ctx).await?;
        Ok(Prefetch::from_documents(ctx, &memory, &user, &notes))
    }

    /// From the scope's index.
    async fn newest_notes(
        &self,
        scope: &NoteScope,
        store: Store,
    ) -> Result<NewestNotes, MemoryError> {
        let index = scope.index();
        let kept = self.newest.kept(&index, store);
        let known = kept.as_ref().map(|(version, _)| version);
        let read = self
            .within_deadline(
                || scope.document().to_string(),
                "",
                self.read_changed(std::slice::from_ref(&index), &[known]),
            )
            .await?;
        let index = read.into_iter().next().flatten();
        Ok((*self.newest_from(store, scope, index, kept).await?).clone())
    }

    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        self.writer
            .sync(&self.store, &self.events, ctx, updates, if_match)
            .await
    }

    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        let ids = std::slice::from_ref(document);
        let mut documents = self
            .within_deadline(|| document.to_string(), "", self.read_all(ids))
            .await?;
        Ok(documents.remove(0))
    }

    async fn receipts(&self, document: &DocumentId) -> Result<Receipts, MemoryError> {
        let fetched = self.within_deadline(
            || document.to_string(),
            "",
            self.store.fetch(std::slice::from_ref(document), true),
        );
        let fetched = fetched.await?;
        let fetched = fetched.first().ok_or_else(|| MemoryError::Unavailable {
            what: document.to_string(),
            message: "the store answered with no document".to_owned(),
            source: None,
        })?;
        Receipts::parse(&fetched.document.location, fetched.receipts.as_deref())
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        let mut ids = self
            .within_deadline(|| self.store.location(), "", self.store.list())
            .await?;
        // The scopes' indexes are the store's own, never documents.
        ids.retain(|id| !id.is_scope_index());
        ids.sort();
        ids.dedup();
        // A deleted note keeps its row (its version and history go on from it): read the notes
        // to leave out those that no longer exist.
        let notes: Vec<DocumentId> = ids
            .iter()
            .filter(|id| id.note_path().is_some())
            .cloned()
            .collect();
        if !notes.is_empty() {
            let documents = self
                .within_deadline(|| self.store.location(), "", self.read_all(&notes))
                .await?;
            let gone: BTreeSet<&DocumentId> = documents
                .iter()
                .filter(|document| is_blank(&document.text))
                .map(|document| &document.id)
                .collect();
            ids.retain(|id| !gone.contains(id));
        }
        Ok(ids)
    }

    /// From the scope's index, which every write of its notes keeps in the same step.
    async fn notes(&self, scope: &NoteScope, prefix: &str) -> Result<Vec<NoteMeta>, MemoryError> {
        let index = scope.index();
        let index = self
            .within_deadline(|| scope.document().to_string(), "", self.read_all(&[index]))
            .await?;
        self.listed(scope, &index[0], prefix).await
    }

    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<Vec<Revision>, MemoryError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut stored = self.stored_history(document, limit).await?;
        let recorded = std::mem::take(&mut stored.recorded);
        let kept = self.kept(&stored, recorded)?;
        Ok(self.shown(&stored, kept, limit))
    }

    /// Planned on the whole history as stored, and stored only where no revision was recorded
    /// since: a write racing the redaction makes it plan again.
    async fn redact(&self, document: &DocumentId, number: u64) -> Result<Revision, MemoryError> {
        for _ in 0..self.settings.max_attempts {
            let stored = self.stored_history(document, usize::MAX).await?;
            let kept = self.kept(&stored, stored.recorded.clone())?;
            let shown = self.shown(&stored, kept, usize::MAX);
            let plan = plan_redaction(document, &stored.recorded, &shown, number, stored.now)?;
            let (redacted, rebased) = match plan {
                Redaction::Done(revision) => return Ok(revision),
                Redaction::Store { redacted, rebased } => (redacted, rebased),
            };
            let landed = self
                .within_deadline(
                    || document.to_string(),
                    "; the redaction may or may not have landed, and redacting again is safe",
                    self.store.redact(
                        document,
                        &redacted,
                        rebased.as_deref(),
                        stored.current.tip.number,
                    ),
                )
                .await?;
            if landed {
                return Ok(redacted);
            }
        }
        Err(MemoryError::Contention {
            document: document.clone(),
            attempts: self.settings.max_attempts,
        })
    }

    /// A note's path leaves its scope's index too, after the note is erased: purging again
    /// finishes a purge whose second step failed.
    async fn purge(&self, document: &DocumentId, surface: Surface) -> Result<Purged, MemoryError> {
        let again = "; the purge may or may not have landed, and purging again is safe";
        let purged = self
            .within_deadline(
                || document.to_string(),
                again,
                self.store
                    .purge(document, surface, &self.settings.retention),
            )
            .await?;
        self.within_deadline(
            || document.to_string(),
            again,
            self.writer.unlist(&self.store, document),
        )
        .await?;
        Ok(purged)
    }

    fn subscribe(&self) -> Subscription {
        self.events.subscribe()
    }

    fn deadline(&self) -> Option<Duration> {
        Some(self.settings.deadline)
    }
}

/// The identity map of a store that keeps one, each call within the deadline, and the list in
/// the contract's order (the store's own collation need not compare bytes).
#[async_trait]
impl<S: VersionedStore + IdentityMap> IdentityMap for Versioned<S> {
    async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        self.within_deadline(|| identity.to_string(), "", self.store.resolve(identity))
            .await
    }

    async fn link(
        &self,
        identity: &Identity,
        user: &UserId,
        relink: bool,
    ) -> Result<Option<UserId>, MemoryError> {
        self.within_deadline(
            || identity.to_string(),
            "; the link may or may not have landed, and linking again is safe",
            self.store.link(identity, user, relink),
        )
        .await
    }

    async fn unlink(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        self.within_deadline(
            || identity.to_string(),
            "; the unlink may or may not have landed, and unlinking again is safe",
            self.store.unlink(identity),
        )
        .await
    }

    async fn identities(&self) -> Result<Vec<(Identity, UserId)>, MemoryError> {
        let mut links = self
            .within_deadline(|| self.store.location(), "", self.store.identities())
            .await?;
        links.sort();
        Ok(links)
    }
}
