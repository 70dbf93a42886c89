//! Finds the servers the Postgres and Redis backend tests run against.
//!
//! In order: the URL in the service's env var (`MEMORY_TEST_POSTGRES_URL`,
//! `MEMORY_TEST_REDIS_URL`); else, when a Docker engine is reachable, a container started by
//! testcontainers and shared by every test process of the run; else nothing, and the test
//! fails: a missing server is never a quiet pass. With `MEMORY_SKIP_MISSING_SERVICES=1` (an
//! explicit choice) it skips instead, loudly, and notes the skip in `$MEMORY_SKIPPED_LOG` when
//! that is set, so that `scripts/test` lists every suite it skipped ([`skip_or_fail`]).
//!
//! Tests share the servers, so each works in a namespace of its own: [`unique_name`] makes one,
//! [`SchemaGuard`] drops a Postgres schema at the end.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use memory_core::MemoryError;

use testcontainers::runners::SyncRunner;
use testcontainers::{Container, ImageExt, ReuseDirective};
use testcontainers_modules::{postgres::Postgres, redis::Redis};

/// Set to `1` to let a test whose server (or tool, or model) is missing skip rather than fail.
pub const SKIP_MISSING_SERVICES: &str = "MEMORY_SKIP_MISSING_SERVICES";

/// A file each skip adds a line to (`<suite> <test>: <why>`), for `scripts/test` to list.
pub const SKIPPED_LOG: &str = "MEMORY_SKIPPED_LOG";

/// What a test does when something it needs is missing (`why`): it fails (panics), unless
/// [`SKIP_MISSING_SERVICES`] is `1`; then it says so on stderr, notes it in [`SKIPPED_LOG`],
/// and returns, for the caller to skip.
pub fn skip_or_fail(why: &str) {
    if std::env::var(SKIP_MISSING_SERVICES).is_ok_and(|v| v == "1") {
        eprintln!("\n!!! SKIPPED ({SKIP_MISSING_SERVICES}=1): {why}.\n");
        if let Some(log) = std::env::var_os(SKIPPED_LOG).filter(|v| !v.is_empty()) {
            // The test binary's name less cargo's hash, and the test (libtest names its thread).
            let exe = std::env::current_exe().ok();
            let stem = exe
                .as_deref()
                .and_then(std::path::Path::file_stem)
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let binary = stem
                .rsplit_once('-')
                .map_or(stem.as_str(), |(name, _)| name);
            // cargo and nextest name the package of the test they run.
            let suite = match std::env::var("CARGO_PKG_NAME") {
                Ok(package) => format!("{package}::{binary}"),
                Err(_) => binary.to_owned(),
            };
            let thread = std::thread::current();
            let test = thread.name().unwrap_or("?");
            let line = format!("{suite} {test}: {}\n", why.replace('\n', " "));
            let noted = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .and_then(|mut file| std::io::Write::write_all(&mut file, line.as_bytes()));
            if let Err(err) = noted {
                panic!(
                    "skipping, but noting it in {}: {err}",
                    log.to_string_lossy()
                );
            }
        }
    } else {
        panic!(
            "{why}. A test that cannot run fails: provide what it needs (scripts/services.sh, scripts/test-prerequisites.sh), or set {SKIP_MISSING_SERVICES}=1 to skip it"
        );
    }
}

/// A server a backend's tests need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// PostgreSQL, for `memory-postgres`.
    Postgres,
    /// Redis, for `memory-redis`.
    Redis,
    /// PgBouncer in transaction mode in front of the PostgreSQL of [`Service::Postgres`], for
    /// `memory-postgres`'s pooled tests. No container: `scripts/services.sh` starts one.
    PgBouncer,
    /// A Redis Cluster of three masters, for `memory-redis`'s cluster tests: its seed nodes'
    /// URLs, comma-separated. No container: `scripts/services.sh` starts one.
    RedisCluster,
}

