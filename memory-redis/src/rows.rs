//! Stored hashes and stream entries as the core's types: a document as the read script answers
//! for it, its tip, a revision entry; and a revision as the fields the write script stores.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use memory_core::raw::{Fetched, RevisionTip, StoredRevision};
use memory_core::{Document, DocumentId, MemoryError, Retention, Revision, Version};

use crate::store::RedisStore;

/// The largest version the write script counts exactly: Lua numbers are doubles.
const MAX_VERSION: u64 = (1 << 53) - 1;

/// The last millisecond of the year 9999: a later `updated_at_ms` is no clock's reading.
const LAST_MILLISECOND: u64 = 253_402_300_799_999;

impl RedisStore {
    /// Document `id` at `key`, with history at `history_key`, from what `read_document`
    /// answered for it.
    pub(crate) fn fetched(
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
    pub(crate) fn document(
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
    pub(crate) fn tip(&self, key: &str, fields: [&Vec<u8>; 4]) -> Result<RevisionTip, MemoryError> {
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
        let redacted_at = match take("redacted") {
            None => None,
            Some(time) => Some(
                time.parse::<u64>()
                    .ok()
                    .filter(|millis| *millis <= LAST_MILLISECOND)
                    .map(|millis| UNIX_EPOCH + Duration::from_millis(millis))
                    .ok_or_else(|| {
                        corrupt("its redacted is not a time in milliseconds".to_owned())
                    })?,
            ),
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
            redacted_at,
        };
        stored.check(document, &self.key_location(key))
    }

    /// A revision as the write script stores it: its fields but the text (sent apart, so the
    /// common case, the document's new content, is not sent twice) and the time (the entry
    /// id, stamped by the server).
    pub(crate) fn entry_fields(
        revision: &Revision,
    ) -> Result<Vec<(&'static str, String)>, MemoryError> {
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
    pub(crate) fn revisions(
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
pub(crate) fn max_age_arg(retention: &Retention) -> String {
    retention.max_age.map_or(String::new(), |age| {
        age.as_millis().min(u128::from(MAX_VERSION)).to_string()
    })
}

/// The items of an array reply.
pub(crate) fn array(value: &redis::Value) -> Option<&[redis::Value]> {
    match value {
        redis::Value::Array(items) => Some(items),
        _ => None,
    }
}

/// The bytes of a string reply.
pub(crate) fn bulk(value: &redis::Value) -> Option<&[u8]> {
    match value {
        redis::Value::BulkString(bytes) => Some(bytes),
        _ => None,
    }
}

/// The server's `TIME` (seconds, microseconds) as a time.
pub(crate) fn server_time(seconds: Option<&[u8]>, micros: Option<&[u8]>) -> Option<SystemTime> {
    let parse = |bytes: Option<&[u8]>| std::str::from_utf8(bytes?).ok()?.parse::<u64>().ok();
    let at =
        Duration::from_secs(parse(seconds)?).checked_add(Duration::from_micros(parse(micros)?))?;
    UNIX_EPOCH.checked_add(at)
}

/// The fields a revision entry may have; any other is not ours.
const ENTRY_FIELDS: [&str; 16] = [
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
    "redacted",
];

/// A document's `updated_at_ms` as its `modified` time. Empty (a hash written by hand) is
/// unknown; so is an integer no clock gives, before 1970 or after the year 9999, rather than a
/// time that overflows or breaks whoever formats it. Anything but an integer is corrupt.
pub(crate) fn modified_at(millis: &[u8]) -> Result<Option<SystemTime>, &'static str> {
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
