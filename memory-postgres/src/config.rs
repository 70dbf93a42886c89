//! How to reach the server, and how hard to try.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use memory_core::raw::{DEFAULT_DEADLINE, hide_password_of, redact_url};
use memory_core::{MemoryError, Retention};
use serde::Deserialize;
use sqlx::postgres::PgConnectOptions;

/// Compare-and-swap attempts per `sync` before `Contention`, unless configured otherwise.
pub use memory_core::raw::DEFAULT_MAX_ATTEMPTS;

/// The longest timeout PostgreSQL takes, in milliseconds.
const MAX_TIMEOUT_MS: u64 = i32::MAX as u64;

/// Where the memory lives and how the provider behaves under contention.
///
/// Deserializes from the wiring file with every field but `url` optional. Its `Debug` never
/// prints the password.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostgresConfig {
    /// `postgres://user:password@host:port/database`, with any libpq-style query parameters
    /// (`sslmode=require`, ...).
    pub url: String,
    /// The schema holding the tables, created on migration. Deployments (and tests) that share
    /// a database use one schema each. Lowercase letters, digits and `_`; default
    /// `agent_memory`.
    #[serde(default = "defaults::schema")]
    pub schema: String,
    /// Connections in the pool; default 8.
    #[serde(default = "defaults::max_connections")]
    pub max_connections: u32,
    /// How long to wait for a connection before the call is `Unavailable`, in milliseconds;
    /// default 5,000. `connect` waits at most `deadline_ms` for its first connection, and not
    /// at all once the server refuses it.
    #[serde(default = "defaults::connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// How long a write waits on a row another session holds locked before the attempt counts
    /// as a lost race, in milliseconds; default 5,000. At most half of `deadline_ms` is used
    /// (and 0 means that half), so that a first lock wait leaves time for another attempt; a
    /// later attempt waits only as long as the deadline still allows. Set on the connections
    /// this config opens (a pool given to `from_pool` keeps its own settings).
    #[serde(default = "defaults::lock_timeout_ms")]
    pub lock_timeout_ms: u64,
    /// How long one call may take in all, in milliseconds; default 10,000. A `sync` that runs
    /// out of it fails with `Contention` (other writers held the document), `Unavailable` (no
    /// reply, nothing written) or `OutcomeUnknown` (a write went unanswered); any other call
    /// fails with `Unavailable`. A connection left without a reply is closed, never reused.
    /// It is also the connections' `statement_timeout` and
    /// `idle_in_transaction_session_timeout`, so that the server gives up on what the client
    /// gave up on. From 1 to 2,147,483,647 (the server's limit).
    #[serde(default = "defaults::deadline_ms")]
    pub deadline_ms: u64,
    /// Whether [`crate::PostgresProvider::connect`] applies the migrations; default true.
    #[serde(default = "defaults::migrate")]
    pub migrate: bool,
    /// Compare-and-swap attempts per `sync` before it gives up with `Contention`; default 64.
    #[serde(default = "defaults::max_attempts")]
    pub max_attempts: u32,
    /// How much of each document's history to keep: `history = { keep = 100, max_age_days =
    /// 90 }`, both optional; default the newest 100 revisions, of any age. `keep = 0` records
    /// none. Older revisions are pruned by later writes of the same document.
    #[serde(default)]
    pub history: Retention,
    /// How the URL's server hands out connections: `"session"` (the default: PostgreSQL
    /// itself, or a pooler in session mode, so a connection is this provider's while it is
    /// open) or `"transaction"` (a pooler in transaction mode, PgBouncer's `pool_mode =
    /// transaction`: nothing may outlive a transaction). See [`PoolMode`].
    #[serde(default)]
    pub pool_mode: PoolMode,
}

/// How the server at [`PostgresConfig::url`] hands out connections, as PgBouncer's `pool_mode`
/// names it. Statement mode is not offered: a hold and a write of two documents each need a
/// transaction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PoolMode {
    /// A connection is the provider's from connect to close: the timeouts are set once, as
    /// startup parameters, and statements are prepared once per connection and kept.
    #[default]
    Session,
    /// Behind a pooler in transaction mode, each transaction may run on another server
    /// connection: the connection carries no startup parameters a pooler refuses, every
    /// transaction sets its own timeouts (`SET LOCAL`), every statement runs inside a
    /// transaction and none is kept prepared past it. A call costs two more round trips than
    /// in session mode (`BEGIN` and `COMMIT` around a read).
    Transaction,
}

