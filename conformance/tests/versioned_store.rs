//! A fourth backend in one file: an in-memory store of versioned documents, made a provider by
//! `memory_core::raw::Versioned` and held to the whole suite, hosts and hand edits included.
//! What a backend author writes is what is in this file above the tests.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use memory_conformance::{Fixture, Host};
use memory_core::raw::{
    CasWrite, CompareAndSwap, Fetched, RevisionTip, StoredHistory, Swapped, Versioned,
    VersionedStore, droppable, from_signed_unix_millis, signed_unix_millis,
};
use memory_core::{
    Document, DocumentId, Identity, IdentityMap, InMemoryIdentityMap, MemoryError, Purged,
    Retention, Revision, Surface, UserId, Version,
};

/// One document: its text, version counter, receipts and last write.
#[derive(Clone)]
struct Stored {
    text: String,
    version: u64,
    receipts: Option<String>,
    modified: SystemTime,
}

#[derive(Default)]
struct Storage {
    documents: HashMap<DocumentId, Stored>,
    /// Oldest first.
    histories: HashMap<DocumentId, Vec<Revision>>,
}

/// The store: shared storage behind a lock, as a server would be for its clients, and an
/// identity map beside it.
#[derive(Clone, Default)]
struct MemoryStore {
    storage: Arc<Mutex<Storage>>,
    identities: Arc<InMemoryIdentityMap>,
    /// How many times `history` was read, for the tests of how often the provider reads it.
    history_reads: Arc<AtomicUsize>,
    /// How many notes were read, for the tests of what a listing reads.
    note_reads: Arc<AtomicUsize>,
}

impl MemoryStore {
    fn storage(&self) -> std::sync::MutexGuard<'_, Storage> {
        self.storage.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `id` is a note, not a scope's index (whose path no note can have).
fn is_note(id: &DocumentId) -> bool {
    id.note_path()
        .is_some_and(|path| memory_core::NotePath::new(path.as_str()).is_ok())
}

fn fetched(storage: &Storage, id: &DocumentId, receipts: bool) -> Fetched {
    let stored = storage.documents.get(id);
    let tip = match storage.histories.get(id).and_then(|history| history.last()) {
        Some(newest) => RevisionTip::of(newest),
        None => RevisionTip::empty(Version::new("0")),
    };
    Fetched {
        document: Document {
            id: id.clone(),
            text: stored.map(|s| s.text.clone()).unwrap_or_default(),
            version: Version::new(stored.map_or(0, |s| s.version).to_string()),
            location: format!("memory://{}", id.relative_path()),
            modified: stored.map(|s| s.modified),
        },
        version: stored.map_or(0, |s| s.version),
        receipts: stored.and_then(|s| s.receipts.clone()).filter(|_| receipts),
        tip,
    }
}

#[async_trait]
impl CompareAndSwap for MemoryStore {
    async fn fetch(&self, ids: &[DocumentId], receipts: bool) -> Result<Vec<Fetched>, MemoryError> {
        let notes = ids.iter().filter(|id| is_note(id)).count();
        self.note_reads.fetch_add(notes, Ordering::Relaxed);
        let storage = self.storage();
        Ok(ids
            .iter()
            .map(|id| fetched(&storage, id, receipts))
            .collect())
    }

    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        _lock_wait: Duration,
    ) -> Result<Swapped, MemoryError> {
        let mut storage = self.storage();
        for write in writes {
            let now = fetched(&storage, write.id, false);
            let moved = write
                .expected_text
                .is_some_and(|text| text != now.document.text);
            let purged = write
                .revisions
                .first()
                .is_some_and(|first| first.number != now.tip.number + 1);
            if now.version != write.expected || moved || purged {
                return Ok(Swapped::Lost(write.id.clone()));
            }
        }
        // To the millisecond, as a database keeps a time.
        let now = from_signed_unix_millis(signed_unix_millis(SystemTime::now()));
        for write in writes {
            let previous = storage.documents.get(write.id).cloned();
            storage.documents.insert(
                write.id.clone(),
                Stored {
                    text: write.text.to_owned(),
                    version: write.expected + 1,
                    receipts: write
                        .receipts
                        .map(str::to_owned)
                        .or(previous.and_then(|p| p.receipts)),
                    modified: now,
                },
            );
            let history = storage.histories.entry(write.id.clone()).or_default();
            history.extend(write.revisions.iter().cloned());
            let tip = history.last().map_or(0, |newest| newest.number);
            let stored = history.iter().map(|r| (r.number, r.time, r.is_base()));
            let dropped = droppable(stored, tip, now, &write.retention);
            history.drain(..dropped);
        }
        Ok(Swapped::Landed(Some(now)))
    }

    fn checks_text(&self) -> bool {
        true
    }
}

