//! A Redis master, a replica and three sentinels of a test's own, for the Sentinel and
//! failover tests: `redis-server` processes on spare loopback ports in a temporary directory,
//! killed when dropped.

use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::services::skip_or_fail;
use crate::standby::spare_port;

/// The name the sentinels monitor the master by.
pub const MASTER_NAME: &str = "memory-test";

/// A master replicating to one replica, watched by three sentinels (quorum 2) that promote
/// the replica half a second after the master stops answering.
pub struct RedisSentinelSet {
    dir: tempfile::TempDir,
    /// The two data servers by port, each with its process while it runs.
    servers: Mutex<Vec<(u16, Option<Child>)>>,
    sentinels: Vec<(u16, Child)>,
}

impl RedisSentinelSet {
    /// Starts them all and waits until the replica is in sync and every sentinel knows the
    /// replica and the other two; `None` (after [`skip_or_fail`]) without `redis-server`.
    ///
    /// # Panics
    /// When a server does not start, or the set is not ready within 30 s.
    pub fn start() -> Option<RedisSentinelSet> {
        let installed = Command::new("redis-server")
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success());
        if !installed {
            skip_or_fail("redis-server on the PATH, for Redis Sentinel");
            return None;
        }
        let (master, replica) = (spare_port(), spare_port());
        let mut set = RedisSentinelSet {
            dir: tempfile::tempdir().unwrap(),
            servers: Mutex::new(Vec::new()),
            sentinels: Vec::new(),
        };
        let master_child = set.server(master, None);
        let replica_child = set.server(replica, Some(master));
        *set.servers.lock().unwrap() =
            vec![(master, Some(master_child)), (replica, Some(replica_child))];
        for _ in 0..3 {
            let port = spare_port();
            let conf = set.dir.path().join(format!("sentinel-{port}.conf"));
            std::fs::write(
                &conf,
                format!(
                    "port {port}\nbind 127.0.0.1\ndir {dir}\n\
                     sentinel monitor {MASTER_NAME} 127.0.0.1 {master} 2\n\
                     sentinel down-after-milliseconds {MASTER_NAME} 500\n\
                     sentinel failover-timeout {MASTER_NAME} 3000\n\
                     sentinel parallel-syncs {MASTER_NAME} 1\n",
                    dir = set.dir.path().display()
                ),
            )
            .unwrap();
            let child = Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            set.sentinels.push((port, child));
        }
        set.wait_until("the replica is in sync", || {
            info(replica, "replication").contains("master_link_status:up")
        });
        set.wait_until("every sentinel knows the replica and the others", || {
            set.sentinels.iter().all(|(port, _)| {
                let master = sentinel_master(*port);
                field(&master, "num-slaves") == Some("1")
                    && field(&master, "num-other-sentinels") == Some("2")
            })
        });
        Some(set)
    }

    /// The sentinels' URLs.
    pub fn sentinel_urls(&self) -> Vec<String> {
        self.sentinels
            .iter()
            .map(|(port, _)| format!("redis://127.0.0.1:{port}"))
            .collect()
    }

    /// The ports of the two data servers.
    pub fn ports(&self) -> Vec<u16> {
        let servers = self.servers.lock().unwrap_or_else(|err| err.into_inner());
        servers.iter().map(|(port, _)| *port).collect()
    }

    /// The port of the master the sentinels name now.
    pub fn master_port(&self) -> u16 {
        let (port, _) = self.sentinels[0];
        let reply = redis_cli(port, &["SENTINEL", "get-master-addr-by-name", MASTER_NAME]);
        reply
            .lines()
            .nth(1)
            .and_then(|port| port.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Kills the master the sentinels name now (SIGKILL: what it had not sent its replica is
    /// lost), waits until they promote the replica, then starts the old master again, which
    /// the sentinels make a replica of the new one, as a team replaces a failed node.
    /// Returns the new master's port.
    ///
    /// # Panics
    /// When the failover does not happen within 30 s.
    pub fn fail_over(&self) -> u16 {
        let old = self.master_port();
        {
            let mut servers = self.servers.lock().unwrap();
            for (port, child) in servers.iter_mut() {
                if *port == old
                    && let Some(mut child) = child.take()
                {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
        self.wait_until("the sentinels promote the replica", || {
            let now = self.master_port();
            now != 0 && now != old
        });
        let new = self.master_port();
        let child = self.server(old, Some(new));
        let mut servers = self.servers.lock().unwrap();
        servers.retain(|(port, _)| *port != old);
        servers.push((old, Some(child)));
        drop(servers);
        self.wait_until("the old master is back as a replica in sync", || {
            info(old, "replication").contains("master_link_status:up")
        });
        new
    }

    /// Starts `redis-server` on `port`, replicating `replica_of` if given.
    fn server(&self, port: u16, replica_of: Option<u16>) -> Child {
        let dir = self.dir.path().join(port.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            // A replica (the old master back) syncs at once, not after Redis' default 5 s.
            .args(["--repl-diskless-sync-delay", "0"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(master) = replica_of {
            command.args(["--replicaof", "127.0.0.1", &master.to_string()]);
        }
        let child = command.spawn().unwrap();
        self.wait_until("redis-server answers", || {
            redis_cli(port, &["PING"]).trim() == "PONG"
        });
        child
    }

    fn wait_until(&self, what: &str, ready: impl Fn() -> bool) {
        let started = Instant::now();
        while !ready() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "Redis Sentinel set in {}: not ready within 30 s: {what}",
                self.dir.path().display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for RedisSentinelSet {
    fn drop(&mut self) {
        let servers = self
            .servers
            .get_mut()
            .unwrap_or_else(|err| err.into_inner());
        let children = servers
            .iter_mut()
            .filter_map(|(_, child)| child.as_mut())
            .chain(self.sentinels.iter_mut().map(|(_, child)| child));
        for child in children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What `redis-cli` prints for `args` on the server at `port`; empty when it fails.
fn redis_cli(port: u16, args: &[&str]) -> String {
    Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default()
}

/// `INFO section` of the server at `port`.
fn info(port: u16, section: &str) -> String {
    redis_cli(port, &["INFO", section])
}

/// `SENTINEL MASTER` of the sentinel at `port`: field and value on alternate lines.
fn sentinel_master(port: u16) -> String {
    redis_cli(port, &["SENTINEL", "MASTER", MASTER_NAME])
}

/// The value after the line `name` in `reply` (field and value on alternate lines).
fn field<'a>(reply: &'a str, name: &str) -> Option<&'a str> {
    let mut lines = reply.lines();
    while let Some(line) = lines.next() {
        if line.trim() == name {
            return lines.next().map(str::trim);
        }
    }
    None
}
