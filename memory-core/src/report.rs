//! What a `sync` call reports, what it promises to check, and the events it emits.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::document::{DocumentId, Store, Version};
use crate::note::ScopeTotals;
use crate::note::path::NotePath;

/// Versions a `sync` call requires the documents it touches to still be at.
///
/// Typically the versions from the [`crate::Prefetch`] the model's change was based on. A
/// precondition on a document the call does not touch is not checked.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IfMatch {
    /// Required version of the memory document.
    pub memory: Option<Version>,
    /// Required version of the user document.
    pub user: Option<Version>,
    /// Required versions of notes, by their scope's store then their path (`CONTRACT.md`,
    /// Notes).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub notes: BTreeMap<Store, BTreeMap<NotePath, Version>>,
}

impl IfMatch {
    /// No precondition: apply to the latest content.
    pub const NONE: IfMatch = IfMatch {
        memory: None,
        user: None,
        notes: BTreeMap::new(),
    };

    /// A precondition on `store`'s document only: `version`, or none.
    pub fn only(store: Store, version: Option<Version>) -> IfMatch {
        let mut if_match = IfMatch::NONE;
        match store {
            Store::Memory => if_match.memory = version,
            Store::User => if_match.user = version,
        }
        if_match
    }

    /// The precondition on `store`'s document.
    pub fn for_store(&self, store: Store) -> Option<&Version> {
        match store {
            Store::Memory => self.memory.as_ref(),
            Store::User => self.user.as_ref(),
        }
    }

    /// The preconditions on `store`'s document and on its scope's notes, without the rest: for
    /// the part of a call one store's provider applies.
    pub fn of_store(&self, store: Store) -> IfMatch {
        let mut if_match = IfMatch::only(store, self.for_store(store).cloned());
        if let Some(notes) = self.notes.get(&store) {
            if_match.notes.insert(store, notes.clone());
        }
        if_match
    }

    /// A precondition on `document` only (one of the pair, or a note): `version`, or none.
    pub fn only_document(document: &DocumentId, version: Option<Version>) -> IfMatch {
        match (document.note_path(), version) {
            (None, version) => IfMatch::only(document.store(), version),
            (Some(path), Some(version)) => {
                IfMatch::NONE.with_note(document.store(), path.clone(), version)
            }
            (Some(_), None) => IfMatch::NONE,
        }
    }

    /// Adds a precondition on the note `path` of `store`'s scope.
    pub fn with_note(mut self, store: Store, path: NotePath, version: Version) -> IfMatch {
        self.notes.entry(store).or_default().insert(path, version);
        self
    }

    /// The precondition on `document` (one of the pair, or a note) as its store and path name
    /// it.
    pub fn for_document(&self, document: &DocumentId) -> Option<&Version> {
        match document.note_path() {
            None => self.for_store(document.store()),
            Some(path) => self.notes.get(&document.store())?.get(path),
        }
    }
}

/// What one `sync` call did to one document it touched.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentReport {
    /// The store the updates named.
    pub store: Store,
    /// The document it resolved to.
    pub document: DocumentId,
    /// Where the backend keeps it: a path or a key.
    pub location: String,
    /// Whether new content was written; `false` when the batch left the text unchanged.
    pub written: bool,
    /// Version before the call.
    pub version_before: Version,
    /// Version after the call (equal to `version_before` when nothing was written).
    pub version_after: Version,
    /// SHA-256 (lowercase hex) of the text before.
    pub sha256_before: String,
    /// SHA-256 (lowercase hex) of the text after.
    pub sha256_after: String,
    /// UTF-8 bytes before.
    pub bytes_before: usize,
    /// UTF-8 bytes after.
    pub bytes_after: usize,
    /// Lines dropped by `remove` updates.
    pub lines_removed: usize,
    /// Whether the document is over its soft cap after the call: time to consolidate.
    pub over_soft_cap: bool,
    /// Whether this is the report of an earlier call with the same idempotency key, returned
    /// again instead of applying the updates twice: the document was not touched now, and no
    /// event is published for it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
    /// For a note: its scope's notes after the call, to weigh against the scope's caps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopeTotals>,
}

