//! Latency of `prefetch` and of a one-add `sync` against a real server, printed as
//! percentiles: `cargo bench -p agent-memory-postgres`. Two providers run side by side, their calls
//! interleaved so that whatever else loads the machine loads both alike: first over TLS (the
//! URL without `sslmode`, as the README gives it: sqlx's `prefer`) and with `sslmode=disable`,
//! to show what TLS costs; then history on (the default retention) and off, to show what
//! recording revisions costs; then, when
//! `MEMORY_TEST_PGBOUNCER_URL` names PgBouncer in transaction mode in front of the same server
//! (`scripts/services.sh` starts one), direct and through it, to show what the pooler costs.
//! The server is `MEMORY_TEST_POSTGRES_URL` (default: the local one), in schemas of their own
//! that are dropped at the end.

use memory_conformance::latency::{print_history_cost, print_side_by_side};
use memory_core::Retention;
use memory_postgres::{PoolMode, PostgresConfig, PostgresProvider};

const SAMPLES: usize = 1_000;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("MEMORY_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let pooler = std::env::var("MEMORY_TEST_PGBOUNCER_URL").ok();
    // TLS where the server offers it (the URL as given, unless it turns TLS off), and none.
    let over_tls = with_sslmode(&url, None);
    let plain = with_sslmode(&url, Some("disable"));
    let mut providers = Vec::new();
    let mut setups = vec![
        ("tls", &over_tls, PoolMode::Session, Retention::default()),
        ("plain", &plain, PoolMode::Session, Retention::default()),
        ("on", &url, PoolMode::Session, Retention::default()),
        ("off", &url, PoolMode::Session, Retention::OFF),
    ];
    // The pooler's comparison on documents of their own, from empty like the first.
    if let Some(pooler) = &pooler {
        setups.push((
            "pooled",
            pooler,
            PoolMode::Transaction,
            Retention::default(),
        ));
        setups.push(("direct", &url, PoolMode::Session, Retention::default()));
    }
    for (tag, url, pool_mode, history) in setups {
        let schema = format!("bench_{}_{tag}", std::process::id());
        let config = PostgresConfig {
            history,
            pool_mode,
            ..PostgresConfig::new(url.as_str()).with_schema(&schema)
        };
        providers.push((PostgresProvider::connect(&config).await?, schema));
    }
    let mut measured = print_side_by_side(
        "memory-postgres",
        [
            ("over TLS (no sslmode)", &providers[0].0),
            ("sslmode=disable", &providers[1].0),
        ],
        SAMPLES,
    )
    .await;
    if measured.is_ok() {
        measured =
            print_history_cost("memory-postgres", &providers[2].0, &providers[3].0, SAMPLES).await;
    }
    if let (Ok(()), [_, _, _, _, (pooled, _), (direct, _)]) = (&measured, providers.as_slice()) {
        measured = print_side_by_side(
            "memory-postgres",
            [
                ("through PgBouncer (transaction mode)", pooled),
                ("direct", direct),
            ],
            SAMPLES,
        )
        .await;
    }
    for (memory, schema) in &providers {
        // The simple protocol: one round trip, which a transaction pooler keeps on one server
        // connection.
        sqlx::raw_sql(format!("DROP SCHEMA \"{schema}\" CASCADE").as_str())
            .execute(memory.store().pool())
            .await?;
    }
    Ok(measured?)
}

/// `url` with its `sslmode` parameter set to `mode`, or removed (`None`: sqlx's `prefer`).
fn with_sslmode(url: &str, mode: Option<&str>) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut params: Vec<&str> = query
        .split('&')
        .filter(|param| !param.is_empty() && !param.starts_with("sslmode="))
        .collect();
    let mode = mode.map(|mode| format!("sslmode={mode}"));
    params.extend(mode.as_deref());
    match params.is_empty() {
        true => base.to_owned(),
        false => format!("{base}?{}", params.join("&")),
    }
}
