//! The write script: documents written with compare-and-swap, with their revisions, and their
//! histories pruned, in one atomic step (see `shared_lua!` and `release_lua!` in `scripts.rs`).

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
-- Landed: with the time every written document now holds.
return {0, now}
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