/// The result of a `sync` call: one report per document touched, memory first.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncReport {
    /// Per document, in store order (memory, then user).
    pub documents: Vec<DocumentReport>,
    /// What did not complete without failing the call, for logs: a recall index left stale
    /// behind a write that landed, say. Empty when all went well.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Compare-and-swap attempts this call lost to writers in other processes or hosts before
    /// it landed; 0 for backends that lock instead. A measure of contention, for benchmarks
    /// and metrics.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl SyncReport {
    /// The report for `store`'s document, if the call touched it.
    pub fn get(&self, store: Store) -> Option<&DocumentReport> {
        self.documents.iter().find(|d| d.store == store)
    }
}

/// A notification that a document changed, for subscribers (dashboards, indexers, loggers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event")]
pub enum MemoryEvent {
    /// `memory.updated`: a document was written.
    #[serde(rename = "memory.updated")]
    Updated(DocumentReport),
    /// `memory.eviction`: a write left a document over its soft cap; it should be consolidated.
    #[serde(rename = "memory.eviction")]
    Eviction(DocumentReport),
}

impl MemoryEvent {
    /// The event's name: `memory.updated` or `memory.eviction`.
    pub fn name(&self) -> &'static str {
        match self {
            MemoryEvent::Updated(_) => "memory.updated",
            MemoryEvent::Eviction(_) => "memory.eviction",
        }
    }

    /// The write the event is about.
    pub fn report(&self) -> &DocumentReport {
        match self {
            MemoryEvent::Updated(report) | MemoryEvent::Eviction(report) => report,
        }
    }
}

/// One subscriber's view of a provider's events.
#[derive(Debug)]
pub struct Subscription {
    receiver: broadcast::Receiver<MemoryEvent>,
    missed: u64,
}

impl Subscription {
    /// A subscriber to what `receiver` receives, having missed nothing yet.
    pub(crate) fn new(receiver: broadcast::Receiver<MemoryEvent>) -> Subscription {
        Subscription {
            receiver,
            missed: 0,
        }
    }

    /// The next event, waiting for one; `None` once the provider is gone. Events missed by
    /// falling behind are skipped and counted in [`Subscription::missed`].
    pub async fn recv(&mut self) -> Option<MemoryEvent> {
        loop {
            match self.receiver.recv().await {
                Ok(event) => return Some(event),
                Err(broadcast::error::RecvError::Lagged(n)) => self.missed += n,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// The next event if one is already waiting.
    pub fn try_recv(&mut self) -> Option<MemoryEvent> {
        loop {
            match self.receiver.try_recv() {
                Ok(event) => return Some(event),
                Err(broadcast::error::TryRecvError::Lagged(n)) => self.missed += n,
                Err(_) => return None,
            }
        }
    }

    /// How many events this subscriber missed by falling behind.
    pub fn missed(&self) -> u64 {
        self.missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{Store, Version};

    #[test]
    fn only_guards_the_named_store() {
        let v = Version::new("7");
        let memory = IfMatch::only(Store::Memory, Some(v.clone()));
        assert_eq!(memory.for_store(Store::Memory), Some(&v));
        assert_eq!(memory.for_store(Store::User), None);
        let user = IfMatch::only(Store::User, Some(v.clone()));
        assert_eq!(user.for_store(Store::Memory), None);
        assert_eq!(user.for_store(Store::User), Some(&v));
        assert_eq!(IfMatch::only(Store::User, None), IfMatch::NONE);
    }

    #[test]
    fn only_document_guards_the_named_document_or_note() {
        let v = Version::new("7");
        let profile = DocumentId::user(&crate::id::UserId::new("u1").unwrap());
        let guard = IfMatch::only_document(&profile, Some(v.clone()));
        assert_eq!(guard, IfMatch::only(Store::User, Some(v.clone())));
        let path = NotePath::new("diet.md").unwrap();
        let note = DocumentId::note(&profile, path.clone());
        let guard = IfMatch::only_document(&note, Some(v.clone()));
        assert_eq!(guard.for_document(&note), Some(&v));
        assert_eq!(
            guard.for_document(&profile),
            None,
            "not the document beside it"
        );
        assert_eq!(IfMatch::only_document(&note, None), IfMatch::NONE);
    }

    #[test]
    fn retries_are_in_the_json_only_when_there_were_any() {
        let none = serde_json::to_value(SyncReport::default()).unwrap();
        assert_eq!(none, serde_json::json!({"documents": []}));
        let two = SyncReport {
            retries: 2,
            ..SyncReport::default()
        };
        let json = serde_json::to_value(&two).unwrap();
        assert_eq!(json, serde_json::json!({"documents": [], "retries": 2}));
        assert_eq!(serde_json::from_value::<SyncReport>(json).unwrap(), two);
    }
}
