//! What a memory is made of: stores, scopes, documents and their versions.

use std::fmt;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{PersonalityId, UserId};

/// Which of the two documents of a conversation an update targets.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Store {
    /// The agent's notes: `MEMORY.md`, global or per personality.
    Memory,
    /// What the agent knows about the user: `USER.md`, always per user.
    User,
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Store::Memory => "memory",
            Store::User => "user",
        })
    }
}

/// Whose `MEMORY.md` a personality reads and writes.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryScope {
    /// Its own `personalities/<id>/MEMORY.md` (the default).
    #[default]
    PerPersonality,
    /// The deployment-wide `MEMORY.md`, shared by every global-scope personality.
    Global,
}

/// One document, named independently of the backend that stores it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum DocumentId {
    /// `MEMORY.md`, shared by global-scope personalities.
    GlobalMemory,
    /// `personalities/<personality>/MEMORY.md`.
    PersonalityMemory {
        /// Whose memory.
        personality: PersonalityId,
    },
    /// `users/<user>/USER.md`.
    UserProfile {
        /// Whose profile.
        user: UserId,
    },
}

impl DocumentId {
    /// The memory document a personality uses under `scope`.
    pub fn memory(personality: &PersonalityId, scope: MemoryScope) -> Self {
        match scope {
            MemoryScope::Global => DocumentId::GlobalMemory,
            MemoryScope::PerPersonality => DocumentId::PersonalityMemory {
                personality: personality.clone(),
            },
        }
    }

    /// The profile document of `user`.
    pub fn user(user: &UserId) -> Self {
        DocumentId::UserProfile { user: user.clone() }
    }

    /// Which store the document belongs to.
    pub fn store(&self) -> Store {
        match self {
            DocumentId::GlobalMemory | DocumentId::PersonalityMemory { .. } => Store::Memory,
            DocumentId::UserProfile { .. } => Store::User,
        }
    }

    /// Its path in the Ethos markdown layout, relative to the root, with `/` separators.
    /// Other backends use it as a readable key.
    pub fn relative_path(&self) -> String {
        match self {
            DocumentId::GlobalMemory => "MEMORY.md".to_owned(),
            DocumentId::PersonalityMemory { personality } => {
                format!("personalities/{personality}/MEMORY.md")
            }
            DocumentId::UserProfile { user } => format!("users/{user}/USER.md"),
        }
    }

    /// The document at `path` in the layout (the inverse of [`DocumentId::relative_path`]), or
    /// `None` for anything else, including paths with invalid ids.
    pub fn from_relative_path(path: &str) -> Option<Self> {
        match path.split('/').collect::<Vec<_>>().as_slice() {
            ["MEMORY.md"] => Some(DocumentId::GlobalMemory),
            ["personalities", personality, "MEMORY.md"] => Some(DocumentId::PersonalityMemory {
                personality: PersonalityId::new(*personality).ok()?,
            }),
            ["users", user, "USER.md"] => Some(DocumentId::UserProfile {
                user: UserId::new(*user).ok()?,
            }),
            _ => None,
        }
    }
}

impl fmt::Display for DocumentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DocumentId::GlobalMemory => f.write_str("the global MEMORY.md"),
            DocumentId::PersonalityMemory { personality } => {
                write!(f, "MEMORY.md of personality '{personality}'")
            }
            DocumentId::UserProfile { user } => write!(f, "USER.md of user '{user}'"),
        }
    }
}

/// An opaque token that changes whenever a document's content changes.
///
/// Compare versions for equality only: backends choose the form (a content hash, a counter).
/// A document that was never written has a version too, so a first write can be guarded.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Version(String);

impl Version {
    /// Wraps a backend's version token.
    pub fn new(token: impl Into<String>) -> Self {
        Version(token.into())
    }

    /// The token as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Lowercase hex SHA-256 of `text`'s UTF-8 bytes, as reports carry it.
pub fn sha256_hex(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

/// Where a document lives and which version it is at, without its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentMeta {
    /// Which document.
    pub id: DocumentId,
    /// Its current version.
    pub version: Version,
    /// Where the backend keeps it: a path or a key.
    pub location: String,
    /// When its content was last written, if it ever was (milliseconds since the Unix epoch on
    /// the wire).
    #[serde(default, with = "unix_millis")]
    pub modified: Option<SystemTime>,
}

/// A document's full text with its version and location, as read in one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// Which document.
    pub id: DocumentId,
    /// Its text; empty when it was never written.
    pub text: String,
    /// The version of exactly this text.
    pub version: Version,
    /// Where the backend keeps it: a path or a key.
    pub location: String,
    /// When its content was last written, by the backend's clock (a file's mtime, Postgres's
    /// `now()`, the writing Redis client's clock); `None` for a document never written. Compare it only between documents of one
    /// backend or hosts with synchronised clocks.
    #[serde(default, with = "unix_millis")]
    pub modified: Option<SystemTime>,
}

