#![doc = include_str!("../README.md")]

mod config;
mod connection;
#[macro_use]
mod scripts;
mod hold;
mod read;
mod sentinel;

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use memory_core::raw::{
    CasWrite, CompareAndSwap, Connect, Fetched, Hold, RevisionTip, Settings, StoredHistory,
    StoredRevision, Versioned, VersionedStore, sha256_hex,
};
use memory_core::{
    Document, DocumentId, Identity, IdentityMap, MemoryError, Purged, Retention, Revision, Surface,
    UserId, Version,
};
use redis::aio::ConnectionManagerConfig;
use redis::{FromRedisValue, RedisError, Script};

use scripts::{
    HISTORY_SCRIPT, LINK_SCRIPT, PURGE_SCRIPT, READ_SCRIPT, UNLINK_SCRIPT, WRITE_SCRIPT,
};

pub use config::{DEFAULT_MAX_ATTEMPTS, MAX_DEADLINE_MS, RedisConfig, SentinelConfig};
pub use connection::RedisConnection;
pub use sentinel::SentinelConnection;

/// The largest version the write script counts exactly: Lua numbers are doubles.
const MAX_VERSION: u64 = (1 << 53) - 1;

/// The last millisecond of the year 9999: a later `updated_at_ms` is no clock's reading.
const LAST_MILLISECOND: u64 = 253_402_300_799_999;

/// The memory contract on Redis: [`RedisStore`]'s storage calls under the generic provider.
/// See the crate docs for the key layout.
pub type RedisProvider = Versioned<RedisStore>;

/// What touches Redis: scripts and transactions on one prefix's keys (see the crate docs).
pub struct RedisStore {
    connection: RedisConnection,
    prefix: String,
    /// `redis://host:port/db`, `redis://host:port,... (cluster)` or `redis://host:port,...
    /// (sentinel, master NAME)`: where documents are, without credentials.
    server: String,
    read_script: Script,
    write_script: Script,
    history_script: Script,
    purge_script: Script,
    link_script: Script,
    unlink_script: Script,
    /// The writers that hold documents after a lost race, and their waits: see `hold.rs`.
    holds: hold::Holds,
    /// How many replicas a write waits for before it is acknowledged; `None`: none.
    wait: Option<WaitForReplicas>,
}

