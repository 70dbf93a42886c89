//! What only a real PostgreSQL server can show: many hosts writing one document, the lost
//! updates of the hand-written alternative, connections killed mid-write, identity rows that
//! are not ours, and servers that are not there.

mod common;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use memory_conformance::Host;
use memory_conformance::cases::ctx;
use memory_conformance::hosts::{self, ADDS_PER_TASK, TASKS_PER_HOST};
use memory_conformance::services::assert_unreachable_is_unavailable;
use memory_core::raw::Versioned;
use memory_core::{
    DocumentId, IdentityMap, IfMatch, MemoryError, MemoryProvider, MemoryUpdate, Store, UserId,
};
use memory_postgres::{PostgresConfig, PostgresProvider, PostgresStore};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Executor, PgConnection};

const HOSTS: usize = 4;

/// `HOSTS` providers on one schema, each with its own pool, as separate hosts would have.
async fn hosts(schema: &common::SchemaGuard) -> Vec<Arc<PostgresProvider>> {
    let mut hosts = Vec::new();
    for _ in 0..HOSTS {
        hosts.push(Arc::new(common::host(schema, Host::default()).await));
    }
    hosts
}

/// Four hosts x 16 tasks x 25 adds on one document: every entry lands once and the reports
/// are one history. The read-then-upsert code people write by hand loses an update where
/// another writer writes between its read and its upsert: arranged, it loses one of two,
/// where memory-postgres keeps both (a stale view, a write between a read and a write); under
/// the same load as above the test prints how many it loses.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_hosts_lose_nothing_where_read_then_upsert_loses_updates() {
    let Some((_, schema)) = common::provider().await else {
        return;
    };
    let hosts = hosts(&schema).await;
    hosts::many_hosts_lose_nothing(&hosts).await;
    let document = hosts[0]
        .read(&DocumentId::PersonalityMemory {
            personality: "ada".parse().unwrap(),
        })
        .await
        .unwrap();
    assert_eq!(
        document.version.as_str(),
        TOTAL.to_string(),
        "one version step per add"
    );

    // The same interleaving through memory-postgres: host 0 plans its next write from its
    // view of the document, host 1 writes meanwhile; host 0's write loses that race and lands
    // on the next attempt, and all three entries are kept.
    let c = ctx("staleview", "u1");
    let add = |text: &str| [MemoryUpdate::add(Store::Memory, text)];
    hosts[0].sync(&c, &add("a"), &IfMatch::NONE).await.unwrap();
    hosts[1].sync(&c, &add("b"), &IfMatch::NONE).await.unwrap();
    let stale = hosts[0].sync(&c, &add("c"), &IfMatch::NONE).await.unwrap();
    assert_eq!(stale.retries, 1, "host 0 wrote from its stale view first");
    let document = hosts[0].read(&c.document(Store::Memory)).await.unwrap();
    assert_eq!(hosts::entries(&document.text), ["a", "b", "c"]);
    drop(hosts);

    let kept = read_then_upsert_baseline(&schema.url, &schema.schema).await;
    println!(
        "lost updates, {HOSTS} hosts x {TASKS_PER_HOST} tasks x {ADDS_PER_TASK} adds on one document: \
         read-then-upsert {} of {TOTAL}, memory-postgres 0 of {TOTAL}",
        TOTAL - kept
    );
}

const TOTAL: usize = HOSTS * TASKS_PER_HOST * ADDS_PER_TASK;