impl Service {
    /// The env var that points the tests at an existing server.
    pub fn env_var(self) -> &'static str {
        match self {
            Service::Postgres => "MEMORY_TEST_POSTGRES_URL",
            Service::Redis => "MEMORY_TEST_REDIS_URL",
            Service::PgBouncer => "MEMORY_TEST_PGBOUNCER_URL",
            Service::RedisCluster => "MEMORY_TEST_REDIS_CLUSTER_URLS",
        }
    }

    /// The URL of a server for this service, or `None` when there is none and the test should
    /// skip, which only [`SKIP_MISSING_SERVICES`]`=1` allows: else it panics ([`skip_or_fail`]).
    pub fn url(self) -> Option<String> {
        static POSTGRES: OnceLock<Result<String, String>> = OnceLock::new();
        static REDIS: OnceLock<Result<String, String>> = OnceLock::new();
        static PGBOUNCER: OnceLock<Result<String, String>> = OnceLock::new();
        static REDIS_CLUSTER: OnceLock<Result<String, String>> = OnceLock::new();
        let found = match self {
            Service::Postgres => &POSTGRES,
            Service::Redis => &REDIS,
            Service::PgBouncer => &PGBOUNCER,
            Service::RedisCluster => &REDIS_CLUSTER,
        }
        .get_or_init(|| self.find());
        match found {
            Ok(url) => Some(url.clone()),
            Err(why) => {
                skip_or_fail(&format!("{why} (set {} to run this test)", self.env_var()));
                None
            }
        }
    }

    fn find(self) -> Result<String, String> {
        if let Some(url) = std::env::var(self.env_var()).ok().filter(|v| !v.is_empty()) {
            return Ok(url);
        }
        match self {
            Service::PgBouncer => {
                return Err(format!(
                    "no PgBouncer: {} is unset (scripts/services.sh starts one where the pgbouncer package is installed)",
                    self.env_var()
                ));
            }
            Service::RedisCluster => {
                return Err(format!(
                    "no Redis Cluster: {} is unset (scripts/services.sh starts one where the redis-server package is installed)",
                    self.env_var()
                ));
            }
            Service::Postgres | Service::Redis => {}
        }
        if !docker_reachable() {
            return Err(format!(
                "no {self:?} server: {} is unset and no Docker engine is reachable",
                self.env_var()
            ));
        }
        // Every test process of one run asks at once: the first creates the named container,
        // the others reuse it (a lost creation race succeeds on the retry). testcontainers'
        // blocking runner has a runtime of its own, which cannot start inside the test's: hence
        // the thread.
        let started = std::thread::spawn(move || {
            let start = || self.start_container();
            start().or_else(|_| start()).map_err(|err| err.to_string())
        })
        .join()
        .unwrap_or_else(|_| Err("the thread starting it panicked".to_owned()));
        let url = started.map_err(|err| {
            format!("no {self:?} server: starting a container with testcontainers failed: {err}")
        })?;
        wait_until_listening(&url)?;
        Ok(url)
    }

    fn start_container(self) -> Result<String, testcontainers::TestcontainersError> {
        // The containers live as long as the test process; reuse keeps one per machine.
        static KEEP: OnceLock<std::sync::Mutex<Vec<Box<dyn std::any::Any + Send>>>> =
            OnceLock::new();
        fn keep<I: testcontainers::Image + 'static>(container: Container<I>) {
            KEEP.get_or_init(Default::default)
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(Box::new(container));
        }
        match self {
            Service::Postgres => {
                let container = Postgres::default()
                    .with_tag("16.6-alpine")
                    .with_container_name("agent-memory-test-postgres")
                    .with_reuse(ReuseDirective::Always)
                    .start()?;
                let url = format!(
                    "postgres://postgres:postgres@{}:{}/postgres",
                    container.get_host()?,
                    container.get_host_port_ipv4(5432)?
                );
                keep(container);
                Ok(url)
            }
            Service::Redis => {
                let container = Redis::default()
                    .with_tag("7.2.7-alpine")
                    .with_container_name("agent-memory-test-redis")
                    .with_reuse(ReuseDirective::Always)
                    .start()?;
                let url = format!(
                    "redis://{}:{}",
                    container.get_host()?,
                    container.get_host_port_ipv4(6379)?
                );
                keep(container);
                Ok(url)
            }
            Service::PgBouncer | Service::RedisCluster => {
                unreachable!("`find` starts no container for {self:?}")
            }
        }
    }
}