/// `wait_replicas` and `wait_timeout_ms` of the settings.
#[derive(Debug, Clone, Copy)]
struct WaitForReplicas {
    replicas: u32,
    timeout: Duration,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("server", &self.server)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

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
                let waiters = hold::Waiters::Server(client.clone());
                let connecting = async move {
                    let manager = client.get_connection_manager_with_config(manager);
                    Ok(manager.await?.into())
                };
                (Box::pin(connecting), Some(waiters))
            } else {
                let client = config.cluster_client(config.response_timeout())?;
                let waiters = config.cluster_client(hold::Waiters::response_timeout())?;
                let connecting = async move { Ok(client.get_async_connection().await?.into()) };
                (
                    Box::pin(connecting),
                    Some(hold::Waiters::Cluster(Box::new(waiters))),
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
            RedisConnection::Sentinel(sentinel) => Some(hold::Waiters::Sentinel(sentinel.clone())),
            _ => waiters,
        };
        let mut store = Self::from_connection(connection, &config.prefix, server)?;
        // Waiters for a held document block on connections of their own.
        if let Some(waiters) = waiters {
            store.holds = hold::Holds::new(waiters, config.connect_timeout());
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

impl RedisStore {
    /// A store on an existing connection (a [`redis::aio::ConnectionManager`], a
    /// [`redis::aio::MultiplexedConnection`] or a [`redis::cluster_async::ClusterConnection`]),
    /// with its keys under `{prefix}:`. `server` names the server in locations and messages:
    /// give it without credentials. Run it as a provider with [`Versioned::new`]. Its writers
    /// race rather than hold (holding needs connections of its own to wait on, which
    /// [`Connect::connect`] makes).
    ///
    /// # Errors
    /// [`MemoryError::Config`] when `prefix` is not 1 to 64 letters, digits and `_ - . :`.
    pub fn from_connection(
        connection: impl Into<RedisConnection>,
        prefix: &str,
        server: impl Into<String>,
    ) -> Result<Self, MemoryError> {
        validate_prefix(prefix)?;
        Ok(RedisStore {
            connection: connection.into(),
            prefix: prefix.to_owned(),
            server: server.into(),
            read_script: Script::new(READ_SCRIPT),
            write_script: Script::new(WRITE_SCRIPT),
            history_script: Script::new(HISTORY_SCRIPT),
            purge_script: Script::new(PURGE_SCRIPT),
            link_script: Script::new(LINK_SCRIPT),
            unlink_script: Script::new(UNLINK_SCRIPT),
            holds: hold::Holds::default(),
            wait: None,
        })
    }

    /// The key of `document`: `{prefix}:` and its path in the markdown layout.
    pub fn key(&self, document: &DocumentId) -> String {
        format!("{{{}}}:{}", self.prefix, document.relative_path())
    }

    /// The key of `document`'s history: `{prefix}:history:` and its path in the markdown
    /// layout, a stream with one entry per revision, oldest first.
    pub fn history_key(&self, document: &DocumentId) -> String {
        format!("{{{}}}:history:{}", self.prefix, document.relative_path())
    }

    /// The key of the set of every document written, as paths in the markdown layout.
    pub fn index_key(&self) -> String {
        format!("{{{}}}:documents", self.prefix)
    }

    /// The key of the identity map: a hash from `platform:platform-user-id` to the user id.
    pub fn identity_map_key(&self) -> String {
        format!("{{{}}}:identity-map", self.prefix)
    }

    /// The connection, to share with the rest of the application.
    pub fn connection(&self) -> &RedisConnection {
        &self.connection
    }

    fn key_location(&self, key: &str) -> String {
        format!("{} {key}", self.server)
    }

    fn error(&self, err: RedisError) -> MemoryError {
        MemoryError::unavailable(&self.server, err)
    }

    /// An error on the index set: a key of another type is `Corrupt`.
    fn index_error(&self, err: RedisError) -> MemoryError {
        match err.code() {
            Some("WRONGTYPE") => MemoryError::Corrupt {
                location: self.key_location(&self.index_key()),
                reason: "it is not a set".to_owned(),
            },
            _ => self.error(err),
        }
    }

    /// An error on the identity map: a key of another type (`WRONGTYPE`) or content the link
    /// or unlink script refused (`CORRUPT`) is `Corrupt`.
    fn identity_error(&self, err: RedisError) -> MemoryError {
        let key = self.identity_map_key();
        match err.code() {
            Some("WRONGTYPE") => MemoryError::Corrupt {
                location: self.key_location(&key),
                reason: "it is not a hash".to_owned(),
            },
            Some("CORRUPT") => MemoryError::Corrupt {
                location: self.key_location(&key),
                reason: err.detail().unwrap_or_default().to_owned(),
            },
            _ => self.error(err),
        }
    }

    /// A user id as stored in the map: anything but a valid id was not written by us.
    fn stored_user(&self, field: &str, user: Vec<u8>) -> Result<UserId, MemoryError> {
        let corrupt = |reason: String| MemoryError::Corrupt {
            location: self.key_location(&self.identity_map_key()),
            reason: format!("field {field:?}: {reason}"),
        };
        let user = String::from_utf8(user)
            .map_err(|err| corrupt(format!("its user id is not UTF-8 ({})", err.utf8_error())))?;
        UserId::new(user).map_err(|err| corrupt(err.to_string()))
    }

    /// Sends a read of the identity map, once more if the connection had dropped since the
    /// last call (a read is safe to repeat).
    async fn read_identity_map<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
    ) -> Result<T, MemoryError> {
        self.send_repeatable(|mut connection| async move { cmd.query_async(&mut connection).await })
            .await
            .map_err(|err| self.identity_error(err))
    }

    /// `send` on the provider's connection, and once more if the connection had dropped since
    /// the last call (a server restart, an idle kill): the manager fails the first command on
    /// a dropped connection while it reconnects. Only for what is safe to send twice (a read,
    /// a hold under the same token).
    pub(crate) async fn send_repeatable<T, F>(
        &self,
        send: impl Fn(RedisConnection) -> F,
    ) -> redis::RedisResult<T>
    where
        F: std::future::Future<Output = redis::RedisResult<T>>,
    {
        let reply = send(self.connection.clone()).await;
        if reply.as_ref().is_err_and(RedisError::is_connection_dropped) {
            return send(self.connection.clone()).await;
        }
        reply
    }
}

impl RedisStore {
    /// [`CompareAndSwap::fetch`], reading each document's newest revision only if `tips`: a
    /// read or prefetch needs none, and so neither pays for it nor fails on a bad history.
    /// One script run: one round trip, one atomic snapshot.
    async fn fetch_with(
        &self,
        ids: &[DocumentId],
        receipts: bool,
        tips: bool,
    ) -> Result<Vec<Fetched>, MemoryError> {
        let keys: Vec<String> = ids.iter().map(|id| self.key(id)).collect();
        let history_keys: Vec<String> = ids.iter().map(|id| self.history_key(id)).collect();
        let mut invocation = self.read_script.prepare_invoke();
        invocation
            .key(&keys)
            .key(&history_keys)
            .arg(if receipts { "1" } else { "0" })
            .arg(if tips { "1" } else { "0" });
        let replies = self
            .send_repeatable(|mut connection| {
                let invocation = &invocation;
                async move { invocation.invoke_async(&mut connection).await }
            })
            .await;
        // As bytes: the fields are whatever the key holds, and a field that is not UTF-8 is
        // the key's fault (Corrupt, naming it), not the server's.
        let replies: Vec<Vec<Vec<u8>>> = replies.map_err(|err| self.error(err))?;
        self.parse_documents(ids, &keys, &history_keys, replies)
    }

    /// The documents `ids` (at `keys`, with histories at `history_keys`) from what
    /// `read_document` answered for each.
    fn parse_documents(
        &self,
        ids: &[DocumentId],
        keys: &[String],
        history_keys: &[String],
        replies: Vec<Vec<Vec<u8>>>,
    ) -> Result<Vec<Fetched>, MemoryError> {
        if replies.len() != keys.len() {
            return Err(MemoryError::Unavailable {
                what: self.server.clone(),
                message: format!(
                    "the read script answered {} documents for {} keys",
                    replies.len(),
                    keys.len()
                ),
                source: None,
            });
        }
        ids.iter()
            .zip(keys.iter().zip(history_keys))
            .zip(replies)
            .map(|((id, (key, history_key)), reply)| self.fetched(id, key, history_key, &reply))
            .collect()
    }

    /// Document `id` at `key`, with history at `history_key`, from what `read_document`
    /// answered for it.
    fn fetched(
        &self,
        id: &DocumentId,
        key: &str,
        history_key: &str,
        reply: &[Vec<u8>],
    ) -> Result<Fetched, MemoryError> {
        let (state, fields, tip) = match reply {
            [state, fields @ .., number, version, sha256, bytes]
                if state == b"ok" || state == b"none" =>
            {
                (
                    state,
                    fields,
                    self.tip(key, [number, version, sha256, bytes])?,
                )
            }
            [state, reason] if state == b"history" => {
                return Err(self.corrupt(history_key, String::from_utf8_lossy(reason)));
            }
            [reason] => return Err(self.corrupt(key, String::from_utf8_lossy(reason))),
            _ => return Err(self.corrupt(key, "the read script answered in an unknown shape")),
        };
        let (document, version, receipts) = self.document(id, key, state, fields)?;
        Ok(Fetched {
            document,
            version,
            receipts,
            tip,
        })
    }

    /// The document at `key` from the fields `read_document` answered after its `state` (`ok`
    /// or `none`): the document, its version counter and its receipts as stored.
    fn document(
        &self,
        id: &DocumentId,
        key: &str,
        state: &[u8],
        fields: &[Vec<u8>],
    ) -> Result<(Document, u64, Option<String>), MemoryError> {
        let corrupt = |reason: &str| self.corrupt(key, reason);
        let utf8 = |field: &str, bytes: &[u8]| {
            String::from_utf8(bytes.to_vec())
                .map_err(|err| corrupt(&format!("its {field} is not UTF-8 ({})", err.utf8_error())))
        };
        let (text, version, modified, receipts) = match (state, fields) {
            (b"none", []) => (String::new(), 0, None, None),
            (b"ok", [text, version, millis, receipts]) => {
                let version = std::str::from_utf8(version)
                    .ok()
                    .and_then(|version| version.parse::<u64>().ok())
                    .ok_or_else(|| corrupt("its version is not a plain integer"))?;
                if version > MAX_VERSION {
                    return Err(corrupt(&format!(
                        "its version is past {MAX_VERSION}, more than the write script counts \
                         exactly"
                    )));
                }
                let modified = modified_at(millis).map_err(&corrupt)?;
                let receipts =
                    Some(utf8("receipts field", receipts)?).filter(|receipts| !receipts.is_empty());
                (utf8("content", text)?, version, modified, receipts)
            }
            _ => return Err(corrupt("the script answered in an unknown shape")),
        };
        let document = Document {
            id: id.clone(),
            text,
            version: Version::new(version.to_string()),
            location: self.key_location(key),
            modified,
        };
        Ok((document, version, receipts))
    }

    /// The tip `read_document` answered for the document at `key`: all empty when it has none.
    /// (The script checked the fields; only a size past this machine's fails here.)
    fn tip(&self, key: &str, fields: [&Vec<u8>; 4]) -> Result<RevisionTip, MemoryError> {
        let [number, version, sha256, bytes] = fields;
        if number.is_empty() {
            return Ok(RevisionTip::empty(Version::new("0")));
        }
        let corrupt = || self.corrupt(key, "its newest revision is not a revision of ours");
        let text = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).map_err(|_| corrupt());
        let count = |bytes: &[u8]| -> Result<u64, MemoryError> {
            std::str::from_utf8(bytes)
                .ok()
                .and_then(|count| count.parse().ok())
                .ok_or_else(corrupt)
        };
        Ok(RevisionTip {
            number: count(number)?,
            version_after: Version::new(text(version)?),
            sha256_after: text(sha256)?,
            bytes_after: usize::try_from(count(bytes)?).map_err(|_| corrupt())?,
        })
    }

    /// `Corrupt` for the bytes at `key`.
    fn corrupt(&self, key: &str, reason: impl Into<String>) -> MemoryError {
        MemoryError::Corrupt {
            location: self.key_location(key),
            reason: reason.into(),
        }
    }

    /// An error a document script raised: `CORRUPT <key> <reason>` is `Corrupt` naming the
    /// key; anything else is the server's.
    fn script_error(&self, err: RedisError) -> MemoryError {
        match err.code() {
            Some("CORRUPT") => {
                let detail = err.detail().unwrap_or_default();
                let (key, reason) = detail.split_once(' ').unwrap_or((detail, "it is not ours"));
                self.corrupt(key, reason)
            }
            _ => self.error(err),
        }
    }

    /// The stream entry `id` with `fields` of `document`'s history at `key` as a revision, its
    /// time the entry id's milliseconds (the server's clock). Anything that is not an entry
    /// the write or purge script wrote is `Corrupt` naming the key.
    fn revision(
        &self,
        document: &DocumentId,
        key: &str,
        id: &[u8],
        fields: &[&[u8]],
    ) -> Result<Revision, MemoryError> {
        let shown_id = String::from_utf8_lossy(id);
        let corrupt = |reason: String| self.corrupt(key, format!("entry {shown_id}: {reason}"));
        let millis = std::str::from_utf8(id)
            .ok()
            .and_then(|id| id.split_once('-'))
            .and_then(|(millis, _)| millis.parse::<u64>().ok())
            .filter(|millis| *millis <= LAST_MILLISECOND)
            .ok_or_else(|| corrupt("its id is not a time in milliseconds".to_owned()))?;
        let mut values: HashMap<&str, String> = HashMap::with_capacity(fields.len() / 2);
        if !fields.len().is_multiple_of(2) {
            return Err(corrupt("its fields do not come in pairs".to_owned()));
        }
        for pair in fields.chunks_exact(2) {
            let name = std::str::from_utf8(pair[0])
                .ok()
                .filter(|name| ENTRY_FIELDS.contains(name))
                .ok_or_else(|| {
                    corrupt(format!(
                        "field {:?} is not one of a revision's",
                        String::from_utf8_lossy(pair[0])
                    ))
                })?;
            let value = String::from_utf8(pair[1].to_vec()).map_err(|err| {
                corrupt(format!("its {name} is not UTF-8 ({})", err.utf8_error()))
            })?;
            if values.insert(name, value).is_some() {
                return Err(corrupt(format!("it has two {name} fields")));
            }
        }
        let mut take = |name: &str| values.remove(name);
        let mut required =
            |name: &str| take(name).ok_or_else(|| corrupt(format!("it has no {name} field")));
        // Counts as the write script writes them: up to 15 digits, exact in Lua's doubles.
        let count = |name: &str, value: String| {
            value
                .parse::<i64>()
                .ok()
                .filter(|count| value.len() <= 15 && *count >= 0)
                .ok_or_else(|| corrupt(format!("its {name} is not a count")))
        };
        let number = count("number", required("number")?)?;
        let version_before = required("version_before")?;
        let version_after = required("version_after")?;
        let sha256_before = required("sha256_before")?;
        let sha256_after = required("sha256_after")?;
        let bytes_before = count("bytes_before", required("bytes_before")?)?;
        let bytes_after = count("bytes_after", required("bytes_after")?)?;
        let surface = required("surface")?;
        // An unrecorded change is dated by the document's `updated_at_ms`, kept in `time`; every
        // other revision by its entry id.
        let millis = match take("time") {
            None => millis,
            Some(time) => time
                .parse::<u64>()
                .ok()
                .filter(|millis| *millis <= LAST_MILLISECOND)
                .ok_or_else(|| corrupt("its time is not a time in milliseconds".to_owned()))?,
        };
        let stored = StoredRevision {
            number,
            version_before,
            version_after,
            sha256_before,
            sha256_after,
            bytes_before,
            bytes_after,
            time: UNIX_EPOCH + Duration::from_millis(millis),
            surface,
            personality: take("personality"),
            user: take("user"),
            idempotency_key: take("key"),
            session: take("session"),
            updates: take("updates"),
            text: take("text"),
        };
        stored.check(document, &self.key_location(key))
    }

    /// A revision as the write script stores it: its fields but the text (sent apart, so the
    /// common case, the document's new content, is not sent twice) and the time (the entry
    /// id, stamped by the server).
    fn entry_fields(revision: &Revision) -> Result<Vec<(&'static str, String)>, MemoryError> {
        let mut fields = vec![
            ("number", revision.number.to_string()),
            (
                "version_before",
                revision.version_before.as_str().to_owned(),
            ),
            ("version_after", revision.version_after.as_str().to_owned()),
            ("sha256_before", revision.sha256_before.clone()),
            ("sha256_after", revision.sha256_after.clone()),
            ("bytes_before", revision.bytes_before.to_string()),
            ("bytes_after", revision.bytes_after.to_string()),
            ("surface", revision.surface.to_string()),
        ];
        let optional = [
            (
                "personality",
                revision.personality.as_ref().map(|id| id.as_str()),
            ),
            ("user", revision.user.as_ref().map(|id| id.as_str())),
            (
                "key",
                revision.idempotency_key.as_ref().map(|key| key.as_str()),
            ),
            ("session", revision.session.as_deref()),
        ];
        fields.extend(
            optional
                .into_iter()
                .filter_map(|(name, value)| Some((name, value?.to_owned()))),
        );
        if !revision.updates.is_empty() {
            let updates = serde_json::to_string(&revision.updates).map_err(|err| {
                MemoryError::Unavailable {
                    what: revision.document.to_string(),
                    message: format!("the revision's updates could not be written as JSON: {err}"),
                    source: None,
                }
            })?;
            fields.push(("updates", updates));
        }
        Ok(fields)
    }
}

