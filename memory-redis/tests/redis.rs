//! What only a real Redis server can show: many clients writing one document, the lost updates
//! of the hand-written alternative, connections killed mid-run, keys that are not ours (documents
//! and the identity map), and servers that are not there.

mod common;

use memory_core::Retention;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use memory_conformance::Host;
use memory_conformance::cases::ctx;
use memory_conformance::hosts::{self, ADDS_PER_TASK, TASKS_PER_HOST};
use memory_conformance::services::assert_unreachable_is_unavailable;
use memory_core::raw::{CasWrite, CompareAndSwap};
use memory_core::{
    IdempotencyKey, Identity, IdentityMap, IfMatch, MemoryError, MemoryProvider, MemoryUpdate,
    Store, UserId,
};
use memory_redis::{RedisConfig, RedisProvider};
use redis::AsyncCommands;

const CLIENTS: usize = 4;
const TOTAL: usize = CLIENTS * TASKS_PER_HOST * ADDS_PER_TASK;

/// `CLIENTS` providers under one prefix, each with its own connection, as separate processes
/// would have.
async fn clients(keys: &common::PrefixGuard) -> Vec<Arc<RedisProvider>> {
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(Arc::new(common::host(keys, Host::default()).await));
    }
    clients
}

/// Four clients x 16 tasks x 25 adds on one document: every entry lands once and the reports
/// are one history. GET-then-SET loses an update where another client writes between its GET
/// and its SET: arranged, it loses one of two, where memory-redis keeps both; under the same
/// load as above the test prints how many it loses.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_clients_lose_nothing_where_get_then_set_loses_updates() {
    let Some((_, keys)) = common::provider().await else {
        return;
    };
    let clients = clients(&keys).await;
    hosts::many_hosts_lose_nothing(&clients).await;
    let c = ctx("ada", "u1");
    let document = clients[0].read(&c.document(Store::Memory)).await.unwrap();
    assert_eq!(
        document.version.as_str(),
        TOTAL.to_string(),
        "one version step per add"
    );

    let kept = get_then_set_baseline(&keys).await;
    println!(
        "lost updates, {CLIENTS} clients x {TASKS_PER_HOST} tasks x {ADDS_PER_TASK} adds on one document: \
         GET-then-SET {} of {TOTAL}, memory-redis 0 of {TOTAL}",
        TOTAL - kept
    );
}

/// The pattern people write by hand: GET the document, append in the application, SET it.
/// First the interleaving that loses an update, arranged and asserted: two clients GET, then
/// both SET, and the first one's entry is gone. Then the load of [`hosts::hammer`]; returns
/// how many of its entries survive.
async fn get_then_set_baseline(keys: &common::PrefixGuard) -> usize {
    let client = redis::Client::open(keys.url.as_str()).unwrap();
    let mut connections = Vec::new();
    for _ in 0..CLIENTS {
        connections.push(client.get_multiplexed_async_connection().await.unwrap());
    }
    let pair = format!("{{{}}}:naive-pair", keys.prefix);
    let first: Option<String> = connections[0].get(&pair).await.unwrap();
    let second: Option<String> = connections[1].get(&pair).await.unwrap();
    let () = connections[0]
        .set(&pair, first.unwrap_or_default() + "a\n")
        .await
        .unwrap();
    let () = connections[1]
        .set(&pair, second.unwrap_or_default() + "b\n")
        .await
        .unwrap();
    let content: String = connections[0].get(&pair).await.unwrap();
    assert_eq!(
        hosts::entries(&content),
        ["b"],
        "GET-then-SET loses the update written between a GET and its SET"
    );

    let key = format!("{{{}}}:naive", keys.prefix);
    hosts::hammer(CLIENTS, {
        let (connections, key) = (connections.clone(), key.clone());
        move |client, _, entry| {
            let (mut connection, key) = (connections[client].clone(), key.clone());
            async move {
                let current: Option<String> = connection.get(&key).await.unwrap();
                let content = current.unwrap_or_default() + &entry + "\n";
                let () = connection.set(&key, content).await.unwrap();
            }
        }
    })
    .await;
    let content: String = connections[0].get(&key).await.unwrap();
    hosts::entries(&content).len()
}

