#![doc = include_str!("../README.md")]

// How to reach the server, where the keys go, and how hard to try: `RedisConfig`.
mod config;
// `RedisConnection`: one server's, a Redis Cluster's, or Sentinel's master's.
mod connection;
// `SentinelConnection`: the master Redis Sentinel names, followed through a failover.
mod sentinel;
// Holding documents after a lost race: the locks, the turn (`RedisTurn`), its release.
mod hold;
// The queue of writers waiting on a held document: their connections, the timings.
mod queue;
// `RedisStore`: the connection, the keys, key errors, and `VersionedStore`.
mod store;
// Connecting: the `Connect` impl, for one server, a cluster or Sentinel.
mod connect;
// The Lua scripts, each one atomic step and one round trip.
mod scripts;
// Reading documents as one transaction, or by the read script.
mod read;
// Hashes and stream entries to and from the core's types: documents, tips, revisions.
mod rows;
// The `CompareAndSwap` impl: the write script, `WAIT` for replicas, the hold.
mod cas;
// History by the history script, and purge.
mod history;
// The `IdentityMap` impl.
mod identity;

use memory_core::raw::Versioned;

pub use config::{DEFAULT_MAX_ATTEMPTS, MAX_DEADLINE_MS, RedisConfig, SentinelConfig};
pub use connection::RedisConnection;
pub use sentinel::SentinelConnection;
pub use store::RedisStore;

/// The memory contract on Redis: [`RedisStore`]'s storage calls under the generic provider.
/// See the crate docs for the key layout.
pub type RedisProvider = Versioned<RedisStore>;
