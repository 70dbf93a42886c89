//! The providers under test, the bare storage operations that bound them (the floor), and the
//! naive read-then-write baseline that shows what compare-and-swap and locks prevent.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use memory_core::{DocumentId, MemoryError, MemoryProvider, Retention};
use memory_markdown::MarkdownProvider;
use memory_postgres::{PostgresConfig, PostgresProvider};
use memory_redis::{RedisConfig, RedisProvider};
use memory_vector::{Embedder, RecallConfig, VectorProvider};
use redis::AsyncCommands;
// Every dynamic statement here names only the run's own schema, made from the process id.
use sqlx::{Connection, PgConnection};

use crate::stats::Samples;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One provider kind, with what it needs to open more instances of itself.
#[derive(Clone)]
pub enum Backend {
    /// Markdown files under a temp dir.
    Markdown { root: PathBuf },
    /// PostgreSQL, in a schema of its own.
    Postgres { url: String, schema: String },
    /// Redis, under a key prefix of its own.
    Redis { url: String, prefix: String },
    /// A recall index over markdown files.
    Vector {
        root: PathBuf,
        index: PathBuf,
        embedder: Arc<Embedder>,
    },
}

impl Backend {
    /// The name in tables and charts.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Markdown { .. } => "markdown",
            Backend::Postgres { .. } => "postgres",
            Backend::Redis { .. } => "redis",
            Backend::Vector { .. } => "vector",
        }
    }

    /// A new instance, with its own connections and its own writer queue, as another process
    /// would have.
    pub async fn open(&self) -> Result<Arc<dyn MemoryProvider>, MemoryError> {
        Ok(self.open_with_index().await?.0)
    }

    /// [`Backend::open`], and the recall index when the instance has one: its indexing runs
    /// after each write is acknowledged, so a measurement waits for it before the next starts.
    pub async fn open_with_index(
        &self,
    ) -> Result<(Arc<dyn MemoryProvider>, Option<Arc<VectorProvider>>), MemoryError> {
        Ok(match self {
            Backend::Markdown { .. } | Backend::Postgres { .. } | Backend::Redis { .. } => {
                (self.open_storage(Retention::default()).await?, None)
            }
            Backend::Vector {
                root,
                index,
                embedder,
            } => {
                let vector = Arc::new(
                    VectorProvider::open(
                        Arc::new(MarkdownProvider::new(root)),
                        index,
                        embedder.clone(),
                        RecallConfig::default(),
                    )
                    .await?,
                );
                (vector.clone(), Some(vector))
            }
        })
    }

    /// A new instance of a storage backend (not `vector`) that keeps `history` of each
    /// document: [`Retention::OFF`] for a baseline without history.
    pub async fn open_storage(
        &self,
        history: Retention,
    ) -> Result<Arc<dyn MemoryProvider>, MemoryError> {
        Ok(match self {
            Backend::Markdown { root } | Backend::Vector { root, .. } => {
                Arc::new(MarkdownProvider::new(root).with_retention(history))
            }
            Backend::Postgres { url, schema } => {
                let mut config = PostgresConfig::new(url).with_schema(schema);
                // One each: 64 writers stay under PostgreSQL's default of 100 connections.
                config.max_connections = 1;
                Arc::new(
                    PostgresProvider::connect(&config)
                        .await?
                        .with_retention(history),
                )
            }
            Backend::Redis { url, prefix } => {
                let config = RedisConfig::new(url).with_prefix(prefix);
                Arc::new(
                    RedisProvider::connect(&config)
                        .await?
                        .with_retention(history),
                )
            }
        })
    }

    /// Whether concurrent writers here are separate instances racing on storage. The vector
    /// provider's writes go to its source, so its contention is the source's.
    pub fn races(&self) -> bool {
        !matches!(self, Backend::Vector { .. })
    }
}

/// The floor of one backend: its cheapest read and its cheapest durable write.
#[derive(Default)]
pub struct Floor {
    /// What the read is, for the table.
    pub read_label: &'static str,
    pub read: Samples,
    /// What the write is.
    pub write_label: &'static str,
    pub write: Samples,
}