/// A name no other test, process or run uses: `<prefix>_<pid>_<n>_<nanos>`, for a schema or a
/// key prefix.
pub fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{prefix}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Deletes every key under `{prefix}:` (a test's hash tag, one of [`unique_name`]'s) on each
/// Redis server of `nodes`: one server, or every master of a cluster (the keys share one slot,
/// so one of them holds them all). A failure is reported on stderr, not raised: it runs as a
/// test's guard is dropped.
pub fn delete_redis_keys(nodes: &[String], prefix: &str) {
    use redis::Commands;
    for node in nodes {
        let deleted = redis::Client::open(node.as_str())
            .and_then(|client| client.get_connection())
            .and_then(|mut connection| {
                let pattern = format!("{{{prefix}}}:*");
                let keys: Vec<String> =
                    connection.scan_match(&pattern)?.collect::<Result<_, _>>()?;
                if !keys.is_empty() {
                    redis::cmd("DEL").arg(&keys).exec(&mut connection)?;
                }
                Ok(())
            });
        if let Err(err) = deleted {
            eprintln!("could not delete test keys {{{prefix}}}:* on {node}: {err}");
        }
    }
}

/// Drops its Postgres schema, with everything in it, when dropped: also when the test fails.
pub struct SchemaGuard {
    /// The server.
    pub url: String,
    /// The schema, one of [`unique_name`]'s.
    pub schema: String,
}

impl Drop for SchemaGuard {
    fn drop(&mut self) {
        // The name is a test's own, from `unique_name`.
        let statement = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.schema);
        if let Err(err) = execute_now(&self.url, statement) {
            eprintln!("could not drop test schema {}: {err}", self.schema);
        }
    }
}

/// Runs `statement` on the PostgreSQL at `url` and waits for it, from anywhere, a test's
/// runtime included (which cannot be blocked on): on a thread and a runtime of its own. For
/// the guards that clean up after a test as they are dropped.
///
/// # Errors
/// What connecting or the statement failed with, as text.
pub fn execute_now(url: &str, statement: String) -> Result<(), String> {
    use sqlx::{Connection, Executor, PgConnection};
    let url = url.to_owned();
    let done = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(async {
                let mut connection = PgConnection::connect(&url).await?;
                connection.execute(&*statement).await?;
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
            })
    })
    .join();
    match done {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err("the thread running it panicked".to_owned()),
    }
}

/// `connect`ing to a server that is not there is `Unavailable` well within 10 s (the backend's
/// connect timeout is the caller's to set short), and the message never shows the password
/// `hunter2` of `urls`. Give one URL nothing listens at (refused at once) and one at a
/// non-routable address (where a connect would hang).
pub async fn assert_unreachable_is_unavailable<P, F, Fut>(urls: [&str; 2], connect: F)
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<P, MemoryError>>,
{
    for url in urls {
        let started = Instant::now();
        let Err(err) = connect(url.to_owned()).await else {
            panic!("{url}: connected to nothing");
        };
        assert!(
            matches!(err, MemoryError::Unavailable { .. }),
            "{url}: {err:?}"
        );
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{url}: gave up after {:?}",
            started.elapsed()
        );
    }
}

/// Waits for the server at `url` to accept TCP connections. A reused container may still be
/// starting; both images accept TCP only once the server is ready (Postgres' first-run setup
/// listens on its Unix socket alone).
fn wait_until_listening(url: &str) -> Result<(), String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host_port = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let host_port = &host_port[..host_port.find('/').unwrap_or(host_port.len())];
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(host_port).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(format!(
        "the container at {host_port} did not accept connections within 60 s"
    ))
}

/// Whether a Docker engine answers: `DOCKER_HOST` is set or the default socket exists. (The
/// `docker` client alone is not enough; testcontainers needs the engine.)
fn docker_reachable() -> bool {
    std::env::var_os("DOCKER_HOST").is_some()
        || std::path::Path::new("/var/run/docker.sock").exists()
}
