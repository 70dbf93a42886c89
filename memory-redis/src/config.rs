//! How to reach the server, where the keys go, and how hard to try.

use std::fmt;
use std::time::Duration;

use memory_core::raw::{hide_password_of, redact_url};
use memory_core::{MemoryError, Retention};
use serde::Deserialize;

/// Compare-and-swap attempts per `sync` before `Contention`, unless configured otherwise.
pub use memory_core::raw::DEFAULT_MAX_ATTEMPTS;

/// The longest `deadline_ms` accepted: a day. Longer is a typo, and would overflow clocks.
pub const MAX_DEADLINE_MS: u64 = 86_400_000;

/// Where the memory lives and how the provider behaves under contention.
///
/// Deserializes from the wiring file with every field but `url` optional. Its `Debug` never
/// prints the password.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisConfig {
    /// `redis://[user][:password@]host:port[/db]`. (TLS, `rediss://`, is not built in.)
    pub url: String,
    /// The hash tag every key of this deployment starts with, `{prefix}:`. Deployments (and
    /// tests) that share a server use one prefix each. Letters, digits and `_ - . :`, 1 to 64;
    /// default `agent-memory`.
    #[serde(default = "defaults::prefix")]
    pub prefix: String,
    /// How long to wait for a connection before the call is `Unavailable`, in milliseconds;
    /// default 5,000.
    #[serde(default = "defaults::timeout_ms")]
    pub connect_timeout_ms: u64,
    /// How long to wait for the reply to one command before it is `Unavailable`, in
    /// milliseconds; default 5,000. A call's deadline (`deadline_ms`) bounds the whole call
    /// whatever this says; keep this shorter, so that after a write's reply is lost there is
    /// time left to read whether it landed.
    #[serde(default = "defaults::timeout_ms")]
    pub response_timeout_ms: u64,
    /// How long one call may take in all, in milliseconds; default 10,000, at most
    /// 86,400,000 (a day). A `sync` counts its reads, retries, backoff and write; any other
    /// call its one round trip. Past it the call fails with `Unavailable` (nothing was
    /// written), or `OutcomeUnknown` for a `sync` whose write went unanswered, or `Contention`
    /// for one that kept losing races.
    #[serde(default = "defaults::deadline_ms")]
    pub deadline_ms: u64,
    /// Compare-and-swap attempts per `sync` before it gives up with `Contention`; default 64.
    #[serde(default = "defaults::max_attempts")]
    pub max_attempts: u32,
    /// How many revisions of each document to keep, and for how long:
    /// `history = { keep = 100, max_age_days = 90 }`, both optional; default the newest 100 at
    /// any age. `keep = 0` records none.
    #[serde(default)]
    pub history: Retention,
}

mod defaults {
    pub fn prefix() -> String {
        "agent-memory".to_owned()
    }
    pub fn timeout_ms() -> u64 {
        5_000
    }
    pub fn deadline_ms() -> u64 {
        u64::try_from(memory_core::raw::DEFAULT_DEADLINE.as_millis()).unwrap_or(10_000)
    }
    pub fn max_attempts() -> u32 {
        super::DEFAULT_MAX_ATTEMPTS
    }
}

impl RedisConfig {
    /// The defaults, for the server at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        RedisConfig {
            url: url.into(),
            prefix: defaults::prefix(),
            connect_timeout_ms: defaults::timeout_ms(),
            response_timeout_ms: defaults::timeout_ms(),
            deadline_ms: defaults::deadline_ms(),
            max_attempts: defaults::max_attempts(),
            history: Retention::default(),
        }
    }

    /// The same, under `prefix`.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The connect timeout as a duration.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }

    /// The response timeout as a duration.
    pub fn response_timeout(&self) -> Duration {
        Duration::from_millis(self.response_timeout_ms)
    }

    /// The per-call deadline as a duration.
    pub fn deadline(&self) -> Duration {
        Duration::from_millis(self.deadline_ms)
    }

    /// Checks the settings that are not checked elsewhere: the deadline's range.
    pub(crate) fn validate(&self) -> Result<(), MemoryError> {
        if !(1..=MAX_DEADLINE_MS).contains(&self.deadline_ms) {
            return Err(MemoryError::Config {
                message: format!(
                    "deadline_ms is {}: give the milliseconds one call may take, 1 to {MAX_DEADLINE_MS}",
                    self.deadline_ms
                ),
            });
        }
        Ok(())
    }

    /// The client for the URL, or a `Config` error that says what is wrong without the
    /// password.
    pub(crate) fn client(&self) -> Result<redis::Client, MemoryError> {
        redis::Client::open(self.url.as_str()).map_err(|err| MemoryError::Config {
            message: hide_password_of(
                &self.url,
                &format!("invalid Redis URL {}: {err}", redact_url(&self.url)),
            ),
        })
    }
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &redact_url(&self.url))
            .field("prefix", &self.prefix)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("response_timeout_ms", &self.response_timeout_ms)
            .field("deadline_ms", &self.deadline_ms)
            .field("max_attempts", &self.max_attempts)
            .field("history", &self.history)
            .finish()
    }
}