impl RedisStore {
    /// Stream entries as `XRANGE` gives them (`[[id, [field, value, ...]], ...]`) as revisions
    /// of `document`, in the order given.
    fn revisions(
        &self,
        document: &DocumentId,
        key: &str,
        entries: &redis::Value,
    ) -> Result<Vec<Revision>, MemoryError> {
        let shape = || self.corrupt(key, "its entries came back in an unknown shape");
        array(entries)
            .ok_or_else(shape)?
            .iter()
            .map(|entry| {
                let (id, fields) = match array(entry) {
                    Some([id, fields]) => (bulk(id), array(fields)),
                    _ => (None, None),
                };
                let id = id.ok_or_else(shape)?;
                let fields: Vec<&[u8]> = fields
                    .and_then(|fields| fields.iter().map(bulk).collect())
                    .ok_or_else(shape)?;
                self.revision(document, key, id, &fields)
            })
            .collect()
    }
}

/// The retention's maximum age for a script: milliseconds (Lua counts them exactly up to
/// 2^53), empty for none.
fn max_age_arg(retention: &Retention) -> String {
    retention.max_age.map_or(String::new(), |age| {
        age.as_millis().min(u128::from(MAX_VERSION)).to_string()
    })
}

/// The items of an array reply.
fn array(value: &redis::Value) -> Option<&[redis::Value]> {
    match value {
        redis::Value::Array(items) => Some(items),
        _ => None,
    }
}

