//! What the tests of `memory serve` share: the server as a process, and HTTP on the wire.
// Each test binary uses part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use memory_conformance::services::{SchemaGuard, Service, unique_name};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `memory` on the markdown default at `root`, whatever the environment says.
pub fn memory(root: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("memory").unwrap();
    cmd.env("MEMORY_ROOT", root).env_remove("MEMORY_CONFIG");
    cmd
}

/// Every file under `dir` with its bytes, to show that a refused command wrote nothing.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// Runs `cmd` and returns (exit code, stdout, stderr).
pub fn run(cmd: &mut assert_cmd::Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

pub fn memory_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_memory"))
}

/// A `memory serve` process on a free loopback port, killed when dropped.
pub struct Server {
    pub child: Child,
    pub address: String,
}

impl Server {
    pub fn start(config: &Path) -> Server {
        Server::start_with(config, &[])
    }

    pub fn start_with(config: &Path, args: &[&str]) -> Server {
        Server::spawn(config, args, Stdio::null())
    }

    /// [`Server::start_with`], its stderr (the access log, with `--access-log`) in `log`.
    pub fn start_logging(config: &Path, args: &[&str], log: &Path) -> Server {
        Server::spawn(config, args, std::fs::File::create(log).unwrap().into())
    }

    fn spawn(config: &Path, args: &[&str], stderr: Stdio) -> Server {
        let mut child = Command::new(memory_bin())
            .arg("--config")
            .arg(config)
            .args(["serve", "--port", "0"])
            .args(args)
            .env_remove(memory_web::TOKEN_ENV)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let address = first
            .trim()
            .strip_prefix("Memory page: http://")
            .and_then(|rest| rest.strip_suffix('/'))
            .unwrap_or_else(|| panic!("unexpected first line: {first:?}"))
            .to_owned();
        Server { child, address }
    }

    /// The page's address: `http://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.address)
    }

    /// One HTTP/1.1 request from a plain blocking socket: status line and body.
    pub fn request(&self, method: &str, path: &str, body: Option<&str>) -> (String, String) {
        let mut stream = std::net::TcpStream::connect(&self.address).unwrap();
        let body = body.unwrap_or("");
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.address,
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        (head.lines().next().unwrap().to_owned(), body.to_owned())
    }

    /// Sends SIGTERM, as a service manager stops it.
    pub fn terminate(&self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One answer, read whole.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    /// The problem document's `detail`, for messages.
    pub fn detail(&self) -> String {
        self.json()["detail"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// A request as bytes on the wire, so tests can send what no client library would.
pub struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

pub fn request(method: &str, target: &str) -> Request {
    Request {
        method: method.to_owned(),
        target: target.to_owned(),
        headers: Vec::new(),
        body: Vec::new(),
    }
}

impl Request {
    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn json(self, body: &Value) -> Request {
        self.raw("application/json", body.to_string().into_bytes())
    }

    pub fn raw(mut self, content_type: &str, body: Vec<u8>) -> Request {
        self.body = body;
        self.header("content-type", content_type)
    }

    pub fn key(self, key: Option<&str>) -> Request {
        match key {
            Some(key) => self.header("authorization", &format!("Bearer {key}")),
            None => self,
        }
    }

    fn bytes(&self, address: &str) -> Vec<u8> {
        let mut head = format!(
            "{} {} HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\ncontent-length: {}\r\n",
            self.method,
            self.target,
            self.body.len()
        );
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }

    /// Sends it on a connection of its own and reads the whole answer.
    pub async fn send(&self, address: &str) -> std::io::Result<Answer> {
        send_bytes(address, &self.bytes(address)).await
    }

    /// Sends it, reads at most `keep` bytes of the answer, and drops the connection: a client
    /// that went away mid-response.
    pub async fn send_and_drop(&self, address: &str, keep: usize) -> std::io::Result<()> {
        let mut stream = TcpStream::connect(address).await?;
        stream.write_all(&self.bytes(address)).await?;
        let mut buffer = vec![0; keep];
        if keep > 0 {
            let _ = stream.read(&mut buffer).await?;
        }
        Ok(())
    }
}

/// Sends `bytes` on a connection of its own, as they are, and reads the whole answer.
pub async fn send_bytes(address: &str, bytes: &[u8]) -> std::io::Result<Answer> {
    let mut stream = TcpStream::connect(address).await?;
    stream.write_all(bytes).await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    parse(&raw).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("not a whole response: {}", String::from_utf8_lossy(&raw)),
        )
    })
}

/// An HTTP/1.1 response with a `content-length`, as the server sends them.
fn parse(raw: &[u8]) -> Option<Answer> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.lines();
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: BTreeMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let body = raw[end + 4..].to_vec();
    let length: usize = headers.get("content-length")?.parse().ok()?;
    (body.len() == length).then_some(Answer {
        status,
        headers,
        body,
    })
}

pub fn write_config(dir: &Path, text: &str) -> PathBuf {
    let config = dir.join("memory.toml");
    std::fs::write(&config, text).unwrap();
    config
}

/// A `memory.toml` whose one provider is a namespace of its own (a schema, a key prefix) on
/// the shared `service`, removed when dropped.
pub struct Shared {
    _dir: tempfile::TempDir,
    pub config: PathBuf,
    _cleanup: Box<dyn std::any::Any>,
}

/// [`Shared`] on `service`, or `None` (the test skips, loudly) when there is no server.
pub fn shared(service: Service) -> Option<Shared> {
    let url = service.url()?;
    let dir = tempfile::tempdir().unwrap();
    let name = unique_name("service");
    let (provider, cleanup): (String, Box<dyn std::any::Any>) = match service {
        Service::Postgres => (
            format!("kind = \"postgres\"\nurl = \"{url}\"\nschema = \"{name}\""),
            Box::new(SchemaGuard {
                url: url.clone(),
                schema: name.clone(),
            }),
        ),
        // Through PgBouncer in transaction mode; the schema is dropped on the server itself.
        Service::PgBouncer => (
            format!(
                "kind = \"postgres\"\nurl = \"{url}\"\nschema = \"{name}\"\npool_mode = \"transaction\""
            ),
            Box::new(SchemaGuard {
                url: Service::Postgres.url()?,
                schema: name.clone(),
            }),
        ),
        Service::Redis => (
            format!("kind = \"redis\"\nurl = \"{url}\"\nprefix = \"{name}\""),
            Box::new(RedisCleanup {
                nodes: vec![url.clone()],
                prefix: name.clone(),
            }),
        ),
        // A Redis Cluster of three masters: the URL holds its seed nodes, comma-separated.
        Service::RedisCluster => {
            let nodes: Vec<String> = url.split(',').map(str::to_owned).collect();
            (
                format!("kind = \"redis\"\ncluster_nodes = {nodes:?}\nprefix = \"{name}\""),
                Box::new(RedisCleanup {
                    nodes,
                    prefix: name.clone(),
                }),
            )
        }
    };
    let config = write_config(
        dir.path(),
        &format!("[providers.shared]\n{provider}\nhistory = {{ keep = 1000 }}\n"),
    );
    Some(Shared {
        _dir: dir,
        config,
        _cleanup: cleanup,
    })
}

/// Removes a test's Redis keys when dropped.
pub struct RedisCleanup {
    nodes: Vec<String>,
    prefix: String,
}

impl Drop for RedisCleanup {
    fn drop(&mut self) {
        memory_conformance::services::delete_redis_keys(&self.nodes, &self.prefix);
    }
}
