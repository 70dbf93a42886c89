//! Several provider values over one namespace at once: what many processes or hosts sharing a
//! memory must show. A backend's tests build the "hosts" (separate pools, connections, or
//! provider values on one root) and pass them here.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use memory_core::raw::{
    CasWrite, CasWriter, CompareAndSwap, EventBus, Fetched, Swapped, Versioned, VersionedStore,
    sha256_hex,
};
use memory_core::{
    DEFAULT_KEEP, DocumentId, DocumentReport, IdempotencyKey, IfMatch, MemoryContext, MemoryError,
    MemoryProvider, MemoryUpdate, Store, SyncReport,
};

use crate::support::ctx;

/// Concurrent tasks per host in these tests.
pub const TASKS_PER_HOST: usize = 16;
/// Adds per task in these tests.
pub const ADDS_PER_TASK: usize = 25;

/// Runs `add(host, task, entry)` for [`ADDS_PER_TASK`] distinct entries in each of
/// [`TASKS_PER_HOST`] tasks per host, all at once, and returns every result.
pub async fn hammer<T, F, Fut>(hosts: usize, add: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(usize, usize, String) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = T> + Send,
{
    let tasks: Vec<_> = (0..hosts * TASKS_PER_HOST)
        .map(|task| {
            let add = add.clone();
            tokio::spawn(async move {
                let mut results = Vec::with_capacity(ADDS_PER_TASK);
                for i in 0..ADDS_PER_TASK {
                    let entry = format!("task{task:02}-add{i:02}");
                    results.push(add(task % hosts, task, entry).await);
                }
                results
            })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.extend(task.await.expect("a writer task panicked"));
    }
    results
}

/// The non-empty lines of `text`.
pub fn entries(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// [`hammer`] with one-entry adds to `c`'s memory, each with what its `sync` returned.
async fn adds_to_one_document<P: MemoryProvider + ?Sized + 'static>(
    hosts: &[Arc<P>],
    c: &MemoryContext,
) -> Vec<(String, Result<SyncReport, MemoryError>)> {
    hammer(hosts.len(), {
        let (hosts, c) = (hosts.to_vec(), c.clone());
        move |host, _, entry| {
            let (p, c) = (Arc::clone(&hosts[host]), c.clone());
            async move {
                let add = [MemoryUpdate::add(Store::Memory, &entry)];
                (entry, p.sync(&c, &add, &IfMatch::NONE).await)
            }
        }
    })
    .await
}

/// Every host's tasks add to one document at once: every acknowledged entry is there once, and
/// the reports form one linear history from the empty document to the final one.
pub async fn many_hosts_lose_nothing<P: MemoryProvider + ?Sized + 'static>(hosts: &[Arc<P>]) {
    let c = ctx("ada", "u1");
    let results = adds_to_one_document(hosts, &c).await;
    let mut history = History::default();
    for (entry, result) in results {
        let report = result.unwrap_or_else(|err| panic!("adding {entry} failed: {err}"));
        history.record(&entry, &report.documents[0]);
    }
    history.check(&*hosts[0]).await;
}

/// Calls that add one entry to both documents, from tasks whose personalities and users
/// overlap differently (so one document of a call can lose a race the other wins): each entry
/// lands in both documents of its call exactly once, or the call fails and it lands in neither.
pub async fn two_document_calls_land_whole<P: MemoryProvider + ?Sized + 'static>(hosts: &[Arc<P>]) {
    let context_of = |task: usize| ctx(&format!("p{}", task % 4), &format!("u{}", task % 3));
    let results = hammer(hosts.len(), {
        let hosts = hosts.to_vec();
        move |host, task, entry| {
            let (p, c) = (Arc::clone(&hosts[host]), context_of(task));
            async move {
                let both = [
                    MemoryUpdate::add(Store::Memory, &entry),
                    MemoryUpdate::add(Store::User, &entry),
                ];
                (entry, p.sync(&c, &both, &IfMatch::NONE).await)
            }
        }
    })
    .await;
    let mut history = History::default();
    for (entry, result) in results {
        let report = result.unwrap_or_else(|err| panic!("adding {entry} failed: {err}"));
        assert_eq!(report.documents.len(), 2);
        for document in &report.documents {
            history.record(&entry, document);
        }
    }
    history.check(&*hosts[0]).await;
}

