//! Writers that lost a race hold the document and queue in Redis (`CompareAndSwap::hold`):
//! many instances on one document land every add with at most a retry or two, a racing write
//! loses to a holder, and a turn that ends (written, released, dropped, or its holder gone)
//! lets the next writer in.

mod common;

use memory_core::Retention;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use common::Topology;
use memory_conformance::cases::ctx;
use memory_conformance::hosts::entries;
use memory_core::raw::{CasWrite, CompareAndSwap, Hold, Swapped};
use memory_core::{DocumentId, IfMatch, MemoryError, MemoryProvider, MemoryUpdate, Store};
use memory_redis::RedisProvider;
use redis::AsyncCommands;

/// Provider instances under one prefix, each with its own connection, as separate processes
/// would have.
async fn instances(keys: &common::PrefixGuard, count: usize) -> Vec<Arc<RedisProvider>> {
    let mut instances = Vec::new();
    for _ in 0..count {
        let config = keys.config();
        instances.push(Arc::new(RedisProvider::connect(&config).await.unwrap()));
    }
    instances
}

/// `provider` holds `document`, or the test fails.
async fn hold<'a>(
    provider: &'a RedisProvider,
    document: &DocumentId,
    lock_wait: Duration,
) -> memory_core::raw::Held<'a> {
    match provider
        .store()
        .hold(std::slice::from_ref(document), false, lock_wait)
        .await
    {
        Ok(Some(Hold::Held(held))) => held,
        Ok(Some(Hold::Busy(busy))) => panic!("{busy} is held by another writer"),
        Ok(None) => panic!("a connected provider holds"),
        Err(err) => panic!("holding {document}: {err}"),
    }
}

/// Whether `provider` finds `document` held by another writer when it tries once.
async fn busy(provider: &RedisProvider, document: &DocumentId) -> bool {
    match provider
        .store()
        .hold(std::slice::from_ref(document), false, Duration::ZERO)
        .await
    {
        Ok(Some(Hold::Busy(busy))) => {
            assert_eq!(&busy, document);
            true
        }
        Ok(Some(Hold::Held(held))) => {
            held.turn.release().await;
            false
        }
        other => panic!("holding {document}: {:?}", other.err()),
    }
}

async fn lock_exists(
    keys: &common::PrefixGuard,
    provider: &RedisProvider,
    id: &DocumentId,
) -> bool {
    let mut connection = common::admin(keys).await;
    connection
        .exists(provider.store().lock_key(id))
        .await
        .unwrap()
}

/// Sixteen instances add to one document at once, six adds each (within the 100 revisions the
/// history keeps). Without queueing, every
/// add races the fifteen others on each attempt and retries many times; holding after the
/// first lost race, each add lands on its second attempt (a third only if a holder outlived
/// its lock). Every add is there once, with one revision each, in one chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_instances_on_one_document_queue_instead_of_retrying() {
    many_instances_queue(Topology::Server).await;
}

/// The same on a Redis Cluster: the locks, the writes and the waits (`BLPOP` on connections
/// of their own) go to the master that owns the prefix's slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_instances_on_a_cluster_queue_instead_of_retrying() {
    many_instances_queue(Topology::Cluster).await;
}

async fn many_instances_queue(topology: Topology) {
    const INSTANCES: usize = 16;
    const ADDS: usize = 6;
    let Some(keys) = common::keys_on(topology) else {
        return;
    };
    let instances = instances(&keys, INSTANCES).await;
    let c = ctx("ada", "u1");
    let tasks: Vec<_> = instances
        .iter()
        .enumerate()
        .map(|(i, provider)| {
            let (provider, c) = (Arc::clone(provider), c.clone());
            tokio::spawn(async move {
                let mut retries = Vec::new();
                for n in 0..ADDS {
                    let add = [MemoryUpdate::add(Store::Memory, format!("w{i} add {n}"))];
                    let report = provider.sync(&c, &add, &IfMatch::NONE).await.unwrap();
                    retries.push(report.retries);
                }
                retries
            })
        })
        .collect();
    let mut retries = Vec::new();
    for task in tasks {
        retries.extend(task.await.unwrap());
    }
    let most = retries.iter().max().copied().unwrap_or_default();
    assert!(
        most <= 2,
        "an add retried {most} times; retries per add: {retries:?}"
    );

    let document = instances[0].read(&c.document(Store::Memory)).await.unwrap();
    let landed: HashSet<String> = entries(&document.text).into_iter().collect();
    let expected: HashSet<String> = (0..INSTANCES)
        .flat_map(|i| (0..ADDS).map(move |n| format!("w{i} add {n}")))
        .collect();
    assert_eq!(landed, expected, "every add once");
    assert_eq!(document.version.as_str(), (INSTANCES * ADDS).to_string());
    let history = instances[0]
        .history(&c.document(Store::Memory), usize::MAX)
        .await
        .unwrap();
    assert_eq!(history.len(), INSTANCES * ADDS, "one revision per add");
    assert_eq!(history.last().unwrap().number, 1);
    for pair in history.windows(2) {
        let (newer, older) = (&pair[0], &pair[1]);
        assert_eq!(newer.number, older.number + 1);
        assert_eq!(newer.version_before, older.version_after);
        assert_eq!(newer.sha256_before, older.sha256_after);
    }
    for instance in &instances {
        assert!(!lock_exists(&keys, instance, &c.document(Store::Memory)).await);
    }
}

