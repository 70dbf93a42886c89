//! History on a real server: retention in the write path, hand edits made with SQL, the
//! server's clock, schemas that had documents before history existed, a write that raced a
//! purge, and stored revisions that are not ours.

mod common;

use std::time::{Duration, UNIX_EPOCH};

use memory_conformance::cases::ctx;
use memory_core::raw::{CasWrite, CompareAndSwap, Swapped};
use memory_core::{
    DocumentId, IfMatch, MemoryError, MemoryProvider, MemoryUpdate, Retention, Store, Surface,
};
use memory_postgres::{PostgresConfig, PostgresProvider};
use sqlx::{Connection, Executor, PgConnection};

const M: Store = Store::Memory;
const U: Store = Store::User;

/// A provider on `schema` keeping `history`, without migrating (the schema is migrated).
async fn provider_on(schema: &common::SchemaGuard, history: Retention) -> PostgresProvider {
    let config = PostgresConfig {
        migrate: false,
        max_connections: 2,
        history,
        ..PostgresConfig::new(&schema.url).with_schema(&schema.schema)
    };
    PostgresProvider::connect(&config).await.unwrap()
}

/// A connection of our own, as a person with psql would have.
async fn admin(schema: &common::SchemaGuard) -> PgConnection {
    PgConnection::connect(&schema.url).await.unwrap()
}

/// How many revisions of `document` the history table holds, pruned or not.
async fn stored_revisions(
    admin: &mut PgConnection,
    schema: &common::SchemaGuard,
    document: &DocumentId,
) -> i64 {
    let (kind, owner) = common::row_key(document);
    sqlx::query_scalar(
        format!(
            "SELECT count(*) FROM \"{}\".memory_history WHERE kind = $1 AND owner = $2",
            schema.schema
        )
        .as_str(),
    )
    .bind(kind)
    .bind(owner)
    .fetch_one(admin)
    .await
    .unwrap()
}