/// Many hosts' tasks adding to one document with a single attempt each, so some calls give
/// up: a call that returned `Ok` landed once, after its one attempt (it reports no retry); a
/// call that returned `Contention` made one attempt and left no trace; no call failed any
/// other way; and the document's version counts exactly the entries it holds, so nothing
/// landed that was not reported. Returns how many calls gave up: under this load that is
/// usually some, but not surely, so [`a_held_document_gives_up_at_once`] and
/// [`compare_and_swap_gives_up_after_max_attempts`] make the contention happen.
pub async fn contention_is_reported_never_dropped<P: MemoryProvider + ?Sized + 'static>(
    hosts_with_one_attempt: &[Arc<P>],
) -> usize {
    let hosts = hosts_with_one_attempt;
    let c = ctx("ada", "u1");
    let results = adds_to_one_document(hosts, &c).await;
    let document = hosts[0].read(&c.document(Store::Memory)).await.unwrap();
    let held = entries(&document.text);
    let landed: HashSet<String> = held.iter().cloned().collect();
    assert_eq!(landed.len(), held.len(), "no entry landed twice");
    assert_eq!(
        document.version.as_str(),
        held.len().to_string(),
        "one version step per entry: nothing landed but the entries"
    );
    let mut gave_up = 0;
    for (entry, result) in &results {
        match result {
            Ok(report) => {
                assert!(
                    landed.contains(entry),
                    "{entry} was acknowledged but is missing"
                );
                assert_eq!(
                    report.retries, 0,
                    "{entry}: a writer allowed one attempt landed after a retry"
                );
            }
            Err(MemoryError::Contention { attempts, .. }) => {
                gave_up += 1;
                assert_eq!(
                    *attempts, 1,
                    "{entry}: a writer allowed one attempt made {attempts}"
                );
                assert!(
                    !landed.contains(entry),
                    "{entry} gave up with Contention but landed"
                );
            }
            Err(err) => panic!("adding {entry} failed with something other than Contention: {err}"),
        }
    }
    assert_eq!(
        results.len() - gave_up,
        held.len(),
        "the document holds exactly the acknowledged entries"
    );
    gave_up
}

