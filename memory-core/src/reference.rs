//! The in-memory reference provider: the contract with nothing in the way, and the model the
//! conformance suite compares every backend against.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::time::SystemTime;

use async_trait::async_trait;

use crate::context::MemoryContext;
use crate::document::{Document, DocumentId, NoteScope, Store, Version};
use crate::error::MemoryError;
use crate::history::redaction::{Redaction, plan_redaction};
use crate::history::retention::Retention;
use crate::history::revision::{Purged, Revision, RevisionTip, Surface};
use crate::idempotency::receipts::Receipts;
use crate::note::NoteMeta;
use crate::note::path::NotePath;
use crate::prefetch::Prefetch;
use crate::prompt::NewestNotes;
use crate::provider::MemoryProvider;
use crate::raw::events::EventBus;
use crate::raw::kept::history_view;
use crate::raw::plan::{Planned, check_scopes, plan_sync};
use crate::report::{IfMatch, Subscription, SyncReport};
use crate::update::{MemoryUpdate, is_blank};

/// A document's text, version counter, write time and idempotency receipts.
type Stored = (String, u64, SystemTime, Receipts);

/// What the provider holds: documents, and each document's revisions, oldest first.
#[derive(Debug, Default)]
struct State {
    documents: BTreeMap<DocumentId, Stored>,
    histories: BTreeMap<DocumentId, VecDeque<Revision>>,
}

impl State {
    fn tip(&self, id: &DocumentId) -> RevisionTip {
        self.histories
            .get(id)
            .and_then(VecDeque::back)
            .map_or_else(|| RevisionTip::empty(Version::new("0")), RevisionTip::of)
    }
}

impl std::ops::Deref for State {
    type Target = BTreeMap<DocumentId, Stored>;

    fn deref(&self) -> &Self::Target {
        &self.documents
    }
}

impl std::ops::DerefMut for State {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.documents
    }
}

/// Keeps documents in a map behind one mutex. Versions are per-document counters (`"0"` for a
/// document never written), unlike markdown's content hashes: the suite must pass with both.
///
/// Useful in tests of agent code, and as the model the conformance suite checks backends against.
#[derive(Debug, Default)]
pub struct InMemoryProvider {
    documents: Mutex<State>,
    events: EventBus,
    retention: Retention,
}

impl InMemoryProvider {
    /// An empty provider.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps `retention`'s share of each document's history (default: the newest 100).
    pub fn with_retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Drops what the retention no longer keeps from the old end of `history`.
    fn prune(&self, history: &mut VecDeque<Revision>, now: SystemTime) {
        let Some(tip) = history.back().map(|newest| newest.number) else {
            return;
        };
        while history
            .front()
            .is_some_and(|oldest| self.retention.prunes(oldest.number, oldest.time, tip, now))
        {
            history.pop_front();
        }
    }

    fn snapshot(documents: &BTreeMap<DocumentId, Stored>, id: &DocumentId) -> Document {
        let (text, version, modified) = match documents.get(id) {
            Some((text, version, modified, _)) => (text.clone(), *version, Some(*modified)),
            None => (String::new(), 0, None),
        };
        Document {
            id: id.clone(),
            text,
            version: Version::new(version.to_string()),
            location: format!("memory://{}", id.relative_path()),
            modified,
        }
    }