impl Document {
    /// The document without its text.
    pub fn meta(&self) -> DocumentMeta {
        DocumentMeta {
            id: self.id.clone(),
            version: self.version.clone(),
            location: self.location.clone(),
            modified: self.modified,
        }
    }
}

/// `time` as whole milliseconds since the Unix epoch, the form JSON clients read: 0 for a time
/// before it (a clock set far back), `u64::MAX` past what that holds.
pub fn unix_millis(time: SystemTime) -> u64 {
    time.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// The last millisecond RFC 3339 can show, 9999-12-31T23:59:59.999Z, as milliseconds since the
/// Unix epoch.
const LAST_SHOWN_MILLIS: u64 = 253_402_300_799_999;

/// A document's `modified` as JSON gives it (the CLI's `--json`, the HTTP API): whole
/// milliseconds since the Unix epoch, or `None` (null) for a time before 1970 or past the year
/// 9999 (a clock set far off), which the text forms show as `unknown (out of range)`. Not 0 or
/// a negative number: the API's `modified` is a count of milliseconds from 0 or null, and 0
/// would claim 1970-01-01.
pub fn shown_unix_millis(time: SystemTime) -> Option<u64> {
    time.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|since| u64::try_from(since.as_millis()).ok())
        .filter(|millis| *millis <= LAST_SHOWN_MILLIS)
}

/// `time` in RFC 3339 in UTC to the second (`2025-06-01T10:00:02Z`), or `unknown (out of
/// range)` for a stored time RFC 3339 cannot show (before 1970, past year 9999): a hand-set
/// clock must not crash whoever prints it.
pub fn format_utc(time: SystemTime) -> String {
    /// 10000-01-01T00:00:00Z.
    const YEAR_10000: u64 = 253_402_300_800;
    match time.duration_since(std::time::UNIX_EPOCH) {
        Ok(since) if since.as_secs() < YEAR_10000 => {
            humantime::format_rfc3339_seconds(time).to_string()
        }
        _ => "unknown (out of range)".to_owned(),
    }
}

/// `time` in UTC to the second as the history's lines show it, `2025-06-01 10:00:02`; `None`
/// for a time RFC 3339 cannot show (see [`format_utc`]), which each surface words its own way.
pub fn format_utc_seconds(time: SystemTime) -> Option<String> {
    format_utc(time)
        .strip_suffix('Z')
        .map(|seconds| seconds.replacen('T', " ", 1))
}

/// `time` in RFC 3339 in UTC to the millisecond, as JavaScript's `Date.prototype.toISOString`
/// writes it (`2025-06-01T10:00:02.000Z`, the form Ethos stores), clamped into the years
/// 1970..=9999 that the form can show: a hand-set clock must not crash whoever writes it.
pub fn format_utc_millis(time: SystemTime) -> String {
    /// 9999-12-31T23:59:59.999Z.
    const LAST: Duration = Duration::from_millis(253_402_300_799_999);
    let since = time
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .min(LAST);
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + since).to_string()
}

/// `time` as whole milliseconds from the Unix epoch, negative before it, saturating at
/// `i64`'s ends: the form stored revisions keep their time in, so that a time before 1970 (a
/// file's mtime from a clock set far back) reads back as itself, not as 1970.
pub fn signed_unix_millis(time: SystemTime) -> i64 {
    let millis = |span: Duration| i64::try_from(span.as_millis()).unwrap_or(i64::MAX);
    match time.duration_since(std::time::UNIX_EPOCH) {
        Ok(since) => millis(since),
        Err(before) => -millis(before.duration()),
    }
}