/// The bytes of a string reply.
fn bulk(value: &redis::Value) -> Option<&[u8]> {
    match value {
        redis::Value::BulkString(bytes) => Some(bytes),
        _ => None,
    }
}

/// The server's `TIME` (seconds, microseconds) as a time.
fn server_time(seconds: Option<&[u8]>, micros: Option<&[u8]>) -> Option<SystemTime> {
    let parse = |bytes: Option<&[u8]>| std::str::from_utf8(bytes?).ok()?.parse::<u64>().ok();
    let at =
        Duration::from_secs(parse(seconds)?).checked_add(Duration::from_micros(parse(micros)?))?;
    UNIX_EPOCH.checked_add(at)
}

/// The fields a revision entry may have; any other is not ours.
const ENTRY_FIELDS: [&str; 15] = [
    "number",
    "version_before",
    "version_after",
    "sha256_before",
    "sha256_after",
    "bytes_before",
    "bytes_after",
    "surface",
    "personality",
    "user",
    "key",
    "session",
    "updates",
    "text",
    "time",
];

#[async_trait]
impl CompareAndSwap for RedisStore {
    /// One transaction (see `read.rs`): one round trip, one atomic snapshot, with each
    /// document's newest revision (the tip a write's revisions follow on from).
    async fn fetch(&self, ids: &[DocumentId], receipts: bool) -> Result<Vec<Fetched>, MemoryError> {
        self.read_fetched(ids, receipts, true).await
    }

