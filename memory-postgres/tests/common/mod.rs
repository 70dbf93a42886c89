//! Finding the test server and giving each test a schema of its own, dropped at the end.

#![allow(dead_code)] // each test file uses its own part of this

pub use memory_conformance::services::SchemaGuard;
use memory_conformance::services::{Service, unique_name};
use memory_postgres::{PoolMode, PostgresConfig, PostgresProvider};

/// The server's URL, or `None` (after a loud message) when the test should skip.
pub fn url() -> Option<String> {
    Service::Postgres.url()
}

/// The URL providers in `mode` connect to: the server's, or for transaction mode PgBouncer's
/// in front of it; `None` (after a loud message) when the test should skip.
pub fn url_for(mode: PoolMode) -> Option<String> {
    match mode {
        PoolMode::Session => url(),
        PoolMode::Transaction => Service::PgBouncer.url(),
    }
}

/// A schema name no other test, process or run uses.
pub fn unique_schema() -> String {
    unique_name("test")
}

/// A migrated provider in a fresh schema, and the guard that drops it.
pub async fn provider() -> Option<(PostgresProvider, SchemaGuard)> {
    let (provider, schema) = provider_on(PoolMode::Session).await?;
    Some((provider, schema.guard))
}

/// A test's schema: the guard that drops it (on the server, directly), and where and how its
/// providers connect.
pub struct TestSchema {
    /// Drops the schema at the end; its `url` is the server's.
    pub guard: SchemaGuard,
    /// What providers of this test connect to: the server, or a pooler in front of it.
    pub url: String,
    /// How that URL hands out connections.
    pub pool_mode: PoolMode,
}

/// [`provider`], connecting as `mode` says (see [`url_for`]), with where its hosts connect.
pub async fn provider_on(mode: PoolMode) -> Option<(PostgresProvider, TestSchema)> {
    let server = url()?;
    let url = url_for(mode)?;
    let schema = TestSchema {
        guard: SchemaGuard {
            url: server,
            schema: unique_schema(),
        },
        url,
        pool_mode: mode,
    };
    let config = PostgresConfig {
        max_connections: 4,
        pool_mode: mode,
        ..PostgresConfig::new(&schema.url).with_schema(&schema.guard.schema)
    };
    let provider = PostgresProvider::connect(&config)
        .await
        .unwrap_or_else(|err| panic!("connecting to the test server: {err}"));
    Some((provider, schema))
}

/// Another host on `schema`'s tables: a provider with a pool of its own, as another process
/// or machine would have, configured as `host` says.
pub async fn host(schema: &SchemaGuard, host: memory_conformance::Host) -> PostgresProvider {
    host_on(&schema.url, PoolMode::Session, &schema.schema, host).await
}

/// [`host`] on `schema` in `mode` through `url`.
pub async fn host_on(
    url: &str,
    mode: PoolMode,
    schema: &str,
    host: memory_conformance::Host,
) -> PostgresProvider {
    let mut config = PostgresConfig {
        migrate: false,
        max_connections: 4,
        pool_mode: mode,
        ..PostgresConfig::new(url).with_schema(schema)
    };
    if let Some(max_attempts) = host.max_attempts {
        config.max_attempts = max_attempts;
    }
    if let Some(retention) = host.retention {
        config.history = retention;
    }
    PostgresProvider::connect(&config).await.unwrap()
}

/// The conformance suite's fixture in `mode`: hosts connect as the provider does; hand edits
/// and outside holds are another session's, on the server directly.
pub async fn fixture(mode: PoolMode) -> Option<memory_conformance::Fixture<PostgresProvider>> {
    use std::sync::Arc;
    let (provider, schema) = provider_on(mode).await?;
    let schema = Arc::new(schema);
    let (hosts, edits, holds) = (schema.clone(), schema.clone(), schema.clone());
    let (stored, damaged) = (schema.clone(), schema.clone());
    Some(
        memory_conformance::Fixture::new(provider)
            .with_hosts(move |host| {
                let schema = hosts.clone();
                async move {
                    Arc::new(
                        host_on(&schema.url, schema.pool_mode, &schema.guard.schema, host).await,
                    )
                }
            })
            .with_hand_edits(move |document, text| {
                let schema = edits.clone();
                async move { edit_by_hand(&schema.guard, document, text).await }
            })
            .with_outside_holds(move |document| {
                let schema = holds.clone();
                async move { hold_row(&schema.guard, document).await }
            })
            .with_stored_history(move |_| {
                let schema = stored.clone();
                async move { stored_rows(&schema.guard).await }
            })
            .with_history_damage(move |document, number| {
                let schema = damaged.clone();
                async move { damage_change(&schema.guard, document, number).await }
            })
            .with_guard(schema),
    )
}