/// The time `millis` milliseconds from the Unix epoch (negative: before it), as
/// [`signed_unix_millis`] writes it; saturating at what the platform's clock can hold.
pub fn from_signed_unix_millis(millis: i64) -> SystemTime {
    let span = Duration::from_millis(millis.unsigned_abs());
    let moved = if millis < 0 {
        std::time::UNIX_EPOCH.checked_sub(span)
    } else {
        std::time::UNIX_EPOCH.checked_add(span)
    };
    moved.unwrap_or(std::time::UNIX_EPOCH)
}

/// `SystemTime` as whole milliseconds from the Unix epoch, negative before it (see
/// [`signed_unix_millis`]): the stored form of a revision's time. Reads either sign, and
/// unsigned counts past `i64` as written before times were signed.
pub(crate) mod unix_millis_required {
    use std::time::SystemTime;

    use serde::Serializer;
    use serde::de::{Deserializer, Error, Visitor};

    pub fn serialize<S: Serializer>(time: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(super::signed_unix_millis(*time))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        struct Millis;
        impl Visitor<'_> for Millis {
            type Value = SystemTime;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a time in milliseconds since the Unix epoch")
            }
            fn visit_i64<E: Error>(self, millis: i64) -> Result<SystemTime, E> {
                Ok(super::from_signed_unix_millis(millis))
            }
            fn visit_u64<E: Error>(self, millis: u64) -> Result<SystemTime, E> {
                Ok(super::from_signed_unix_millis(
                    i64::try_from(millis).unwrap_or(i64::MAX),
                ))
            }
        }
        d.deserialize_i64(Millis)
    }
}