    /// The notes of `scope` that exist, each path with its text.
    fn scope_notes<'a>(
        documents: &'a BTreeMap<DocumentId, Stored>,
        scope: &'a NoteScope,
    ) -> impl Iterator<Item = (&'a NotePath, &'a str)> {
        documents.iter().filter_map(move |(id, stored)| match id {
            DocumentId::Note(note) if note.scope == *scope && !is_blank(&stored.0) => {
                Some((&note.path, stored.0.as_str()))
            }
            _ => None,
        })
    }

    /// The listing of `scope`'s notes whose path starts with `prefix`, sorted by path: what
    /// `notes` answers and prefetch indexes, under the lock the caller holds.
    fn listing(
        documents: &BTreeMap<DocumentId, Stored>,
        scope: &NoteScope,
        prefix: &str,
    ) -> Vec<NoteMeta> {
        let mut notes: Vec<NoteMeta> = Self::scope_notes(documents, scope)
            .filter(|(path, _)| path.as_str().starts_with(prefix))
            .map(|(path, _)| {
                let note = Self::snapshot(documents, &scope.note(path.clone()));
                NoteMeta::of(path.clone(), &note)
            })
            .collect();
        notes.sort_by(|a, b| a.path.as_str().cmp(b.path.as_str()));
        notes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The map is only mutated after every check passed, so a poisoned lock still guards
        // consistent data.
        self.documents
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl MemoryProvider for InMemoryProvider {
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        let documents = self.lock();
        let memory = Self::snapshot(&documents, &ctx.document(Store::Memory));
        let user = Self::snapshot(&documents, &ctx.document(Store::User));
        let notes: Vec<(Store, NoteMeta)> = [Store::Memory, Store::User]
            .into_iter()
            .flat_map(|store| {
                let listed = Self::listing(&documents, &ctx.document(store).scope(), "");
                listed.into_iter().map(move |note| (store, note))
            })
            .collect();
        let notes = NewestNotes::of(notes.iter().map(|(store, note)| (*store, note)));
        Ok(Prefetch::from_documents(ctx, &memory, &user, &notes))
    }

    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        let batches = plan_sync(ctx, updates, if_match)?;
        let mut documents = self.lock();
        let receipts_of = |documents: &State, id: &DocumentId| {
            documents
                .get(id)
                .map(|stored| stored.3.clone())
                .unwrap_or_default()
        };
        let mut planned = Vec::with_capacity(batches.len());
        for batch in &batches {
            let id = batch.document();
            let current = Self::snapshot(&documents, id);
            planned.push(batch.plan(current, &receipts_of(&documents, id), &planned)?);
        }
        check_scopes(&mut planned, |scope| {
            Ok(Self::scope_notes(&documents, scope)
                .map(|(path, text)| (path.clone(), text.len()))
                .collect())
        })?;
        let mut report = SyncReport::default();
        for (batch, planned) in batches.iter().zip(planned) {
            let write = match planned {
                Planned::Replayed(replayed) => {
                    report.documents.push(replayed);
                    continue;
                }
                Planned::Write(write) => write,
            };
            let id = &write.before().id;
            let next = documents.get(id).map_or(1, |stored| stored.1 + 1);
            let document_report = write.report(Version::new(next.to_string()));
            if let Some(text) = write.new_text() {
                let mut receipts = receipts_of(&documents, id);
                if let Some(key) = batch.key() {
                    receipts.record(key, &batch.fingerprint(), document_report.clone());
                }
                let now = SystemTime::now();
                if self.retention.is_on() {
                    let tip = documents.tip(id);
                    let mut revisions =
                        write.revisions(&tip, Version::new(next.to_string()), now, &self.retention);
                    // The model keeps every text whole; stores keep changes between checkpoints.
                    if let Some(own) = revisions.last_mut() {
                        own.text = Some(text.to_owned());
                    }
                    let history = documents.histories.entry(id.clone()).or_default();
                    history.extend(revisions);
                    self.prune(history, now);
                }
                let stored = (text.to_owned(), next, now, receipts);
                documents.insert(id.clone(), stored);
            }
            report.documents.push(document_report);
        }
        // Published under the lock, so subscribers see events in the order the writes landed.
        self.events.publish(&report);
        drop(documents);
        Ok(report)
    }

    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        Ok(Self::snapshot(&self.lock(), document))
    }

    async fn receipts(&self, document: &DocumentId) -> Result<Receipts, MemoryError> {
        Ok(self
            .lock()
            .get(document)
            .map(|stored| stored.3.clone())
            .unwrap_or_default())
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        Ok(self
            .lock()
            .iter()
            .filter(|(id, stored)| id.note_path().is_none() || !is_blank(&stored.0))
            .map(|(id, _)| id.clone())
            .collect())
    }

    async fn notes(&self, scope: &NoteScope, prefix: &str) -> Result<Vec<NoteMeta>, MemoryError> {
        Ok(Self::listing(&self.lock(), scope, prefix))
    }

    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<Vec<Revision>, MemoryError> {
        let state = self.lock();
        let recorded = state
            .histories
            .get(document)
            .map(|history| history.iter().rev().take(limit).cloned().collect())
            .unwrap_or_default();
        let current = Self::snapshot(&state, document);
        Ok(history_view(
            recorded,
            &state.tip(document),
            &current,
            limit,
            SystemTime::now(),
            &self.retention,
        ))
    }

    async fn purge(&self, document: &DocumentId, surface: Surface) -> Result<Purged, MemoryError> {
        let mut state = self.lock();
        let erased = state.documents.remove(document);
        let tip = state.tip(document);
        let history = state.histories.remove(document).unwrap_or_default();
        let tombstone = self
            .retention
            .leaves_tombstone(erased.is_some(), history.len())
            .then(|| {
                Revision::tombstone(
                    document,
                    &tip,
                    Version::new("0"),
                    surface,
                    SystemTime::now(),
                )
            });
        if let Some(tombstone) = &tombstone {
            state
                .histories
                .insert(document.clone(), VecDeque::from([tombstone.clone()]));
        }
        Ok(Purged {
            document: document.clone(),
            location: format!("memory://{}", document.relative_path()),
            bytes: erased.map_or(0, |stored| stored.0.len()),
            revisions: history.len(),
            tombstone,
        })
    }

    async fn redact(&self, document: &DocumentId, number: u64) -> Result<Revision, MemoryError> {
        let mut state = self.lock();
        let now = SystemTime::now();
        let tip = state.tip(document);
        let current = Self::snapshot(&state, document);
        let stored: Vec<Revision> = state
            .histories
            .get(document)
            .map(|history| history.iter().rev().cloned().collect())
            .unwrap_or_default();
        let shown = history_view(
            stored.clone(),
            &tip,
            &current,
            usize::MAX,
            now,
            &self.retention,
        );
        let (redacted, rebased) = match plan_redaction(document, &stored, &shown, number, now)? {
            Redaction::Done(revision) => return Ok(revision),
            Redaction::Store { redacted, rebased } => (redacted, rebased),
        };
        let history = state.histories.entry(document.clone()).or_default();
        for revision in history.iter_mut() {
            if revision.number == redacted.number {
                *revision = redacted.clone();
            } else if let Some(rebased) = rebased.as_deref().filter(|r| r.number == revision.number)
            {
                *revision = rebased.clone();
            }
        }
        Ok(redacted)
    }

    fn subscribe(&self) -> Subscription {
        self.events.subscribe()
    }
}
