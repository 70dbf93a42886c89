//! The embedded migrations, applied in one transaction under sqlx's migration lock.

use memory_core::MemoryError;
use sqlx::{Connection, Executor, PgConnection};

use crate::connect::refused_as_a_standby;
use crate::store::PostgresStore;

impl PostgresStore {
    /// Creates the schema and applies the embedded migrations that are not applied yet. Safe to
    /// call from many processes at once: they take turns on an advisory lock. Safe behind a
    /// pooler in transaction mode: it is one transaction, and nothing of it outlives that.
    ///
    /// # Errors
    /// [`MemoryError::Unavailable`] when the server cannot be reached or a migration fails.
    pub async fn migrate(&self) -> Result<(), MemoryError> {
        let options = self.pool.connect_options();
        let timeout = self.pool.options().get_acquire_timeout();
        let mut connection = tokio::time::timeout(timeout, PgConnection::connect_with(&options))
            .await
            .map_err(|_| MemoryError::Unavailable {
                what: self.location.clone(),
                message: format!("no connection within {timeout:?}"),
                source: None,
            })?
            .map_err(|err| self.unavailable(err))?;
        let migrated = self.migrate_on(&mut connection).await;
        let _ = connection.close().await;
        migrated
    }

    /// [`PostgresStore::migrate`] on `connection`, which stays open.
    pub(crate) async fn migrate_on(
        &self,
        connection: &mut PgConnection,
    ) -> Result<(), MemoryError> {
        self.migrate_up_to(connection, i64::MAX).await
    }

    /// Applies the embedded migrations up to and including `last` on `connection`, as
    /// [`PostgresStore::migrate`] does. Public only for the tests of upgrades: a schema
    /// migrated by an earlier version is this with that version's last migration.
    #[doc(hidden)]
    pub async fn migrate_up_to(
        &self,
        connection: &mut PgConnection,
        last: i64,
    ) -> Result<(), MemoryError> {
        // Hosts that start together on a fresh schema take turns on the lock, but the one
        // waiting began its transaction before the first committed: its catalog lookups may
        // still miss the schema or tables just created, and creating them again fails on a
        // duplicate. A new transaction sees them; by the third, every such race is over.
        let mut attempts = 1;
        let migrated = loop {
            match self.migrate_in_one_transaction(connection, last).await {
                Err(Migrating::Sql(err)) if attempts < 3 && created_meanwhile(&err) => {
                    attempts += 1;
                }
                migrated => break migrated,
            }
        };
        migrated.map_err(|err| match err {
            Migrating::Sql(err) if refused_as_a_standby(&err) => self.unavailable(err),
            Migrating::Sql(err) => {
                MemoryError::unavailable(format!("migrating {}", self.location), err)
            }
            mismatch => MemoryError::Config {
                message: format!(
                    "the migrations applied in {} do not match this memory-postgres ({mismatch}): use a schema of its own, or a matching version",
                    self.location
                ),
            },
        })
    }

