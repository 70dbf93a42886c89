//! A PostgreSQL primary and a streaming standby of a test's own, for the standby and failover
//! tests: two clusters in a temporary directory on spare loopback ports, made with the
//! server's own programs (`initdb`, `pg_basebackup`, `pg_ctl` from `pg_config --bindir`), run
//! as the `postgres` user when the test runs as root (the server refuses root).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Duration;

use crate::services::skip_or_fail;

/// A primary streaming to a standby, each a cluster of its own, both stopped (as a crash
/// would) and removed when dropped.
pub struct PostgresPair {
    bin: PathBuf,
    dir: tempfile::TempDir,
    primary: u16,
    standby: u16,
}

impl PostgresPair {
    /// Starts both, the primary committing synchronously to the standby (a commit waits until
    /// the standby has it on disk) when `synchronous`; `None` (after [`skip_or_fail`]) without
    /// the server's programs.
    ///
    /// # Panics
    /// When a cluster cannot be made or started.
    pub fn start(synchronous: bool) -> Option<PostgresPair> {
        let bin = Command::new("pg_config")
            .arg("--bindir")
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
            .filter(|bin| bin.join("initdb").exists() && bin.join("pg_basebackup").exists());
        let Some(bin) = bin else {
            skip_or_fail("PostgreSQL's programs (pg_config --bindir with initdb, pg_basebackup)");
            return None;
        };
        let pair = PostgresPair {
            bin,
            dir: tempfile::tempdir().unwrap(),
            primary: spare_port(),
            standby: spare_port(),
        };
        if running_as_root() {
            must(Command::new("chown").arg("postgres").arg(pair.dir.path()));
        }
        let primary = pair.data("primary");
        pair.run(
            "initdb",
            &["-D", &primary, "-U", "postgres", "--auth=trust", "-N"],
        );
        // fsync off: a crash here is a killed process, whose writes the kernel still has.
        pair.configure(
            "primary",
            &format!(
                "port = {}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
                 wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\nfsync = off\n",
                pair.primary,
                pair.dir.path().display()
            ),
        );
        pair.pg_ctl("primary", &["start", "-w"]);
        let port = pair.primary.to_string();
        let standby = pair.data("standby");
        pair.run(
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
                "-D",
                &standby,
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
            ],
        );
        pair.configure("standby", &format!("port = {}\n", pair.standby));
        pair.pg_ctl("standby", &["start", "-w"]);
        if synchronous {
            // Only now: before the standby streams, every commit would wait for it.
            pair.configure("primary", "synchronous_standby_names = '*'\n");
            pair.pg_ctl("primary", &["reload"]);
        }
        Some(pair)
    }

    /// The primary's URL.
    pub fn primary_url(&self) -> String {
        url(self.primary)
    }

    /// The standby's URL.
    pub fn standby_url(&self) -> String {
        url(self.standby)
    }

    /// The primary's `host:port`.
    pub fn primary_address(&self) -> String {
        format!("127.0.0.1:{}", self.primary)
    }

    /// The standby's `host:port`.
    pub fn standby_address(&self) -> String {
        format!("127.0.0.1:{}", self.standby)
    }

    /// Kills the primary as a crash would (`pg_ctl stop -m immediate`).
    pub fn kill_primary(&self) {
        self.kill("primary");
    }

    /// Promotes the standby and waits until it takes writes.
    ///
    /// # Panics
    /// When it cannot be promoted.
    pub fn promote_standby(&self) {
        self.pg_ctl("standby", &["promote", "-w"]);
    }

    /// Waits until the standby has replayed everything the primary has written.
    ///
    /// # Panics
    /// When it has not within 10 s.
    pub async fn caught_up(&self) {
        use sqlx::Connection;
        let mut primary = sqlx::PgConnection::connect(&self.primary_url())
            .await
            .unwrap();
        for _ in 0..200 {
            let replayed: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_replication WHERE replay_lsn >= pg_current_wal_lsn()",
            )
            .fetch_one(&mut primary)
            .await
            .unwrap();
            if replayed == 1 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the standby did not catch up within 10 s");
    }

    fn data(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// Appends `settings` to the cluster's postgresql.conf (the last setting of a name wins).
    fn configure(&self, name: &str, settings: &str) {
        let conf = Path::new(&self.data(name)).join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).unwrap();
        text.push_str(settings);
        std::fs::write(&conf, text).unwrap();
    }

    fn pg_ctl(&self, name: &str, args: &[&str]) {
        let (data, log) = (self.data(name), self.data(&format!("{name}.log")));
        let mut all = vec!["-D", &data, "-l", &log];
        all.extend(args);
        self.run("pg_ctl", &all);
    }

    fn kill(&self, name: &str) {
        let data = self.data(name);
        let _ = server_program(&self.bin, "pg_ctl")
            .args(["-D", &data, "stop", "-m", "immediate"])
            .output();
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        must(server_program(&self.bin, program).args(args))
    }
}

