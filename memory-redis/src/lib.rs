#![doc = include_str!("../README.md")]

mod config;

use std::collections::HashMap;
use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use memory_core::{
    CasWrite, CasWriter, CompareAndSwap, DEFAULT_DEADLINE, Document, DocumentId, EventBus, Fetched,
    Identity, IdentityMap, IfMatch, MemoryContext, MemoryError, MemoryProvider, MemoryUpdate,
    Prefetch, Receipts, Store, Subscription, SyncReport, UserId, Version, hide_password_of,
    sha256_hex,
};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, RedisError, Script};

pub use config::{DEFAULT_MAX_ATTEMPTS, MAX_DEADLINE_MS, RedisConfig};

/// The largest version the write script counts exactly: Lua numbers are doubles.
const MAX_VERSION: u64 = (1 << 53) - 1;

/// The last millisecond of the year 9999: a later `updated_at_ms` is no clock's reading.
const LAST_MILLISECOND: u64 = 253_402_300_799_999;

/// Reads documents atomically. ARGV[1]: `1` to read the idempotency receipts too. Per key:
/// `{"ok", content, version, updated_at_ms, receipts}` (the time empty for a hash written
/// without it, the receipts empty when not asked for or never written), `{"none"}` for a key
/// never written, or `{reason}` for a key that is not one of our documents.
const READ_SCRIPT: &str = r#"
local out = {}
for i, key in ipairs(KEYS) do
  local kind = redis.call('TYPE', key).ok
  if kind == 'none' then
    out[i] = {'none'}
  elseif kind ~= 'hash' then
    out[i] = {'it holds a ' .. kind .. ', not a hash'}
  else
    local f = redis.call('HMGET', key, 'content', 'version', 'updated_at_ms', 'receipts')
    local version = tonumber(f[2])
    if f[1] and version and version >= 1 and version == math.floor(version) then
      local receipts = ''
      if ARGV[1] == '1' then receipts = f[4] or '' end
      out[i] = {'ok', f[1], f[2], f[3] or '', receipts}
    else
      out[i] = {'its hash lacks a content field and a positive integer version'}
    end
  end
end
return out
"#;

/// Writes documents if each is still at its expected version, atomically. KEYS: the documents,
/// then the index set. ARGV: per document its expected version, content, SHA-256, relative path
/// and idempotency receipts (empty: leave them as they are), then the time in ms. Returns 0
/// when all landed, else the 1-based position of a document another writer changed (nothing
/// written). A document or index key that is not ours is an error starting with CORRUPT,
/// checked before anything is written, and left untouched.
const WRITE_SCRIPT: &str = r#"
local n = #KEYS - 1
local index_kind = redis.call('TYPE', KEYS[n + 1]).ok
if index_kind ~= 'set' and index_kind ~= 'none' then
  return redis.error_reply('CORRUPT ' .. KEYS[n + 1])
end
for i = 1, n do
  local key = KEYS[i]
  local kind = redis.call('TYPE', key).ok
  local current = 0
  if kind == 'hash' then
    current = tonumber(redis.call('HGET', key, 'version'))
  elseif kind ~= 'none' then
    current = nil
  end
  if current == nil then
    return redis.error_reply('CORRUPT ' .. key)
  end
  if current ~= tonumber(ARGV[(i - 1) * 5 + 1]) then
    return i
  end