    /// [`PostgresStore::migrate_up_to`]'s work on `connection`, in one transaction that holds
    /// the migrations' advisory lock: the schema, the table of applied migrations, and each
    /// embedded migration not applied yet, recorded there as it is applied.
    ///
    /// The table is `_memory_migrations` in the schema, with the columns sqlx's migrator keeps
    /// (and its SHA-384 checksums of each migration's text), so that an application's own sqlx
    /// migrations can share the schema, and schemas that sqlx's migrator migrated (this crate
    /// ran it until it moved to sqlx 0.8.6, whose migrator cannot name its table) read the same.
    async fn migrate_in_one_transaction(
        &self,
        connection: &mut PgConnection,
        last: i64,
    ) -> Result<(), Migrating> {
        // The migrations name their tables without a schema: the search path names it, for
        // this transaction only. Waiting for another process's migration may take longer than
        // a call's deadline: the timeouts are lifted for it. Every statement here is parsed
        // anew, never left prepared: behind a pooler, another client may get this server
        // connection next (and any that another client left there are dropped first).
        // `search_path` as an identifier: a quoted string would be one schema's whole name.
        let schema = &self.schema;
        let mut transaction = connection
            .begin_with(format!(
                "BEGIN READ WRITE; DEALLOCATE ALL; SET LOCAL search_path = \"{schema}\"; \
                 SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0"
            ))
            .await?;
        let database: String = sqlx::query_scalar("SELECT current_database()")
            .persistent(false)
            .fetch_one(&mut *transaction)
            .await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .persistent(false)
            .bind(migration_lock_key(&database))
            .execute(&mut *transaction)
            .await?;
        let table = format!("\"{schema}\"._memory_migrations");
        (&mut *transaction)
            .execute(sqlx::raw_sql(&format!(
                "CREATE SCHEMA IF NOT EXISTS \"{schema}\"; \
             CREATE TABLE IF NOT EXISTS {table} ( \
               version BIGINT PRIMARY KEY, description TEXT NOT NULL, \
               installed_on TIMESTAMPTZ NOT NULL DEFAULT now(), success BOOLEAN NOT NULL, \
               checksum BYTEA NOT NULL, execution_time BIGINT NOT NULL)"
            )))
            .await?;
        let applied: Vec<(i64, bool, Vec<u8>)> = sqlx::query_as(&format!(
            "SELECT version, success, checksum FROM {table} ORDER BY version"
        ))
        .persistent(false)
        .fetch_all(&mut *transaction)
        .await?;
        for (version, success, checksum) in &applied {
            if !success {
                return Err(Migrating::Failed(*version));
            }
            match MIGRATIONS.iter().find(|known| known.version == *version) {
                None => return Err(Migrating::Unknown(*version)),
                Some(known) if *known.checksum != **checksum => {
                    return Err(Migrating::Changed(*version));
                }
                Some(_) => {}
            }
        }
        let record = format!(
            "INSERT INTO {table} (version, description, success, checksum, execution_time) \
             VALUES ($1, $2, TRUE, $3, $4)"
        );
        for migration in MIGRATIONS.iter().filter(|migration| {
            migration.version <= last
                && !migration.migration_type.is_down_migration()
                && !applied
                    .iter()
                    .any(|(version, ..)| *version == migration.version)
        }) {
            let started = std::time::Instant::now();
            (&mut *transaction)
                .execute(sqlx::raw_sql(&migration.sql))
                .await?;
            sqlx::query(&record)
                .persistent(false)
                .bind(migration.version)
                .bind(&*migration.description)
                .bind(&*migration.checksum)
                .bind(i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX))
                .execute(&mut *transaction)
                .await?;
        }
        transaction.commit().await?;
        Ok(())
    }
}

/// Whether a migration failed on something another host created meanwhile: a duplicate
/// schema, table, object or catalog key.
fn created_meanwhile(err: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = err else {
        return false;
    };
    matches!(
        db.code().as_deref(),
        Some("23505" | "42P06" | "42P07" | "42710")
    )
}

/// The migrations in `migrations/`, embedded at build time with their checksums.
static MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!();

/// Why migrating failed: a statement, or a schema whose applied migrations are not this
/// version's.
#[derive(Debug)]
enum Migrating {
    /// A statement failed.
    Sql(sqlx::Error),
    /// A migration was left failed (by sqlx's migrator, which could record one so).
    Failed(i64),
    /// A migration this version does not have: the schema is a later version's, or another's.
    Unknown(i64),
    /// A migration whose text differs from this version's.
    Changed(i64),
}

impl From<sqlx::Error> for Migrating {
    fn from(err: sqlx::Error) -> Self {
        Migrating::Sql(err)
    }
}

impl std::fmt::Display for Migrating {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Migrating::Sql(err) => write!(f, "{err}"),
            Migrating::Failed(version) => write!(f, "migration {version} is recorded as failed"),
            Migrating::Unknown(version) => write!(
                f,
                "migration {version} was applied but is not one of this version's"
            ),
            Migrating::Changed(version) => write!(
                f,
                "migration {version} was applied with another text than this version's"
            ),
        }
    }
}

/// The advisory lock sqlx's migrator takes for `database` (sqlx-postgres's `generate_lock_id`),
/// so that migrators of earlier versions of this crate, which let sqlx take it, and an
/// application's own sqlx migrations take turns with ours.
fn migration_lock_key(database: &str) -> i64 {
    const CRC_32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
    0x3d32_ad9e * i64::from(CRC_32.checksum(database.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_migration_lock_is_the_one_sqlx_takes() {
        // sqlx-postgres 0.9's generate_lock_id("test"): 0x3d32ad9e * CRC-32("test").
        assert_eq!(migration_lock_key("test"), 3_729_328_775_749_822_312);
    }
}