/// With a retention of 3 the table holds the newest 3 and the changes back to the checkpoint
/// they are rebuilt from (a checkpoint every 3), no more: pruned by the writes, not only
/// hidden. (What history shows is the suite's `retention_keeps_the_newest_three`.)
#[tokio::test]
async fn retention_prunes_the_table_back_to_a_checkpoint() {
    let Some((_, schema)) = common::provider().await else {
        return;
    };
    let p = provider_on(&schema, Retention::keep(3)).await;
    let c = ctx("ada", "u1");
    for i in 1..=11 {
        p.sync(
            &c,
            &[MemoryUpdate::add(M, format!("entry {i}"))],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    }
    let mut admin = admin(&schema).await;
    let document = c.document(M);
    // 10 and 11 kept with 9 (a checkpoint, kept too): nothing older.
    assert_eq!(stored_revisions(&mut admin, &schema, &document).await, 3);
    p.sync(&c, &[MemoryUpdate::add(M, "entry 12")], &IfMatch::NONE)
        .await
        .unwrap();
    // 10 to 12 kept, and 9, the checkpoint 10 and 11 are rebuilt from.
    assert_eq!(stored_revisions(&mut admin, &schema, &document).await, 4);
    let whole: Vec<i64> = history_rows(&mut admin, &schema, &document)
        .await
        .into_iter()
        .filter_map(|(number, text, _)| text.map(|_| number))
        .collect();
    assert_eq!(whole, [9, 12], "checkpoints at multiples of 3 only");
    let shown: Vec<u64> = p
        .history(&document, usize::MAX)
        .await
        .unwrap()
        .iter()
        .map(|r| r.number)
        .collect();
    assert_eq!(shown, [12, 11, 10]);
}

/// Revisions (and tombstones) are stamped by the server's clock: a revision's time is the
/// document row's `updated_at` of the same write, to the millisecond, and falls between two
/// readings of the server's `now()` taken around the write.
#[tokio::test]
async fn revision_times_come_from_the_server() {
    let Some((p, schema)) = common::provider().await else {
        return;
    };
    let mut admin = admin(&schema).await;
    let server_now = async |admin: &mut PgConnection| {
        let millis: i64 =
            sqlx::query_scalar("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8")
                .fetch_one(admin)
                .await
                .unwrap();
        UNIX_EPOCH + Duration::from_millis(millis.unsigned_abs())
    };
    let c = ctx("ada", "u1");
    let document = c.document(M);
    let before = server_now(&mut admin).await;
    p.sync(&c, &[MemoryUpdate::add(M, "Timed.")], &IfMatch::NONE)
        .await
        .unwrap();
    let after = server_now(&mut admin).await;
    let revision = p.history(&document, 1).await.unwrap().remove(0);
    assert!(
        before <= revision.time && revision.time <= after,
        "{:?} between the server's {before:?} and {after:?}",
        revision.time
    );
    let (kind, owner) = common::row_key(&document);
    let same_instant: bool = sqlx::query_scalar(
        format!(
            "SELECT h.time = d.updated_at FROM \"{0}\".memory_history AS h \
         JOIN \"{0}\".memory_documents AS d USING (kind, owner) \
         WHERE kind = $1 AND owner = $2 AND h.number = 1",
            schema.schema
        )
        .as_str(),
    )
    .bind(kind)
    .bind(&owner)
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert!(
        same_instant,
        "recorded at the write's own transaction time, to the microsecond"
    );
    assert_eq!(
        Some(revision.time),
        p.read(&document).await.unwrap().modified
    );

    let before = server_now(&mut admin).await;
    let purged = p.purge(&document, Surface::Cli).await.unwrap();
    let after = server_now(&mut admin).await;
    let tombstone = purged.tombstone.unwrap();
    assert!(before <= tombstone.time && tombstone.time <= after);
    assert_eq!(p.history(&document, 1).await.unwrap(), [tombstone]);
}

/// A schema migrated before history existed, with documents in it (written as that version
/// wrote them): migrating adds the history table and leaves the documents as they were. They
/// have no recorded revisions, so history shows the text as an external change, and the first
/// write records that external revision of the pre-existing text, then its own.
#[tokio::test]
async fn migrating_a_schema_with_documents_keeps_them_and_history_starts_at_the_next_write() {
    let Some(url) = common::url() else {
        return;
    };
    let schema = common::SchemaGuard {
        url: url.clone(),
        schema: common::unique_schema(),
    };
    // The migrations before history (the three before 20261125000000), applied the way
    // PostgresProvider::migrate applies them.
    let options = url
        .parse::<sqlx::postgres::PgConnectOptions>()
        .unwrap()
        .options([("search_path", schema.schema.as_str())]);
    let store = memory_postgres::PostgresStore::from_pool(
        sqlx::PgPool::connect_lazy_with(options.clone()),
        &schema.schema,
    )
    .unwrap();
    let mut old = PgConnection::connect_with(&options).await.unwrap();
    store.migrate_up_to(&mut old, 20261124000000).await.unwrap();
    let applied: i64 = sqlx::query_scalar(
        format!(
            "SELECT count(*) FROM \"{}\"._memory_migrations",
            schema.schema
        )
        .as_str(),
    )
    .fetch_one(&mut old)
    .await
    .unwrap();
    assert_eq!(applied, 3);
    let c = ctx("ada", "u1");
    let written = "Likes tea.\n\nFlies Friday.\n";
    old.execute(
        format!(
            "INSERT INTO memory_documents (kind, owner, content, version, sha256) \
         VALUES ('personality_memory', 'ada', '{written}', 5, \
                 encode(sha256(convert_to('{written}', 'UTF8')), 'hex'))"
        )
        .as_str(),
    )
    .await
    .unwrap();
    old.close().await.unwrap();

    let config = PostgresConfig {
        max_connections: 2,
        ..PostgresConfig::new(&url).with_schema(&schema.schema)
    };
    let p = PostgresProvider::connect(&config)
        .await
        .expect("the history migration applies on top");
    let document = c.document(M);
    let read = p.read(&document).await.unwrap();
    assert_eq!((read.text.as_str(), read.version.as_str()), (written, "5"));
    let seen = p.history(&document, usize::MAX).await.unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].number, seen[0].surface, seen[0].text.as_deref()),
        (1, Surface::External, Some(written))
    );

    p.sync(
        &c,
        &[MemoryUpdate::add(M, "Then the agent.")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let log = p.history(&document, usize::MAX).await.unwrap();
    assert_eq!(
        log.iter()
            .map(|r| (
                r.number,
                r.surface,
                r.version_before.as_str(),
                r.version_after.as_str()
            ))
            .collect::<Vec<_>>(),
        [
            (2, Surface::Api, "5", "6"),
            (1, Surface::External, "0", "5")
        ]
    );
    assert_eq!(log[1].text.as_deref(), Some(written));
    assert_eq!(
        (log[1].bytes_before, log[1].bytes_after),
        (0, written.len())
    );
    assert_eq!(log[0].sha256_before, log[1].sha256_after);
    let reverted = p.revert(&c, M, 1, None).await.unwrap();
    assert_eq!(reverted.documents[0].version_after.as_str(), "7");
    assert_eq!(p.read(&document).await.unwrap().text, written);
}

/// Revisions past the age limit are pruned by the next write, never the newest; a lowered
/// retention is caught up with a bounded number of deletions per write while history shows
/// only what is kept from the start.
#[tokio::test]
async fn pruning_by_age_and_after_a_lowered_retention() {
    let Some((_, schema)) = common::provider().await else {
        return;
    };
    let mut admin = admin(&schema).await;
    let c = ctx("ada", "u1");
    let document = c.document(M);
    let add = |i: usize| [MemoryUpdate::add(M, format!("entry {i}"))];

    let max_age = Duration::from_millis(800);
    let aging = provider_on(&schema, Retention::default().with_max_age(max_age)).await;
    for i in 0..2 {
        aging.sync(&c, &add(i), &IfMatch::NONE).await.unwrap();
    }
    tokio::time::sleep(max_age + Duration::from_millis(300)).await;
    let numbers = |log: &[memory_core::Revision]| log.iter().map(|r| r.number).collect::<Vec<_>>();
    assert_eq!(
        numbers(&aging.history(&document, usize::MAX).await.unwrap()),
        [2],
        "the newest is kept, however old"
    );
    aging.sync(&c, &add(2), &IfMatch::NONE).await.unwrap();
    assert_eq!(
        numbers(&aging.history(&document, usize::MAX).await.unwrap()),
        [3]
    );
    assert_eq!(
        stored_revisions(&mut admin, &schema, &document).await,
        1,
        "pruned by the write, not only hidden"
    );

    // Twenty more with the default retention, then the retention is lowered to 2.
    let keeping = provider_on(&schema, Retention::default()).await;
    for i in 3..23 {
        keeping.sync(&c, &add(i), &IfMatch::NONE).await.unwrap();
    }
    assert_eq!(stored_revisions(&mut admin, &schema, &document).await, 21);
    let lowered = provider_on(&schema, Retention::keep(2)).await;
    assert_eq!(
        numbers(&lowered.history(&document, usize::MAX).await.unwrap()),
        [23, 22]
    );
    let mut stored = 21;
    let mut writes = 0;
    while stored > 2 {
        lowered
            .sync(&c, &add(100 + writes), &IfMatch::NONE)
            .await
            .unwrap();
        writes += 1;
        let now = stored_revisions(&mut admin, &schema, &document).await;
        assert!(
            now >= stored + 1 - 8,
            "a write prunes a bounded number: {stored} then {now}"
        );
        stored = now;
        assert!(writes < 10, "the excess drains away");
        assert_eq!(
            lowered.history(&document, usize::MAX).await.unwrap().len(),
            2
        );
    }
    assert_eq!(stored, 2);
}

/// With history off, writes record nothing and a purge leaves no tombstone.
#[tokio::test]
async fn history_off_records_nothing() {
    let Some((_, schema)) = common::provider().await else {
        return;
    };
    let p = provider_on(&schema, Retention::OFF).await;
    let c = ctx("ada", "u1");
    for text in ["One.", "Two."] {
        p.sync(&c, &[MemoryUpdate::add(U, text)], &IfMatch::NONE)
            .await
            .unwrap();
    }
    let mut admin = admin(&schema).await;
    assert_eq!(
        stored_revisions(&mut admin, &schema, &c.document(U)).await,
        0
    );
    let purged = p.purge(&c.document(U), Surface::Api).await.unwrap();
    assert_eq!(
        (purged.bytes, purged.revisions, purged.tombstone),
        ("One.\n\nTwo.\n".len(), 0, None)
    );
    assert_eq!(p.read(&c.document(U)).await.unwrap().text, "");
    assert_eq!(
        stored_revisions(&mut admin, &schema, &c.document(U)).await,
        0
    );
}

/// A write computed before a purge, whose document was written again since (to the same
/// version, counters restart after a purge), must not land: its text came from the purged
/// content. The version alone cannot tell; the history's tip, which moved on, does. (The
/// revision numbers here do not collide with any stored one, so the primary key alone would
/// not stop it.)
#[tokio::test]
async fn a_write_computed_before_a_purge_never_lands_after_it() {
    let Some((p, _schema)) = common::provider().await else {
        return;
    };
    let c = ctx("ada", "u1");
    let sync = async |store: Store, text: &str| {
        p.sync(&c, &[MemoryUpdate::add(store, text)], &IfMatch::NONE)
            .await
            .unwrap();
    };
    // What a writer that read `document` now would write: `text`, recording one revision.
    let stale_write = async |document: &DocumentId, text: &str| {
        let fetched = p
            .store()
            .fetch(std::slice::from_ref(document), false)
            .await
            .unwrap();
        let fetched = fetched.into_iter().next().unwrap();
        let mut revision = p
            .history(document, 1)
            .await
            .unwrap()
            .into_iter()
            .next()
            .unwrap();
        revision.number = fetched.tip.number + 1;
        revision.version_before = fetched.document.version.clone();
        revision.text = Some(text.to_owned());
        (fetched.version, revision)
    };

    let document = c.document(M);
    sync(M, "Secret.").await;
    let (expected, revision) = stale_write(&document, "Secret.\n\nMore.\n").await;
    assert_eq!((expected, revision.number), (1, 2));
    sync(M, "Also secret.").await;
    p.purge(&document, Surface::Cli).await.unwrap();
    sync(M, "After.").await;
    assert_eq!(p.read(&document).await.unwrap().version.as_str(), "1");
    let resurrecting = CasWrite {
        id: &document,
        text: "Secret.\n\nMore.\n",
        expected,
        expected_text: None,
        receipts: None,
        revisions: std::slice::from_ref(&revision),
        retention: Retention::default(),
    };
    let lost_on = p
        .store()
        .compare_and_swap(&[resurrecting], Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(lost_on, Swapped::Lost(document.clone()), "a lost race");
    assert_eq!(p.read(&document).await.unwrap().text, "After.\n");
    let log = p.history(&document, usize::MAX).await.unwrap();
    assert!(!format!("{log:?}").contains("ecret"), "{log:?}");

    // The same for a first write, read while the document had no row (only a tombstone).
    let profile = c.document(U);
    sync(U, "Old.").await;
    p.purge(&profile, Surface::Cli).await.unwrap();
    let (expected, revision) = stale_write(&profile, "Stale.\n").await;
    assert_eq!((expected, revision.number), (0, 3));
    sync(U, "Secret.").await;
    p.purge(&profile, Surface::Cli).await.unwrap();
    let first = CasWrite {
        id: &profile,
        text: "Stale.\n",
        expected,
        expected_text: None,
        receipts: None,
        revisions: std::slice::from_ref(&revision),
        retention: Retention::default(),
    };
    let lost_on = p
        .store()
        .compare_and_swap(&[first], Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(lost_on, Swapped::Lost(profile.clone()));
    assert_eq!(p.read(&profile).await.unwrap().text, "");
}

/// Stored revisions that are not ours (edited by hand into something no write makes) are
/// `Corrupt`, naming the revision and the column, and are left as they are.
#[tokio::test]
async fn stored_revisions_that_are_not_ours_are_corrupt() {
    let Some((p, schema)) = common::provider().await else {
        return;
    };
    let c = ctx("ada", "u1");
    let document = c.document(M);
    p.sync(&c, &[MemoryUpdate::add(M, "Kept.")], &IfMatch::NONE)
        .await
        .unwrap();
    let mut admin = admin(&schema).await;
    let history = format!("\"{}\".memory_history", schema.schema);
    let updates: String = sqlx::query_scalar(format!("SELECT updates FROM {history}").as_str())
        .fetch_one(&mut admin)
        .await
        .unwrap();
    for (column, value) in [
        ("surface", "'robot'"),
        ("updates", "'not json'"),
        ("personality", "'Not An Id'"),
        ("bytes_after", "-1"),
    ] {
        admin
            .execute(format!(
                "ALTER TABLE {history} DROP CONSTRAINT IF EXISTS memory_history_bytes_after_check; \
                 UPDATE {history} SET {column} = {value}"
            ).as_str())
            .await
            .unwrap();
        let err = p.history(&document, 10).await.unwrap_err();
        assert!(
            matches!(&err, MemoryError::Corrupt { location, reason }
                if location.contains("memory_history") && location.ends_with("#1")
                    && reason.starts_with(column)),
            "{column}: {err:?}"
        );
        let revert = p.revert(&c, M, 1, None).await.unwrap_err();
        assert!(matches!(revert, MemoryError::Corrupt { .. }), "{revert:?}");
        sqlx::query(
            format!(
                "UPDATE {history} SET surface = 'api', updates = $1, personality = 'ada', \
               bytes_after = 6"
            )
            .as_str(),
        )
        .bind(&updates)
        .execute(&mut admin)
        .await
        .unwrap();
    }
    let kept = p.history(&document, 10).await.unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].text.as_deref(), Some("Kept.\n"), "rebuilt again");
}

/// The longest age limit a configuration can give (`max_age_days = 4294967295`) is one the
/// server can compute with: writes land, and nothing is pruned by age.
#[tokio::test]
async fn the_longest_age_limit_writes_and_prunes_nothing() {
    let Some((_, schema)) = common::provider().await else {
        return;
    };
    let forever = Duration::from_secs(u64::from(u32::MAX) * 86_400);
    let p = provider_on(&schema, Retention::default().with_max_age(forever)).await;
    let c = ctx("ada", "u1");
    for text in ["One.", "Two.", "Three."] {
        p.sync(&c, &[MemoryUpdate::add(M, text)], &IfMatch::NONE)
            .await
            .unwrap();
    }
    assert_eq!(
        p.history(&c.document(M), usize::MAX).await.unwrap().len(),
        3
    );
}

/// The statements a `sync` and a `prefetch` send are planned once per connection, not on every
/// call: planning the write with its history, or the read with its tip, costs more than
/// running it. (PostgreSQL re-plans a prepared statement whose plan for the values at hand
/// always looks cheaper than the generic one, as happens with bound arrays unless they are
/// hidden from the estimate.)
#[tokio::test]
async fn statements_are_not_planned_on_every_call() {
    let Some((_, schema)) = common::provider().await else {
        return;
    };
    let config = PostgresConfig {
        migrate: false,
        max_connections: 1,
        ..PostgresConfig::new(&schema.url).with_schema(&schema.schema)
    };
    let p = PostgresProvider::connect(&config).await.unwrap();
    let c = ctx("ada", "u1");
    // 21: the first prefetch reads everything, the next 20 only what changed.
    for i in 0..21 {
        p.sync(
            &c,
            &[MemoryUpdate::add(M, format!("Note {i}."))],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
        p.prefetch(&c).await.unwrap();
    }
    // The pool's one connection, which prepared them.
    let plans: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements \
         WHERE statement LIKE '%memory_documents%' \
           AND statement NOT LIKE '%pg_prepared_statements%'",
    )
    .fetch_all(p.store().pool())
    .await
    .unwrap();
    // The write and prefetch's read of what changed, sent on every call. (The read with the
    // tip ran once: a writer alone plans its next write from its last one, without reading.)
    let repeated: Vec<_> = plans
        .into_iter()
        .filter(|(_, generic, custom)| generic + custom >= 20)
        .collect();
    assert!(repeated.len() >= 2, "{repeated:?}");
    for (statement, generic, custom) in repeated {
        assert!(
            custom <= 5 && generic >= 15,
            "planned {custom} times for its values, {generic} times generic: {statement}"
        );
    }
}

/// The rows of `document`'s history, oldest first: number, whether the row holds the whole
/// text, and its updates and text as stored.
async fn history_rows(
    admin: &mut PgConnection,
    schema: &common::SchemaGuard,
    document: &DocumentId,
) -> Vec<(i64, Option<String>, String)> {
    let (kind, owner) = common::row_key(document);
    sqlx::query_as(
        format!(
            "SELECT number, content, updates FROM \"{}\".memory_history \
         WHERE kind = $1 AND owner = $2 ORDER BY number",
            schema.schema
        )
        .as_str(),
    )
    .bind(kind)
    .bind(owner)
    .fetch_all(admin)
    .await
    .unwrap()
}