/// The identity-map cases' maps in `mode`: two providers on one schema, each with its own
/// pool, as two hosts would have.
pub async fn identity_maps(mode: PoolMode) -> Option<memory_conformance::identity::Maps> {
    use std::sync::Arc;
    let (first, schema) = provider_on(mode).await?;
    let config = PostgresConfig {
        migrate: false,
        max_connections: 4,
        pool_mode: mode,
        ..PostgresConfig::new(&schema.url).with_schema(&schema.guard.schema)
    };
    let second = PostgresProvider::connect(&config).await.unwrap();
    let handles: Vec<Arc<dyn memory_core::IdentityMap>> = vec![Arc::new(first), Arc::new(second)];
    Some(memory_conformance::identity::Maps::new(handles).with_guard(schema.guard))
}

/// The primary key of `document`'s row, as the tables name it.
pub fn row_key(document: &memory_core::DocumentId) -> (&'static str, String) {
    use memory_core::DocumentId;
    match document {
        DocumentId::GlobalMemory => ("global_memory", String::new()),
        DocumentId::PersonalityMemory { personality } => {
            ("personality_memory", personality.to_string())
        }
        DocumentId::UserProfile { user } => ("user_profile", user.to_string()),
        DocumentId::Note(_) => ("note", document.relative_path()),
    }
}

/// Replaces `document`'s text with psql's means: an UPDATE (or an INSERT for a document with no
/// row) that bumps the version and the hash as the table asks.
pub async fn edit_by_hand(schema: &SchemaGuard, document: memory_core::DocumentId, text: String) {
    use sqlx::{Connection, PgConnection};
    let table = format!("\"{}\".memory_documents", schema.schema);
    let mut psql = PgConnection::connect(&schema.url).await.unwrap();
    let (kind, owner) = row_key(&document);
    let updated = sqlx::query(
        format!(
            "UPDATE {table} SET content = $3, version = version + 1, \
           sha256 = encode(sha256(convert_to($3, 'UTF8')), 'hex') \
         WHERE kind = $1 AND owner = $2"
        )
        .as_str(),
    )
    .bind(kind)
    .bind(&owner)
    .bind(&text)
    .execute(&mut psql)
    .await
    .unwrap();
    if updated.rows_affected() == 0 {
        sqlx::query(
            format!(
                "INSERT INTO {table} (kind, owner, content, version, sha256) \
             VALUES ($1, $2, $3, 1, encode(sha256(convert_to($3, 'UTF8')), 'hex'))"
            )
            .as_str(),
        )
        .bind(kind)
        .bind(&owner)
        .bind(&text)
        .execute(&mut psql)
        .await
        .unwrap();
    }
}

/// Every row of every table in the schema, as psql prints a row's text: what the backend
/// stores, for a search of it.
pub async fn stored_rows(schema: &SchemaGuard) -> String {
    use sqlx::{Connection, PgConnection};
    let mut psql = PgConnection::connect(&schema.url).await.unwrap();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1",
    )
    .bind(&schema.schema)
    .fetch_all(&mut psql)
    .await
    .unwrap();
    let mut stored = String::new();
    for table in tables {
        let rows: Vec<String> = sqlx::query_scalar(
            format!("SELECT t::text FROM \"{}\".\"{table}\" t", schema.schema).as_str(),
        )
        .fetch_all(&mut psql)
        .await
        .unwrap();
        stored.push_str(&format!("{table}: {}\n", rows.join("\n")));
    }
    stored
}

/// Alters revision `number`'s stored change by hand (its updates' content), so that it no
/// longer makes the text its hash records; history names that revision.
pub async fn damage_change(
    schema: &SchemaGuard,
    document: memory_core::DocumentId,
    number: u64,
) -> u64 {
    use sqlx::{Connection, PgConnection};
    let mut psql = PgConnection::connect(&schema.url).await.unwrap();
    let (kind, owner) = row_key(&document);
    let altered = sqlx::query(
        format!(
            "UPDATE \"{}\".memory_history SET updates = replace(updates, '\"content\":\"',              '\"content\":\"damaged ') WHERE kind = $1 AND owner = $2 AND number = $3",
            schema.schema
        )
        .as_str(),
    )
    .bind(kind)
    .bind(&owner)
    .bind(i64::try_from(number).unwrap())
    .execute(&mut psql)
    .await
    .unwrap();
    assert_eq!(
        altered.rows_affected(),
        1,
        "revision {number} of {document} is stored"
    );
    number
}

/// Holds `document`'s row as another session would (`SELECT ... FOR UPDATE`, then idle in its
/// transaction), until the release rolls it back.
pub async fn hold_row(
    schema: &SchemaGuard,
    document: memory_core::DocumentId,
) -> memory_conformance::Release {
    use sqlx::{Connection, Executor, PgConnection};
    let (kind, owner) = row_key(&document);
    let mut blocker = PgConnection::connect(&schema.url).await.unwrap();
    blocker.execute("BEGIN").await.unwrap();
    let locked = blocker
        .execute(
            sqlx::query(format!(
                "SELECT 1 FROM \"{}\".memory_documents WHERE kind = $1 AND owner = $2 FOR UPDATE",
                schema.schema
            ).as_str())
            .bind(kind)
            .bind(owner),
        )
        .await
        .unwrap();
    assert_eq!(locked.rows_affected(), 1, "the document's row is held");
    Box::new(move || {
        Box::pin(async move {
            blocker.execute("ROLLBACK").await.unwrap();
        })
    })
}