#[async_trait::async_trait]
impl memory_core::raw::BackendConfig for RedisConfig {
    fn resolve(
        &mut self,
        fields: &mut dyn memory_core::raw::ResolveFields,
    ) -> Result<(), MemoryError> {
        fields.text("url", &mut self.url)
    }

    async fn open(&self) -> Result<memory_core::raw::Opened, MemoryError> {
        Ok(memory_core::raw::Opened::of(
            crate::RedisProvider::connect(self).await?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_the_password() {
        let shown = format!(
            "{:?}",
            RedisConfig::new("redis://agent:hunter2@cache:6379/0")
        );
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("redis://agent:***@cache:6379/0"), "{shown}");
    }

    #[test]
    fn a_bad_url_is_a_config_error_naming_the_problem_without_the_password() {
        for url in [
            "http://agent:hunter2@cache:6379",
            "redis://agent:hunter2@cache:port",
        ] {
            let err = RedisConfig::new(url).client().unwrap_err();
            let message = err.to_string();
            assert!(matches!(err, MemoryError::Config { .. }), "{err:?}");
            assert!(message.contains("invalid Redis URL"), "{message}");
            assert!(!message.contains("hunter2"), "{message}");
        }
    }

    #[test]
    fn a_deadline_out_of_range_is_a_config_error() {
        for deadline_ms in [0, MAX_DEADLINE_MS + 1, u64::MAX] {
            let config = RedisConfig {
                deadline_ms,
                ..RedisConfig::new("redis://cache")
            };
            let err = config.validate().unwrap_err();
            assert!(matches!(err, MemoryError::Config { .. }), "{err:?}");
            assert!(err.to_string().contains("deadline_ms"), "{err}");
        }
        for deadline_ms in [1, MAX_DEADLINE_MS] {
            RedisConfig {
                deadline_ms,
                ..RedisConfig::new("redis://cache")
            }
            .validate()
            .unwrap();
        }
    }

    #[test]
    fn defaults_fill_everything_but_the_url() {
        let config: RedisConfig = serde_json::from_str(r#"{"url": "redis://cache"}"#).unwrap();
        assert_eq!(config.prefix, "agent-memory");
        assert_eq!(config.response_timeout(), Duration::from_secs(5));
        assert_eq!(config.deadline(), memory_core::raw::DEFAULT_DEADLINE);
        assert_eq!(config.deadline_ms, 10_000);
        config.validate().unwrap();
        let set: RedisConfig =
            serde_json::from_str(r#"{"url": "redis://cache", "deadline_ms": 2500}"#).unwrap();
        assert_eq!(set.deadline(), Duration::from_millis(2500));
        assert!(format!("{set:?}").contains("deadline_ms: 2500"), "{set:?}");
        assert_eq!(config.history, Retention::default());
        let kept: RedisConfig = serde_json::from_str(
            r#"{"url": "redis://cache", "history": {"keep": 3, "max_age_days": 2}}"#,
        )
        .unwrap();
        assert_eq!(
            kept.history,
            Retention::keep(3).with_max_age(Duration::from_secs(2 * 86_400))
        );
        let unknown = serde_json::from_str::<RedisConfig>(r#"{"url": "x", "db": 3}"#);
        assert!(unknown.unwrap_err().to_string().contains("db"));
    }
}
