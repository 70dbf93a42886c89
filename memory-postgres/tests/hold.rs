//! Writers that lost a race hold the documents (`CompareAndSwap::hold`): they queue on the
//! server instead of retrying, nothing is lost, and a hold that ends, however it ends, leaves
//! the documents free.

mod common;

use memory_core::Retention;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use memory_conformance::cases::ctx;
use memory_core::raw::{CasWrite, CompareAndSwap, Hold, Swapped};
use memory_core::{DocumentId, IfMatch, MemoryProvider, MemoryUpdate, Store, Surface};
use memory_postgres::{PostgresConfig, PostgresProvider};

const M: Store = Store::Memory;

/// A provider on `schema` with one connection, as each of the bench's writers has.
async fn instance(schema: &common::SchemaGuard) -> Arc<PostgresProvider> {
    let config = PostgresConfig {
        migrate: false,
        max_connections: 1,
        ..PostgresConfig::new(&schema.url).with_schema(&schema.schema)
    };
    Arc::new(PostgresProvider::connect(&config).await.unwrap())
}

/// Held by `p`, as a writer that lost a race holds them.
async fn hold<'a>(p: &'a PostgresProvider, ids: &[DocumentId], lock_wait: Duration) -> Hold<'a> {
    p.store()
        .hold(ids, false, lock_wait)
        .await
        .unwrap()
        .expect("PostgreSQL can hold")
}

/// Twelve provider instances (as twelve hosts) add to one document at once. Every add lands
/// once and is one revision of one chain, and no add needed more than two lost attempts: the loser
/// waits for its turn on the server and then writes. Racing alone, adds were retried many
/// times each (the same load used to need up to dozens of attempts per add).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_that_lost_a_race_queue_and_then_land() {
    const WRITERS: usize = 12;
    const ADDS: usize = 8;
    let Some((first, schema)) = common::provider().await else {
        return;
    };
    let c = ctx("ada", "u1");
    // The row exists: a document without one can be lost to a first insert even when held.
    first
        .sync(&c, &[MemoryUpdate::add(M, "start")], &IfMatch::NONE)
        .await
        .unwrap();
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let p = instance(&schema).await;
        let c = c.clone();
        writers.push(tokio::spawn(async move {
            let mut reports = Vec::new();
            for n in 0..ADDS {
                let add = [MemoryUpdate::add(M, format!("writer {w} entry {n}"))];
                reports.push(p.sync(&c, &add, &IfMatch::NONE).await.unwrap());
            }
            reports
        }));
    }
    let mut retries = Vec::new();
    for writer in writers {
        for report in writer.await.unwrap() {
            retries.push(report.retries);
        }
    }
    let raced = retries.iter().filter(|&&r| r > 0).count();
    println!(
        "{} adds by {WRITERS} instances: {raced} lost a race, the most retries of one add: {:?}",
        retries.len(),
        retries.iter().max()
    );
    // At most: the write planned from the writer's last view lost, the write after a fresh
    // read lost, the held write landed.
    assert!(
        retries.iter().all(|&r| r <= 2),
        "a lost race is followed by a held write that lands: {retries:?}"
    );

    let document = first.read(&c.document(M)).await.unwrap();
    let entries: HashSet<&str> = document.text.split("\n\n").map(str::trim).collect();
    for w in 0..WRITERS {
        for n in 0..ADDS {
            let entry = format!("writer {w} entry {n}");
            assert!(entries.contains(entry.as_str()), "{entry} is missing");
        }
    }
    // Fewer than the 100 revisions the default retention keeps.
    let total = WRITERS * ADDS + 1;
    assert_eq!(document.version.as_str(), total.to_string());
    let log = first.history(&c.document(M), usize::MAX).await.unwrap();
    assert_eq!(log.len(), total, "one revision per add");
    for pair in log.windows(2) {
        let (newer, older) = (&pair[0], &pair[1]);
        assert_eq!(newer.number, older.number + 1);
        assert_eq!(newer.version_before, older.version_after);
        assert_eq!(
            (&newer.sha256_before, newer.bytes_before),
            (&older.sha256_after, older.bytes_after),
            "revision {} starts where {} ended",
            newer.number,
            older.number
        );
        assert!(older.time <= newer.time, "times in the order of the chain");
    }
    assert!(log.iter().all(|r| r.surface != Surface::External));
}