    /// One script run: checks every version (and, where revisions are recorded, that the
    /// history still ends where they follow on), then writes every document with its
    /// revisions and prunes what the retention no longer keeps, atomically. A document another
    /// writer holds ([`CompareAndSwap::hold`]) is a lost race: this never waits for its lock,
    /// so `lock_wait` has nothing to bound.
    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        _lock_wait: Duration,
    ) -> Result<Option<DocumentId>, MemoryError> {
        self.write_documents(writes, None).await
    }

    /// With `wait_replicas` set, a write of its own ([`RedisStore::replicated_key`]) and
    /// `WAIT` for it: replicas apply the master's writes in order, so those that have it have
    /// every write before it, the replayed call's among them. `OutcomeUnknown` when too few
    /// confirm it, as for a write.
    async fn confirm_replay(&self, ids: &[DocumentId]) -> Result<(), MemoryError> {
        let Some(first) = ids.first().filter(|_| self.wait.is_some()) else {
            return Ok(());
        };
        let mut pipeline = redis::pipe();
        pipeline
            .cmd("SET")
            .arg(self.replicated_key())
            .arg(1)
            .arg("PX")
            .arg(1000);
        let replies = self.with_wait(pipeline, None).await?;
        self.check_replicas(first, &replies)
    }

    /// Holds the documents in the store's queue: see `hold.rs`.
    async fn hold(
        &self,
        ids: &[DocumentId],
        receipts: bool,
        lock_wait: Duration,
    ) -> Result<Option<Hold<'_>>, MemoryError> {
        self.hold_documents(ids, receipts, lock_wait).await
    }
}