/// A provider allowed one attempt per call (`p`), writing a document another writer holds
/// (`hold` takes the document as the backend's own writers do after a lost race, and returns
/// what `release` lets go of): the call gives up at once with `Contention` after that one
/// attempt, naming the document, and writes nothing (text, version, history, receipt: the
/// same call sent again with its key once the document is free is applied, not replayed,
/// and lands exactly once).
pub async fn a_held_document_gives_up_at_once<P, H>(
    p: &P,
    hold: impl AsyncFnOnce(&DocumentId) -> H,
    release: impl AsyncFnOnce(H),
) where
    P: MemoryProvider + ?Sized,
{
    let c = ctx("held", "u1");
    let document = c.document(Store::Memory);
    p.sync(
        &c,
        &[MemoryUpdate::add(Store::Memory, "before")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let before = p.read(&document).await.unwrap();
    let history_before = p.history(&document, usize::MAX).await.unwrap();
    let keyed = c
        .clone()
        .with_idempotency_key(IdempotencyKey::new("held-call").unwrap());
    let add = [MemoryUpdate::add(Store::Memory, "after")];

    let held = hold(&document).await;
    let err = p
        .sync(&keyed, &add, &IfMatch::NONE)
        .await
        .expect_err("the document is held by another writer");
    assert!(
        matches!(&err, MemoryError::Contention { document: d, attempts: 1 } if *d == document),
        "one attempt, then Contention on {document}: {err:?}"
    );
    let after = p.read(&document).await.unwrap();
    assert_eq!(
        (after.text, after.version),
        (before.text.clone(), before.version.clone()),
        "the call that gave up wrote nothing"
    );
    let history = p.history(&document, usize::MAX).await.unwrap();
    assert_eq!(
        history.len(),
        history_before.len(),
        "the call that gave up recorded no revision"
    );
    release(held).await;

    let report = p.sync(&keyed, &add, &IfMatch::NONE).await.unwrap();
    assert!(
        !report.documents[0].replayed,
        "the call that gave up left no receipt: sent again, it is applied"
    );
    let again = p.sync(&keyed, &add, &IfMatch::NONE).await.unwrap();
    assert!(again.documents[0].replayed, "and once only");
    let after = p.read(&document).await.unwrap();
    assert_eq!(entries(&after.text), ["before", "after"]);
}

/// A store whose compare-and-swaps another writer beats: just before each of the first
/// `races` writes goes out, `rival` (a provider on the same namespace) adds an entry of its
/// own to every document written, so the write was planned from a read that is now stale and
/// loses. It declines to hold documents, as a store that cannot hold does, so a writer's
/// every attempt is such a race. It counts the writer's attempts (its writes) itself.
pub struct Raced<'a, S: ?Sized> {
    store: &'a S,
    rival: &'a dyn MemoryProvider,
    ctx: MemoryContext,
    races: u32,
    attempts: AtomicU32,
}

impl<'a, S: ?Sized> Raced<'a, S> {
    /// `store`, whose first `races` writes to `ctx`'s documents `rival` beats.
    pub fn new(
        store: &'a S,
        rival: &'a dyn MemoryProvider,
        ctx: &MemoryContext,
        races: u32,
    ) -> Self {
        Raced {
            store,
            rival,
            ctx: ctx.clone(),
            races,
            attempts: AtomicU32::new(0),
        }
    }

    /// The compare-and-swaps the writer made: its attempts.
    pub fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl<S: CompareAndSwap + ?Sized> CompareAndSwap for Raced<'_, S> {
    async fn fetch(&self, ids: &[DocumentId], receipts: bool) -> Result<Vec<Fetched>, MemoryError> {
        self.store.fetch(ids, receipts).await
    }

    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        lock_wait: Duration,
    ) -> Result<Swapped, MemoryError> {
        let attempt = self.attempts.fetch_add(1, Ordering::SeqCst) + 1;
        if attempt <= self.races {
            let updates: Vec<MemoryUpdate> = [Store::Memory, Store::User]
                .into_iter()
                .filter(|store| writes.iter().any(|w| *w.id == self.ctx.document(*store)))
                .map(|store| MemoryUpdate::add(store, format!("rival-{attempt}")))
                .collect();
            assert_eq!(
                updates.len(),
                writes.len(),
                "writes only the context's documents"
            );
            self.rival
                .sync(&self.ctx, &updates, &IfMatch::NONE)
                .await
                .expect("the rival's write lands");
        }
        self.store.compare_and_swap(writes, lock_wait).await
    }

    fn checks_text(&self) -> bool {
        self.store.checks_text()
    }
}

