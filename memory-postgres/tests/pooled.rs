//! The contract through PgBouncer in transaction mode (`pool_mode = "transaction"`), as teams
//! deploy PostgreSQL: each test in a schema of its own, migrated through the pooler. Hand
//! edits and outside holds are other sessions on the server itself.

mod common;

use std::time::{Duration, Instant};

use memory_conformance::Fixture;
use memory_conformance::services::SchemaGuard;
use memory_core::MemoryError;
use memory_postgres::{PoolMode, PostgresConfig, PostgresProvider};
use sqlx::{Connection, PgConnection};

async fn setup() -> Option<Fixture<PostgresProvider>> {
    common::fixture(PoolMode::Transaction).await
}

memory_conformance::conformance_suite!(setup; hosts, hand_edits, versioned, outside_holds);
memory_conformance::notes_suite!(setup);

/// The identity-map cases through two pooled providers on one schema.
mod identity_map {
    use memory_conformance::identity::Maps;
    use memory_postgres::PoolMode;

    use super::common;

    async fn setup() -> Option<Maps> {
        common::identity_maps(PoolMode::Transaction).await
    }

    memory_conformance::identity_map_suite!(setup);
}

/// Session mode sends the timeouts as a startup parameter, which PgBouncer refuses: connecting
/// so is a `Config` error that says which setting to change, never an `Unavailable` to retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_mode_through_a_transaction_pooler_says_to_set_pool_mode() {
    let Some(url) = common::url_for(PoolMode::Transaction) else {
        return;
    };
    let config = PostgresConfig::new(&url).with_schema(common::unique_schema());
    let err = PostgresProvider::connect(&config).await.unwrap_err();
    assert!(
        matches!(&err, MemoryError::Config { message }
            if message.contains("pool_mode = \"transaction\"")),
        "{err:?}"
    );
}

/// The advisory lock the migrations take (sqlx's key for the database), held by `connection`
/// or by anyone: how many sessions hold it.
async fn migration_lock_holders(connection: &mut PgConnection) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
         WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database() \
         AND a.state = 'idle'",
    )
    .fetch_one(connection)
    .await
    .unwrap()
}

/// Providers of several hosts starting at once on a fresh schema, through the pooler, all
/// migrate it (taking turns), the tables land in that schema (not where the pooler's next
/// server connection's search path points), and no lock outlives the migration: sqlx's own
/// migrator took a session lock, whose unlock went through the pooler to another server
/// connection and left the lock held by an idle one for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_migrating_one_schema_at_once_through_the_pooler_all_succeed() {
    let (Some(url), Some(server)) = (common::url_for(PoolMode::Transaction), common::url()) else {
        return;
    };
    let guard = SchemaGuard {
        url: server.clone(),
        schema: common::unique_schema(),
    };
    let config = PostgresConfig {
        max_connections: 2,
        pool_mode: PoolMode::Transaction,
        ..PostgresConfig::new(&url).with_schema(&guard.schema)
    };
    let hosts: Vec<_> = (0..4)
        .map(|_| {
            let config = config.clone();
            tokio::spawn(async move { PostgresProvider::connect(&config).await.map(drop) })
        })
        .collect();
    for host in hosts {
        let connected = host.await.unwrap();
        connected.expect("each host migrates or finds the schema migrated");
    }

    let mut direct = PgConnection::connect(&server).await.unwrap();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1 \
         ORDER BY 1",
    )
    .bind(&guard.schema)
    .fetch_all(&mut direct)
    .await
    .unwrap();
    assert_eq!(
        tables,
        [
            "_memory_migrations",
            "memory_documents",
            "memory_history",
            "memory_identities"
        ],
        "the migrated tables, in the schema"
    );
    let migrations = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .unwrap()
        .count();
    let applied: i64 = sqlx::query_scalar(
        format!(
            "SELECT count(*) FROM \"{}\"._memory_migrations WHERE success",
            guard.schema
        )
        .as_str(),
    )
    .fetch_one(&mut direct)
    .await
    .unwrap();
    assert_eq!(
        applied,
        i64::try_from(migrations).unwrap(),
        "each applied once"
    );

    // Another test's migration may hold the lock for a moment; a leaked one stays.
    let started = Instant::now();
    while migration_lock_holders(&mut direct).await > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "an idle session holds an advisory lock"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
