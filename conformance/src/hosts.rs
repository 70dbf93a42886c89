//! Several provider values over one namespace at once: what many processes or hosts sharing a
//! memory must show. A backend's tests build the "hosts" (separate pools, connections, or
//! provider values on one root) and pass them here.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;

use memory_core::{
    DEFAULT_KEEP, DocumentId, DocumentReport, IfMatch, MemoryContext, MemoryError, MemoryProvider,
    MemoryUpdate, Store, SyncReport, sha256_hex,
};

use crate::cases::ctx;

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

/// With so few attempts that some calls give up: a call that returned `Ok` landed, a call that
/// returned `Contention` left no trace, and no call failed any other way. Returns how many
/// calls gave up.
pub async fn contention_is_reported_never_dropped<P: MemoryProvider + ?Sized + 'static>(
    hosts_with_one_attempt: &[Arc<P>],
) -> usize {
    let hosts = hosts_with_one_attempt;
    let c = ctx("ada", "u1");
    let results = adds_to_one_document(hosts, &c).await;
    let landed: HashSet<String> = entries(
        &hosts[0]
            .read(&c.document(Store::Memory))
            .await
            .unwrap()
            .text,
    )
    .into_iter()
    .collect();
    let mut gave_up = 0;
    for (entry, result) in results {
        match result {
            Ok(_) => assert!(
                landed.contains(&entry),
                "{entry} was acknowledged but is missing"
            ),
            Err(MemoryError::Contention { .. }) => {
                gave_up += 1;
                assert!(
                    !landed.contains(&entry),
                    "{entry} gave up with Contention but landed"
                );
            }
            Err(err) => panic!("adding {entry} failed with something other than Contention: {err}"),
        }
    }
    gave_up
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