/// The engine every versioned backend writes with ([`CasWriter`]), over `store` with a rival
/// (`rival`, another host on the same namespace) that writes first before each attempt
/// ([`Raced`]): with `max_attempts` of 1, 2 and 4, a call beaten every time gives up as
/// `Contention` after exactly `max_attempts` attempts (counted by the store, not taken from
/// the error), having written nothing: the document holds the rival's entries, one per
/// attempt, and its history their revisions only; sent again with its key once the rival
/// stops, it is applied (no receipt counted for it) and lands once. A call beaten on all but
/// its last attempt lands on that one, reporting `max_attempts - 1` retries. For one and for
/// two documents per call.
pub async fn compare_and_swap_gives_up_after_max_attempts<S>(
    provider: &Versioned<S>,
    rival: &dyn MemoryProvider,
) where
    S: VersionedStore,
{
    let store = provider.store();
    for max_attempts in [1, 2, 4] {
        for both in [false, true] {
            let c = ctx(
                &format!("raced{max_attempts}{both}"),
                &format!("u{max_attempts}{both}"),
            );
            let stores: &[Store] = if both {
                &[Store::Memory, Store::User]
            } else {
                &[Store::Memory]
            };
            let case = format!("max_attempts {max_attempts}, {} document(s)", stores.len());
            let updates: Vec<MemoryUpdate> = stores
                .iter()
                .map(|store| MemoryUpdate::add(*store, "writer"))
                .collect();
            let keyed = c.clone().with_idempotency_key(
                IdempotencyKey::new(format!("raced-{max_attempts}-{both}")).unwrap(),
            );
            let events = EventBus::default();
            let writer = CasWriter::new(max_attempts).with_deadline(Duration::from_secs(60));

            let raced = Raced::new(store, rival, &c, u32::MAX);
            let err = writer
                .sync(&raced, &events, &keyed, &updates, &IfMatch::NONE)
                .await
                .expect_err("every attempt was beaten");
            assert_eq!(raced.attempts(), max_attempts, "{case}: attempts made");
            assert!(
                matches!(&err, MemoryError::Contention { attempts, .. } if *attempts == max_attempts),
                "{case}: {err:?}"
            );
            let rivals: Vec<String> = (1..=max_attempts).map(|n| format!("rival-{n}")).collect();
            for s in stores {
                let id = c.document(*s);
                let document = provider.read(&id).await.unwrap();
                assert_eq!(
                    entries(&document.text),
                    rivals,
                    "{case}: {id} holds the rival's entries and nothing of the call that gave up"
                );
                assert_eq!(
                    document.version.as_str(),
                    max_attempts.to_string(),
                    "{case}: {id}"
                );
                let history = provider.history(&id, usize::MAX).await.unwrap();
                assert_eq!(
                    history.len(),
                    rivals.len(),
                    "{case}: {id}: the rival's revisions only"
                );
                assert!(
                    history.iter().all(|r| r.idempotency_key.is_none()),
                    "{case}: {id}: no revision of the call that gave up"
                );
            }

            // The rival stops: the same call, with its key, is applied (nothing of it had
            // landed, no receipt counts for it), once.
            let calm = Raced::new(store, rival, &c, 0);
            let report = writer
                .sync(&calm, &events, &keyed, &updates, &IfMatch::NONE)
                .await
                .unwrap_or_else(|err| panic!("{case}: sent again once the rival stopped: {err:?}"));
            assert_eq!(calm.attempts(), 1, "{case}");
            assert!(
                report.documents.iter().all(|d| d.written && !d.replayed),
                "{case}: {report:?}"
            );
            let again = writer
                .sync(&calm, &events, &keyed, &updates, &IfMatch::NONE)
                .await
                .unwrap();
            assert!(
                again.documents.iter().all(|d| d.replayed),
                "{case}: {again:?}"
            );
            for s in stores {
                let mut expected = rivals.clone();
                expected.push("writer".to_owned());
                let document = provider.read(&c.document(*s)).await.unwrap();
                assert_eq!(entries(&document.text), expected, "{case}: lands once");
            }

            // Beaten on every attempt but the last: it lands on that one.
            let c = ctx(
                &format!("late{max_attempts}{both}"),
                &format!("v{max_attempts}{both}"),
            );
            let updates: Vec<MemoryUpdate> = stores
                .iter()
                .map(|store| MemoryUpdate::add(*store, "writer"))
                .collect();
            let writer = CasWriter::new(max_attempts).with_deadline(Duration::from_secs(60));
            let raced = Raced::new(store, rival, &c, max_attempts - 1);
            let report = writer
                .sync(&raced, &events, &c, &updates, &IfMatch::NONE)
                .await
                .unwrap_or_else(|err| panic!("{case}: the last attempt is not beaten: {err:?}"));
            assert_eq!(
                raced.attempts(),
                max_attempts,
                "{case}: lands on the last attempt"
            );
            assert_eq!(report.retries, max_attempts - 1, "{case}");
            let mut expected: Vec<String> =
                (1..max_attempts).map(|n| format!("rival-{n}")).collect();
            expected.push("writer".to_owned());
            for s in stores {
                let document = provider.read(&c.document(*s)).await.unwrap();
                assert_eq!(entries(&document.text), expected, "{case}");
            }
        }
    }
}

