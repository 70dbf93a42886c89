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
/// Deserializes from the wiring file with every field optional but where the server is: `url`
/// for one server, `cluster_nodes` for a Redis Cluster, or `sentinel` for a master that Redis
/// Sentinel names. Its `Debug` never prints a password.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisConfig {
    /// `redis://[user][:password@]host:port[/db]`, for one server. (TLS, `rediss://`, is not
    /// built in.) Empty when `cluster_nodes` names a cluster.
    #[serde(default)]
    pub url: String,
    /// The seed nodes of a Redis Cluster, each `redis://[user][:password@]host:port`, instead
    /// of `url`: any one that answers is enough to find every master. A cluster has only
    /// database 0, so a node URL naming another is a configuration error. All of a prefix's
    /// keys are in one slot, so one master serves a deployment: spread load over several
    /// prefixes (one per tenant, say), which the cluster spreads over its masters.
    #[serde(default)]
    pub cluster_nodes: Vec<String>,
    /// Redis Sentinel instead of `url`: the sentinels, and the master they name, which the
    /// provider follows through a failover (see [`SentinelConfig`]).
    #[serde(default)]
    pub sentinel: Option<SentinelConfig>,
    /// How many replicas must have a write before it is acknowledged (`WAIT`, sent after the
    /// write on the same connection); default 0, none. A write that fewer confirm within
    /// `wait_timeout_ms` is `OutcomeUnknown`: it is on the master, and a failover could lose
    /// it; repeating the call with its idempotency key waits again.
    #[serde(default)]
    pub wait_replicas: u32,
    /// How long a write waits for `wait_replicas`, in milliseconds; default 1,000. Shorter
    /// than `deadline_ms`.
    #[serde(default = "defaults::wait_timeout_ms")]
    pub wait_timeout_ms: u64,
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

/// Where Redis Sentinel is, and which master of those it monitors holds the memory.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SentinelConfig {
    /// The sentinels, each `redis://[user][:password@]host:port` with the sentinels' own
    /// credentials, if they require any. Any one that answers is enough.
    pub nodes: Vec<String>,
    /// The master's name, as the sentinels monitor it (`sentinel monitor <name> ...`).
    pub master_name: String,
    /// The user the master takes, if it requires one (ACL); default none.
    #[serde(default)]
    pub username: Option<String>,
    /// The master's password, if it requires one; `${VAR}` keeps it out of the file.
    #[serde(default)]
    pub password: Option<String>,
    /// The database; default 0.
    #[serde(default)]
    pub db: i64,
}

impl SentinelConfig {
    /// The sentinels at `nodes`, naming the master `master_name`, which takes no credentials.
    pub fn new<Node: Into<String>>(
        nodes: impl IntoIterator<Item = Node>,
        master_name: impl Into<String>,
    ) -> Self {
        SentinelConfig {
            nodes: nodes.into_iter().map(Into::into).collect(),
            master_name: master_name.into(),
            username: None,
            password: None,
            db: 0,
        }
    }

    /// The client that asks the sentinels for the master, or a `Config` error naming what is
    /// wrong, without a password.
    pub(crate) fn client(&self) -> Result<redis::sentinel::SentinelClient, MemoryError> {
        if self.nodes.is_empty() || self.master_name.is_empty() {
            return Err(MemoryError::Config {
                message: "sentinel needs nodes (the sentinels' URLs) and master_name".to_owned(),
            });
        }
        for node in &self.nodes {
            client_of(node)?;
        }
        let mut master = redis::RedisConnectionInfo::default().set_db(self.db);
        if let Some(username) = &self.username {
            master = master.set_username(username);
        }
        if let Some(password) = &self.password {
            master = master.set_password(password);
        }
        let master = redis::sentinel::SentinelNodeConnectionInfo::default()
            .set_redis_connection_info(master);
        redis::sentinel::SentinelClient::build(
            self.nodes.iter().map(String::as_str).collect(),
            self.master_name.clone(),
            Some(master),
            redis::sentinel::SentinelServerType::Master,
        )
        .map_err(|err| MemoryError::Config {
            message: hide_passwords(
                &self.nodes,
                &format!("invalid Redis Sentinel settings: {err}"),
            ),
        })
    }
}

