//! Finding the test server and giving each test a key prefix of its own, deleted at the end.

#![allow(dead_code)] // each test file uses its own part of this

use memory_conformance::services::{Service, delete_redis_keys, unique_name};
use memory_redis::{RedisConfig, RedisConnection, RedisProvider};

/// The server's URL, or `None` (after a loud message) when the test should skip.
pub fn url() -> Option<String> {
    Service::Redis.url()
}

/// How the test's Redis is deployed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// One server (`MEMORY_TEST_REDIS_URL`).
    Server,
    /// A Redis Cluster of three masters (`MEMORY_TEST_REDIS_CLUSTER_URLS`, its seed nodes).
    Cluster,
}

/// A guard for a fresh prefix on `topology`'s Redis; `None` (after a loud message) when the
/// test should skip.
pub fn keys_on(topology: Topology) -> Option<PrefixGuard> {
    let (url, cluster_nodes) = match topology {
        Topology::Server => (url()?, Vec::new()),
        Topology::Cluster => {
            let nodes = Service::RedisCluster.url()?;
            (String::new(), nodes.split(',').map(str::to_owned).collect())
        }
    };
    Some(PrefixGuard {
        url,
        cluster_nodes,
        prefix: unique_prefix(),
    })
}

/// A key prefix no other test, process or run uses.
pub fn unique_prefix() -> String {
    unique_name("test")
}

/// Deletes every key under its prefix when dropped.
pub struct PrefixGuard {
    /// The one server's URL; empty on a cluster.
    pub url: String,
    /// A cluster's seed nodes (all of its masters); empty for one server.
    pub cluster_nodes: Vec<String>,
    pub prefix: String,
}

impl PrefixGuard {
    /// The default settings for this prefix's Redis, under this prefix.
    pub fn config(&self) -> RedisConfig {
        match self.cluster_nodes.is_empty() {
            true => RedisConfig::new(&self.url),
            false => RedisConfig::cluster(self.cluster_nodes.clone()),
        }
        .with_prefix(&self.prefix)
    }
}

impl Drop for PrefixGuard {
    fn drop(&mut self) {
        let nodes = match self.cluster_nodes.is_empty() {
            true => std::slice::from_ref(&self.url),
            false => self.cluster_nodes.as_slice(),
        };
        delete_redis_keys(nodes, &self.prefix);
    }
}

/// A provider under a fresh prefix, and the guard that deletes its keys.
pub async fn provider() -> Option<(RedisProvider, PrefixGuard)> {
    provider_with(|config| config).await
}

/// The same, with the settings `configure` makes of the defaults.
pub async fn provider_with(
    configure: impl FnOnce(RedisConfig) -> RedisConfig,
) -> Option<(RedisProvider, PrefixGuard)> {
    provider_on(Topology::Server, configure).await
}

/// The same, on `topology`'s Redis.
pub async fn provider_on(
    topology: Topology,
    configure: impl FnOnce(RedisConfig) -> RedisConfig,
) -> Option<(RedisProvider, PrefixGuard)> {
    let keys = keys_on(topology)?;
    let provider = RedisProvider::connect(&configure(keys.config()))
        .await
        .unwrap_or_else(|err| panic!("connecting to the test server: {err}"));
    Some((provider, keys))
}

/// Another host under `keys`' prefix: a provider with a connection of its own, as another
/// process would have, configured as `host` says.
pub async fn host(keys: &PrefixGuard, host: memory_conformance::Host) -> RedisProvider {
    let mut config = keys.config();
    if let Some(max_attempts) = host.max_attempts {
        config.max_attempts = max_attempts;
    }
    if let Some(retention) = host.retention {
        config.history = retention;
    }
    RedisProvider::connect(&config).await.unwrap()
}

/// A connection of our own, as a person with redis-cli (`-c` on a cluster) would have.
pub async fn admin(keys: &PrefixGuard) -> RedisConnection {
    if keys.cluster_nodes.is_empty() {
        let client = redis::Client::open(keys.url.as_str()).unwrap();
        return client
            .get_multiplexed_async_connection()
            .await
            .unwrap()
            .into();
    }
    let client = redis::cluster::ClusterClient::new(keys.cluster_nodes.clone()).unwrap();
    client.get_async_connection().await.unwrap().into()
}

/// Replaces `document`'s text as a person with `redis-cli` does: `HSET` of the content, the
/// next version and its SHA-256, on an existing key or a new one.
pub async fn edit_by_hand(keys: &PrefixGuard, document: memory_core::DocumentId, text: String) {
    use redis::AsyncCommands;
    let key = format!("{{{}}}:{}", keys.prefix, document.relative_path());
    let mut connection = admin(keys).await;
    let version: Option<u64> = connection.hget(&key, "version").await.unwrap();
    let next = version.unwrap_or(0) + 1;
    let () = connection
        .hset_multiple(
            &key,
            &[
                ("content", text.clone()),
                ("version", next.to_string()),
                ("sha256", memory_core::raw::sha256_hex(&text)),
            ],
        )
        .await
        .unwrap();
}

