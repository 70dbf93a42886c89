//! The Lua scripts: each runs whole on the server, so each is one atomic step and one round trip.

/// The Lua every document script shares: reading a document hash with its newest revision,
/// checked to be ours. A macro, so `concat!` can put it before each script.
///
/// A document's newest revision (its tip: number, version, SHA-256 and size after it) is kept
/// twice: as the newest entry of its history stream, and in four fields of its hash that the
/// write script sets with the content. Reading the fields costs nothing; reading the entry
/// brings its whole text into Lua, which costs more than the rest of a write. The entry is read
/// only for a hash without the fields: after a purge (the tombstone), or never recorded.
macro_rules! shared_lua {
    () => {
        r#"
-- A decimal count as every revision stores them (below 10^15, so Lua counts exactly).
local function is_count(value)
  return value and #value <= 15 and string.match(value, '^%d+$') ~= nil
end

-- Whether these are the number, version, SHA-256 and size of a revision of ours.
local function is_tip(number, version, sha256, bytes)
  return is_count(number) and tonumber(number) >= 1 and version and sha256 and #sha256 == 64
    and not string.find(sha256, '[^0-9a-f]') and is_count(bytes)
end

-- The newest revision of a history stream: {number, version_after, sha256_after, bytes_after},
-- {} when it holds none, or nil and why the key is not a history of ours.
local function tip_of(key)
  local kind = redis.call('TYPE', key).ok
  if kind == 'none' then
    return {}
  elseif kind ~= 'stream' then
    return nil, 'it holds a ' .. kind .. ', not a stream of revisions'
  end
  local newest = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
  if not newest then
    return {}
  end
  local f = {}
  for j = 1, #newest[2], 2 do
    f[newest[2][j]] = newest[2][j + 1]
  end
  if is_tip(f['number'], f['version_after'], f['sha256_after'], f['bytes_after']) then
    return {f['number'], f['version_after'], f['sha256_after'], f['bytes_after']}
  end
  return nil, 'its newest entry ' .. newest[1] .. ' is not a revision of ours'
end

-- The tip of the document at `key` whose hash holds the revision fields `stored` (as HMGET
-- gives them: false when absent), else of its history stream: as `tip_of`, or nil, the key at
-- fault and why.
local function document_tip(key, history, stored)
  if stored[1] then
    if is_tip(stored[1], stored[2], stored[3], stored[4]) then
      return {stored[1], stored[2], stored[3], stored[4]}
    end
    return nil, key, 'its revision fields are not a revision of ours'
  end
  local tip, reason = tip_of(history)
  return tip, history, reason
end

-- A document as the read script answers for it: {'ok', content, version, updated_at_ms,
-- receipts, tip...} (the time empty for a hash written without it, the receipts empty unless
-- asked for or never written) or {'none', tip...} for a key never written, where the tip is
-- the four fields of `tip_of`, all empty when there is none or it was not asked for; {reason}
-- for a document key that is not ours, {'history', reason} for a history key that is not.
local function read_document(key, history, with_receipts, with_tip)
  local kind = redis.call('TYPE', key).ok
  local reply, stored = {'none'}, {false}
  if kind == 'hash' then
    local f = redis.call('HMGET', key, 'content', 'version', 'updated_at_ms', 'receipts',
      'revision', 'revision_version', 'revision_sha256', 'revision_bytes')
    local version = tonumber(f[2])
    if not (f[1] and version and version >= 1 and version == math.floor(version)) then
      return {'its hash lacks a content field and a positive integer version'}
    end
    local receipts = ''
    if with_receipts then receipts = f[4] or '' end
    reply = {'ok', f[1], f[2], f[3] or '', receipts}
    stored = {f[5], f[6], f[7], f[8]}
  elseif kind ~= 'none' then
    return {'it holds a ' .. kind .. ', not a hash'}
  end
  local tip = {}
  if with_tip then
    local at, reason
    tip, at, reason = document_tip(key, history, stored)
    if not tip then
      if at == key then return {reason} end
      return {'history', reason}
    end
  end
  for j = 1, 4 do
    reply[#reply + 1] = tip[j] or ''
  end
  return reply
end
"#
    };
}

/// The Lua of the document locks a writer holds after a lost race (see `hold.rs`). A lock
/// key holds the holder's random token, with an expiry in case the holder dies; a wake list
/// per document is where waiters block (`BLPOP`, served first come first served).
macro_rules! release_lua {
    () => {
        r#"
-- Who holds the lock at `key`: its token, false for nobody, or nil and why it is not a lock.
local function lock_holder(key)
  local holder = redis.pcall('GET', key)
  if type(holder) == 'table' and holder.err then
    return nil, 'it is not a lock token'
  end
  return holder
end

-- Lets go of `lock` if `token` holds it, and wakes one writer waiting on `wake`. The wake list
-- keeps one wake at most, for a waiter about to block, and expires in case none comes.
local function release(lock, wake, token, wake_ms)
  if lock_holder(lock) == token then
    redis.call('DEL', lock)
    redis.call('LPUSH', wake, '1')
    redis.call('LTRIM', wake, 0, 0)
    redis.call('PEXPIRE', wake, wake_ms)
  end
end
"#
    };
}

/// Takes the locks of documents for one writer, all or none. KEYS: the lock keys. ARGV: the
/// token, the locks' expiry in ms. Returns 0 when it took them all, else the 1-based position
/// of one another token holds (nothing taken). The holder reads the documents in the same
/// round trip, after this, with the transaction of `read.rs`.
pub(crate) const LOCK_SCRIPT: &str = concat!(
    release_lua!(),
    r#"
for i = 1, #KEYS do
  local holder, reason = lock_holder(KEYS[i])
  if reason then
    return redis.error_reply('CORRUPT ' .. KEYS[i] .. ' ' .. reason)
  end
  if holder and holder ~= ARGV[1] then
    return i
  end
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 0
"#
);

/// Lets go of the locks `token` holds, waking one waiter per document. KEYS: m lock keys, then
/// their m wake lists. ARGV: the token, how long a wake lasts in ms.
pub(crate) const RELEASE_SCRIPT: &str = concat!(
    release_lua!(),
    r#"
local m = #KEYS / 2
for j = 1, m do
  release(KEYS[j], KEYS[m + j], ARGV[1], ARGV[2])
end
return 0
"#
);

/// Reads documents atomically. KEYS: the documents, then their history streams. ARGV[1]: `1`
/// to read the idempotency receipts too; ARGV[2]: `1` to read each document's newest revision.
/// Per document what `read_document` answers.
pub(crate) const READ_SCRIPT: &str = concat!(
    shared_lua!(),
    r#"
local n = #KEYS / 2
local out = {}
for i = 1, n do
  out[i] = read_document(KEYS[i], KEYS[n + i], ARGV[1] == '1', ARGV[2] == '1')
end
return out
"#
);

// The write script, the longest, in a file of its own.
mod write;
pub(crate) use write::WRITE_SCRIPT;

/// Reads one document, its tip and its newest revisions in one atomic step. KEYS: the
/// document, its history stream. ARGV[1]: how many revisions. Returns `{seconds,
/// microseconds, document, entries}`: the server's `TIME`, the document as `read_document`
/// gives it, and the newest entries as `XREVRANGE` gives them (`{id, {field, value, ...}}`,
/// newest first).
pub(crate) const HISTORY_SCRIPT: &str = concat!(
    shared_lua!(),
    r#"
local time = redis.call('TIME')
local document = read_document(KEYS[1], KEYS[2], false, true)
local entries = {}
local kind = redis.call('TYPE', KEYS[2]).ok
if kind == 'stream' then
  entries = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', ARGV[1])
elseif kind ~= 'none' then
  document = {'history', 'it holds a ' .. kind .. ', not a stream of revisions'}
end
return {time[1], time[2], document, entries}
"#
);

/// Erases a document, its receipts and its history, atomically, and leaves a tombstone. KEYS:
/// the document, its history stream, the index set. ARGV: the document's relative path, the
/// surface, the revisions kept per document (0: history off), the maximum age in ms (empty:
/// none), the SHA-256 of the empty text. Returns `{bytes, revisions, tombstone}`: the size of
/// the content erased, the count of revisions erased that the retention kept (the stream may
/// hold a few it no longer keeps, see the write script), and the tombstone's entry as
/// `{id, {field, value, ...}}` (empty when none was left: history off, or nothing erased). Keys
/// that are not ours (a history with an entry whose fields or counts and hashes are not a
/// revision's, among them) are errors `CORRUPT <key> <reason>`, checked before anything is
/// erased, and left untouched.
pub(crate) const PURGE_SCRIPT: &str = concat!(
    shared_lua!(),
    r#"
local document = read_document(KEYS[1], KEYS[2], false, true)
if document[1] == 'history' then
  return redis.error_reply('CORRUPT ' .. KEYS[2] .. ' ' .. document[2])
elseif #document == 1 then
  return redis.error_reply('CORRUPT ' .. KEYS[1] .. ' ' .. document[1])
end
local kind = redis.call('TYPE', KEYS[2]).ok
if kind ~= 'stream' and kind ~= 'none' then
  return redis.error_reply('CORRUPT ' .. KEYS[2] .. ' it holds a ' .. kind .. ', not a stream of revisions')
end
-- Erasing what is not ours is for a person to decide: every entry must be a revision.
local fields = {number = 1, version_before = 1, version_after = 1, sha256_before = 1,
  sha256_after = 1, bytes_before = 1, bytes_after = 1, surface = 1, personality = 0, user = 0,
  key = 0, session = 0, updates = 0, text = 0, time = 0, redacted = 0}
local entries = redis.call('XRANGE', KEYS[2], '-', '+')
local keep, max_age = tonumber(ARGV[3]), tonumber(ARGV[4])
local time = redis.call('TIME')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
-- Counted as `history` shows them: from the oldest, those the retention no longer keeps are
-- left out until the first it keeps (Retention::prunes).
local erased, newest, pruning = 0, 0, true
local last = entries[#entries]
for j = 1, last and #last[2] or 0, 2 do
  if last[2][j] == 'number' then
    newest = tonumber(last[2][j + 1]) or 0
  end
end
for _, entry in ipairs(entries) do
  local required, f = 8, {}
  for j = 1, #entry[2], 2 do
    local name = entry[2][j]
    if not fields[name] or f[name] then
      required = -1
      break
    end
    f[name] = entry[2][j + 1]
    required = required - fields[name]
  end
  if required ~= 0
      or not is_tip(f['number'], f['version_after'], f['sha256_after'], f['bytes_after'])
      or not is_tip('1', f['version_before'], f['sha256_before'], f['bytes_before'])
      or (f['time'] and not is_count(f['time'])) then
    return redis.error_reply('CORRUPT ' .. KEYS[2] .. ' its entry ' .. entry[1] .. ' is not a revision of ours')
  end
  local number = tonumber(f['number'])
  local at_ms = tonumber(f['time'] or string.match(entry[1], '^(%d+)'))
  local prunes = number < newest
    and (number < newest + 1 - keep or (max_age ~= nil and now_ms - at_ms > max_age))
  if not (pruning and prunes) then
    pruning = false
    erased = erased + 1
  end
end
local index_kind = redis.call('TYPE', KEYS[3]).ok
if index_kind ~= 'set' and index_kind ~= 'none' then
  return redis.error_reply('CORRUPT ' .. KEYS[3] .. ' it holds a ' .. index_kind .. ', not a set')
end
local bytes = 0
if document[1] == 'ok' then
  bytes = #document[2]
end
-- The tip is the last four fields of the document's reply, all empty for none. The tombstone
-- keeps its number and size only: nothing derived from the erased content (Revision::tombstone).
local tip = {}
if document[#document - 3] ~= '' then
  tip = {document[#document - 3], document[#document - 2], document[#document - 1], document[#document]}
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
local tombstone = {}
-- Retention::leaves_tombstone: history on, and a text or revisions erased.
if keep > 0 and (document[1] == 'ok' or erased > 0) then
  local id = redis.call('XADD', KEYS[2], '*',
    'number', string.format('%d', tonumber(tip[1] or '0') + 1),
    'version_before', '0',
    'version_after', '0',
    'sha256_before', ARGV[5],
    'sha256_after', ARGV[5],
    'bytes_before', tip[4] or '0',
    'bytes_after', '0',
    'surface', ARGV[2])
  tombstone = redis.call('XRANGE', KEYS[2], id, id)[1]
end
return {bytes, erased, tombstone}
"#
);

/// Redacts one revision of a history stream, atomically. KEYS[1]: the stream. ARGV: the
/// revision's number, the number of the newest revision the redaction was planned on, the
/// time of the redaction (ms), the updates it keeps as JSON (empty: none), `1` when the next
/// revision is to get its whole text, and that text. Returns 1 when it landed, 0 when the
/// newest revision is no longer the one planned on or the revision is gone or redacted
/// already (nothing written). Entries cannot be changed in place, so the stream is written
/// anew, each entry under its own id (its time): the redacted one without `text` and
/// `updates`, with `redacted`; the next one with `text` where it had none (a change, which
/// was rebuilt from the text erased).
pub(crate) const REDACT_SCRIPT: &str = r#"
if redis.call('TYPE', KEYS[1]).ok ~= 'stream' then
  return 0
end
local function field(entry, name)
  for j = 1, #entry[2], 2 do
    if entry[2][j] == name then
      return entry[2][j + 1]
    end
  end
  return nil
end
local entries = redis.call('XRANGE', KEYS[1], '-', '+')
local newest = entries[#entries]
if not newest or field(newest, 'number') ~= ARGV[2] then
  return 0
end
local at
for i, entry in ipairs(entries) do
  if field(entry, 'number') == ARGV[1] then
    at = i
    break
  end
end
if not at or field(entries[at], 'redacted') then
  return 0
end
local next_number = string.format('%d', tonumber(ARGV[1]) + 1)
redis.call('DEL', KEYS[1])
for i, entry in ipairs(entries) do
  local fields = entry[2]
  if i == at then
    fields = {}
    for j = 1, #entry[2], 2 do
      local name = entry[2][j]
      if name ~= 'text' and name ~= 'updates' then
        fields[#fields + 1] = name
        fields[#fields + 1] = entry[2][j + 1]
      end
    end
    if ARGV[4] ~= '' then
      fields[#fields + 1] = 'updates'
      fields[#fields + 1] = ARGV[4]
    end
    fields[#fields + 1] = 'redacted'
    fields[#fields + 1] = ARGV[3]
  elseif i == at + 1 and ARGV[5] == '1' and field(entry, 'number') == next_number
      and not field(entry, 'text') and not field(entry, 'redacted') then
    fields = {'text', ARGV[6], unpack(entry[2])}
  end
  redis.call('XADD', KEYS[1], entry[1], unpack(fields))
end
return 1
"#;

/// Links an identity, atomically. KEYS[1]: the identity map. ARGV: the identity's field, the
/// user, `1` to relink. Returns the user it was linked to before (nil for none) and writes only
/// when `Identity::check_link` would: not for the same user, not for another user without
/// relink (Rust then raises `IdentityTaken` from the returned user). A map key that is not a
/// hash, or a stored user that is not an id, is an error starting with CORRUPT, left untouched.
pub(crate) const LINK_SCRIPT: &str = r#"
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

/// Unlinks an identity, atomically. KEYS[1]: the identity map. ARGV: the identity's field.
/// Returns the user it was linked to (nil for none, with nothing written). A map key that is
/// not a hash, or a stored user that is not an id, is an error starting with CORRUPT, left
/// untouched, as in [`LINK_SCRIPT`].
pub(crate) const UNLINK_SCRIPT: &str = r#"
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'hash' and kind ~= 'none' then
  return redis.error_reply('CORRUPT it holds a ' .. kind .. ', not a hash')
end
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current then
  return current
end
if not (#current <= 64 and string.match(current, '^[A-Za-z0-9_%-]+$')) then
  return redis.error_reply('CORRUPT its field ' .. ARGV[1] .. ' holds an invalid user id')
end
redis.call('HDEL', KEYS[1], ARGV[1])
return current
"#;
