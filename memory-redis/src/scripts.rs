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

/// Writes documents if each is still at its expected version (and, where it records
/// revisions, its history still at the expected tip), atomically, with their revisions.
///
/// KEYS: the n documents, the index set, the n history streams, then m lock keys (the n
/// documents' in the same order, then any other document the writer holds) and their m wake
/// lists. ARGV: per document its
/// expected version, content, SHA-256, relative path and idempotency receipts (empty: leave
/// them as they are); then the revisions kept per document, the maximum age in ms
/// (empty: none); per document the number of the revision its history is expected to end at
/// (`0`: none; empty: record nothing for it); then for each document that records: the count
/// of its revisions, the newest one's number, version, SHA-256 and size after (kept in the
/// hash), and for each revision the count of its field pairs, how its text and time are
/// stored, and the pairs. `=`: its text is the document's new content, not among the pairs;
/// `d`: dated by the document's `updated_at_ms` as stored (a change nobody recorded, dated as
/// [`RedisStore::history`] showed it); `c`: stored as its change alone, without a text (see
/// `Revision::is_change_only`); `-`: none of these. The time of all others is their entry id.
/// The document's `history_bases` lists the entries stored whole that a trim may start from. Last: per document the text it is expected to hold, then one character per document,
/// `1` where that text is checked (a write planned from the writer's last view rather than a
/// read: the version alone can repeat after a purge, and a hand edit need not change it), `0`
/// where not; m, the writer's lock token (empty for a writer that holds nothing), and how long
/// a wake lasts in ms.
///
/// Returns 0 when all landed, else the 1-based position of a document another writer changed
/// or holds under another token (nothing written). A writer with a token then lets go of
/// every lock it still holds, written or not, and wakes one waiter per document (see
/// `release_lua`). A key that is not ours is an error `CORRUPT <key> <reason>`, checked
/// before anything is written, and left untouched. Times are the server's clock: the
/// documents' `updated_at_ms` is its `TIME`, and each revision's time is its stream entry id,
/// which the server stamps.
pub(crate) const WRITE_SCRIPT: &str = concat!(
    shared_lua!(),
    release_lua!(),
    r#"
local m, token, wake_ms = tonumber(ARGV[#ARGV - 2]), ARGV[#ARGV - 1], ARGV[#ARGV]
local n = (#KEYS - 1 - 2 * m) / 2
local index = KEYS[n + 1]
local checks, texts = ARGV[#ARGV - 3], #ARGV - 4 - n
local function write_documents()
-- A document another writer holds is a lost race: racing writers cannot slip in under it.
for i = 1, n do
  local lock = KEYS[2 * n + 1 + i]
  local holder, reason = lock_holder(lock)
  if reason then
    return redis.error_reply('CORRUPT ' .. lock .. ' ' .. reason)
  end
  if holder and holder ~= token then
    return i
  end
end
local index_kind = redis.call('TYPE', index).ok
if index_kind ~= 'set' and index_kind ~= 'none' then
  return redis.error_reply('CORRUPT ' .. index .. ' it holds a ' .. index_kind .. ', not a set')
end
-- When each document was last changed, as a read showed it (a time no clock gives is none).
local modified = {}
for i = 1, n do
  local key = KEYS[i]
  local kind = redis.call('TYPE', key).ok
  local current, stored = 0, {false, false, false, false, false, false}
  if kind == 'hash' then
    stored = redis.call('HMGET', key, 'version', 'updated_at_ms',
      'revision', 'revision_version', 'revision_sha256', 'revision_bytes')
    current = tonumber(stored[1])
  elseif kind ~= 'none' then
    current = nil
  end
  if current == nil then
    return redis.error_reply('CORRUPT ' .. key .. ' it is not a document hash with an integer version')
  end
  if current ~= tonumber(ARGV[(i - 1) * 5 + 1]) then
    return i
  end
  -- A write planned from the writer's last view, not a read: the text must be the one it saw.
  if string.byte(checks, i) == 49 then
    local content = false
    if kind == 'hash' then
      content = redis.call('HGET', key, 'content')
    end
    if (content or '') ~= ARGV[texts + i] then
      return i
    end
  end
  if stored[2] and string.match(stored[2], '^%d+$') and tonumber(stored[2]) <= 253402300799999 then
    modified[i] = string.format('%d', tonumber(stored[2]))
  end
  local expected_tip = ARGV[5 * n + 2 + i]
  if expected_tip ~= '' then
    local history = KEYS[n + 1 + i]
    local history_kind = redis.call('TYPE', history).ok
    if history_kind ~= 'stream' and history_kind ~= 'none' then
      return redis.error_reply('CORRUPT ' .. history .. ' it holds a ' .. history_kind .. ', not a stream of revisions')
    end
    local tip, at, reason = document_tip(key, history, {stored[3], stored[4], stored[5], stored[6]})
    if not tip then
      return redis.error_reply('CORRUPT ' .. at .. ' ' .. reason)
    end
    -- Only a purge changes a history without changing its document's version.
    if tonumber(tip[1] or '0') ~= tonumber(expected_tip) then
      return i
    end
  end
end
local keep = ARGV[5 * n + 1]
local max_age = tonumber(ARGV[5 * n + 2])
local time = redis.call('TIME')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local at = 6 * n + 3
local now = string.format('%d', now_ms)
for i = 1, n do
  local base = (i - 1) * 5
  local history = KEYS[n + 1 + i]
  local version = string.format('%d', tonumber(ARGV[base + 1]) + 1)
  local count = 0
  if ARGV[5 * n + 2 + i] ~= '' then
    -- The newest revision's fields go into the hash with the content it describes.
    count = tonumber(ARGV[at])
    redis.call('HSET', KEYS[i], 'content', ARGV[base + 2], 'version', version,
      'sha256', ARGV[base + 3], 'updated_at_ms', now,
      'revision', ARGV[at + 1], 'revision_version', ARGV[at + 2],
      'revision_sha256', ARGV[at + 3], 'revision_bytes', ARGV[at + 4])
    at = at + 5
  else
    redis.call('HSET', KEYS[i], 'content', ARGV[base + 2], 'version', version,
      'sha256', ARGV[base + 3], 'updated_at_ms', now)
  end
  if ARGV[base + 5] ~= '' then
    redis.call('HSET', KEYS[i], 'receipts', ARGV[base + 5])
  end
  redis.call('SADD', index, ARGV[base + 4])
  if count > 0 then
    -- The entries stored whole (`Revision::is_base`), oldest first, as `number:id:ms`: where
    -- a trim may start, so that the changes kept can be rebuilt. Kept in the hash, so a write
    -- never reads an entry. A history written before them (every entry whole) starts from
    -- its newest entry.
    local bases = {}
    local listed = redis.call('HGET', KEYS[i], 'history_bases')
    -- A stream deleted by hand takes what was listed with it.
    if redis.call('XLEN', history) == 0 then
      bases = {}
    elseif listed then
      for number, id, ms in string.gmatch(listed, '(%d+):([%d%-]+):(%-?%d+)') do
        bases[#bases + 1] = {tonumber(number), id, tonumber(ms)}
      end
    else
      local newest = redis.call('XREVRANGE', history, '+', '-', 'COUNT', 1)[1]
      if newest then
        local number, ms = nil, tonumber(string.match(newest[1], '^(%d+)'))
        for j = 1, #newest[2], 2 do
          if newest[2][j] == 'number' then
            number = tonumber(newest[2][j + 1])
          elseif newest[2][j] == 'time' then
            ms = tonumber(newest[2][j + 1])
          end
        end
        if number then
          bases[1] = {number, newest[1], ms}
        end
      end
    end
    local newest_number
    for _ = 1, count do
      -- The pairs go to XADD straight from ARGV, `number` first. `c`: a change alone, no text.
      local mode, from, to = ARGV[at + 1], at + 2, at + 1 + 2 * tonumber(ARGV[at])
      local number = tonumber(ARGV[from + 1])
      -- A change with nothing stored whole before it to be rebuilt from (a history deleted
      -- by hand) is stored whole: it is the write's own revision, its text the new content.
      if mode == 'c' and number ~= 1 and #bases == 0 then
        mode = '='
      end
      local id, ms
      if mode == '=' then
        id = redis.call('XADD', history, '*', 'text', ARGV[base + 2], unpack(ARGV, from, to))
      elseif mode == 'd' and modified[i] then
        id = redis.call('XADD', history, '*', 'time', modified[i], unpack(ARGV, from, to))
        ms = tonumber(modified[i])
      else
        id = redis.call('XADD', history, '*', unpack(ARGV, from, to))
      end
      if mode ~= 'c' or number == 1 then
        bases[#bases + 1] = {number, id, ms or tonumber(string.match(id, '^(%d+)'))}
      end
      newest_number = number
      at = to + 1
    end
    -- Trimmed exactly, from the newest base at or below the oldest revision the retention
    -- keeps (by count, or past the age limit): what it no longer keeps leaves the stream
    -- (XLEN, XRANGE, an AOF rewrite), not only `history`'s view, and never the tip. The work is
    -- the entries it drops.
    local oldest_kept = newest_number + 1 - tonumber(keep)
    local too_old = max_age and (now_ms - max_age) or nil
    local from_base
    for j = #bases, 1, -1 do
      if bases[j][1] <= oldest_kept or (too_old and bases[j][3] < too_old) then
        from_base = j
        break
      end
    end
    -- By age the oldest revision kept is the oldest within the limit: when that is the
    -- oldest base within it (what comes before it is past the limit), it is the base.
    if too_old then
      for j = 1, #bases do
        if bases[j][3] >= too_old then
          if not from_base or j > from_base then
            local before_ms
            if j > 1 and bases[j - 1][1] == bases[j][1] - 1 then
              before_ms = bases[j - 1][3]
            else
              local before = redis.call('XREVRANGE', history, '(' .. bases[j][2], '-', 'COUNT', 1)[1]
              before_ms = before and tonumber(string.match(before[1], '^(%d+)'))
            end
            if not before_ms or before_ms < too_old then
              from_base = j
            end
          end
          break
        end
      end
    end
    local kept = {}
    for j = from_base or 1, #bases do
      kept[#kept + 1] = string.format('%d:%s:%d', bases[j][1], bases[j][2], bases[j][3])
    end
    if from_base then
      redis.call('XTRIM', history, 'MINID', bases[from_base][2])
    end
    redis.call('HSET', KEYS[i], 'history_bases', table.concat(kept, ' '))
  end
end
return 0
end
local result = write_documents()
-- Written, lost or refused, the holder's turn ends here: its documents go to the next writer.
if token ~= '' then
  for j = 1, m do
    release(KEYS[2 * n + 1 + j], KEYS[2 * n + 1 + m + j], token, wake_ms)
  end
end
return result
"#
);

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
  key = 0, session = 0, updates = 0, text = 0, time = 0}
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