/// Measures the floor of `backend` with `samples` of each operation on a 1 KiB value.
pub async fn floor(backend: &Backend, samples: usize) -> Result<Floor, BoxError> {
    let value = "x".repeat(1024);
    let mut floor = Floor::default();
    match backend {
        Backend::Markdown { root } | Backend::Vector { root, .. } => {
            floor.read_label = "file read";
            floor.write_label = "write + fsync + rename + dir fsync";
            let dir = root.join("floor");
            std::fs::create_dir_all(&dir)?;
            let file = dir.join("FLOOR.md");
            for i in 0..samples {
                let started = std::time::Instant::now();
                write_durably(&dir, &file, &value, i)?;
                floor.write.push(started.elapsed());
                let started = std::time::Instant::now();
                std::hint::black_box(std::fs::read_to_string(&file)?);
                floor.read.push(started.elapsed());
            }
        }
        Backend::Postgres { url, schema } => {
            floor.read_label = "SELECT 1";
            floor.write_label = "one-row UPDATE (autocommit)";
            let mut db = PgConnection::connect(url).await?;
            create_schema(&mut db, schema).await?;
            let table = format!("\"{schema}\".bench_floor");
            sqlx::query(
                format!(
                    "CREATE TABLE IF NOT EXISTS {table} (id int PRIMARY KEY, body text NOT NULL)"
                )
                .as_str(),
            )
            .execute(&mut db)
            .await?;
            sqlx::query(
                format!("INSERT INTO {table} VALUES (1, '') ON CONFLICT (id) DO NOTHING").as_str(),
            )
            .execute(&mut db)
            .await?;
            let update = format!("UPDATE {table} SET body = $1 WHERE id = 1");
            for i in 0..samples {
                let body = format!("{value}{i}");
                floor
                    .write
                    .time(sqlx::query(update.as_str()).bind(&body).execute(&mut db))
                    .await?;
                floor
                    .read
                    .time(sqlx::query("SELECT 1").execute(&mut db))
                    .await?;
            }
        }
        Backend::Redis { url, prefix } => {
            floor.read_label = "GET";
            floor.write_label = "SET";
            let client = redis::Client::open(url.as_str())?;
            let mut conn = client.get_multiplexed_async_connection().await?;
            let key = format!("{prefix}:floor");
            for i in 0..samples {
                let body = format!("{value}{i}");
                floor.write.time(conn.set::<_, _, ()>(&key, &body)).await?;
                floor.read.time(conn.get::<_, String>(&key)).await?;
            }
        }
    }
    Ok(floor)
}

async fn create_schema(db: &mut PgConnection, schema: &str) -> Result<(), sqlx::Error> {
    sqlx::query(format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\"").as_str())
        .execute(db)
        .await
        .map(drop)
}

/// Replaces `file` as the markdown provider does: temp file, fsync, rename, fsync the dir.
fn write_durably(dir: &Path, file: &Path, text: &str, n: usize) -> std::io::Result<()> {
    use std::io::Write;
    let temp = dir.join(format!(".floor.{n}.tmp"));
    let mut handle = std::fs::File::create(&temp)?;
    handle.write_all(text.as_bytes())?;
    handle.sync_all()?;
    std::fs::rename(&temp, file)?;
    std::fs::File::open(dir)?.sync_all()
}

/// What the naive baseline did under one load.
#[derive(Debug, Clone, Default)]
pub struct Naive {
    /// Acknowledged adds missing at the end: the lost updates.
    pub lost: usize,
    /// Adds per second over the whole run.
    pub throughput: f64,
    /// Latency of each add (its read and its write).
    pub latencies: Samples,
}

/// The hand-written read-then-write a memory layer without compare-and-swap or locks does:
/// `writers` tasks each append `adds` entries (`entry(writer, n)`) to one shared text named
/// `name`, read and written back whole (on files with `std::fs`, no lock, no fsync).
pub async fn naive(
    backend: &Backend,
    name: &str,
    writers: usize,
    adds: usize,
    entry: fn(usize, usize) -> String,
) -> Result<Naive, BoxError> {
    // Created once up front, so the writers race on the text only.
    NaiveStore::open(backend, name).await?;
    let started = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|writer| {
            let (backend, name) = (backend.clone(), name.to_owned());
            tokio::spawn(async move {
                let mut store = NaiveStore::open(&backend, &name).await?;
                let mut latencies = Samples::default();
                for n in 0..adds {
                    let began = Instant::now();
                    let text = store.read().await?;
                    store
                        .write(format!("{text}\n\n{}", entry(writer, n)))
                        .await?;
                    latencies.push(began.elapsed());
                }
                Ok::<_, BoxError>(latencies)
            })
        })
        .collect();
    let mut latencies = Samples::default();
    for task in tasks {
        latencies.append(&task.await??);
    }
    let throughput = (writers * adds) as f64 / started.elapsed().as_secs_f64();
    let text = NaiveStore::open(backend, name).await?.read().await?;
    let present: std::collections::HashSet<&str> = text.split("\n\n").collect();
    let lost = (0..writers)
        .flat_map(|w| (0..adds).map(move |n| (w, n)))
        .filter(|(w, n)| !present.contains(entry(*w, *n).as_str()))
        .count();
    Ok(Naive {
        lost,
        throughput,
        latencies,
    })
}

/// One writer's handle on the naive baseline's shared text, per backend and writer count.
enum NaiveStore {
    File(PathBuf),
    Postgres {
        db: PgConnection,
        table: String,
        name: String,
    },
    Redis(redis::aio::MultiplexedConnection, String),
}

