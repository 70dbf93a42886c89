//! Agent memory in PostgreSQL, for many writers on many hosts.
//!
//! One row per document (`memory_documents` in the provider's schema) carries the text and a
//! version that every write bumps by one. `sync` reads the rows, computes the new text with
//! memory-core's shared semantics while holding no lock, and writes with compare-and-swap: the
//! write lands only if the version is still the one it read. A writer that lost the race holds
//! the documents (their advisory and row locks, in a transaction) and writes in its turn, so
//! writers queue on the server instead of retrying; past that, lost attempts are retried with
//! jittered backoff, up to `max_attempts`, then `Contention`.
//! A call that touches both documents commits both in one transaction, or neither.
//!
//! Every call ends within its deadline (`deadline_ms`, default 10 s): a write never waits on
//! another session's row lock past it, and a connection that stops answering fails the call
//! with `Unavailable` (or `OutcomeUnknown` for an unanswered write) and is closed, not reused.
//!
//! Each document's history is the table `memory_history`: one row per revision, written by the
//! same statement as the change it records (one round trip, one atomic step), with the
//! server's time; the same statement prunes what the retention (`history`, default the newest
//! 100 per document) no longer keeps, a few rows per write. `purge` erases a document, its
//! receipts and its history in one transaction, leaving a tombstone without content.
//!
//! The identity map is the table `memory_identities` beside the documents, one row per
//! (platform, platform user id); a link or an unlink runs in a transaction that holds the row's
//! lock.
//!
//! ```no_run
//! # async fn demo() -> Result<(), memory_core::MemoryError> {
//! use memory_core::{IfMatch, MemoryContext, MemoryProvider, MemoryUpdate, PersonalityId, Store, UserId};
//! use memory_postgres::{PostgresConfig, PostgresProvider};
//!
//! let memory = PostgresProvider::connect(&PostgresConfig::new("postgres://localhost/agents")).await?;
//! let ctx = MemoryContext::new(PersonalityId::new("ada")?, UserId::new("grace")?);
//! memory.sync(&ctx, &[MemoryUpdate::add(Store::User, "Prefers short answers.")], &IfMatch::NONE).await?;
//! # Ok(()) }
//! ```

// How to reach the server, and how hard to try: `PostgresConfig`, `PoolMode`.
mod config;
// `PostgresStore`: the pool, the tables, locations, table errors, and `VersionedStore`.
mod store;
// Connecting: the `Connect` impl, the checked first connection, the pool, standbys.
mod connect;
// A pooled connection for one call (`Lease`), and the statements run on it.
mod lease;
// The embedded migrations and how they are applied.
mod migrate;
// The SQL: `Begin` and every statement, built once per schema (`Statements`).
mod sql;
// Rows to and from the core's types: documents, tips, revisions, a write's bound columns.
mod rows;
// Reading documents, one snapshot per call.
mod read;
// The `CompareAndSwap` impl: the write statement, and the hold with its turn (`PgTurn`).
mod cas;
// History as one snapshot, and purge.
mod history;
// The `IdentityMap` impl.
mod identity;

use memory_core::raw::Versioned;

pub use config::{DEFAULT_MAX_ATTEMPTS, PoolMode, PostgresConfig};
pub use store::PostgresStore;

/// The memory contract on PostgreSQL: [`PostgresStore`]'s statements under the generic
/// provider. Cheap to share: clone the pool, not the provider.
pub type PostgresProvider = Versioned<PostgresStore>;