mod defaults {
    pub fn schema() -> String {
        "agent_memory".to_owned()
    }
    pub fn max_connections() -> u32 {
        8
    }
    pub fn connect_timeout_ms() -> u64 {
        5_000
    }
    pub fn lock_timeout_ms() -> u64 {
        5_000
    }
    pub fn deadline_ms() -> u64 {
        super::DEFAULT_DEADLINE
            .as_millis()
            .try_into()
            .unwrap_or(u64::MAX)
    }
    pub fn migrate() -> bool {
        true
    }
    pub fn max_attempts() -> u32 {
        super::DEFAULT_MAX_ATTEMPTS
    }
}

impl PostgresConfig {
    /// The defaults, for the server at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        PostgresConfig {
            url: url.into(),
            schema: defaults::schema(),
            max_connections: defaults::max_connections(),
            connect_timeout_ms: defaults::connect_timeout_ms(),
            lock_timeout_ms: defaults::lock_timeout_ms(),
            deadline_ms: defaults::deadline_ms(),
            migrate: defaults::migrate(),
            max_attempts: defaults::max_attempts(),
            history: Retention::default(),
            pool_mode: PoolMode::default(),
        }
    }

    /// The same, in `schema`.
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// The connect timeout as a duration.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }

    /// The deadline of one call as a duration.
    pub fn deadline(&self) -> Duration {
        Duration::from_millis(self.deadline_ms)
    }

    /// The `lock_timeout` the connections get: `lock_timeout_ms`, at most half the deadline.
    pub(crate) fn lock_timeout(&self) -> Duration {
        let half = (self.deadline_ms / 2).max(1);
        Duration::from_millis(match self.lock_timeout_ms {
            0 => half,
            configured => configured.min(half),
        })
    }

    /// The timeouts the provider relies on, as `(setting, value)`: the connections' own in
    /// session mode, each transaction's in transaction mode.
    pub(crate) fn timeouts(&self) -> [(&'static str, String); 3] {
        let deadline = format!("{}ms", self.deadline_ms);
        [
            (
                "lock_timeout",
                format!("{}ms", self.lock_timeout().as_millis()),
            ),
            ("statement_timeout", deadline.clone()),
            ("idle_in_transaction_session_timeout", deadline),
        ]
    }

    /// The URL parsed, with the session settings the provider relies on (in session mode), or
    /// a `Config` error that says what is wrong without the password.
    pub(crate) fn connect_options(&self) -> Result<PgConnectOptions, MemoryError> {
        // The server takes timeouts up to i32::MAX milliseconds (24.8 days).
        if !(1..=MAX_TIMEOUT_MS).contains(&self.deadline_ms) {
            return Err(MemoryError::Config {
                message: format!(
                    "deadline_ms is {}: give each call from 1 to {MAX_TIMEOUT_MS} ms (default 10000)",
                    self.deadline_ms
                ),
            });
        }
        let options = PgConnectOptions::from_str(&self.url).map_err(|err| MemoryError::Config {
            message: hide_password_of(
                &self.url,
                &format!("invalid PostgreSQL URL {}: {err}", redact_url(&self.url)),
            ),
        })?;
        // sqlx cannot turn on TCP keepalive (launchbadge/sqlx#3540): the client's bound is
        // the deadline each call runs under; the timeouts are the server's.
        Ok(match self.pool_mode {
            PoolMode::Session => options.options(self.timeouts()),
            // PgBouncer refuses startup parameters it does not know (`options`,
            // `extra_float_digits`), and a statement prepared on one server connection is not
            // there on the next.
            PoolMode::Transaction => options.extra_float_digits(None).statement_cache_capacity(0),
        })
    }
}

impl fmt::Debug for PostgresConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresConfig")
            .field("url", &redact_url(&self.url))
            .field("schema", &self.schema)
            .field("max_connections", &self.max_connections)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("lock_timeout_ms", &self.lock_timeout_ms)
            .field("deadline_ms", &self.deadline_ms)
            .field("migrate", &self.migrate)
            .field("max_attempts", &self.max_attempts)
            .field("history", &self.history)
            .field("pool_mode", &self.pool_mode)
            .finish()
    }
}

#[async_trait::async_trait]
impl memory_core::raw::BackendConfig for PostgresConfig {
    fn resolve(
        &mut self,
        fields: &mut dyn memory_core::raw::ResolveFields,
    ) -> Result<(), MemoryError> {
        fields.text("url", &mut self.url)
    }

