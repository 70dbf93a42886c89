//! Connecting: to one server, to a Redis Cluster, or to the master Redis Sentinel names, with
//! connections of their own for writers that wait on a held document.

use std::time::Duration;

use async_trait::async_trait;
use memory_core::MemoryError;
use memory_core::raw::{Connect, Settings};
use redis::aio::ConnectionManagerConfig;

use crate::config::RedisConfig;
use crate::connection::RedisConnection;
use crate::queue::{Holds, Waiters};
use crate::sentinel::SentinelConnection;
use crate::store::{RedisStore, WaitForReplicas, validate_prefix};

#[async_trait]
impl Connect for RedisStore {
    type Config = RedisConfig;

    /// Connects with `config`: to its one server, to the Redis Cluster its seed nodes belong
    /// to, or to the master its sentinels name. The connection reconnects by itself after a
    /// drop (under Sentinel, to the master named then); a call that was in flight then fails
    /// with `Unavailable` and the next one goes through.
    ///
    /// # Errors
    /// [`MemoryError::Config`] for a bad URL, prefix or deadline (never echoing the password);
    /// [`MemoryError::Unavailable`] when no connection is made within the connect timeout.
    async fn connect(config: &RedisConfig) -> Result<(Self, Settings), MemoryError> {
        validate_prefix(&config.prefix)?;
        config.validate()?;
        let server = config.server()?;
        // The waiters of Sentinel follow its connection, so they come once it is made.
        let (connecting, waiters): (redis::RedisFuture<'_, RedisConnection>, _) =
            if let Some(sentinel) = &config.sentinel {
                let sentinels = sentinel.client()?;
                let options = redis::AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(config.connect_timeout()))
                    .set_response_timeout(Some(config.response_timeout()));
                let connecting = SentinelConnection::connect(sentinels, options);
                (Box::pin(async move { Ok(connecting.await?.into()) }), None)
            } else if config.cluster_nodes.is_empty() {
                let client = config.client()?;
                let manager = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(config.connect_timeout()))
                    .set_response_timeout(Some(config.response_timeout()))
                    .set_number_of_retries(2);
                let waiters = Waiters::Server(client.clone());
                let connecting = async move {
                    let manager = client.get_connection_manager_with_config(manager);
                    Ok(manager.await?.into())
                };
                (Box::pin(connecting), Some(waiters))
            } else {
                let client = config.cluster_client(config.response_timeout())?;
                let waiters = config.cluster_client(Waiters::response_timeout())?;
                let connecting = async move { Ok(client.get_async_connection().await?.into()) };
                (
                    Box::pin(connecting),
                    Some(Waiters::Cluster(Box::new(waiters))),
                )
            };
        // The outer bound covers the client's own retries of the first connect.
        let bound = config.connect_timeout() * 3 + Duration::from_secs(1);
        let connection = match tokio::time::timeout(bound, connecting).await {
            Ok(connected) => connected.map_err(|err| {
                // The driver's message names the server, never (as far as we know) a
                // password; it is checked all the same, and then the source is not kept.
                let said = err.to_string();
                let message = config.hide_passwords(&said);
                let source = (message == said).then(|| err.into());
                MemoryError::Unavailable {
                    what: server.clone(),
                    message,
                    source,
                }
            })?,
            Err(_) => {
                return Err(MemoryError::Unavailable {
                    what: server,
                    message: format!("no connection within {bound:?}"),
                    source: None,
                });
            }
        };
        let waiters = match &connection {
            RedisConnection::Sentinel(sentinel) => Some(Waiters::Sentinel(sentinel.clone())),
            _ => waiters,
        };
        let mut store = Self::from_connection(connection, &config.prefix, server)?;
        // Waiters for a held document block on connections of their own.
        if let Some(waiters) = waiters {
            store.holds = Holds::new(waiters, config.connect_timeout());
        }
        store.wait = (config.wait_replicas > 0).then(|| WaitForReplicas {
            replicas: config.wait_replicas,
            timeout: Duration::from_millis(config.wait_timeout_ms),
        });
        let settings = Settings {
            max_attempts: config.max_attempts,
            deadline: config.deadline(),
            retention: config.history,
        };
        Ok((store, settings))
    }
}