impl RedisStore {
    /// [`CompareAndSwap::compare_and_swap`], by the holder of `held` (the documents it holds
    /// and its token) or, with `None`, by a writer that holds nothing and so loses to one that
    /// does. A holder lets go of all it holds in the same script run, written or not.
    async fn write_documents(
        &self,
        writes: &[CasWrite<'_>],
        held: Option<(&[DocumentId], &str)>,
    ) -> Result<Option<DocumentId>, MemoryError> {
        let mut invocation = ScriptCall::default();
        for write in writes {
            // The write's own revision (the last) hashed this same text already.
            let sha256 = match write.revisions.last() {
                Some(own) if own.text.as_deref() == Some(write.text) => own.sha256_after.clone(),
                _ => sha256_hex(write.text),
            };
            invocation
                .key(self.key(write.id))
                .arg(write.expected)
                .arg(write.text)
                .arg(sha256)
                .arg(write.id.relative_path())
                .arg(write.receipts.unwrap_or_default());
        }
        invocation.key(self.index_key());
        for write in writes {
            invocation.key(self.history_key(write.id));
        }
        // One retention for the call: the provider's. Redis takes counts up to i64::MAX.
        let retention = writes
            .first()
            .map_or(Retention::OFF, |write| write.retention);
        let keep = retention.keep.min(i64::MAX as usize);
        invocation.arg(keep).arg(max_age_arg(&retention));
        // The revisions of a write follow on from its history's tip, read with the document.
        let recorded = |write: &CasWrite<'_>| retention.is_on() && !write.revisions.is_empty();
        for write in writes {
            invocation.arg(match write.revisions.first() {
                Some(first) if recorded(write) => first.number.saturating_sub(1).to_string(),
                _ => String::new(),
            });
        }
        for write in writes.iter().filter(|write| recorded(write)) {
            let (own_index, own) = match write.revisions {
                [.., own] => (write.revisions.len() - 1, own),
                [] => continue,
            };
            invocation
                .arg(write.revisions.len())
                .arg(own.number)
                .arg(own.version_after.as_str())
                .arg(&own.sha256_after)
                .arg(own.bytes_after);
            for (index, revision) in write.revisions.iter().enumerate() {
                let mut fields = Self::entry_fields(revision)?;
                // The write's own revision comes last, its text the document's new content
                // (not sent twice); any before it record changes nobody recorded, dated as the
                // document's `modified` dated them when read.
                let mode = match revision.text.as_deref() {
                    // Between checkpoints: the updates are the change, no text.
                    None => "c",
                    Some(text) if index == own_index && text == write.text => "=",
                    Some(text) => {
                        fields.push(("text", text.to_owned()));
                        if index < own_index { "d" } else { "-" }
                    }
                };
                invocation.arg(fields.len()).arg(mode);
                for (name, value) in fields {
                    invocation.arg(name).arg(value);
                }
            }
        }
        // The locks: the written documents' first, in the same order, then the rest held.
        let mut locked: Vec<&DocumentId> = writes.iter().map(|write| write.id).collect();
        if let Some((ids, _)) = held {
            locked.extend(ids.iter().filter(|id| !writes.iter().any(|w| w.id == *id)));
        }
        for id in &locked {
            invocation.key(self.lock_key(id));
        }
        for id in &locked {
            invocation.key(self.wake_key(id));
        }
        let mut checks = String::with_capacity(writes.len());
        for write in writes {
            invocation.arg(write.expected_text.unwrap_or_default());
            checks.push(if write.expected_text.is_some() {
                '1'
            } else {
                '0'
            });
        }
        invocation
            .arg(checks)
            .arg(locked.len())
            .arg(held.map_or("", |(_, token)| token))
            .arg(hold::WAKE_TTL.as_millis() as u64);
        let lost_at = self.run_write(&invocation, writes).await?;
        Ok(lost_at
            .checked_sub(1)
            .and_then(|index| writes.get(index))
            .map(|write| write.id.clone()))
    }
}

impl RedisStore {
    /// Runs the write script with `call`, and with `wait_replicas` set, `WAIT` after it in the
    /// same pipeline, so on the same connection: the write is acknowledged only once that many
    /// replicas have it. Returns what the script returns: 0, or the position of the document
    /// that lost its race (nothing was written then).
    async fn run_write(
        &self,
        call: &ScriptCall,
        writes: &[CasWrite<'_>],
    ) -> Result<usize, MemoryError> {
        let mut pipeline = redis::pipe();
        pipeline.add_command(call.command(&self.write_script));
        let replies = self.with_wait(pipeline, Some(&self.write_script)).await?;
        let lost_at = match replies.first() {
            Some(reply) => redis::from_redis_value_ref::<usize>(reply).ok(),
            None => None,
        };
        let Some(lost_at) = lost_at else {
            return Err(self.unknown_shape("the write script", &replies));
        };
        if lost_at == 0
            && let Some(first) = writes.first()
        {
            self.check_replicas(first.id, &replies)?;
        }
        Ok(lost_at)
    }

    /// Sends `pipeline` (one write: `script`'s run, if any), followed by `WAIT` when the
    /// settings ask for replicas; loads the script first where the server does not have it.
    async fn with_wait(
        &self,
        mut pipeline: redis::Pipeline,
        script: Option<&Script>,
    ) -> Result<Vec<redis::Value>, MemoryError> {
        if let Some(wait) = self.wait {
            let timeout = u64::try_from(wait.timeout.as_millis()).unwrap_or(u64::MAX);
            pipeline.cmd("WAIT").arg(wait.replicas).arg(timeout);
        }
        // Each reply as a value, so that a script's own refusal (`CORRUPT`) reaches
        // `script_error` as the server said it.
        pipeline.ignore_errors();
        let mut loaded = false;
        loop {
            let replies: Vec<redis::Value> = pipeline
                .query_async(&mut self.connection.clone())
                .await
                .map_err(|err| self.error(err))?;
            match (replies.first(), script) {
                // First use on this server (or after a restart or SCRIPT FLUSH): load it.
                (Some(redis::Value::ServerError(err)), Some(script))
                    if err.code() == "NOSCRIPT" && !loaded =>
                {
                    loaded = true;
                    script
                        .load_async(&mut self.connection.clone())
                        .await
                        .map_err(|err| self.error(err))?;
                }
                (Some(redis::Value::ServerError(err)), _) => {
                    return Err(self.script_error(err.clone().into()));
                }
                _ => return Ok(replies),
            }
        }
    }

    /// With `wait_replicas` set: `OutcomeUnknown` for `document` unless the `WAIT` that ends
    /// `replies` counted as many replicas. The write is on the master then, and a failover
    /// could lose it: the caller repeats the call with its idempotency key, which waits again.
    fn check_replicas(
        &self,
        document: &DocumentId,
        replies: &[redis::Value],
    ) -> Result<(), MemoryError> {
        let Some(wait) = self.wait else {
            return Ok(());
        };
        let confirmed = replies
            .last()
            .and_then(|reply| redis::from_redis_value_ref::<u64>(reply).ok())
            .unwrap_or(0);
        if confirmed >= u64::from(wait.replicas) {
            return Ok(());
        }
        Err(MemoryError::OutcomeUnknown {
            document: document.clone(),
            message: format!(
                "{} has the write, but {confirmed} of the {} replicas wait_replicas asks for confirmed it within {:?}: a failover now could lose it; repeat the call with the same idempotency key",
                self.server, wait.replicas, wait.timeout
            ),
            source: None,
        })
    }

    /// The key a replayed call writes so that `WAIT` covers what it replays: see
    /// [`CompareAndSwap::confirm_replay`]. A string expiring after a second.
    pub fn replicated_key(&self) -> String {
        format!("{{{}}}:replicated", self.prefix)
    }

    /// `Unavailable`: `what` answered in a shape that is not its own.
    fn unknown_shape(&self, what: &str, replies: &[redis::Value]) -> MemoryError {
        MemoryError::Unavailable {
            what: self.server.clone(),
            message: format!("{what} answered in an unknown shape: {replies:?}"),
            source: None,
        }
    }
}

/// A script's keys and arguments, gathered in any order, sent as one `EVALSHA` (in a pipeline
/// where `WAIT` follows it, which `redis::ScriptInvocation` cannot join).
#[derive(Default)]
struct ScriptCall {
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl ScriptCall {
    fn key(&mut self, key: impl redis::ToRedisArgs) -> &mut Self {
        self.keys.extend(key.to_redis_args());
        self
    }

    fn arg(&mut self, arg: impl redis::ToRedisArgs) -> &mut Self {
        self.args.extend(arg.to_redis_args());
        self
    }

    /// `EVALSHA` of `script` with these keys and arguments.
    fn command(&self, script: &Script) -> redis::Cmd {
        let mut command = redis::cmd("EVALSHA");
        command
            .arg(script.get_hash())
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&self.args);
        command
    }
}

#[async_trait]
impl VersionedStore for RedisStore {
    fn location(&self) -> String {
        format!("{} {{{}}}:", self.server, self.prefix)
    }