end
for i = 1, n do
  local at = (i - 1) * 5
  redis.call('HSET', KEYS[i],
    'content', ARGV[at + 2],
    'version', string.format('%d', tonumber(ARGV[at + 1]) + 1),
    'sha256', ARGV[at + 3],
    'updated_at_ms', ARGV[#ARGV])
  if ARGV[at + 5] ~= '' then
    redis.call('HSET', KEYS[i], 'receipts', ARGV[at + 5])
  end
  redis.call('SADD', KEYS[n + 1], ARGV[at + 4])
end
return 0
"#;

/// Links an identity, atomically. KEYS[1]: the identity map. ARGV: the identity's field, the
/// user, `1` to relink. Returns the user it was linked to before (nil for none) and writes only
/// when `Identity::check_link` would: not for the same user, not for another user without
/// relink (Rust then raises `IdentityTaken` from the returned user). A map key that is not a
/// hash, or a stored user that is not an id, is an error starting with CORRUPT, left untouched.
const LINK_SCRIPT: &str = r#"
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'hash' and kind ~= 'none' then
  return redis.error_reply('CORRUPT it holds a ' .. kind .. ', not a hash')
end
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current and not (#current <= 64 and string.match(current, '^[A-Za-z0-9_%-]+$')) then
  return redis.error_reply('CORRUPT its field ' .. ARGV[1] .. ' holds an invalid user id')
end
if current == ARGV[2] or (current and ARGV[3] ~= '1') then
  return current
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return current
"#;

/// The memory contract on Redis. See the crate docs for the key layout.
pub struct RedisProvider {
    connection: ConnectionManager,
    prefix: String,
    /// `redis://host:port/db`: where documents are, without credentials.
    server: String,
    read_script: Script,
    write_script: Script,
    link_script: Script,
    writer: CasWriter,
    max_attempts: u32,
    /// How long one call may take; `sync` passes it to its [`CasWriter`].
    deadline: Duration,
    events: EventBus,
}

impl std::fmt::Debug for RedisProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisProvider")
            .field("server", &self.server)
            .field("prefix", &self.prefix)
            .field("max_attempts", &self.writer.max_attempts())
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl RedisProvider {
    /// Connects with `config`. The connection reconnects by itself after a drop; a call that
    /// was in flight then fails with `Unavailable` and the next one goes through.
    ///
    /// # Errors
    /// [`MemoryError::Config`] for a bad URL, prefix or deadline (never echoing the password);
    /// [`MemoryError::Unavailable`] when no connection is made within the connect timeout.
    pub async fn connect(config: &RedisConfig) -> Result<Self, MemoryError> {
        validate_prefix(&config.prefix)?;
        config.validate()?;
        let client = config.client()?;
        let info = client.get_connection_info();
        let server = format!("redis://{}/{}", info.addr(), info.redis_settings().db());
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.connect_timeout()))
            .set_response_timeout(Some(config.response_timeout()))
            .set_number_of_retries(2);
        let connecting = client.get_connection_manager_with_config(manager);
        // The outer bound covers the manager's own retries of the first connect.
        let bound = config.connect_timeout() * 3 + Duration::from_secs(1);
        let connection = match tokio::time::timeout(bound, connecting).await {
            Ok(connected) => connected.map_err(|err| {
                // The driver's message names the server, never (as far as we know) the
                // password; it is checked all the same, and then the source is not kept.
                let message = hide_password_of(&config.url, &err.to_string());
                let source = (message == err.to_string()).then(|| err.into());
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
        Ok(Self::from_connection(connection, &config.prefix, server)?
            .with_max_attempts(config.max_attempts)
            .with_deadline(config.deadline()))
    }

    /// A provider on an existing connection manager, with its keys under `{prefix}:`. `server`
    /// names the server in locations and messages: give it without credentials.
    ///
    /// # Errors
    /// [`MemoryError::Config`] when `prefix` is not 1 to 64 letters, digits and `_ - . :`.
    pub fn from_connection(
        connection: ConnectionManager,
        prefix: &str,
        server: impl Into<String>,
    ) -> Result<Self, MemoryError> {
        validate_prefix(prefix)?;
        Ok(RedisProvider {
            connection,
            prefix: prefix.to_owned(),
            server: server.into(),
            read_script: Script::new(READ_SCRIPT),
            write_script: Script::new(WRITE_SCRIPT),
            link_script: Script::new(LINK_SCRIPT),
            writer: CasWriter::new(DEFAULT_MAX_ATTEMPTS),
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            deadline: DEFAULT_DEADLINE,
            events: EventBus::new(),
        })
    }

    /// Sets how many compare-and-swap attempts a `sync` makes before `Contention` (at least 1).
    pub fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self.writer = CasWriter::new(max_attempts).with_deadline(self.deadline);
        self
    }

    /// Sets how long one call may take in all (default [`DEFAULT_DEADLINE`]), kept between
    /// 1 ms and [`MAX_DEADLINE_MS`]: a `sync` its reads, retries and write, any other call its
    /// round trip. See [`RedisConfig::deadline_ms`] for the errors it gives.
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline.clamp(
            Duration::from_millis(1),
            Duration::from_millis(MAX_DEADLINE_MS),
        );
        self.writer = CasWriter::new(self.max_attempts).with_deadline(self.deadline);
        self
    }

    /// The key of `document`: `{prefix}:` and its path in the markdown layout.
    pub fn key(&self, document: &DocumentId) -> String {
        format!("{{{}}}:{}", self.prefix, document.relative_path())
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
    pub fn connection(&self) -> &ConnectionManager {
        &self.connection
    }

    fn location(&self, key: &str) -> String {
        format!("{} {key}", self.server)
    }

    fn error(&self, err: RedisError) -> MemoryError {
        MemoryError::unavailable(&self.server, err)
    }

    /// `call` bounded by the deadline: past it, `Unavailable` for `what`, with `after` appended
    /// to the message (for a call that may have written).
    async fn within_deadline<T>(
        &self,
        what: impl FnOnce() -> String,
        after: &str,
        call: impl Future<Output = Result<T, MemoryError>>,
    ) -> Result<T, MemoryError> {
        match tokio::time::timeout(self.deadline, call).await {
            Ok(result) => result,
            Err(_) => Err(MemoryError::Unavailable {
                what: what(),
                message: format!(
                    "no reply from {} within the call's deadline of {} ms{after}",
                    self.server,
                    self.deadline.as_millis()
                ),
                source: None,
            }),
        }
    }

    /// An error on the index set: a key of another type is `Corrupt`.
    fn index_error(&self, err: RedisError) -> MemoryError {
        match err.code() {
            Some("WRONGTYPE") => MemoryError::Corrupt {
                location: self.location(&self.index_key()),
                reason: "it is not a set".to_owned(),
            },
            _ => self.error(err),
        }
    }

    /// An error on the identity map: a key of another type (`WRONGTYPE`) or content the link
    /// script refused (`CORRUPT`) is `Corrupt`.
    fn identity_error(&self, err: RedisError) -> MemoryError {
        let key = self.identity_map_key();
        match err.code() {
            Some("WRONGTYPE") => MemoryError::Corrupt {
                location: self.location(&key),
                reason: "it is not a hash".to_owned(),
            },
            Some("CORRUPT") => MemoryError::Corrupt {
                location: self.location(&key),
                reason: err.detail().unwrap_or_default().to_owned(),
            },
            _ => self.error(err),
        }
    }

    /// A user id as stored in the map: anything but a valid id was not written by us.
    fn stored_user(&self, field: &str, user: Vec<u8>) -> Result<UserId, MemoryError> {
        let corrupt = |reason: String| MemoryError::Corrupt {
            location: self.location(&self.identity_map_key()),
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
        let mut reply = cmd.query_async(&mut self.connection.clone()).await;
        if reply.as_ref().is_err_and(RedisError::is_connection_dropped) {
            reply = cmd.query_async(&mut self.connection.clone()).await;
        }
        reply.map_err(|err| self.identity_error(err))
    }
}

#[async_trait]
impl CompareAndSwap for RedisProvider {
    /// One script run: one round trip, one atomic snapshot.
    async fn fetch(&self, ids: &[DocumentId], receipts: bool) -> Result<Vec<Fetched>, MemoryError> {
        let keys: Vec<String> = ids.iter().map(|id| self.key(id)).collect();
        let mut invocation = self.read_script.prepare_invoke();
        invocation.key(&keys).arg(if receipts { "1" } else { "0" });
        let mut replies = invocation.invoke_async(&mut self.connection.clone()).await;
        // A connection dropped since the last call (a server restart, an idle kill) fails the
        // first command on it while the manager reconnects; a read is safe to send again.
        if replies
            .as_ref()
            .is_err_and(RedisError::is_connection_dropped)
        {
            replies = invocation.invoke_async(&mut self.connection.clone()).await;
        }
        // As bytes: the fields are whatever the key holds, and a field that is not UTF-8 is
        // the key's fault (Corrupt, naming it), not the server's.
        let replies: Vec<Vec<Vec<u8>>> = replies.map_err(|err| self.error(err))?;
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
            .zip(keys)
            .zip(replies)
            .map(|((id, key), reply)| {
                let corrupt = |reason: &str| MemoryError::Corrupt {
                    location: self.location(&key),
                    reason: reason.to_owned(),
                };
                let utf8 = |field: &str, bytes: &[u8]| {
                    String::from_utf8(bytes.to_vec()).map_err(|err| {
                        corrupt(&format!("its {field} is not UTF-8 ({})", err.utf8_error()))
                    })
                };
                let (text, version, modified, receipts) = match reply.as_slice() {
                    [state] if state == b"none" => (String::new(), 0, None, None),
                    [state, text, version, millis, receipts] if state == b"ok" => {
                        let version = std::str::from_utf8(version)
                            .ok()
                            .and_then(|version| version.parse::<u64>().ok())
                            .ok_or_else(|| corrupt("its version is not a plain integer"))?;
                        if version > MAX_VERSION {
                            return Err(corrupt(&format!(
                                "its version is past {MAX_VERSION}, more than the write script \
                                 counts exactly"
                            )));
                        }
                        let modified = modified_at(millis).map_err(&corrupt)?;
                        let receipts = Some(utf8("receipts field", receipts)?)
                            .filter(|receipts| !receipts.is_empty());
                        (utf8("content", text)?, version, modified, receipts)
                    }
                    [reason] => return Err(corrupt(&String::from_utf8_lossy(reason))),
                    _ => return Err(corrupt("the read script answered in an unknown shape")),
                };
                let document = Document {
                    id: id.clone(),
                    text,
                    version: Version::new(version.to_string()),
                    location: self.location(&key),
                    modified,
                };
                Ok(Fetched {
                    document,
                    version,
                    receipts,
                    tip: memory_core::RevisionTip::empty(Version::new("0")),
                })
            })
            .collect()
    }

    /// One script run: checks every version, then writes every document, atomically.
    /// Scripts run whole and never wait for a lock, so `lock_wait` has nothing to bound.
    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        _lock_wait: Duration,
    ) -> Result<Option<DocumentId>, MemoryError> {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let mut invocation = self.write_script.prepare_invoke();
        for write in writes {
            invocation
                .key(self.key(write.id))
                .arg(write.expected)
                .arg(write.text)
                .arg(sha256_hex(write.text))
                .arg(write.id.relative_path())
                .arg(write.receipts.unwrap_or_default());
        }
        invocation.key(self.index_key()).arg(now_ms.to_string());
        let lost_at: usize = invocation
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(|err| match err.code() {
                Some("CORRUPT") => MemoryError::Corrupt {
                    location: self.location(err.detail().unwrap_or_default()),
                    reason: "it is not a document hash with an integer version".to_owned(),
                },
                _ => self.error(err),
            })?;
        Ok(lost_at
            .checked_sub(1)
            .and_then(|index| writes.get(index))
            .map(|write| write.id.clone()))
    }
}

#[async_trait]
impl MemoryProvider for RedisProvider {
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        let what = || {
            format!(
                "{} and {}",
                ctx.document(Store::Memory),
                ctx.document(Store::User)
            )
        };
        self.within_deadline(what, "", self.prefetch_by_fetch(ctx))
            .await
    }

    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        self.writer
            .sync(self, &self.events, ctx, updates, if_match)
            .await
    }

    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        self.within_deadline(|| document.to_string(), "", self.read_by_fetch(document))
            .await
    }

    async fn receipts(&self, document: &DocumentId) -> Result<Receipts, MemoryError> {
        self.within_deadline(
            || document.to_string(),
            "",
            self.receipts_by_fetch(document),
        )
        .await
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        let members = async {
            redis::cmd("SMEMBERS")
                .arg(self.index_key())
                .query_async(&mut self.connection.clone())
                .await
                .map_err(|err| self.index_error(err))
        };
        let paths: Vec<Vec<u8>> = self
            .within_deadline(|| self.location(&self.index_key()), "", members)
            .await?;
        // Like a path outside the layout, a member that is not UTF-8 names no document.
        let mut ids: Vec<DocumentId> = paths
            .iter()
            .filter_map(|path| std::str::from_utf8(path).ok())
            .filter_map(DocumentId::from_relative_path)
            .collect();
        ids.sort();
        Ok(ids)
    }

    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<Vec<memory_core::Revision>, MemoryError> {
        let _ = (document, limit);
        Err(MemoryError::Config {
            message: "TODO(issue 21): history".into(),
        })
    }

    async fn purge(
        &self,
        document: &DocumentId,
        surface: memory_core::Surface,
    ) -> Result<memory_core::Purged, MemoryError> {
        let _ = (document, surface);
        Err(MemoryError::Config {
            message: "TODO(issue 21): purge".into(),
        })
    }

    fn subscribe(&self) -> Subscription {
        self.events.subscribe()
    }
}

