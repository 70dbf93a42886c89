//! The multi-host backends as teams deploy them, beside a direct connection: PostgreSQL through
//! PgBouncer in transaction mode, and Redis on a Redis Cluster of three masters. One writer,
//! prefetch and one-add sync, the two calls an agent makes every turn.

use std::sync::Arc;

use memory_core::MemoryProvider;
use memory_postgres::{PoolMode, PostgresConfig, PostgresProvider};
use memory_redis::{RedisConfig, RedisProvider};

use crate::backends::{self, Backend, BoxError};
use crate::stats::Samples;
use crate::workloads;

/// The MEMORY.md size the prefetch row reads, in bytes.
const PREFETCH_BYTES: usize = 8 * 1024;

/// A provider opened for a deployment, or why it could not be.
type Opened = Result<Arc<dyn MemoryProvider>, String>;

/// One way of reaching a backend, measured.
pub struct Deployment {
    /// What it is, for the table: `postgres, through PgBouncer (transaction mode)`.
    pub name: String,
    /// Prefetch with an 8 KiB MEMORY.md.
    pub prefetch: Samples,
    /// One-add syncs by one writer.
    pub sync: Samples,
}

/// Where the deployments are: PgBouncer in front of the benchmark's PostgreSQL, and a Redis
/// Cluster's seed nodes. Either may be missing: its row is skipped, loudly.
pub struct Targets<'a> {
    /// PostgreSQL, directly; `None` when the run does not measure PostgreSQL.
    pub postgres: Option<&'a str>,
    /// PgBouncer in transaction mode in front of it.
    pub pgbouncer: Option<&'a str>,
    /// One Redis server; `None` when the run does not measure Redis.
    pub redis: Option<&'a str>,
    /// The seed nodes of a Redis Cluster.
    pub redis_cluster: &'a [String],
}

/// Measures each deployment beside its direct connection, `samples` calls each, under
/// namespaces of `run_id`'s that it removes again, calling `progress` with each one's name
/// before it. Returns the rows and the deployments it could not reach, with why.
pub async fn measure(
    targets: &Targets<'_>,
    run_id: &str,
    samples: usize,
    progress: impl Fn(&str),
) -> (Vec<Deployment>, Vec<(String, String)>) {
    let schema = format!("{}_deploy", run_id.replace('-', "_"));
    let prefix = format!("{run_id}-deploy");
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    let mut candidates: Vec<(String, Opened)> = Vec::new();
    let postgres = |url: &str, pool_mode| {
        let config = PostgresConfig {
            pool_mode,
            ..PostgresConfig::new(url).with_schema(&schema)
        };
        async move {
            PostgresProvider::connect(&config)
                .await
                .map(|provider| Arc::new(provider) as Arc<dyn MemoryProvider>)
                .map_err(|err| err.to_string())
        }
    };
    let redis = |config: RedisConfig| {
        let config = config.with_prefix(&prefix);
        async move {
            RedisProvider::connect(&config)
                .await
                .map(|provider| Arc::new(provider) as Arc<dyn MemoryProvider>)
                .map_err(|err| err.to_string())
        }
    };
    if let Some(direct) = targets.postgres {
        // Without TLS, as Debian's PgBouncer is (to its clients and to the server), unless
        // the URL says otherwise: the rows then differ by the pooler alone.
        let direct = match direct.contains("sslmode=") {
            true => direct.to_owned(),
            false if direct.contains('?') => format!("{direct}&sslmode=disable"),
            false => format!("{direct}?sslmode=disable"),
        };
        candidates.push((
            "postgres, direct".to_owned(),
            postgres(&direct, PoolMode::Session).await,
        ));
        let pooled = match targets.pgbouncer {
            Some(url) => postgres(url, PoolMode::Transaction).await,
            None => Err("no PgBouncer (--pgbouncer-url, MEMORY_TEST_PGBOUNCER_URL)".to_owned()),
        };
        candidates.push((
            "postgres, through PgBouncer (transaction mode)".to_owned(),
            pooled,
        ));
    }
    if let Some(server) = targets.redis {
        candidates.push((
            "redis, one server".to_owned(),
            redis(RedisConfig::new(server)).await,
        ));
        let cluster = match targets.redis_cluster {
            [] => Err(
                "no Redis Cluster (--redis-cluster-urls, MEMORY_TEST_REDIS_CLUSTER_URLS)"
                    .to_owned(),
            ),
            nodes => redis(RedisConfig::cluster(nodes.to_vec())).await,
        };
        candidates.push(("redis, Redis Cluster of three masters".to_owned(), cluster));
    }

    for (name, provider) in candidates {
        progress(&name);
        let measured = match provider {
            Ok(provider) => measure_one(&*provider, samples).await,
            Err(err) => Err(err.into()),
        };
        match measured {
            Ok((prefetch, sync)) => rows.push(Deployment {
                name,
                prefetch,
                sync,
            }),
            Err(err) => skipped.push((format!("deployments: {name}"), err.to_string())),
        }
    }
    let postgres = targets.postgres.map(|url| Backend::Postgres {
        url: url.to_owned(),
        schema,
    });
    // The cluster's keys are on whichever master owns the prefix's slot: each is asked.
    let redis_servers = targets.redis.into_iter().chain(match targets.redis {
        Some(_) => targets.redis_cluster.iter().map(String::as_str).collect(),
        None => Vec::new(),
    });
    let redis = redis_servers.map(|url| Backend::Redis {
        url: url.to_owned(),
        prefix: prefix.clone(),
    });
    for backend in postgres.into_iter().chain(redis) {
        if let Err(err) = backends::clean_up(&backend).await {
            eprintln!("!!! could not clean up after the deployments: {err}");
        }
    }
    (rows, skipped)
}

async fn measure_one(
    provider: &dyn MemoryProvider,
    samples: usize,
) -> Result<(Samples, Samples), BoxError> {
    let prefetch = workloads::prefetch(provider, PREFETCH_BYTES, samples).await?;
    let sync = workloads::sync(provider, samples).await?;
    Ok((prefetch, sync))
}