#[async_trait]
impl VersionedStore for MemoryStore {
    fn location(&self) -> String {
        "memory://".to_owned()
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        Ok(self.storage().documents.keys().cloned().collect())
    }

    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<StoredHistory, MemoryError> {
        self.history_reads.fetch_add(1, Ordering::Relaxed);
        let storage = self.storage();
        let recorded = storage
            .histories
            .get(document)
            .map_or_else(Vec::new, |history| {
                history.iter().rev().take(limit).cloned().collect()
            });
        Ok(StoredHistory {
            current: fetched(&storage, document, false),
            recorded,
            now: SystemTime::now(),
            location: format!("memory://{}.history", document.relative_path()),
        })
    }

    async fn purge(
        &self,
        document: &DocumentId,
        surface: Surface,
        retention: &Retention,
    ) -> Result<Purged, MemoryError> {
        let mut storage = self.storage();
        let tip = fetched(&storage, document, false).tip;
        let erased = storage.documents.remove(document);
        let history = storage.histories.remove(document).unwrap_or_default();
        let tombstone = retention
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
            storage
                .histories
                .insert(document.clone(), vec![tombstone.clone()]);
        }
        Ok(Purged {
            document: document.clone(),
            location: format!("memory://{}", document.relative_path()),
            bytes: erased.map_or(0, |stored| stored.text.len()),
            revisions: retention.count_kept(
                history.iter().map(|r| (r.number, r.time)),
                tip.number,
                SystemTime::now(),
            ),
            tombstone,
        })
    }

    async fn redact(
        &self,
        document: &DocumentId,
        redacted: &Revision,
        rebased: Option<&Revision>,
        tip: u64,
    ) -> Result<bool, MemoryError> {
        let mut storage = self.storage();
        let Some(history) = storage.histories.get_mut(document) else {
            return Ok(false);
        };
        let unchanged = history.last().is_some_and(|newest| newest.number == tip);
        let Some(at) = history
            .iter()
            .position(|r| r.number == redacted.number && !r.is_redacted())
            .filter(|_| unchanged)
        else {
            return Ok(false);
        };
        history[at] = redacted.clone();
        if let Some((rebased, stored)) = rebased.zip(history.get_mut(at + 1))
            && stored.number == rebased.number
            && stored.is_change_only()
        {
            *stored = rebased.clone();
        }
        Ok(true)
    }
}

/// The identity map is the store's own: the provider adds the deadline and the order.
#[async_trait]
impl IdentityMap for MemoryStore {
    async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        self.identities.resolve(identity).await
    }

    async fn link(
        &self,
        identity: &Identity,
        user: &UserId,
        relink: bool,
    ) -> Result<Option<UserId>, MemoryError> {
        self.identities.link(identity, user, relink).await
    }

    async fn unlink(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        self.identities.unlink(identity).await
    }

    async fn identities(&self) -> Result<Vec<(Identity, UserId)>, MemoryError> {
        self.identities.identities().await
    }
}

// ---- The suite: other hosts share the storage; a hand edit changes a text and its version
// without a revision, as an editor of the storage would.

async fn setup() -> Fixture<Versioned<MemoryStore>> {
    let store = MemoryStore::default();
    let (hosts, hand) = (store.clone(), store.clone());
    Fixture::new(Versioned::new(store))
        .with_hosts(move |host: Host| {
            let mut provider = Versioned::new(hosts.clone());
            if let Some(max_attempts) = host.max_attempts {
                provider = provider.with_max_attempts(max_attempts);
            }
            if let Some(retention) = host.retention {
                provider = provider.with_retention(retention);
            }
            async move { Arc::new(provider) }
        })
        .with_hand_edits(move |document, text| {
            let mut storage = hand.storage();
            let stored = storage.documents.entry(document).or_insert(Stored {
                text: String::new(),
                version: 0,
                receipts: None,
                modified: SystemTime::now(),
            });
            stored.text = text;
            stored.version += 1;
            stored.modified = SystemTime::now();
            async {}
        })
}

memory_conformance::conformance_suite!(setup; hosts, hand_edits, versioned);
memory_conformance::notes_suite!(setup);

/// The identity-map cases through two providers on one store, as two hosts would have.
mod identity_map {
    use std::sync::Arc;

    use memory_conformance::identity::Maps;
    use memory_core::raw::Versioned;

    use super::MemoryStore;

    async fn setup() -> Option<Maps> {
        let store = MemoryStore::default();
        Some(Maps::new(vec![
            Arc::new(Versioned::new(store.clone())),
            Arc::new(Versioned::new(store)),
        ]))
    }

    memory_conformance::identity_map_suite!(setup);
}

/// What the provider reports of itself: where its store is and the settings it runs with, as
/// set one by one or all at once.
#[test]
fn the_provider_shows_its_store_and_settings() {
    use memory_core::raw::Settings;
    let settings = Settings {
        max_attempts: 3,
        deadline: Duration::from_secs(2),
        retention: Retention::keep(5),
    };
    let one_by_one = Versioned::new(MemoryStore::default())
        .with_max_attempts(3)
        .with_deadline(Duration::from_secs(2))
        .with_retention(Retention::keep(5));
    assert_eq!(one_by_one.settings(), settings);
    let at_once = Versioned::new(MemoryStore::default()).with_settings(settings);
    assert_eq!(at_once.settings(), settings);
    let shown = format!("{at_once:?}");
    assert!(
        shown.starts_with("Versioned")
            && shown.contains("\"memory://\"")
            && shown.contains("max_attempts: 3"),
        "{shown}"
    );
}