/// The identity map is one hash beside the documents, [`RedisProvider::identity_map_key`];
/// links run in one Lua script, so they are atomic across every client.
#[async_trait]
impl IdentityMap for RedisProvider {
    async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        let field = identity.to_string();
        let user: Option<Vec<u8>> = self
            .within_deadline(
                || self.location(&self.identity_map_key()),
                "",
                self.read_identity_map(redis::cmd("HGET").arg(self.identity_map_key()).arg(&field)),
            )
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
        let linking = async {
            self.link_script
                .key(self.identity_map_key())
                .arg(&field)
                .arg(user.as_str())
                .arg(if relink { "1" } else { "0" })
                .invoke_async(&mut self.connection.clone())
                .await
                .map_err(|err| self.identity_error(err))
        };
        // A link repeated after it landed finds the same user and changes nothing.
        let previous: Option<Vec<u8>> = self
            .within_deadline(
                || self.location(&self.identity_map_key()),
                "; the link may or may not have landed, and linking again is safe",
                linking,
            )
            .await?;
        let previous = previous
            .map(|previous| self.stored_user(&field, previous))
            .transpose()?;
        // The script wrote exactly when this says so; here it only raises IdentityTaken.
        identity.check_link(previous.as_ref(), user, relink)?;
        Ok(previous)
    }

    async fn identities(&self) -> Result<Vec<(Identity, UserId)>, MemoryError> {
        let fields: HashMap<Vec<u8>, Vec<u8>> = self
            .within_deadline(
                || self.location(&self.identity_map_key()),
                "",
                self.read_identity_map(redis::cmd("HGETALL").arg(self.identity_map_key())),
            )
            .await?;
        let mut links = fields
            .into_iter()
            .map(|(field, user)| {
                let field = String::from_utf8(field).map_err(|err| MemoryError::Corrupt {
                    location: self.location(&self.identity_map_key()),
                    reason: format!(
                        "field {:?} is not UTF-8 ({})",
                        String::from_utf8_lossy(err.as_bytes()),
                        err.utf8_error()
                    ),
                })?;
                let identity = field
                    .parse()
                    .map_err(|err: MemoryError| MemoryError::Corrupt {
                        location: self.location(&self.identity_map_key()),
                        reason: format!("field {field:?}: {err}"),
                    })?;
                Ok((identity, self.stored_user(&field, user)?))
            })
            .collect::<Result<Vec<(Identity, UserId)>, MemoryError>>()?;
        // By identity, not by field: `slack:x` comes before `slack-2:x`.
        links.sort();
        Ok(links)
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