    /// One transaction (see `read.rs`), without receipts or tips.
    async fn read(&self, ids: &[DocumentId]) -> Result<Vec<Document>, MemoryError> {
        self.read_documents(ids).await
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        let paths: Vec<Vec<u8>> = redis::cmd("SMEMBERS")
            .arg(self.index_key())
            .query_async(&mut self.connection.clone())
            .await
            .map_err(|err| self.index_error(err))?;
        // Like a path outside the layout, a member that is not UTF-8 names no document.
        Ok(paths
            .iter()
            .filter_map(|path| std::str::from_utf8(path).ok())
            .filter_map(DocumentId::from_relative_path)
            .collect())
    }

    /// One script run reads the document and its newest `limit` revisions in one atomic step,
    /// with the server's clock.
    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<StoredHistory, MemoryError> {
        let key = self.key(document);
        let history_key = self.history_key(document);
        // At most what Redis counts.
        let count = limit.clamp(1, i64::MAX as usize);
        let mut invocation = self.history_script.prepare_invoke();
        invocation.key(&key).key(&history_key).arg(count);
        let reply: redis::Value = self
            .send_repeatable(|mut connection| {
                let invocation = &invocation;
                async move { invocation.invoke_async(&mut connection).await }
            })
            .await
            .map_err(|err| self.error(err))?;
        let shape = || {
            self.corrupt(
                &history_key,
                "the history script answered in an unknown shape",
            )
        };
        let [seconds, micros, fields, entries] = array(&reply)
            .and_then(|reply| <&[redis::Value; 4]>::try_from(reply).ok())
            .ok_or_else(shape)?;
        let now = server_time(bulk(seconds), bulk(micros)).ok_or_else(shape)?;
        let fields: Vec<Vec<u8>> = array(fields)
            .and_then(|fields| fields.iter().map(|f| bulk(f).map(<[u8]>::to_vec)).collect())
            .ok_or_else(shape)?;
        Ok(StoredHistory {
            current: self.fetched(document, &key, &history_key, &fields)?,
            recorded: self.revisions(document, &history_key, entries)?,
            now,
            location: self.key_location(&history_key),
        })
    }