/// `history` reads the store once, unless the oldest revision read is a change whose text
/// rebuilds from an older one: then once more, for all of them.
#[test]
fn history_reads_back_only_to_rebuild_a_change() {
    use memory_core::{IfMatch, MemoryProvider, MemoryUpdate, Store};
    memory_conformance::block_on(async {
        let store = MemoryStore::default();
        let p = Versioned::new(store.clone());
        let c = memory_conformance::cases::ctx("ada", "u1");
        for note in ["one", "two", "three"] {
            p.sync(
                &c,
                &[MemoryUpdate::add(Store::Memory, note)],
                &IfMatch::NONE,
            )
            .await
            .unwrap();
        }
        let document = c.document(Store::Memory);
        let reads = || store.history_reads.swap(0, Ordering::Relaxed);
        for (limit, expected_reads, why) in [
            (usize::MAX, 1, "all of it at once"),
            (3, 1, "the oldest read is revision 1, whole"),
            (1, 2, "the newest alone is a change on revision 2"),
        ] {
            reads();
            let history = p.history(&document, limit).await.unwrap();
            assert_eq!(history.len(), limit.min(3), "{why}");
            assert_eq!(reads(), expected_reads, "{why}");
        }
    });
}

/// A scope's listing comes from its index, which every write of its notes keeps in the same
/// step, without reading a note; a line the index keeps without its listing (as indexes were
/// written before they kept listings) is listed by reading that note, until a write lists it
/// whole again.
#[test]
fn a_listing_reads_only_the_notes_its_index_does_not_list() {
    use memory_core::{IfMatch, MemoryProvider, MemoryUpdate, NoteMeta, NotePath, Store};
    memory_conformance::block_on(async {
        let store = MemoryStore::default();
        let p = Versioned::new(store.clone());
        let c = memory_conformance::cases::ctx("ada", "u1");
        let path = |at: &str| NotePath::new(at).unwrap();
        let write = |updates: Vec<MemoryUpdate>| {
            let (p, c) = (&p, &c);
            async move { p.sync(c, &updates, &IfMatch::NONE).await.unwrap() }
        };
        write(vec![
            MemoryUpdate::create(Store::Memory, path("a.md"), "# Alpha"),
            MemoryUpdate::create(Store::Memory, path("b/c.md"), "Charlie."),
        ])
        .await;
        write(vec![MemoryUpdate::create(
            Store::Memory,
            path("d.md"),
            "Delta.",
        )])
        .await;
        let scope = c.document(Store::Memory).scope();
        let reads = || store.note_reads.swap(0, Ordering::Relaxed);
        let as_read = |notes: &[NoteMeta]| {
            let (p, scope) = (&p, &scope);
            let paths: Vec<NotePath> = notes.iter().map(|note| note.path.clone()).collect();
            async move {
                let mut read = Vec::new();
                for path in paths {
                    let document = p.read(&scope.note(path.clone())).await.unwrap();
                    read.push(NoteMeta::of(path, &document));
                }
                read
            }
        };

        reads();
        let listed = p.notes(&scope, "").await.unwrap();
        assert_eq!(reads(), 0, "listed from the index alone");
        assert_eq!(listed, as_read(&listed).await);
        assert_eq!(listed.len(), 3);

        // The index as a writer of the version before listings wrote it: `<bytes>\t<path>`
        // lines, and the next version.
        {
            let mut storage = store.storage();
            let index = storage
                .documents
                .iter_mut()
                .find(|(id, _)| id.note_path().is_some() && !is_note(id))
                .map(|(_, stored)| stored)
                .expect("the scope's index");
            index.text = index
                .text
                .lines()
                .map(|line| {
                    let fields: Vec<&str> = line.split('\t').collect();
                    format!("{}\t{}\n", fields[0], fields[3])
                })
                .collect();
            index.version += 1;
        }
        reads();
        assert_eq!(p.notes(&scope, "").await.unwrap(), listed);
        assert_eq!(reads(), 3, "each note read");
        write(vec![
            MemoryUpdate::add(Store::Memory, "More.").in_note(path("a.md")),
        ])
        .await;
        reads();
        let after = p.notes(&scope, "").await.unwrap();
        assert_eq!(reads(), 2, "the note written is listed whole again");
        assert_eq!(after, as_read(&after).await);
        reads();
        let seen = p.prefetch(&c).await.unwrap().context.unwrap();
        assert!(seen.contains("- memory/a.md (15 bytes): Alpha"), "{seen}");
        assert_eq!(reads(), 2, "prefetch lists the same way");
        p.prefetch(&c).await.unwrap();
        assert_eq!(reads(), 0, "and once per version of the index");
    });
}