    async fn open(&self) -> Result<memory_core::raw::Opened, MemoryError> {
        Ok(memory_core::raw::Opened::of(
            crate::PostgresProvider::connect(self).await?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_the_password() {
        for url in [
            "postgres://agent:hunter2@db.internal:5432/memory",
            "postgres://agent@db.internal/memory?sslmode=require&password=hunter2",
            "postgres://agent:hunter2@db.internal:notaport/memory",
        ] {
            let shown = format!("{:?}", PostgresConfig::new(url));
            assert!(!shown.contains("hunter2"), "{shown}");
            assert!(
                shown.contains("agent:***@db.internal")
                    || shown.contains("password=***")
                    || shown.contains("<unparseable URL>"),
                "{shown}"
            );
        }
    }

    #[test]
    fn a_bad_url_is_a_config_error_naming_the_problem_without_the_password() {
        let config = PostgresConfig::new("postgres://agent:hunter2@db.internal:notaport/memory");
        let err = config.connect_options().unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, MemoryError::Config { .. }), "{err:?}");
        assert!(message.contains("port"), "names the problem: {message}");
        assert!(!message.contains("hunter2"), "{message}");
    }

    #[test]
    fn defaults_fill_everything_but_the_url() {
        let config: PostgresConfig =
            serde_json::from_str(r#"{"url": "postgres://localhost/memory"}"#).unwrap();
        assert_eq!(config.schema, "agent_memory");
        assert_eq!(config.connect_timeout(), Duration::from_secs(5));
        assert_eq!(config.deadline(), Duration::from_secs(10));
        assert_eq!(config.lock_timeout(), Duration::from_secs(5));
        assert!(config.migrate);
        assert_eq!(config.history, Retention::default());
        let unknown = serde_json::from_str::<PostgresConfig>(r#"{"url": "x", "pool": 3}"#);
        assert!(unknown.unwrap_err().to_string().contains("pool"));
    }

    #[test]
    fn transaction_mode_leaves_the_timeouts_to_each_transaction() {
        let config: PostgresConfig = serde_json::from_str(
            r#"{"url": "postgres://localhost/memory", "deadline_ms": 2000, "pool_mode": "transaction"}"#,
        )
        .unwrap();
        assert_eq!(config.pool_mode, PoolMode::Transaction);
        assert_eq!(config.connect_options().unwrap().get_options(), None);
        assert_eq!(
            config
                .timeouts()
                .map(|(setting, value)| format!("{setting}={value}")),
            [
                "lock_timeout=1000ms",
                "statement_timeout=2000ms",
                "idle_in_transaction_session_timeout=2000ms"
            ]
        );
        let session: PostgresConfig = serde_json::from_str(r#"{"url": "x"}"#).unwrap();
        assert_eq!(session.pool_mode, PoolMode::Session, "the default");
        let statement =
            serde_json::from_str::<PostgresConfig>(r#"{"url": "x", "pool_mode": "statement"}"#);
        let message = statement.unwrap_err().to_string();
        assert!(
            message.contains("statement") && message.contains("transaction"),
            "{message}"
        );
    }

    #[test]
    fn history_retention_reads_as_configured() {
        let config: PostgresConfig = serde_json::from_str(
            r#"{"url": "postgres://localhost/memory", "history": {"keep": 5, "max_age_days": 90}}"#,
        )
        .unwrap();
        assert_eq!(
            config.history,
            Retention::keep(5).with_max_age(Duration::from_secs(90 * 86_400))
        );
        let off: PostgresConfig =
            serde_json::from_str(r#"{"url": "x", "history": {"keep": 0}}"#).unwrap();
        assert!(!off.history.is_on());
        let unknown =
            serde_json::from_str::<PostgresConfig>(r#"{"url": "x", "history": {"days": 3}}"#);
        assert!(unknown.unwrap_err().to_string().contains("days"));
    }

    #[test]
    fn the_deadline_is_shown_and_bounds_the_lock_timeout() {
        let config: PostgresConfig =
            serde_json::from_str(r#"{"url": "postgres://localhost/memory", "deadline_ms": 2000}"#)
                .unwrap();
        assert!(format!("{config:?}").contains("deadline_ms: 2000"));
        assert_eq!(
            config.lock_timeout(),
            Duration::from_secs(1),
            "half the deadline"
        );
        let options = config.connect_options().unwrap();
        let session = options.get_options().unwrap_or_default();
        for setting in [
            "lock_timeout=1000ms",
            "statement_timeout=2000ms",
            "idle_in_transaction_session_timeout=2000ms",
        ] {
            assert!(session.contains(setting), "{setting} in {session}");
        }

        for deadline_ms in [0, u64::MAX] {
            let config = PostgresConfig {
                deadline_ms,
                ..PostgresConfig::new("postgres://agent:hunter2@localhost/memory")
            };
            let err = config.connect_options().unwrap_err();
            assert!(
                matches!(&err, MemoryError::Config { message }
                    if message.contains("deadline_ms") && !message.contains("hunter2")),
                "{err:?}"
            );
        }
    }
}