/// The interleaving that makes a hand-written read-then-write lose an update, arranged: another
/// writer (`rival`) writes between a call's read and its write ([`Raced`], once). Through the
/// engine every versioned backend writes with, the call's write loses that race, the call
/// reads again and lands (reporting one retry), and both entries are kept.
pub async fn a_write_between_read_and_write_loses_nothing<S>(
    provider: &Versioned<S>,
    rival: &dyn MemoryProvider,
) where
    S: VersionedStore,
{
    let store = provider.store();
    let c = ctx("interleaved", "u1");
    let writer = CasWriter::new(4);
    let raced = Raced::new(store, rival, &c, 1);
    let add = [MemoryUpdate::add(Store::Memory, "writer")];
    let report = writer
        .sync(&raced, &EventBus::default(), &c, &add, &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(
        raced.attempts(),
        2,
        "the first write lost, the second landed"
    );
    assert_eq!(report.retries, 1);
    let document = provider.read(&c.document(Store::Memory)).await.unwrap();
    assert_eq!(
        entries(&document.text),
        ["rival-1", "writer"],
        "neither update was lost"
    );
}

/// A read of a scope's index that says which version it has gets no text back while the index
/// is still at it (0 for a scope with no notes yet), and the whole index once it moved: what a
/// prefetch sends each turn for a scope of many notes is a version, not the listing. For the
/// stores whose [`VersionedStore::read_changed`] leaves out what the reader has (the default
/// reads everything, which the contract allows).
pub async fn an_index_still_at_a_known_version_is_not_sent_again<S>(p: &Versioned<S>)
where
    S: VersionedStore,
{
    use memory_core::{NotePath, Version};
    let c = ctx("ada", "u1");
    let note = NotePath::new("trips/kyoto.md").unwrap();
    p.sync(
        &c,
        &[MemoryUpdate::create(
            Store::Memory,
            note,
            "# Kyoto\nTemples.",
        )],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let memory = c.document(Store::Memory);
    let (notes, none_yet) = (
        memory.scope().index(),
        c.document(Store::User).scope().index(),
    );
    let ids = [memory.clone(), notes.clone(), none_yet.clone()];
    let index = p
        .store()
        .read(std::slice::from_ref(&notes))
        .await
        .unwrap()
        .remove(0);
    assert!(index.text.contains("trips/kyoto.md"), "{index:?}");

    let zero = Version::new("0");
    let read = p
        .store()
        .read_changed(&ids, &[None, Some(&index.version), Some(&zero)])
        .await
        .unwrap();
    assert_eq!(read[0].as_ref().map(|d| d.id.clone()), Some(memory));
    assert_eq!(read[1], None, "the index is unchanged: no text");
    assert_eq!(read[2], None, "no notes yet, as known");

    let read = p
        .store()
        .read_changed(&ids, &[None, Some(&zero), Some(&index.version)])
        .await
        .unwrap();
    assert_eq!(read[1].as_ref(), Some(&index), "moved on: the whole index");
    let empty = read[2].as_ref().expect("not at that version: read");
    assert_eq!((empty.text.as_str(), empty.version.as_str()), ("", "0"));
}

/// A compare-and-swap of two documents (a note and its scope's index, MEMORY.md and USER.md)
/// where one of them changed since it was read: neither lands, whichever of the two is the
/// stale one, and the store names that one. With both current, both land.
pub async fn a_write_of_two_documents_lands_whole_or_not_at_all<S>(provider: &Versioned<S>)
where
    S: VersionedStore,
{
    let store = provider.store();
    let c = ctx("whole", "u1");
    let ids = [c.document(Store::Memory), c.document(Store::User)];
    let pair = [
        MemoryUpdate::add(Store::Memory, "m1"),
        MemoryUpdate::add(Store::User, "u1"),
    ];
    provider.sync(&c, &pair, &IfMatch::NONE).await.unwrap();
    let write = |id, text, expected| CasWrite {
        id,
        text,
        expected,
        expected_text: None,
        receipts: None,
        revisions: &[],
        retention: provider.settings().retention,
    };
    let wait = Duration::from_secs(5);
    for stale in 0..2 {
        let expected = |at: usize| if at == stale { 0 } else { 1 };
        let writes = [
            write(&ids[0], "m2\n", expected(0)),
            write(&ids[1], "u2\n", expected(1)),
        ];
        let swapped = store.compare_and_swap(&writes, wait).await.unwrap();
        assert_eq!(
            swapped,
            Swapped::Lost(ids[stale].clone()),
            "the stale document is named"
        );
        for (id, text) in ids.iter().zip(["m1\n", "u1\n"]) {
            let document = provider.read(id).await.unwrap();
            assert_eq!(
                (document.text.as_str(), document.version.as_str()),
                (text, "1"),
                "{id}: nothing of a write that lost landed"
            );
        }
    }
    let writes = [write(&ids[0], "m2\n", 1), write(&ids[1], "u2\n", 1)];
    let swapped = store.compare_and_swap(&writes, wait).await.unwrap();
    assert!(matches!(swapped, Swapped::Landed(_)), "{swapped:?}");
    for (id, text) in ids.iter().zip(["m2\n", "u2\n"]) {
        assert_eq!(provider.read(id).await.unwrap().text, text);
    }
}

/// Prefetch on one host (which keeps what it worked out from a scope's notes while they do
/// not change) lists what another host wrote since: a new note, a note grown, a note deleted,
/// in either of the context's scopes.
pub async fn prefetch_lists_what_other_hosts_wrote<P: MemoryProvider + ?Sized>(hosts: &[Arc<P>]) {
    let [reader, writer] = [&hosts[0], &hosts[1]];
    let c = ctx("listed", "u1");
    let path = |path: &str| memory_core::NotePath::new(path).unwrap();
    let write = async |update: MemoryUpdate| {
        writer.sync(&c, &[update], &IfMatch::NONE).await.unwrap();
    };
    let listed = async || {
        let context = reader
            .prefetch(&c)
            .await
            .unwrap()
            .context
            .unwrap_or_default();
        let mut lines: Vec<String> = context
            .split_once("## Notes\n")
            .map(|(_, index)| index.lines().filter(|line| !line.is_empty()))
            .into_iter()
            .flatten()
            .map(str::to_owned)
            .collect();
        lines.sort_unstable();
        lines
    };
    write(MemoryUpdate::add(Store::Memory, "Pair.")).await;
    assert!(listed().await.is_empty());
    write(MemoryUpdate::create(Store::Memory, path("a.md"), "A.")).await;
    assert_eq!(listed().await, ["- memory/a.md (3 bytes): A."]);
    write(MemoryUpdate::add(Store::Memory, "More.").in_note(path("a.md"))).await;
    write(MemoryUpdate::create(Store::User, path("b.md"), "B.")).await;
    assert_eq!(
        listed().await,
        ["- memory/a.md (10 bytes): A.", "- user/b.md (3 bytes): B."]
    );
    write(MemoryUpdate::delete(Store::Memory, path("a.md"))).await;
    assert_eq!(listed().await, ["- user/b.md (3 bytes): B."]);
}

/// What the reports of many concurrent writes claim, per document, to check against what the
/// provider holds afterwards.
#[derive(Default)]
struct History {
    /// Per document: SHA-256 before a write -> after it, and the entries acknowledged.
    documents: HashMap<DocumentId, (HashMap<String, String>, Vec<String>)>,
}

impl History {
    fn record(&mut self, entry: &str, report: &DocumentReport) {
        assert!(report.written, "{entry}: an add always writes");
        let (steps, acknowledged) = self.documents.entry(report.document.clone()).or_default();
        let forked = steps.insert(report.sha256_before.clone(), report.sha256_after.clone());
        assert!(
            forked.is_none(),
            "two writes to {} started from the same content: one was computed from stale text",
            report.document
        );
        acknowledged.push(entry.to_owned());
    }

    async fn check<P: MemoryProvider + ?Sized>(self, p: &P) {
        for (id, (steps, acknowledged)) in self.documents {
            let text = p.read(&id).await.unwrap().text;
            let mut held = entries(&text);
            held.sort();
            let mut expected = acknowledged;
            expected.sort();
            assert_eq!(
                held, expected,
                "{id} holds exactly the acknowledged entries, once each"
            );
            // Following the reports from the empty document visits every write once.
            let (mut at, mut walked) = (sha256_hex(""), 0);
            while let Some(next) = steps.get(&at) {
                at = next.clone();
                walked += 1;
            }
            assert_eq!(
                walked,
                steps.len(),
                "{id}: the reports form one linear history"
            );
            assert_eq!(
                at,
                sha256_hex(&text),
                "{id}: the history ends at what is stored"
            );
            // The provider's own history (default retention) is the newest of those writes,
            // each once, in the order they landed.
            let revisions = p.history(&id, usize::MAX).await.unwrap();
            assert_eq!(revisions.len(), steps.len().min(DEFAULT_KEEP), "{id}");
            assert_eq!(revisions[0].sha256_after, sha256_hex(&text), "{id}");
            crate::history::assert_chained(&revisions);
            for revision in &revisions {
                assert_eq!(
                    steps.get(&revision.sha256_before),
                    Some(&revision.sha256_after),
                    "{id}: revision {} is an acknowledged write",
                    revision.number
                );
            }
        }
    }
}