/// While one writer holds a document, another's write waits for it (a hold that cannot wait
/// that long is `Busy`) and lands after it; a released hold leaves the row unlocked, so the
/// next write lands at its first attempt; a document with no row is held by its key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_makes_other_writers_wait_and_its_end_lets_them_in() {
    let Some((_, schema)) = common::provider().await else {
        return;
    };
    let (p1, p2) = (instance(&schema).await, instance(&schema).await);
    let c = ctx("ada", "u1");
    let memory = c.document(M);
    p1.sync(&c, &[MemoryUpdate::add(M, "first")], &IfMatch::NONE)
        .await
        .unwrap();

    let Hold::Held(held) = hold(&p1, std::slice::from_ref(&memory), Duration::from_secs(5)).await
    else {
        panic!("nobody else holds it")
    };
    assert_eq!(held.fetched[0].document.text, "first\n");
    assert_eq!(held.fetched[0].version, 1);
    let busy = hold(
        &p2,
        std::slice::from_ref(&memory),
        Duration::from_millis(100),
    )
    .await;
    assert!(matches!(busy, Hold::Busy(ref id) if *id == memory));
    // Another writer's sync starts while the document is held; it cannot land before the
    // turn's write, nor fail.
    let waiting = {
        let (p2, c) = (Arc::clone(&p2), c.clone());
        tokio::spawn(async move {
            p2.sync(&c, &[MemoryUpdate::add(M, "theirs")], &IfMatch::NONE)
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let write = CasWrite {
        id: &memory,
        text: "first\n\nheld\n",
        expected: 1,
        expected_text: None,
        receipts: None,
        revisions: &[],
        retention: Retention::default(),
    };
    assert!(
        matches!(
            held.turn.write(&[write]).await.unwrap(),
            Swapped::Landed(Some(_))
        ),
        "held: cannot lose"
    );
    let theirs = waiting.await.unwrap().unwrap();
    assert_eq!(theirs.documents[0].version_after.as_str(), "3");
    let document = p1.read(&memory).await.unwrap();
    assert_eq!(document.text, "first\n\nheld\n\ntheirs\n");

    // Released: the row is not locked, so a racing write lands at once.
    let Hold::Held(held) = hold(&p1, std::slice::from_ref(&memory), Duration::from_secs(5)).await
    else {
        panic!("nobody else holds it")
    };
    held.turn.release().await;
    let report = p2
        .sync(&c, &[MemoryUpdate::add(M, "after release")], &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(report.retries, 0, "the row was not locked");
    let document = p1.read(&memory).await.unwrap();
    assert_eq!(
        document.version.as_str(),
        "4",
        "the released hold wrote nothing"
    );

    // A document with no row: its key is held all the same.
    let user = c.document(Store::User);
    let Hold::Held(held) = hold(&p1, std::slice::from_ref(&user), Duration::from_secs(5)).await
    else {
        panic!("nobody else holds it")
    };
    assert_eq!(held.fetched[0].version, 0);
    let busy = hold(&p2, std::slice::from_ref(&user), Duration::from_millis(100)).await;
    assert!(matches!(busy, Hold::Busy(_)), "the key is held");
    held.turn.release().await;
    let Hold::Held(held) = hold(&p2, std::slice::from_ref(&user), Duration::from_millis(100)).await
    else {
        panic!("released")
    };
    held.turn.release().await;
}

/// A turn dropped unused (its caller gave up) does not keep the documents: its connection is
/// closed rather than pooled with the transaction open, the next call on the same one-connection
/// provider works, and another writer can hold and write the documents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_turn_leaves_the_documents_free() {
    let Some((_, schema)) = common::provider().await else {
        return;
    };
    let (p1, p2) = (instance(&schema).await, instance(&schema).await);
    let c = ctx("ada", "u1");
    let ids = [c.document(M), c.document(Store::User)];
    p1.sync(
        &c,
        &[
            MemoryUpdate::add(M, "m"),
            MemoryUpdate::add(Store::User, "u"),
        ],
        &IfMatch::NONE,
    )
    .await
    .unwrap();

    let Hold::Held(held) = hold(&p1, &ids, Duration::from_secs(5)).await else {
        panic!("nobody else holds them")
    };
    drop(held);
    // The one connection of p1 was closed, not pooled: this call gets a new one, with no
    // transaction or lock of the dropped turn.
    let locks: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() \
         AND locktype IN ('advisory', 'tuple', 'transactionid')",
    )
    .fetch_one(p1.store().pool())
    .await
    .unwrap();
    assert_eq!(locks, 0, "the pooled connection holds nothing");
    // Once the server has ended the dropped turn's session, the documents are free.
    let Hold::Held(held) = hold(&p2, &ids, Duration::from_secs(5)).await else {
        panic!("the dropped turn's locks are gone")
    };
    let writes: Vec<CasWrite<'_>> = held
        .fetched
        .iter()
        .map(|fetched| CasWrite {
            id: &fetched.document.id,
            text: "rewritten\n",
            expected: fetched.version,
            expected_text: None,
            receipts: None,
            revisions: &[],
            retention: Retention::default(),
        })
        .collect();
    let Swapped::Landed(Some(at)) = held.turn.write(&writes).await.unwrap() else {
        panic!("a held write lands, and tells its time")
    };
    for id in &ids {
        let modified = p1.read(id).await.unwrap().modified;
        assert_eq!(modified, Some(at), "the time each written document holds");
    }
    let report = p1
        .sync(&c, &[MemoryUpdate::add(M, "again")], &IfMatch::NONE)
        .await
        .unwrap();
    // p1's view of the document is stale (p2 wrote since): that attempt loses, and the one
    // after a read lands, as no lock is left to skip it.
    assert_eq!(report.retries, 1, "nothing holds the row");
    assert_eq!(p1.read(&ids[0]).await.unwrap().text, "rewritten\n\nagain\n");
    assert_eq!(p1.read(&ids[1]).await.unwrap().text, "rewritten\n");
}