impl NaiveStore {
    async fn open(backend: &Backend, name: &str) -> Result<NaiveStore, BoxError> {
        Ok(match backend {
            Backend::Markdown { root } | Backend::Vector { root, .. } => {
                std::fs::create_dir_all(root.join("naive"))?;
                NaiveStore::File(root.join("naive").join(format!("{name}.md")))
            }
            Backend::Postgres { url, schema } => {
                let mut db = PgConnection::connect(url).await?;
                create_schema(&mut db, schema).await.ok(); // Racing creators, as below.
                let table = format!("\"{schema}\".bench_naive");
                sqlx::query(format!(
                    "CREATE TABLE IF NOT EXISTS {table} (name text PRIMARY KEY, body text NOT NULL)"
                ).as_str())
                .execute(&mut db)
                .await
                .ok(); // Racing creators: one wins, and the table exists for all.
                sqlx::query(
                    format!("INSERT INTO {table} VALUES ($1, '') ON CONFLICT (name) DO NOTHING")
                        .as_str(),
                )
                .bind(name)
                .execute(&mut db)
                .await?;
                let name = name.to_owned();
                NaiveStore::Postgres { db, table, name }
            }
            Backend::Redis { url, prefix } => {
                let client = redis::Client::open(url.as_str())?;
                let conn = client.get_multiplexed_async_connection().await?;
                NaiveStore::Redis(conn, format!("{prefix}:{name}"))
            }
        })
    }

    async fn read(&mut self) -> Result<String, BoxError> {
        Ok(match self {
            NaiveStore::File(path) => match std::fs::read_to_string(&*path) {
                Ok(text) => text,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(err) => return Err(err.into()),
            },
            NaiveStore::Postgres { db, table, name } => {
                sqlx::query_scalar(format!("SELECT body FROM {table} WHERE name = $1").as_str())
                    .bind(name.as_str())
                    .fetch_one(db)
                    .await?
            }
            NaiveStore::Redis(conn, key) => conn
                .get::<_, Option<String>>(&*key)
                .await?
                .unwrap_or_default(),
        })
    }

    async fn write(&mut self, text: String) -> Result<(), BoxError> {
        match self {
            NaiveStore::File(path) => {
                // Atomic replacement, so readers never see a torn file: the loss is the race.
                let dir = path.parent().unwrap_or(Path::new("."));
                static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
                let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let temp = dir.join(format!(".naive.{n}.tmp"));
                std::fs::write(&temp, text)?;
                std::fs::rename(&temp, &*path)?;
            }
            NaiveStore::Postgres { db, table, name } => {
                sqlx::query(format!("UPDATE {table} SET body = $1 WHERE name = $2").as_str())
                    .bind(text)
                    .bind(name.as_str())
                    .execute(db)
                    .await?;
            }
            NaiveStore::Redis(conn, key) => conn.set::<_, _, ()>(&*key, text).await?,
        }
        Ok(())
    }
}

/// Drops what the run left on the servers.
pub async fn clean_up(backend: &Backend) -> Result<(), BoxError> {
    match backend {
        Backend::Postgres { url, schema } => {
            let mut db = PgConnection::connect(url).await?;
            sqlx::query(format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE").as_str())
                .execute(&mut db)
                .await?;
        }
        Backend::Redis { url, prefix } => {
            let client = redis::Client::open(url.as_str())?;
            let mut conn = client.get_multiplexed_async_connection().await?;
            let keys: Vec<String> = conn.keys(format!("*{prefix}*")).await?;
            if !keys.is_empty() {
                conn.del::<_, ()>(keys).await?;
            }
        }
        Backend::Markdown { .. } | Backend::Vector { .. } => {}
    }
    Ok(())
}

/// What `document`'s history holds in `backend`'s storage, in bytes: markdown the journal's
/// files (its segments and checkpoint texts); PostgreSQL the rows of `memory_history` as stored (`pg_column_size`, so after
/// compression); Redis the stream's memory (`MEMORY USAGE`).
pub async fn history_bytes(backend: &Backend, document: &DocumentId) -> Result<u64, BoxError> {
    Ok(match backend {
        Backend::Markdown { root } | Backend::Vector { root, .. } => {
            let provider = MarkdownProvider::new(root);
            let mut bytes = 0;
            for file in provider.history_files(document)? {
                bytes += std::fs::metadata(file)?.len();
            }
            bytes
        }
        Backend::Postgres { url, schema } => {
            let DocumentId::PersonalityMemory { personality } = document else {
                return Err(
                    format!("{document}: the bench measures personalities' MEMORY.md").into(),
                );
            };
            let mut db = PgConnection::connect(url).await?;
            let bytes: i64 = sqlx::query_scalar(format!(
                "SELECT coalesce(sum(pg_column_size(h.*)), 0)::int8 FROM \"{schema}\".memory_history h \
                 WHERE kind = 'personality_memory' AND owner = $1"
            ).as_str())
            .bind(personality.as_str())
            .fetch_one(&mut db)
            .await?;
            u64::try_from(bytes)?
        }
        Backend::Redis { url, prefix } => {
            let config = RedisConfig::new(url).with_prefix(prefix);
            let key = RedisProvider::connect(&config)
                .await?
                .store()
                .history_key(document);
            let client = redis::Client::open(url.as_str())?;
            let mut conn = client.get_multiplexed_async_connection().await?;
            let bytes: Option<u64> = redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(&key)
                .arg("SAMPLES")
                .arg(0)
                .query_async(&mut conn)
                .await?;
            bytes.unwrap_or(0)
        }
    })
}
