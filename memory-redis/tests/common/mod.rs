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