/// While one instance holds the document, another's compare-and-swap loses and writes
/// nothing, though the version it expects is current; the holder's write then lands, lets go
/// in the same step, and the other holds at once.
#[tokio::test]
async fn a_racing_write_loses_to_the_holder() {
    let Some((_, keys)) = common::provider().await else {
        return;
    };
    let [holder, racer] = <[Arc<RedisProvider>; 2]>::try_from(instances(&keys, 2).await).unwrap();
    let id = ctx("ada", "u1").document(Store::Memory);
    let held = hold(&holder, &id, Duration::ZERO).await;
    assert_eq!(held.fetched[0].version, 0);
    assert!(lock_exists(&keys, &holder, &id).await);

    let racing = CasWrite {
        id: &id,
        text: "- racer\n",
        expected: 0,
        expected_text: None,
        receipts: None,
        revisions: &[],
        retention: Retention::default(),
    };
    let lost = racer
        .store()
        .compare_and_swap(&[racing], Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(
        lost,
        Swapped::Lost(id.clone()),
        "the racer loses to the holder"
    );
    assert_eq!(racer.read(&id).await.unwrap().version.as_str(), "0");
    assert!(busy(&racer, &id).await, "and cannot hold it either");

    let own = CasWrite {
        text: "- holder\n",
        ..racing
    };
    let Swapped::Landed(Some(at)) = held.turn.write(&[own]).await.unwrap() else {
        panic!("the holder's write lands, and tells its time")
    };
    let document = racer.read(&id).await.unwrap();
    assert_eq!(document.modified, Some(at), "the time the document holds");
    assert_eq!(
        (document.text.as_str(), document.version.as_str()),
        ("- holder\n", "1")
    );
    assert!(!lock_exists(&keys, &holder, &id).await, "the write let go");
    let next = hold(&racer, &id, Duration::ZERO).await;
    assert_eq!(
        next.fetched[0].version, 1,
        "the next holder reads the write"
    );
    next.turn.release().await;
}

/// A writer waiting for a held document gets it when the holder writes, and reads what it
/// wrote, within a wait shorter than the lock's expiry.
#[tokio::test]
async fn a_waiting_writer_gets_the_document_when_the_holder_writes() {
    let Some((_, keys)) = common::provider().await else {
        return;
    };
    let [holder, waiter] = <[Arc<RedisProvider>; 2]>::try_from(instances(&keys, 2).await).unwrap();
    let id = ctx("ada", "u1").document(Store::Memory);
    let held = hold(&holder, &id, Duration::ZERO).await;
    let waiting = tokio::spawn({
        let (waiter, id) = (Arc::clone(&waiter), id.clone());
        async move {
            // Longer than any write takes, shorter than the lock's expiry.
            match waiter
                .store()
                .hold(&[id], false, Duration::from_millis(1500))
                .await
            {
                Ok(Some(Hold::Held(held))) => {
                    let version = held.fetched[0].version;
                    held.turn.release().await;
                    Ok(version)
                }
                Ok(Some(Hold::Busy(id))) => Err(id),
                other => panic!("{:?}", other.err()),
            }
        }
    });
    // The waiter has tried at least once: the document is still held.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let write = CasWrite {
        id: &id,
        text: "- holder\n",
        expected: 0,
        expected_text: None,
        receipts: None,
        revisions: &[],
        retention: Retention::default(),
    };
    let landed = held.turn.write(&[write]).await.unwrap();
    assert!(matches!(landed, Swapped::Landed(Some(_))), "{landed:?}");
    assert_eq!(waiting.await.unwrap(), Ok(1));
}

/// A released turn lets the next writer in at once, and writes nothing; so does a dropped one,
/// by a release it sends on its own; a holder that vanished without either holds the document
/// until the lock expires, and no longer.
#[tokio::test]
async fn a_turn_that_ends_unwritten_lets_the_next_writer_in() {
    let Some((_, keys)) = common::provider().await else {
        return;
    };
    let [first, second] = <[Arc<RedisProvider>; 2]>::try_from(instances(&keys, 2).await).unwrap();
    let id = ctx("ada", "u1").document(Store::Memory);

    let held = hold(&first, &id, Duration::ZERO).await;
    assert!(busy(&second, &id).await);
    held.turn.release().await;
    assert!(
        !busy(&second, &id).await,
        "released: the next holds at once"
    );
    assert_eq!(first.read(&id).await.unwrap().version.as_str(), "0");

    let held = hold(&first, &id, Duration::ZERO).await;
    drop(held);
    let next = hold(&second, &id, Duration::from_secs(1)).await;
    next.turn.release().await;

    // A holder that died: its turn never ends, and only the lock's expiry lets go.
    let held = hold(&first, &id, Duration::ZERO).await;
    std::mem::forget(held);
    assert!(busy(&second, &id).await);
    let client = redis::Client::open(keys.url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let ttl: i64 = connection.pttl(first.store().lock_key(&id)).await.unwrap();
    assert!(
        (1..=2000).contains(&ttl),
        "the lock expires within 2 s: {ttl}"
    );
    let next = hold(&second, &id, Duration::from_secs(5)).await;
    next.turn.release().await;
}

/// A document that is not ours is reported, and no lock is left on it.
#[tokio::test]
async fn holding_a_document_that_is_not_ours_takes_no_lock() {
    let Some((provider, keys)) = common::provider().await else {
        return;
    };
    let id = ctx("ada", "u1").document(Store::Memory);
    let mut connection = provider.store().connection().clone();
    let () = connection
        .set(provider.store().key(&id), "not a hash")
        .await
        .unwrap();
    let err = provider
        .store()
        .hold(std::slice::from_ref(&id), false, Duration::ZERO)
        .await
        .err()
        .expect("a string is not a document");
    assert!(matches!(err, MemoryError::Corrupt { .. }), "{err:?}");
    assert!(!lock_exists(&keys, &provider, &id).await);
}