/// Writers' connections killed over and over (`CLIENT KILL TYPE normal`, limited to a user of
/// this test's own so parallel tests are spared; once every 16 calls that end, so that how
/// many fail does not depend on how fast the machine is) while they make keyed adds: calls in flight
/// fail with `Unavailable` (and then did not land), or `OutcomeUnknown` when the write had
/// been sent and no read could tell whether it landed; most calls (at least half) get through;
/// the connections come back by themselves, and no acknowledged add is lost. Every failed call
/// whose entry is not there is then sent again with its key, and is applied (no receipt
/// counted for it), so that every call's entry ends up present exactly once, and the
/// document's version counts exactly the entries it holds. (A failed call whose entry is
/// there is not sent again: after 320 keyed writes its receipt may be past the 64 a document
/// keeps, and a resend then would rightly apply it again.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killed_connections_recover_with_no_acknowledged_add_lost() {
    let Some((_, keys)) = common::provider().await else {
        return;
    };
    let admin = redis::Client::open(keys.url.as_str()).unwrap();
    let mut admin = admin.get_multiplexed_async_connection().await.unwrap();
    let user = format!("writer-{}", keys.prefix);
    let () = redis::cmd("ACL")
        .arg(vec!["SETUSER", &user, "on", ">secret", "~*", "&*", "+@all"])
        .query_async(&mut admin)
        .await
        .unwrap();
    let host = keys.url.split_once("://").unwrap().1;
    let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
    let writer_url = format!("redis://{user}:secret@{host}");
    let config = RedisConfig::new(&writer_url).with_prefix(&keys.prefix);
    let writers = [
        Arc::new(RedisProvider::connect(&config).await.unwrap()),
        Arc::new(RedisProvider::connect(&config).await.unwrap()),
    ];

    let done = Arc::new(AtomicBool::new(false));
    let killed = Arc::new(AtomicU64::new(0));
    let ended = Arc::new(AtomicU64::new(0));
    let killer = tokio::spawn({
        let (done, killed, ended, user, mut admin) = (
            done.clone(),
            killed.clone(),
            ended.clone(),
            user.clone(),
            admin.clone(),
        );
        async move {
            let mut last = 0;
            while !done.load(Ordering::SeqCst) {
                if ended.load(Ordering::SeqCst) < last + 16 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                }
                last = ended.load(Ordering::SeqCst);
                let n: u64 = redis::cmd("CLIENT")
                    .arg(vec![
                        "KILL", "TYPE", "normal", "USER", &user, "SKIPME", "yes",
                    ])
                    .query_async(&mut admin)
                    .await
                    .unwrap();
                killed.fetch_add(n, Ordering::SeqCst);
            }
        }
    });
    let c = ctx("ada", "u1");
    let tasks: Vec<_> = (0..8)
        .map(|task| {
            let (p, c, ended) = (Arc::clone(&writers[task % 2]), c.clone(), ended.clone());
            tokio::spawn(async move {
                let mut outcomes = Vec::new();
                for i in 0..40 {
                    let entry = format!("task{task}-add{i:02}");
                    let add = [MemoryUpdate::add(Store::Memory, &entry)];
                    let keyed = c
                        .clone()
                        .with_idempotency_key(IdempotencyKey::new(&entry).unwrap());
                    outcomes.push((entry, p.sync(&keyed, &add, &IfMatch::NONE).await));
                    ended.fetch_add(1, Ordering::SeqCst);
                }
                outcomes
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.extend(task.await.unwrap());
    }
    done.store(true, Ordering::SeqCst);
    killer.await.unwrap();

    let document = writers[0].read(&c.document(Store::Memory)).await.unwrap();
    let held = hosts::entries(&document.text);
    let unique: HashSet<&String> = held.iter().collect();
    assert_eq!(unique.len(), held.len(), "no entry landed twice");
    assert_eq!(
        document.version.as_str(),
        held.len().to_string(),
        "one version per entry"
    );
    let (mut failed, mut unknown) = (Vec::new(), Vec::new());
    for (entry, outcome) in &outcomes {
        match outcome {
            Ok(_) => assert!(
                unique.contains(entry),
                "{entry} was acknowledged but is missing"
            ),
            Err(MemoryError::Unavailable { .. }) => {
                assert!(
                    !unique.contains(entry),
                    "{entry} failed with Unavailable (nothing written) but landed"
                );
                failed.push(entry);
            }
            // Landed or not: sent again below, which tells.
            Err(MemoryError::OutcomeUnknown { .. }) => unknown.push(entry),
            Err(err) => {
                panic!("{entry}: a killed connection is Unavailable or OutcomeUnknown, not {err:?}")
            }
        }
    }
    assert!(
        killed.load(Ordering::SeqCst) > 0,
        "the killer found connections to kill"
    );
    assert!(
        2 * (failed.len() + unknown.len()) <= outcomes.len(),
        "most adds get through: {} of {} failed",
        failed.len() + unknown.len(),
        outcomes.len()
    );
    for p in &writers {
        let add = [MemoryUpdate::add(Store::Memory, "after the storm")];
        p.sync(&c, &add, &IfMatch::NONE)
            .await
            .expect("the connection came back");
    }
    // The storm is over: a failed call's entry is there (it landed, once: checked above) or
    // not, and then sent again with its key it is applied, once.
    let mut had_landed = 0;
    for entry in failed.iter().chain(&unknown) {
        if unique.contains(*entry) {
            had_landed += 1;
            continue;
        }
        let keyed = c
            .clone()
            .with_idempotency_key(IdempotencyKey::new(*entry).unwrap());
        let add = [MemoryUpdate::add(Store::Memory, *entry)];
        let report = writers[0]
            .sync(&keyed, &add, &IfMatch::NONE)
            .await
            .unwrap_or_else(|err| panic!("{entry} sent again after the storm: {err:?}"));
        assert!(
            report.documents[0].written && !report.documents[0].replayed,
            "{entry} had not landed: sent again, it is applied: {report:?}"
        );
    }
    let document = writers[0].read(&c.document(Store::Memory)).await.unwrap();
    let mut held = hosts::entries(&document.text);
    held.sort();
    let mut expected: Vec<String> = outcomes.iter().map(|(entry, _)| entry.clone()).collect();
    expected.extend(["after the storm".to_owned(), "after the storm".to_owned()]);
    expected.sort();
    assert_eq!(held, expected, "every call's entry is there exactly once");
    assert_eq!(
        document.version.as_str(),
        held.len().to_string(),
        "one version per entry"
    );
    println!(
        "{} connections killed; of {} adds {} failed with Unavailable and {} with \
         OutcomeUnknown ({had_landed} of those had landed); the others sent again with their \
         keys, every add is there exactly once",
        killed.load(Ordering::SeqCst),
        outcomes.len(),
        failed.len(),
        unknown.len()
    );
    let () = redis::cmd("ACL")
        .arg(vec!["DELUSER", &user])
        .query_async(&mut admin)
        .await
        .unwrap();
}

/// A document key holding something else (another type, a hash that is not a document) is
/// `Corrupt` for reads and writes, and is never overwritten.
#[tokio::test]
async fn keys_that_are_not_documents_are_corrupt_and_left_alone() {
    let Some((p, keys)) = common::provider().await else {
        return;
    };
    let c = ctx("ada", "u1");
    let client = redis::Client::open(keys.url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let user_key = p.store().key(&c.document(Store::User));
    let memory_key = p.store().key(&c.document(Store::Memory));
    let () = connection.set(&user_key, "a plain string").await.unwrap();
    let () = connection
        .hset_multiple(&memory_key, &[("content", "x"), ("version", "one")])
        .await
        .unwrap();

    for (store, key) in [(Store::User, &user_key), (Store::Memory, &memory_key)] {
        let err = p.read(&c.document(store)).await.unwrap_err();
        assert!(
            matches!(&err, MemoryError::Corrupt { location, .. } if location.contains(key.as_str())),
            "{err:?}"
        );
        let err = p
            .sync(
                &c,
                &[MemoryUpdate::replace(store, "overwrite")],
                &IfMatch::NONE,
            )
            .await
            .unwrap_err();
        assert!(matches!(err, MemoryError::Corrupt { .. }), "{err:?}");
    }
    let err = p.prefetch(&c).await.unwrap_err();
    assert!(matches!(err, MemoryError::Corrupt { .. }), "{err:?}");

    let still: String = connection.get(&user_key).await.unwrap();
    assert_eq!(still, "a plain string");
    let version: String = connection.hget(&memory_key, "version").await.unwrap();
    assert_eq!(version, "one");
    assert!(p.list().await.unwrap().is_empty(), "nothing was written");

    // The write script checks every key before writing any: a corrupt index key refuses the
    // whole call, and a corrupt document key met by the script itself is reported too.
    let other = ctx("bob", "u2");
    let () = connection
        .set(p.store().index_key(), "not a set")
        .await
        .unwrap();
    let both = [
        MemoryUpdate::add(Store::Memory, "m"),
        MemoryUpdate::add(Store::User, "u"),
    ];
    let err = p.sync(&other, &both, &IfMatch::NONE).await.unwrap_err();
    assert!(
        matches!(&err, MemoryError::Corrupt { location, .. } if location.contains(&p.store().index_key())),
        "{err:?}"
    );
    for store in [Store::Memory, Store::User] {
        let exists: bool = connection
            .exists(p.store().key(&other.document(store)))
            .await
            .unwrap();
        assert!(!exists, "nothing of the refused call was written");
    }
    let () = connection.del(p.store().index_key()).await.unwrap();
    let err = p
        .store()
        .compare_and_swap(
            &[CasWrite {
                id: &c.document(Store::User),
                text: "overwrite",
                expected: 0,
                expected_text: None,
                receipts: None,
                revisions: &[],
                retention: Retention::default(),
            }],
            Duration::from_secs(1),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::Corrupt { location, .. } if location.contains(&user_key)),
        "{err:?}"
    );
    let still: String = connection.get(&user_key).await.unwrap();
    assert_eq!(still, "a plain string");
}

/// No server at the address: `Unavailable` within the connect timeout, never a hang.
#[tokio::test]
async fn unreachable_server_is_unavailable_within_the_timeout() {
    assert_unreachable_is_unavailable(
        [
            "redis://agent:hunter2@127.0.0.1:1",
            "redis://agent:hunter2@10.255.255.1:6379",
        ],
        |url| async move {
            let config = RedisConfig {
                connect_timeout_ms: 500,
                ..RedisConfig::new(url)
            };
            RedisProvider::connect(&config).await
        },
    )
    .await;
}

/// Prefixes become part of every key and its hash tag, so anything unusual is refused.
#[tokio::test]
async fn bad_prefixes_are_refused() {
    for prefix in ["", "a{b}", "with space", &"a".repeat(65)] {
        let config = RedisConfig::new("redis://127.0.0.1:1").with_prefix(prefix);
        let err = RedisProvider::connect(&config).await.unwrap_err();
        assert!(
            matches!(err, MemoryError::Config { .. }),
            "{prefix:?}: {err:?}"
        );
    }
}

/// An identity-map key of another type, or a link to something that is not a user id, is
/// `Corrupt` for reads, links (even a relink) and unlinks, and is never overwritten.
#[tokio::test]
async fn an_identity_map_that_is_not_ours_is_corrupt_and_left_alone() {
    let Some((p, keys)) = common::provider().await else {
        return;
    };
    let client = redis::Client::open(keys.url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let key = p.store().identity_map_key();
    let identity: Identity = "telegram:1".parse().unwrap();
    let grace = UserId::new("grace").unwrap();
    let assert_corrupt = |result: Result<(), MemoryError>| {
        let err = result.unwrap_err();
        assert!(
            matches!(&err, MemoryError::Corrupt { location, .. } if location.contains(&key)),
            "{err:?}"
        );
    };

    let () = connection.set(&key, "a plain string").await.unwrap();
    assert_corrupt(p.resolve(&identity).await.map(drop));
    assert_corrupt(p.identities().await.map(drop));
    assert_corrupt(p.link(&identity, &grace, true).await.map(drop));
    assert_corrupt(p.unlink(&identity).await.map(drop));
    let still: String = connection.get(&key).await.unwrap();
    assert_eq!(still, "a plain string");

    let () = connection.del(&key).await.unwrap();
    let () = connection
        .hset(&key, "telegram:1", "not an id")
        .await
        .unwrap();
    assert_corrupt(p.resolve(&identity).await.map(drop));
    assert_corrupt(p.identities().await.map(drop));
    assert_corrupt(p.link(&identity, &grace, true).await.map(drop));
    assert_corrupt(p.unlink(&identity).await.map(drop));
    let still: String = connection.hget(&key, "telegram:1").await.unwrap();
    assert_eq!(still, "not an id");

    let () = connection.del(&key).await.unwrap();
    let () = connection.hset(&key, "no-colon", "grace").await.unwrap();
    assert_corrupt(p.identities().await.map(drop));
}

/// The scope's index is not sent again while the reader has its version (see the case).
#[tokio::test]
async fn an_index_still_at_a_known_version_is_not_sent_again() {
    let Some((p, _keys)) = common::provider().await else {
        return;
    };
    hosts::an_index_still_at_a_known_version_is_not_sent_again(&p).await;
}