/// Every key under the prefix with what it holds (hashes' fields, streams' entries, strings,
/// sets), as one text: what the backend stores, for a search of it.
pub async fn stored_keys(keys: &PrefixGuard) -> String {
    use redis::AsyncCommands;
    let mut connection = admin(keys).await;
    let names: Vec<String> = connection
        .keys(format!("{{{}}}*", keys.prefix))
        .await
        .unwrap();
    let mut stored = String::new();
    for name in names {
        let kind: String = redis::cmd("TYPE")
            .arg(&name)
            .query_async(&mut connection)
            .await
            .unwrap();
        let command = match kind.as_str() {
            "hash" => redis::cmd("HGETALL").arg(&name).clone(),
            "stream" => redis::cmd("XRANGE").arg(&name).arg("-").arg("+").clone(),
            "string" => redis::cmd("GET").arg(&name).clone(),
            "set" => redis::cmd("SMEMBERS").arg(&name).clone(),
            "zset" => redis::cmd("ZRANGE").arg(&name).arg(0).arg(-1).clone(),
            "list" => redis::cmd("LRANGE").arg(&name).arg(0).arg(-1).clone(),
            other => panic!("{name} is a {other}, which the backend never stores"),
        };
        let value: redis::Value = command.query_async(&mut connection).await.unwrap();
        stored.push_str(&format!("{name}: {value:?}\n"));
    }
    stored
}

/// Deletes revision `number`'s entry from `document`'s history stream by hand (a stream's
/// entries cannot be altered): the change after it can no longer be rebuilt, so history names
/// that one, `number + 1`.
pub async fn delete_change(
    keys: &PrefixGuard,
    document: memory_core::DocumentId,
    number: u64,
) -> u64 {
    use redis::AsyncCommands;
    let stream = format!("{{{}}}:history:{}", keys.prefix, document.relative_path());
    let mut connection = admin(keys).await;
    let entries: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
        .arg(&stream)
        .arg("-")
        .arg("+")
        .query_async(&mut connection)
        .await
        .unwrap();
    let (id, _) = entries
        .iter()
        .find(|(_, fields)| {
            fields
                .iter()
                .any(|(name, value)| name == "number" && value == &number.to_string())
        })
        .unwrap_or_else(|| panic!("revision {number} of {document} is stored: {entries:?}"));
    let deleted: usize = connection.xdel(&stream, &[id]).await.unwrap();
    assert_eq!(deleted, 1);
    number + 1
}

/// Holds `document` as another writer's lock script leaves it (its lock key set to a token,
/// with an expiry), until the release deletes the key.
pub async fn hold_lock(
    keys: &PrefixGuard,
    document: memory_core::DocumentId,
) -> memory_conformance::Release {
    use redis::AsyncCommands;
    let lock = format!("{{{}}}:lock:{}", keys.prefix, document.relative_path());
    let mut connection = admin(keys).await;
    let taken: bool = redis::cmd("SET")
        .arg(&lock)
        .arg("another-writer")
        .arg("NX")
        .arg("PX")
        .arg(60_000)
        .query_async(&mut connection)
        .await
        .unwrap();
    assert!(taken, "{lock} was free");
    Box::new(move || {
        Box::pin(async move {
            let () = connection.del(&lock).await.unwrap();
        })
    })
}

/// Sends `updates` until the sync lands, as a caller retrying a server that moved (a failover,
/// a resharding) would: under one idempotency key, so a call whose outcome is unknown (a reply
/// lost to the move, a timeout) is sent again without landing twice. Each other failure must be
/// of a kind in `retryable`, and the call must land within `within`. Returns how many calls
/// failed first.
pub async fn sync_until_it_lands(
    provider: &RedisProvider,
    ctx: &memory_core::MemoryContext,
    updates: &[memory_core::MemoryUpdate],
    retryable: &[memory_core::ErrorKind],
    within: std::time::Duration,
) -> usize {
    use memory_core::{ErrorKind, IdempotencyKey, MemoryProvider};
    let keyed = ctx
        .clone()
        .with_idempotency_key(IdempotencyKey::new("sync-until-it-lands").unwrap());
    let started = std::time::Instant::now();
    let mut failures = 0;
    loop {
        match provider
            .sync(&keyed, updates, &memory_core::IfMatch::NONE)
            .await
        {
            Ok(_) => return failures,
            Err(err) => {
                assert!(
                    err.kind() == ErrorKind::OutcomeUnknown || retryable.contains(&err.kind()),
                    "not a failure to retry: {err}"
                );
                failures += 1;
                assert!(started.elapsed() < within, "still failing: {err}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}
