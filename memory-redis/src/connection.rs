//! The store's connection: to one server, or to a Redis Cluster.

use redis::aio::{ConnectionLike, ConnectionManager, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::sentinel::SentinelConnection;

/// A connection to Redis that [`crate::RedisStore`] sends everything through: one server's,
/// which reconnects by itself after a drop; a Redis Cluster's, which finds every master from
/// its seed nodes and sends each command, script and transaction to the master that owns its
/// keys' slot, never sending one twice (a redirect fails the call, and refreshes the slot map
/// for the next; see `RedisConfig::cluster_nodes`) (every
/// key of a store shares one hash tag, so one slot: a call's script or transaction always
/// goes to one master); or the master Redis Sentinel names. Cheap to clone; clones share the
/// connection.
#[derive(Clone)]
pub enum RedisConnection {
    /// One server (or a proxy in front of one).
    Server(ConnectionManager),
    /// One server, on a connection that stays closed once dropped.
    Multiplexed(MultiplexedConnection),
    /// A Redis Cluster.
    Cluster(ClusterConnection),
    /// The master that Redis Sentinel names, followed through a failover.
    Sentinel(SentinelConnection),
}

impl From<ConnectionManager> for RedisConnection {
    fn from(connection: ConnectionManager) -> Self {
        RedisConnection::Server(connection)
    }
}

impl From<MultiplexedConnection> for RedisConnection {
    fn from(connection: MultiplexedConnection) -> Self {
        RedisConnection::Multiplexed(connection)
    }
}

impl From<ClusterConnection> for RedisConnection {
    fn from(connection: ClusterConnection) -> Self {
        RedisConnection::Cluster(connection)
    }
}

impl From<SentinelConnection> for RedisConnection {
    fn from(connection: SentinelConnection) -> Self {
        RedisConnection::Sentinel(connection)
    }
}

impl ConnectionLike for RedisConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            RedisConnection::Server(connection) => connection.req_packed_command(cmd),
            RedisConnection::Multiplexed(connection) => connection.req_packed_command(cmd),
            RedisConnection::Cluster(connection) => connection.req_packed_command(cmd),
            RedisConnection::Sentinel(connection) => connection.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            RedisConnection::Server(connection) => {
                connection.req_packed_commands(pipeline, offset, count)
            }
            RedisConnection::Multiplexed(connection) => {
                connection.req_packed_commands(pipeline, offset, count)
            }
            RedisConnection::Cluster(connection) => {
                connection.req_packed_commands(pipeline, offset, count)
            }
            RedisConnection::Sentinel(connection) => {
                connection.req_packed_commands(pipeline, offset, count)
            }
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            RedisConnection::Server(connection) => connection.get_db(),
            RedisConnection::Multiplexed(connection) => connection.get_db(),
            RedisConnection::Cluster(connection) => connection.get_db(),
            RedisConnection::Sentinel(connection) => connection.get_db(),
        }
    }
}