/// `Option<SystemTime>` as whole milliseconds since the Unix epoch, the form JSON clients read.
mod unix_millis {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(time: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
        match time {
            Some(time) => match super::shown_unix_millis(*time) {
                Some(millis) => s.serialize_some(&millis),
                None => s.serialize_none(),
            },
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SystemTime>, D::Error> {
        let millis = Option::<u64>::deserialize(d)?;
        Ok(millis.map(|ms| UNIX_EPOCH + Duration::from_millis(ms)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_round_trip_and_nothing_else_parses() {
        let ada = PersonalityId::new("ada").unwrap();
        for id in [
            DocumentId::GlobalMemory,
            DocumentId::memory(&ada, MemoryScope::PerPersonality),
            DocumentId::user(&UserId::new("u-1").unwrap()),
        ] {
            assert_eq!(
                DocumentId::from_relative_path(&id.relative_path()),
                Some(id)
            );
        }
        for stray in [
            "",
            "USER.md",
            "personalities/ada/USER.md",
            "personalities/a.b/MEMORY.md",
            "users/u1/USER.md/x",
            "personalities//MEMORY.md",
        ] {
            assert_eq!(DocumentId::from_relative_path(stray), None, "{stray:?}");
        }
    }

    #[test]
    fn layout_is_the_ethos_one() {
        let p = PersonalityId::new("ada").unwrap();
        let u = UserId::new("u1").unwrap();
        assert_eq!(
            DocumentId::memory(&p, MemoryScope::Global).relative_path(),
            "MEMORY.md"
        );
        assert_eq!(
            DocumentId::memory(&p, MemoryScope::PerPersonality).relative_path(),
            "personalities/ada/MEMORY.md"
        );
        assert_eq!(DocumentId::user(&u).relative_path(), "users/u1/USER.md");
    }

    #[test]
    fn wire_forms() {
        let scope: MemoryScope = serde_json::from_str("\"per-personality\"").unwrap();
        assert_eq!(scope, MemoryScope::PerPersonality);
        assert_eq!(
            serde_json::to_string(&MemoryScope::Global).unwrap(),
            "\"global\""
        );
        assert_eq!(serde_json::to_string(&Store::User).unwrap(), "\"user\"");
        let id = DocumentId::user(&UserId::new("u1").unwrap());
        assert_eq!(
            serde_json::to_string(&id).unwrap(),
            r#"{"kind":"user-profile","user":"u1"}"#
        );
    }

    #[test]
    fn utc_millis_are_javascript_iso_strings_clamped_to_the_years_they_can_show() {
        use std::time::{Duration, UNIX_EPOCH};
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(format_utc_millis(at), "2023-11-14T22:13:20.123Z");
        assert_eq!(
            format_utc_millis(UNIX_EPOCH - Duration::from_secs(1)),
            "1970-01-01T00:00:00.000Z"
        );
        let far = UNIX_EPOCH + Duration::from_secs(400_000_000_000);
        assert_eq!(format_utc_millis(far), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn modified_is_unix_millis_on_the_wire() {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_123);
        let meta = DocumentMeta {
            id: DocumentId::GlobalMemory,
            version: Version::new("1"),
            location: "MEMORY.md".into(),
            modified: Some(at),
        };
        let json = serde_json::to_value(&meta).unwrap();
        assert_eq!(json["modified"], 1_700_000_000_123u64);
        assert_eq!(serde_json::from_value::<DocumentMeta>(json).unwrap(), meta);
        // A time JSON cannot give as a count from 1970 (before it, or past the year 9999) is
        // null, as the text forms say unknown; never 0 (1970-01-01) or u64::MAX.
        for far in [
            std::time::UNIX_EPOCH - std::time::Duration::from_secs(86_400),
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(253_402_300_800_000),
        ] {
            let json = serde_json::to_value(DocumentMeta {
                modified: Some(far),
                ..meta.clone()
            })
            .unwrap();
            assert_eq!(json["modified"], serde_json::Value::Null, "{far:?}");
            assert_eq!(format_utc(far), "unknown (out of range)");
        }
        let last = std::time::UNIX_EPOCH + std::time::Duration::from_millis(253_402_300_799_999);
        assert_eq!(shown_unix_millis(last), Some(253_402_300_799_999));
        assert_eq!(shown_unix_millis(std::time::UNIX_EPOCH), Some(0));
        let never: DocumentMeta =
            serde_json::from_str(r#"{"id":{"kind":"global-memory"},"version":"0","location":""}"#)
                .unwrap();
        assert_eq!(never.modified, None);
    }

    #[test]
    fn signed_millis_keep_times_before_1970_and_saturate_at_the_ends() {
        use std::time::UNIX_EPOCH;
        let day = Duration::from_secs(86_400);
        for (time, millis) in [
            (UNIX_EPOCH, 0),
            (
                UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
                1_700_000_000_123,
            ),
            (UNIX_EPOCH - day, -86_400_000),
            (UNIX_EPOCH - Duration::from_millis(1), -1),
        ] {
            assert_eq!(signed_unix_millis(time), millis, "{time:?}");
            assert_eq!(from_signed_unix_millis(millis), time, "{millis}");
        }
        let far = UNIX_EPOCH + Duration::from_secs(u64::MAX / 1_000);
        assert_eq!(signed_unix_millis(far), i64::MAX);
        // Past what the clock holds: the epoch rather than a panic.
        let _ = from_signed_unix_millis(i64::MIN);
        let _ = from_signed_unix_millis(i64::MAX);
    }

    #[test]
    fn a_revisions_stored_time_reads_back_as_itself_before_1970_too() {
        use std::time::UNIX_EPOCH;
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Stored {
            #[serde(with = "unix_millis_required")]
            time: SystemTime,
        }
        let before_1970 = Stored {
            time: UNIX_EPOCH - Duration::from_secs(86_400),
        };
        let json = serde_json::to_string(&before_1970).unwrap();
        assert_eq!(json, r#"{"time":-86400000}"#);
        assert_eq!(serde_json::from_str::<Stored>(&json).unwrap(), before_1970);
        // Written before times were signed: a count past i64 (a clock far ahead) still reads.
        let old: Stored = serde_json::from_str(r#"{"time":18446744073709551615}"#).unwrap();
        assert_eq!(signed_unix_millis(old.time), i64::MAX);
        let wrong = serde_json::from_str::<Stored>(r#"{"time":"soon"}"#).unwrap_err();
        assert!(
            wrong
                .to_string()
                .contains("expected a time in milliseconds since the Unix epoch"),
            "{wrong}"
        );
    }

    #[test]
    fn the_history_shows_times_to_the_second_or_not_at_all() {
        use std::time::UNIX_EPOCH;
        let at = UNIX_EPOCH + Duration::from_millis(1_748_772_002_900);
        assert_eq!(
            format_utc_seconds(at).as_deref(),
            Some("2025-06-01 10:00:02")
        );
        assert_eq!(
            format_utc_seconds(UNIX_EPOCH - Duration::from_secs(1)),
            None
        );
        assert_eq!(
            format_utc_seconds(UNIX_EPOCH + Duration::from_secs(253_402_300_800)),
            None
        );
    }

    #[test]
    fn sha256_is_hex_of_utf8() {
        assert_eq!(
            sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