/// The pattern agent frameworks document for a database-backed memory: read the document,
/// append in the application, upsert the result. No transaction, no version check. First the
/// interleaving that loses an update, arranged and asserted: two writers read, then both
/// upsert, and the first one's entry is gone. Then the load of [`hosts::hammer`]; returns how
/// many of its entries survive.
async fn read_then_upsert_baseline(url: &str, schema: &str) -> usize {
    let mut pools = Vec::new();
    for _ in 0..HOSTS {
        pools.push(
            PgPoolOptions::new()
                .max_connections(4)
                .connect(url)
                .await
                .unwrap(),
        );
    }
    let table = format!("\"{schema}\".naive_memory");
    pools[0]
        .execute(
            format!("CREATE TABLE {table} (id TEXT PRIMARY KEY, content TEXT NOT NULL)").as_str(),
        )
        .await
        .unwrap();
    let select = Arc::<str>::from(format!("SELECT content FROM {table} WHERE id = $1"));
    let upsert = Arc::<str>::from(format!(
        "INSERT INTO {table} (id, content) VALUES ($1, $2) \
         ON CONFLICT (id) DO UPDATE SET content = excluded.content"
    ));

    let read = async |pool: &sqlx::PgPool, id: &str| -> String {
        let current: Option<String> = sqlx::query_scalar(&select)
            .bind(id)
            .fetch_optional(pool)
            .await
            .unwrap();
        current.unwrap_or_default()
    };
    let write = async |pool: &sqlx::PgPool, id: &str, content: String| {
        sqlx::query(&upsert)
            .bind(id)
            .bind(content)
            .execute(pool)
            .await
            .unwrap();
    };
    let (first, second) = (read(&pools[0], "pair").await, read(&pools[1], "pair").await);
    write(&pools[0], "pair", first + "a\n").await;
    write(&pools[1], "pair", second + "b\n").await;
    assert_eq!(
        hosts::entries(&read(&pools[0], "pair").await),
        ["b"],
        "read-then-upsert loses the update written between a read and its upsert"
    );

    hosts::hammer(HOSTS, {
        let pools = pools.clone();
        move |host, _, entry| {
            let (pool, select, upsert) = (pools[host].clone(), select.clone(), upsert.clone());
            async move {
                let current: Option<String> = sqlx::query_scalar(&select)
                    .bind("ada")
                    .fetch_optional(&pool)
                    .await
                    .unwrap();
                let content = current.unwrap_or_default() + &entry + "\n";
                sqlx::query(&upsert)
                    .bind("ada")
                    .bind(content)
                    .execute(&pool)
                    .await
                    .unwrap();
            }
        }
    })
    .await;
    let content: String =
        sqlx::query_scalar(format!("SELECT content FROM {table} WHERE id = 'ada'").as_str())
            .fetch_one(&pools[0])
            .await
            .unwrap();
    hosts::entries(&content).len()
}

/// A connection killed while its write waits on a lock, mid-statement, leaves both documents at
/// the old version (a two-document call is one transaction), the caller hears that the write
/// went unanswered (`OutcomeUnknown`), and the pool recovers for the next call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_terminated_mid_sync_leaves_old_or_new_never_between() {
    let Some((setup, schema)) = common::provider().await else {
        return;
    };
    drop(setup);
    let application = format!("fault_{}", schema.schema);
    let options = PgConnectOptions::from_str(&schema.url)
        .unwrap()
        .application_name(&application);
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .unwrap();
    let p = Arc::new(Versioned::new(
        PostgresStore::from_pool(pool, &schema.schema).unwrap(),
    ));
    let c = ctx("ada", "u1");
    let both = |text: &str| {
        [
            MemoryUpdate::add(Store::Memory, text),
            MemoryUpdate::add(Store::User, text),
        ]
    };
    p.sync(&c, &both("old"), &IfMatch::NONE).await.unwrap();
    let mut admin = PgConnection::connect(&schema.url).await.unwrap();

    for (case, updates) in [
        ("one document", vec![MemoryUpdate::add(Store::User, "new")]),
        ("both documents", both("new").to_vec()),
    ] {
        let before = (
            read(&*p, &c, Store::Memory).await,
            read(&*p, &c, Store::User).await,
        );
        // Insert, uncommitted, the user document's next revision, so the sync's write blocks
        // on its number mid-statement, after it has updated the documents' rows. (A locked
        // row would not do: a write skips it and loses, and the wait is then a hold's, which
        // is a read.)
        let mut blocker = PgConnection::connect(&schema.url).await.unwrap();
        blocker.execute("BEGIN").await.unwrap();
        blocker
            .execute(
                format!(
                    "INSERT INTO \"{0}\".memory_history (kind, owner, number, version_before, \
                   version_after, sha256_before, sha256_after, bytes_before, bytes_after, \
                   surface) \
                 SELECT 'user_profile', 'u1', max(number) + 1, '', '', '', '', 0, 0, 'external' \
                 FROM \"{0}\".memory_history WHERE kind = 'user_profile' AND owner = 'u1'",
                    schema.schema
                )
                .as_str(),
            )
            .await
            .unwrap();
        let sync = tokio::spawn({
            let (p, c) = (Arc::clone(&p), c.clone());
            async move { p.sync(&c, &updates, &IfMatch::NONE).await }
        });
        let pid = wait_for_lock_wait(&mut admin, &application).await;
        let terminated: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
            .bind(pid)
            .fetch_one(&mut admin)
            .await
            .unwrap();
        assert!(terminated);
        let err = sync
            .await
            .unwrap()
            .expect_err("the sync's connection was killed");
        assert!(
            matches!(err, MemoryError::OutcomeUnknown { .. }),
            "{case}: {err:?}"
        );
        blocker.execute("ROLLBACK").await.unwrap();

        let after = (
            read(&*p, &c, Store::Memory).await,
            read(&*p, &c, Store::User).await,
        );
        assert_eq!(after, before, "{case}: nothing of the killed call landed");
        let report = p.sync(&c, &both(case), &IfMatch::NONE).await;
        assert!(report.is_ok(), "{case}: the pool recovers: {report:?}");
    }
    let memory = read(&*p, &c, Store::Memory).await;
    assert_eq!(
        memory,
        (
            "old\n\none document\n\nboth documents\n".to_owned(),
            "3".to_owned()
        )
    );
}