impl fmt::Debug for SentinelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SentinelConfig")
            .field("nodes", &redact_urls(&self.nodes))
            .field("master_name", &self.master_name)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("db", &self.db)
            .finish()
    }
}

mod defaults {
    pub fn wait_timeout_ms() -> u64 {
        1_000
    }
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
            cluster_nodes: Vec::new(),
            sentinel: None,
            wait_replicas: 0,
            wait_timeout_ms: defaults::wait_timeout_ms(),
            prefix: defaults::prefix(),
            connect_timeout_ms: defaults::timeout_ms(),
            response_timeout_ms: defaults::timeout_ms(),
            deadline_ms: defaults::deadline_ms(),
            max_attempts: defaults::max_attempts(),
            history: Retention::default(),
        }
    }

    /// The defaults, for the Redis Cluster that any of the seed `nodes` belongs to.
    pub fn cluster<Node: Into<String>>(nodes: impl IntoIterator<Item = Node>) -> Self {
        RedisConfig {
            cluster_nodes: nodes.into_iter().map(Into::into).collect(),
            ..RedisConfig::new("")
        }
    }

    /// The defaults, for the master that the sentinels of `sentinel` name.
    pub fn sentinel(sentinel: SentinelConfig) -> Self {
        RedisConfig {
            sentinel: Some(sentinel),
            ..RedisConfig::new("")
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

    /// Checks the settings that are not checked elsewhere: one place for the server, and the
    /// deadline's range.
    pub(crate) fn validate(&self) -> Result<(), MemoryError> {
        let config = |message: &str| {
            Err(MemoryError::Config {
                message: message.to_owned(),
            })
        };
        let places = [
            !self.url.is_empty(),
            !self.cluster_nodes.is_empty(),
            self.sentinel.is_some(),
        ];
        match places.iter().filter(|given| **given).count() {
            0 => {
                return config(
                    "no Redis server: give url (one server), cluster_nodes (a Redis Cluster's seed nodes) or sentinel (Redis Sentinel)",
                );
            }
            1 => {}
            _ => {
                return config(
                    "more than one of url, cluster_nodes and sentinel is set: give url for one server, cluster_nodes for a Redis Cluster, or sentinel for Redis Sentinel",
                );
            }
        }
        if self.wait_replicas > 0 && !(1..self.deadline_ms).contains(&self.wait_timeout_ms) {
            return Err(MemoryError::Config {
                message: format!(
                    "wait_timeout_ms is {}: give the milliseconds a write waits for its replicas, at least 1 and less than deadline_ms ({})",
                    self.wait_timeout_ms, self.deadline_ms
                ),
            });
        }
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
        client_of(&self.url)
    }

    /// The cluster client for the seed nodes, its commands bounded by `response_timeout`,
    /// or a `Config` error naming the node that is wrong, without its password.
    pub(crate) fn cluster_client(
        &self,
        response_timeout: Duration,
    ) -> Result<redis::cluster::ClusterClient, MemoryError> {
        for node in &self.cluster_nodes {
            let db = client_of(node)?.get_connection_info().redis_settings().db();
            if db != 0 {
                return Err(MemoryError::Config {
                    message: format!(
                        "cluster node {} names database {db}: a Redis Cluster has only database 0; remove /{db}",
                        redact_url(node)
                    ),
                });
            }
        }
        // No retries inside the client: it would send a script again after a lost reply, and
        // a write that landed and was sent again loses its race to itself, which the caller
        // would take for another writer's (an update without an idempotency key applied
        // twice). Every failure reaches the caller instead, which checks whether the write
        // landed; redirects still refresh the client's slot map, so the next call goes right.
        redis::cluster::ClusterClientBuilder::new(self.cluster_nodes.iter().map(String::as_str))
            .connection_timeout(self.connect_timeout())
            .response_timeout(response_timeout)
            .retries(0)
            .build()
            .map_err(|err| MemoryError::Config {
                message: hide_passwords(
                    &self.cluster_nodes,
                    &format!("invalid Redis Cluster nodes: {err}"),
                ),
            })
    }

    /// `message` without the password of any URL of these settings: `url`, the cluster's
    /// nodes, the sentinels.
    pub(crate) fn hide_passwords(&self, message: &str) -> String {
        let sentinels = self.sentinel.iter().flat_map(|sentinel| &sentinel.nodes);
        let urls = std::iter::once(&self.url)
            .chain(&self.cluster_nodes)
            .chain(sentinels);
        hide_passwords(urls, message)
    }

    /// Where the memory is, without credentials: `redis://host:port/db`, for a cluster
    /// `redis://host:port,host:port (cluster)` of its seed nodes, for Sentinel
    /// `redis://host:port,host:port (sentinel, master NAME)` of the sentinels.
    pub(crate) fn server(&self) -> Result<String, MemoryError> {
        let addresses = |urls: &[String]| {
            urls.iter()
                .map(|url| Ok(client_of(url)?.get_connection_info().addr().to_string()))
                .collect::<Result<Vec<_>, MemoryError>>()
                .map(|addresses| addresses.join(","))
        };
        if let Some(sentinel) = &self.sentinel {
            return Ok(format!(
                "redis://{} (sentinel, master {})",
                addresses(&sentinel.nodes)?,
                sentinel.master_name
            ));
        }
        if self.cluster_nodes.is_empty() {
            let info = self.client()?.get_connection_info().clone();
            return Ok(format!(
                "redis://{}/{}",
                info.addr(),
                info.redis_settings().db()
            ));
        }
        Ok(format!(
            "redis://{} (cluster)",
            addresses(&self.cluster_nodes)?
        ))
    }
}

/// `message` without the password of any of `urls`.
fn hide_passwords<'a>(urls: impl IntoIterator<Item = &'a String>, message: &str) -> String {
    urls.into_iter().fold(message.to_owned(), |message, url| {
        hide_password_of(url, &message)
    })
}