    /// One script run erases the document, its receipts and its history, takes it out of the
    /// index and leaves the tombstone, atomically. Purging again after a lost reply finds the
    /// document gone: it erases at most the tombstone the first purge left, and leaves the
    /// next.
    async fn purge(
        &self,
        document: &DocumentId,
        surface: Surface,
        retention: &Retention,
    ) -> Result<Purged, MemoryError> {
        let key = self.key(document);
        let history_key = self.history_key(document);
        let reply: redis::Value = self
            .purge_script
            .key(&key)
            .key(&history_key)
            .key(self.index_key())
            .arg(document.relative_path())
            .arg(surface.to_string())
            .arg(retention.keep.min(i64::MAX as usize))
            .arg(max_age_arg(retention))
            .arg(sha256_hex(""))
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(|err| self.script_error(err))?;
        let shape = || {
            self.corrupt(
                &history_key,
                "the purge script answered in an unknown shape",
            )
        };
        let [bytes, revisions, tombstone] = array(&reply)
            .and_then(|reply| <&[redis::Value; 3]>::try_from(reply).ok())
            .ok_or_else(shape)?;
        let count = |value: &redis::Value| match value {
            redis::Value::Int(count) => usize::try_from(*count).ok(),
            _ => None,
        };
        let tombstone = match array(tombstone).ok_or_else(shape)? {
            [] => None,
            _ => self
                .revisions(
                    document,
                    &history_key,
                    &redis::Value::Array(vec![tombstone.clone()]),
                )?
                .pop(),
        };
        Ok(Purged {
            document: document.clone(),
            location: self.key_location(&key),
            bytes: count(bytes).ok_or_else(shape)?,
            revisions: count(revisions).ok_or_else(shape)?,
            tombstone,
        })
    }
}

/// The identity map is one hash beside the documents, [`RedisStore::identity_map_key`];
/// links and unlinks each run in one Lua script, so they are atomic across every client.
#[async_trait]
impl IdentityMap for RedisStore {
    async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        let field = identity.to_string();
        let user: Option<Vec<u8>> = self
            .read_identity_map(redis::cmd("HGET").arg(self.identity_map_key()).arg(&field))
            .await?;
        user.map(|user| self.stored_user(&field, user)).transpose()
    }

    async fn link(
        &self,
        identity: &Identity,
        user: &UserId,
        relink: bool,
    ) -> Result<Option<UserId>, MemoryError> {
        let field = identity.to_string();
        // A link repeated after it landed finds the same user and changes nothing.
        let previous: Option<Vec<u8>> = self
            .link_script
            .key(self.identity_map_key())
            .arg(&field)
            .arg(user.as_str())
            .arg(if relink { "1" } else { "0" })
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(|err| self.identity_error(err))?;
        let previous = previous
            .map(|previous| self.stored_user(&field, previous))
            .transpose()?;
        // The script wrote exactly when this says so; here it only raises IdentityTaken.
        identity.check_link(previous.as_ref(), user, relink)?;
        Ok(previous)
    }

    /// One script reads the field and deletes it, so of concurrent unlinks of one identity
    /// exactly one gets its user. Not sent twice: a repeat after it landed would answer `None`.
    async fn unlink(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        let field = identity.to_string();
        let previous: Option<Vec<u8>> = self
            .unlink_script
            .key(self.identity_map_key())
            .arg(&field)
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(|err| self.identity_error(err))?;
        previous
            .map(|previous| self.stored_user(&field, previous))
            .transpose()
    }

    async fn identities(&self) -> Result<Vec<(Identity, UserId)>, MemoryError> {
        let fields: HashMap<Vec<u8>, Vec<u8>> = self
            .read_identity_map(redis::cmd("HGETALL").arg(self.identity_map_key()))
            .await?;
        fields
            .into_iter()
            .map(|(field, user)| {
                let field = String::from_utf8(field).map_err(|err| MemoryError::Corrupt {
                    location: self.key_location(&self.identity_map_key()),
                    reason: format!(
                        "field {:?} is not UTF-8 ({})",
                        String::from_utf8_lossy(err.as_bytes()),
                        err.utf8_error()
                    ),
                })?;
                let identity = field
                    .parse()
                    .map_err(|err: MemoryError| MemoryError::Corrupt {
                        location: self.key_location(&self.identity_map_key()),
                        reason: format!("field {field:?}: {err}"),
                    })?;
                Ok((identity, self.stored_user(&field, user)?))
            })
            .collect()
    }
}

/// A document's `updated_at_ms` as its `modified` time. Empty (a hash written by hand) is
/// unknown; so is an integer no clock gives, before 1970 or after the year 9999, rather than a
/// time that overflows or breaks whoever formats it. Anything but an integer is corrupt.
fn modified_at(millis: &[u8]) -> Result<Option<SystemTime>, &'static str> {
    let not_an_integer = "its updated_at_ms is not a plain integer";
    let millis = std::str::from_utf8(millis).map_err(|_| not_an_integer)?;
    if millis.is_empty() {
        return Ok(None);
    }
    let (negative, digits) = match millis.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, millis),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_an_integer);
    }
    if negative {
        return Ok(None);
    }
    Ok(digits
        .parse::<u64>()
        .ok()
        .filter(|millis| *millis <= LAST_MILLISECOND)
        .and_then(|millis| UNIX_EPOCH.checked_add(Duration::from_millis(millis))))
}

/// Prefixes become part of every key; braces would break the hash tag that keeps a
/// deployment's keys in one Redis Cluster slot.
fn validate_prefix(prefix: &str) -> Result<(), MemoryError> {
    let valid = (1..=64).contains(&prefix.len())
        && prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    if valid {
        Ok(())
    } else {
        Err(MemoryError::Config {
            message: format!(
                "invalid key prefix {prefix:?}: use 1 to 64 letters, digits and '_', '-', '.', ':'"
            ),
        })
    }
}
