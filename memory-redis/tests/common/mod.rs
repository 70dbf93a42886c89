//! Finding the test server and giving each test a key prefix of its own, deleted at the end.

#![allow(dead_code)] // each test file uses its own part of this

use memory_conformance::services::{Service, unique_name};
use memory_redis::{RedisConfig, RedisProvider};
use redis::Commands;

/// The server's URL, or `None` (after a loud message) when the test should skip.
pub fn url() -> Option<String> {
    Service::Redis.url()
}

/// A key prefix no other test, process or run uses.
pub fn unique_prefix() -> String {
    unique_name("test")
}

/// Deletes every key under its prefix when dropped.
pub struct PrefixGuard {
    pub url: String,
    pub prefix: String,
}

impl Drop for PrefixGuard {
    fn drop(&mut self) {
        let deleted = redis::Client::open(self.url.as_str())
            .and_then(|client| client.get_connection())
            .and_then(|mut connection| {
                let pattern = format!("{{{}}}:*", self.prefix);
                let keys: Vec<String> =
                    connection.scan_match(&pattern)?.collect::<Result<_, _>>()?;
                if !keys.is_empty() {
                    redis::cmd("DEL").arg(&keys).exec(&mut connection)?;
                }
                Ok(())
            });
        if let Err(err) = deleted {
            eprintln!("could not delete test keys {{{}}}:*: {err}", self.prefix);
        }
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
    let url = url()?;
    let prefix = unique_prefix();
    let provider = RedisProvider::connect(&configure(RedisConfig::new(&url).with_prefix(&prefix)))
        .await
        .unwrap_or_else(|err| panic!("connecting to the test server: {err}"));
    Some((provider, PrefixGuard { url, prefix }))
}

/// Another host under `keys`' prefix: a provider with a connection of its own, as another
/// process would have, configured as `host` says.
pub async fn host(keys: &PrefixGuard, host: memory_conformance::Host) -> RedisProvider {
    let mut config = RedisConfig::new(&keys.url).with_prefix(&keys.prefix);
    if let Some(max_attempts) = host.max_attempts {
        config.max_attempts = max_attempts;
    }
    if let Some(retention) = host.retention {
        config.history = retention;
    }
    RedisProvider::connect(&config).await.unwrap()
}

/// A connection of our own, as a person with redis-cli would have.
pub async fn admin(keys: &PrefixGuard) -> redis::aio::MultiplexedConnection {
    redis::Client::open(keys.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
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
