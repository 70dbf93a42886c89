//! Finding the test server and giving each test a schema of its own, dropped at the end.

#![allow(dead_code)] // each test file uses its own part of this

pub use memory_conformance::services::SchemaGuard;
use memory_conformance::services::{Service, unique_name};
use memory_postgres::{PostgresConfig, PostgresProvider};

/// The server's URL, or `None` (after a loud message) when the test should skip.
pub fn url() -> Option<String> {
    Service::Postgres.url()
}

/// A schema name no other test, process or run uses.
pub fn unique_schema() -> String {
    unique_name("test")
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

/// Another host on `schema`'s tables: a provider with a pool of its own, as another process
/// or machine would have, configured as `host` says.
pub async fn host(schema: &SchemaGuard, host: memory_conformance::Host) -> PostgresProvider {
    let mut config = PostgresConfig {
        migrate: false,
        max_connections: 4,
        ..PostgresConfig::new(&schema.url).with_schema(&schema.schema)
    };
    if let Some(max_attempts) = host.max_attempts {
        config.max_attempts = max_attempts;
    }
    if let Some(retention) = host.retention {
        config.history = retention;
    }
    PostgresProvider::connect(&config).await.unwrap()
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
    }
}

/// Replaces `document`'s text with psql's means: an UPDATE (or an INSERT for a document with no
/// row) that bumps the version and the hash as the table asks.
pub async fn edit_by_hand(schema: &SchemaGuard, document: memory_core::DocumentId, text: String) {
    use sqlx::{AssertSqlSafe, Connection, PgConnection};
    let table = format!("\"{}\".memory_documents", schema.schema);
    let mut psql = PgConnection::connect(&schema.url).await.unwrap();
    let (kind, owner) = row_key(&document);
    let updated = sqlx::query(AssertSqlSafe(format!(
        "UPDATE {table} SET content = $3, version = version + 1, \
           sha256 = encode(sha256(convert_to($3, 'UTF8')), 'hex') \
         WHERE kind = $1 AND owner = $2"
    )))
    .bind(kind)
    .bind(&owner)
    .bind(&text)
    .execute(&mut psql)
    .await
    .unwrap();
    if updated.rows_affected() == 0 {
        sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO {table} (kind, owner, content, version, sha256) \
             VALUES ($1, $2, $3, 1, encode(sha256(convert_to($3, 'UTF8')), 'hex'))"
        )))
        .bind(kind)
        .bind(&owner)
        .bind(&text)
        .execute(&mut psql)
        .await
        .unwrap();
    }
}

/// Holds `document`'s row as another session would (`SELECT ... FOR UPDATE`, then idle in its
/// transaction), until the release rolls it back.
pub async fn hold_row(
    schema: &SchemaGuard,
    document: memory_core::DocumentId,
) -> memory_conformance::Release {
    use sqlx::{AssertSqlSafe, Connection, Executor, PgConnection};
    let (kind, owner) = row_key(&document);
    let mut blocker = PgConnection::connect(&schema.url).await.unwrap();
    blocker.execute("BEGIN").await.unwrap();
    let locked = blocker
        .execute(
            sqlx::query(AssertSqlSafe(format!(
                "SELECT 1 FROM \"{}\".memory_documents WHERE kind = $1 AND owner = $2 FOR UPDATE",
                schema.schema
            )))
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
