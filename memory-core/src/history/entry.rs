//! A revision as lists show it (`memory log --json`, the HTTP API).

use serde::Serialize;

use crate::document::Version;
use crate::document::format_utc;
use crate::history::revision::{Revision, Surface};
use crate::id::{PersonalityId, UserId};
use crate::idempotency::key::IdempotencyKey;
use crate::time::shown_unix_millis;
use crate::update::MemoryUpdate;

/// A revision as the `memory log --json` command and the HTTP API list it: its wire form with
/// the document's layout `path`, `version` (the version after it, what `if_match` takes),
/// `time_utc` beside `time` and `tombstone`, every optional field present (null when unknown)
/// so readers need not test for keys, and the text after it only when asked for (a hundred
/// revisions of a long document are a lot to list).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RevisionEntry {
    /// Its number: 1 for the first, one more for each after it.
    pub number: u64,
    /// The document's path in the layout (`personalities/ada/MEMORY.md`).
    pub path: String,
    /// The version it left the document at: what `if_match` takes.
    pub version: Version,
    /// The version before it.
    pub version_before: Version,
    /// When it was recorded, in milliseconds since the Unix epoch; null for a time before 1970
    /// or past the year 9999 (a clock set far off, or a file's time from one), which
    /// `time_utc` shows as unknown.
    pub time: Option<u64>,
    /// `time` in RFC 3339, UTC, or `unknown (out of range)`.
    pub time_utc: String,
    /// Where the change came from.
    pub surface: Surface,
    /// The personality whose call made it.
    pub personality: Option<PersonalityId>,
    /// The user of that call.
    pub user: Option<UserId>,
    /// The call's idempotency key.
    pub idempotency_key: Option<IdempotencyKey>,
    /// The caller's session.
    pub session: Option<String>,
    /// UTF-8 bytes before.
    pub bytes_before: usize,
    /// UTF-8 bytes after.
    pub bytes_after: usize,
    /// SHA-256 (lowercase hex) of the text before.
    pub sha256_before: String,
    /// SHA-256 (lowercase hex) of the text after.
    pub sha256_after: String,
    /// The updates it applied, in order.
    pub updates: Vec<MemoryUpdate>,
    /// A purge's tombstone: no content, nothing to revert to.
    pub tombstone: bool,
    /// When its text and updates were erased, in milliseconds since the Unix epoch; null for a
    /// revision not redacted.
    pub redacted_at: Option<u64>,
    /// The whole text after it (null for a tombstone or a redacted revision), when asked for;
    /// absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub text: Option<Option<String>>,
}

impl RevisionEntry {
    /// `revision` as listed, with its text when `with_text`.
    pub fn new(revision: &Revision, with_text: bool) -> RevisionEntry {
        RevisionEntry {
            number: revision.number,
            path: revision.document.relative_path(),
            version: revision.version_after.clone(),
            version_before: revision.version_before.clone(),
            time: shown_unix_millis(revision.time),
            time_utc: format_utc(revision.time),
            surface: revision.surface,
            personality: revision.personality.clone(),
            user: revision.user.clone(),
            idempotency_key: revision.idempotency_key.clone(),
            session: revision.session.clone(),
            bytes_before: revision.bytes_before,
            bytes_after: revision.bytes_after,
            sha256_before: revision.sha256_before.clone(),
            sha256_after: revision.sha256_after.clone(),
            updates: revision.updates.clone(),
            tombstone: revision.is_tombstone(),
            redacted_at: revision.redacted_at.and_then(shown_unix_millis),
            text: with_text.then(|| revision.text.clone()),
        }
    }
}
