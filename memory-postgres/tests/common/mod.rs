//! Finding the test server and giving each test a schema of its own, dropped at the end.

#![allow(dead_code)] // each test file uses its own part of this

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use memory_conformance::services::Service;
use memory_postgres::{PostgresConfig, PostgresProvider};
use sqlx::{Connection, Executor, PgConnection};

/// The server's URL, or `None` (after a loud message) when the test should skip.
pub fn url() -> Option<String> {
    Service::Postgres.url()
}

/// A schema name no other test, process or run uses.
pub fn unique_schema() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "test_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Drops its schema, with everything in it, when dropped.
pub struct SchemaGuard {
    pub url: String,
    pub schema: String,
}

impl Drop for SchemaGuard {
    fn drop(&mut self) {
        let (url, schema) = (self.url.clone(), self.schema.clone());
        // Dropped inside a test's runtime, which cannot be blocked on: use a thread of its own.
        let dropped = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(async {
                    let mut connection = PgConnection::connect(&url).await?;
                    connection
                        .execute(sqlx::AssertSqlSafe(format!(
                            "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
                        )))
                        .await?;
                    Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
                })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("could not drop test schema {}: {dropped:?}", self.schema);
        }
    }
}

/// A migrated provider in a fresh schema, and the guard that drops it.
pub async fn provider() -> Option<(PostgresProvider, SchemaGuard)> {
    let url = url()?;
    let schema = unique_schema();
    let guard = SchemaGuard {
        url: url.clone(),
        schema: schema.clone(),
    };
    let config = PostgresConfig {
        max_connections: 4,
        ..PostgresConfig::new(&url).with_schema(&schema)
    };
    let provider = PostgresProvider::connect(&config)
        .await
        .unwrap_or_else(|err| panic!("connecting to the test server: {err}"));
    Some((provider, guard))
}