/// `urls` with their passwords masked, for `Debug`.
fn redact_urls(urls: &[String]) -> Vec<String> {
    urls.iter().map(|url| redact_url(url)).collect()
}

/// The client for `url`, or a `Config` error that says what is wrong without the password.
fn client_of(url: &str) -> Result<redis::Client, MemoryError> {
    redis::Client::open(url).map_err(|err| MemoryError::Config {
        message: hide_password_of(
            url,
            &format!("invalid Redis URL {}: {err}", redact_url(url)),
        ),
    })
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &redact_url(&self.url))
            .field("cluster_nodes", &redact_urls(&self.cluster_nodes))
            .field("sentinel", &self.sentinel)
            .field("prefix", &self.prefix)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("response_timeout_ms", &self.response_timeout_ms)
            .field("deadline_ms", &self.deadline_ms)
            .field("max_attempts", &self.max_attempts)
            .field("history", &self.history)
            .field("wait_replicas", &self.wait_replicas)
            .field("wait_timeout_ms", &self.wait_timeout_ms)
            .finish()
    }
}

#[async_trait::async_trait]
impl memory_core::raw::BackendConfig for RedisConfig {
    fn resolve(
        &mut self,
        fields: &mut dyn memory_core::raw::ResolveFields,
    ) -> Result<(), MemoryError> {
        fields.text("url", &mut self.url)?;
        for node in &mut self.cluster_nodes {
            fields.text("cluster_nodes", node)?;
        }
        if let Some(sentinel) = &mut self.sentinel {
            for node in &mut sentinel.nodes {
                fields.text("sentinel.nodes", node)?;
            }
            for value in [&mut sentinel.username, &mut sentinel.password]
                .into_iter()
                .flatten()
            {
                fields.text("sentinel", value)?;
            }
        }
        Ok(())
    }

    async fn open(&self) -> Result<memory_core::raw::Opened, MemoryError> {
        Ok(memory_core::raw::Opened::of(
            crate::RedisProvider::connect(self).await?,
        ))
    }
}

#[cfg(test)]
mod tests;