async fn read(
    p: &dyn MemoryProvider,
    c: &memory_core::MemoryContext,
    store: Store,
) -> (String, String) {
    let document = p.read(&c.document(store)).await.unwrap();
    (document.text, document.version.to_string())
}

/// The backend pid of `application`'s connection once it waits on a lock.
async fn wait_for_lock_wait(admin: &mut PgConnection, application: &str) -> i32 {
    for _ in 0..500 {
        let pid: Option<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity \
             WHERE application_name = $1 AND wait_event_type = 'Lock'",
        )
        .bind(application)
        .fetch_optional(&mut *admin)
        .await
        .unwrap();
        if let Some(pid) = pid {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the sync never reached its write");
}

/// No server at the address: `Unavailable` within the connect timeout, never a hang.
#[tokio::test]
async fn unreachable_server_is_unavailable_within_the_timeout() {
    assert_unreachable_is_unavailable(
        [
            "postgres://agent:hunter2@127.0.0.1:1/memory",
            "postgres://agent:hunter2@10.255.255.1:5432/memory",
        ],
        |url| async move {
            let config = PostgresConfig {
                connect_timeout_ms: 500,
                ..PostgresConfig::new(url)
            };
            PostgresProvider::connect(&config).await
        },
    )
    .await;
}

/// Tables that were never migrated: a `Config` error that says how to fix it.
#[tokio::test]
async fn missing_tables_are_a_config_error_naming_migrate() {
    let Some(url) = common::url() else {
        return;
    };
    let config = PostgresConfig {
        migrate: false,
        ..PostgresConfig::new(url).with_schema(common::unique_schema())
    };
    let p = PostgresProvider::connect(&config).await.unwrap();
    let err = p.read(&DocumentId::GlobalMemory).await.unwrap_err();
    assert!(
        matches!(&err, MemoryError::Config { message } if message.contains("migrate()")),
        "{err:?}"
    );
    let identity = "telegram:1".parse().unwrap();
    let user = UserId::new("grace").unwrap();
    for err in [
        p.resolve(&identity).await.map(drop),
        p.link(&identity, &user, false).await.map(drop),
        p.unlink(&identity).await.map(drop),
        p.identities().await.map(drop),
    ] {
        let err = err.unwrap_err();
        assert!(
            matches!(&err, MemoryError::Config { message }
                if message.contains("memory_identities") && message.contains("migrate()")),
            "{err:?}"
        );
    }
}

/// Schema names go into SQL, so anything but plain lowercase identifiers is refused up front.
#[tokio::test]
async fn bad_schema_names_are_refused() {
    let pool = PgPoolOptions::new()
        .connect_lazy("postgres://localhost/x")
        .unwrap();
    for schema in ["", "Agent", "a;drop table x", "pg_catalog", &"a".repeat(64)] {
        let err = PostgresStore::from_pool(pool.clone(), schema).unwrap_err();
        assert!(
            matches!(err, MemoryError::Config { .. }),
            "{schema:?}: {err:?}"
        );
    }
    assert!(PostgresStore::from_pool(pool, "agent_memory_2").is_ok());
}

/// A row of the identity map that is not ours (an invalid user id or identity, written by hand)
/// is `Corrupt` for reads, links (even a relink) and unlinks, and is left as it is.
#[tokio::test]
async fn identity_rows_that_are_not_ours_are_corrupt_and_left_alone() {
    let Some((p, schema)) = common::provider().await else {
        return;
    };
    let mut admin = PgConnection::connect(&schema.url).await.unwrap();
    let table = format!("\"{}\".memory_identities", schema.schema);
    admin
        .execute(format!(
            "INSERT INTO {table} (platform, platform_user, user_id) VALUES ('telegram', '1', 'not an id')"
        ).as_str())
        .await
        .unwrap();
    let identity = "telegram:1".parse().unwrap();
    let grace = UserId::new("grace").unwrap();
    let assert_corrupt = |result: Result<(), MemoryError>| {
        let err = result.unwrap_err();
        assert!(
            matches!(&err, MemoryError::Corrupt { location, .. } if location.contains("memory_identities")),
            "{err:?}"
        );
    };
    assert_corrupt(p.resolve(&identity).await.map(drop));
    assert_corrupt(p.identities().await.map(drop));
    assert_corrupt(p.link(&identity, &grace, true).await.map(drop));
    assert_corrupt(p.unlink(&identity).await.map(drop));
    let (user,): (String,) = sqlx::query_as(format!("SELECT user_id FROM {table}").as_str())
        .fetch_one(&mut admin)
        .await
        .unwrap();
    assert_eq!(user, "not an id");

    admin
        .execute(format!("UPDATE {table} SET platform = 'tele gram', user_id = 'grace'").as_str())
        .await
        .unwrap();
    assert_corrupt(p.identities().await.map(drop));
}

/// Where the server has lz4, a document's text and its revision's are compressed with it
/// rather than pglz (cheaper on every write, which compresses both); where it has not, the
/// migration leaves pglz and writes still work. Either way the test checks the method used.
#[tokio::test]
async fn texts_are_compressed_with_lz4_where_the_server_has_it() {
    let Some((p, schema)) = common::provider().await else {
        return;
    };
    let mut admin = PgConnection::connect(&schema.url).await.unwrap();
    // A server built without lz4 refuses it as a setting.
    let has_lz4 = admin
        .execute("SET default_toast_compression = lz4")
        .await
        .is_ok();
    let expected = if has_lz4 { "lz4" } else { "pglz" };
    let c = ctx("ada", "u1");
    let text = "A line that compresses well.\n".repeat(200);
    p.sync(
        &c,
        &[MemoryUpdate::add(Store::Memory, text)],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    // The document's text, and the revision's change (its updates: it is no checkpoint).
    for (table, column) in [
        ("memory_documents", "content"),
        ("memory_history", "updates"),
    ] {
        let method: Option<String> = sqlx::query_scalar(
            format!(
                "SELECT pg_column_compression({column}) FROM \"{}\".{table}",
                schema.schema
            )
            .as_str(),
        )
        .fetch_one(&mut admin)
        .await
        .unwrap();
        assert_eq!(
            method.as_deref(),
            Some(expected),
            "{table} (lz4 on the server: {has_lz4})"
        );
    }
}

/// A write over TLS is not held back by Nagle's algorithm. sqlx writes a message of more than
/// 16 KiB over TLS as several TLS records, one `write` each; without `TCP_NODELAY` on the socket
/// (sqlx 0.9.0 stopped setting it) the kernel holds each record after the first until the
/// server acknowledges what came before, and the server, waiting for the rest of the message,
/// acknowledges only when its delayed-ACK timer fires: at least 40 ms on Linux. Every write of a
/// document past about 8 KiB took 43 ms over TLS, against 1 to 3 ms without TLS. The check is
/// against that floor, not a goal: the fastest of a few such writes must come in under it (the
/// benchmark, `./scripts/bench`, measures how fast they are). Over the URL as the README gives
/// it (no `sslmode`: TLS where the server offers it); skipped, loudly, if the server has no TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_write_over_tls_is_not_held_back_by_nagle() {
    let Some((p, schema)) = common::provider().await else {
        return;
    };
    let tls: Option<bool> =
        sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .fetch_one(p.store().pool())
            .await
            .unwrap();
    if tls != Some(true) {
        eprintln!(
            "!!! SKIPPED: the connection to {} is not TLS (the server offers none, or the URL \
             says sslmode=disable): nothing to check",
            memory_core::raw::redact_url(&schema.url)
        );
        return;
    }
    let c = ctx("ada", "u1");
    // About 24 KiB: each write sends the text, and the text it replaces, in one message.
    let text: String = (0..600)
        .map(|i| format!("Entry {i:04}: kept.\n\n"))
        .collect();
    p.sync(
        &c,
        &[MemoryUpdate::replace(Store::Memory, text)],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let mut fastest = Duration::MAX;
    for i in 0..8 {
        let add = [MemoryUpdate::add(Store::Memory, format!("Added {i}."))];
        let started = std::time::Instant::now();
        p.sync(&c, &add, &IfMatch::NONE).await.unwrap();
        fastest = fastest.min(started.elapsed());
    }
    println!("the fastest of 8 writes of a 24 KiB document over TLS: {fastest:?}");
    assert!(
        fastest < Duration::from_millis(40),
        "every write over TLS took at least {fastest:?}: held back until the server's delayed \
         ACK (TCP_NODELAY off on the client's socket?)"
    );
}

/// The scope's index is not sent again while the reader has its version (see the case).
#[tokio::test]
async fn an_index_still_at_a_known_version_is_not_sent_again() {
    let Some((p, _schema)) = common::provider().await else {
        return;
    };
    hosts::an_index_still_at_a_known_version_is_not_sent_again(&p).await;
}