impl Drop for PostgresPair {
    fn drop(&mut self) {
        self.kill("standby");
        self.kill("primary");
    }
}

fn url(port: u16) -> String {
    format!("postgres://postgres@127.0.0.1:{port}/postgres?sslmode=disable")
}

/// `program` from `bin`, as the postgres user when this runs as root.
fn server_program(bin: &Path, program: &str) -> Command {
    let program = bin.join(program);
    if running_as_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn running_as_root() -> bool {
    static ROOT: OnceLock<bool> = OnceLock::new();
    *ROOT.get_or_init(|| {
        Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
    })
}

/// Runs `command`, failing the test with its output unless it succeeds.
fn must(command: &mut Command) -> Output {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A loopback port nothing listens on now.
pub(crate) fn spare_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A PgBouncer of a test's own in transaction mode (Debian's `/usr/sbin/pgbouncer`, run as the
/// postgres user when the test runs as root), in front of one server, which
/// [`PgBouncer::repoint`] changes as a team repoints its pooler after a failover. Stopped when
/// dropped.
pub struct PgBouncer {
    dir: tempfile::TempDir,
    port: u16,
}

/// Where Debian installs PgBouncer.
const PGBOUNCER: &str = "/usr/sbin/pgbouncer";

impl PgBouncer {
    /// Starts one in front of the server at `target` (`host:port`); `None` (after
    /// [`skip_or_fail`]) without PgBouncer.
    ///
    /// # Panics
    /// When it does not start.
    pub fn start(target: &str) -> Option<PgBouncer> {
        if !Path::new(PGBOUNCER).exists() {
            skip_or_fail("PgBouncer (Debian's pgbouncer package) at /usr/sbin/pgbouncer");
            return None;
        }
        let bouncer = PgBouncer {
            dir: tempfile::tempdir().unwrap(),
            port: spare_port(),
        };
        bouncer.write_config(target);
        std::fs::write(bouncer.dir.path().join("users.txt"), "\"postgres\" \"\"\n").unwrap();
        if running_as_root() {
            must(
                Command::new("chown")
                    .args(["-R", "postgres"])
                    .arg(bouncer.dir.path()),
            );
        }
        let ini = bouncer.dir.path().join("pgbouncer.ini");
        let mut command = Command::new(PGBOUNCER);
        command.arg("-d");
        if running_as_root() {
            command.args(["-u", "postgres"]);
        }
        must(command.arg(&ini));
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", bouncer.port)).is_ok() {
                return Some(bouncer);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("PgBouncer on port {} did not start", bouncer.port);
    }

    /// Its URL for the database `postgres`.
    pub fn url(&self) -> String {
        url(self.port)
    }

    /// Points it at the server at `target` (`host:port`): the configuration is rewritten and
    /// reloaded (SIGHUP); new server connections go there.
    pub fn repoint(&self, target: &str) {
        self.write_config(target);
        let pid = std::fs::read_to_string(self.dir.path().join("pgbouncer.pid")).unwrap();
        must(Command::new("kill").args(["-HUP", pid.trim()]));
    }

    fn write_config(&self, target: &str) {
        let (host, port) = target.rsplit_once(':').unwrap();
        let dir = self.dir.path().display();
        std::fs::write(
            self.dir.path().join("pgbouncer.ini"),
            format!(
                "[databases]\n* = host={host} port={port}\n\n[pgbouncer]\n\
                 listen_addr = 127.0.0.1\nlisten_port = {}\nunix_socket_dir =\n\
                 auth_type = trust\nauth_file = {dir}/users.txt\npool_mode = transaction\n\
                 max_client_conn = 100\ndefault_pool_size = 10\n\
                 server_connect_timeout = 2\nserver_login_retry = 0\n\
                 pidfile = {dir}/pgbouncer.pid\nlogfile = {dir}/pgbouncer.log\n",
                self.port
            ),
        )
        .unwrap();
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.dir.path().join("pgbouncer.pid")) {
            let _ = Command::new("kill").arg(pid.trim()).output();
        }
    }
}
