//! A standby connected by mistake, against a real one: a primary and a streaming standby that
//! the test starts itself ([`PostgresPair`]). Writes and reads alike are refused, with a
//! retryable error that says the server is a standby. (The failover itself, with eight
//! writers, is in memory-cli's `tests/faults.rs`.)

use memory_conformance::cases::ctx;
use memory_conformance::standby::PostgresPair;
use memory_core::raw::Versioned;
use memory_core::{ErrorKind, IfMatch, MemoryError, MemoryProvider, MemoryUpdate, Store};
use memory_postgres::{PoolMode, PostgresConfig, PostgresProvider, PostgresStore};
use sqlx::postgres::PgPoolOptions;

const SCHEMA: &str = "standby_test";

fn config(url: &str, mode: PoolMode) -> PostgresConfig {
    PostgresConfig {
        connect_timeout_ms: 1_000,
        pool_mode: mode,
        ..PostgresConfig::new(url).with_schema(SCHEMA)
    }
}

/// Whether `err` is the retryable refusal that names a standby.
fn refused_as_a_standby(err: &MemoryError) -> bool {
    err.kind() == ErrorKind::Unavailable && err.to_string().contains("is a standby")
}

/// Connecting to the standby fails in both pool modes, before any migration, as `Unavailable`
/// naming it a standby, once the pool's connect timeout passes (every connection it opened
/// was refused). A pool of the application's own, which the provider did not open, has its
/// writes and history reads refused by their `BEGIN READ WRITE`, naming the standby.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_is_refused_with_a_retryable_error_naming_it() {
    let Some(pair) = PostgresPair::start(true) else {
        return;
    };
    let c = ctx("ada", "u1");
    let primary = PostgresProvider::connect(&config(&pair.primary_url(), PoolMode::Session))
        .await
        .unwrap();
    let written = [MemoryUpdate::add(Store::Memory, "on the primary")];
    primary.sync(&c, &written, &IfMatch::NONE).await.unwrap();
    pair.caught_up().await;

    for mode in [PoolMode::Session, PoolMode::Transaction] {
        let err = PostgresProvider::connect(&config(&pair.standby_url(), mode))
            .await
            .unwrap_err();
        assert!(refused_as_a_standby(&err), "{mode:?}: {err}");
        assert!(err.kind().retry_can_help(), "{err}");
    }

    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect(&pair.standby_url())
        .await
        .unwrap();
    let own = Versioned::new(PostgresStore::from_pool(pool, SCHEMA).unwrap());
    let add = [MemoryUpdate::add(Store::Memory, "on the standby")];
    let err = own.sync(&c, &add, &IfMatch::NONE).await.unwrap_err();
    // The generic writer takes any failed write for one whose reply may be lost, so it may
    // say the outcome is unknown (a resend with the key settles it); it names the standby.
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Unavailable | ErrorKind::OutcomeUnknown
        ) && err.to_string().contains("is a standby"),
        "a write: {err}"
    );
    let err = own
        .history(&c.document(Store::Memory), 10)
        .await
        .unwrap_err();
    assert!(refused_as_a_standby(&err), "a history read: {err}");
    // The primary still has what it had.
    let memory = primary.read(&c.document(Store::Memory)).await.unwrap();
    assert_eq!(memory.text, "on the primary\n");
}
