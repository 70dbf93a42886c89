//! What a revision is: one change of one document, and the tip the next one builds on.

use std::fmt;
use std::time::{Instant, SystemTime};

use serde::{Deserialize, Serialize};

use crate::document::{Document, DocumentId, Version};
use crate::history::diff::unified_diff;
use crate::id::{PersonalityId, UserId};
use crate::idempotency::key::IdempotencyKey;
use crate::sha256::sha256_hex;
use crate::update::MemoryUpdate;

/// Where a write came from, as its revision records it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Surface {
    /// An agent's memory tool call (`memory_add`, `memory mcp`, ...).
    Tool,
    /// The `memory` command line.
    Cli,
    /// The Memory page.
    Web,
    /// Code calling the provider directly (the default).
    #[default]
    Api,
    /// A change made outside agent-memory (an editor, another program), noticed afterwards.
    External,
}

impl Surface {
    /// Every surface, in the order the contract lists them.
    pub const ALL: [Surface; 5] = [
        Surface::Tool,
        Surface::Cli,
        Surface::Web,
        Surface::Api,
        Surface::External,
    ];
}

impl std::str::FromStr for Surface {
    type Err = String;

    /// The surface [`Surface`]'s `Display` names.
    fn from_str(name: &str) -> Result<Surface, String> {
        Surface::ALL
            .into_iter()
            .find(|surface| surface.to_string() == name)
            .ok_or_else(|| format!("{name:?} is not tool, cli, web, api or external"))
    }
}

impl fmt::Display for Surface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Surface::Tool => "tool",
            Surface::Cli => "cli",
            Surface::Web => "web",
            Surface::Api => "api",
            Surface::External => "external",
        })
    }
}

/// One change of one document: what it was before and after, when, and who made it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revision {
    /// Its place in the document's history: 1 for the first, one more for each after it.
    pub number: u64,
    /// The document changed.
    pub document: DocumentId,
    /// The document's version before the change.
    pub version_before: Version,
    /// The document's version after it (what `if_match` takes).
    pub version_after: Version,
    /// SHA-256 (lowercase hex) of the text before.
    pub sha256_before: String,
    /// SHA-256 (lowercase hex) of the text after.
    pub sha256_after: String,
    /// UTF-8 bytes before.
    pub bytes_before: usize,
    /// UTF-8 bytes after.
    pub bytes_after: usize,
    /// When it was recorded, by the backend's clock (the server's where there is one;
    /// milliseconds since the Unix epoch on the wire). For an external change: when it was
    /// made, where the backend can tell (a file's mtime), else when it was noticed.
    #[serde(with = "crate::time::unix_millis_required")]
    #[cfg_attr(feature = "openapi", schema(value_type = u64))]
    pub time: SystemTime,
    /// Where the change came from.
    pub surface: Surface,
    /// The personality whose call made it; `None` for external changes and purges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub personality: Option<PersonalityId>,
    /// The user of that call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserId>,
    /// The call's idempotency key, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<IdempotencyKey>,
    /// The caller's session id, when it gave one ([`crate::MemoryContext::with_session`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The updates the call applied to this document, in order (their JSON form); empty for
    /// external changes and purges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub updates: Vec<MemoryUpdate>,
    /// The whole text after the change; in what `history` gives, `None` only for a purge's
    /// tombstone, which keeps no content, and a redacted revision. In storage, `None` too for
    /// a revision kept as its change alone ([`Revision::is_change_only`]), whose text is
    /// rebuilt from its updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// When its text and updates were erased ([`crate::MemoryProvider::redact`]), by the
    /// backend's clock; `None` for a revision not redacted.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::time::unix_millis"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<u64>))]
    pub redacted_at: Option<SystemTime>,
}

impl Revision {
    /// What it did, in a few words for a log line: `purged`, `hand edit`, or its updates'
    /// actions (`add, edit`).
    pub fn what_changed(&self) -> String {
        if self.is_tombstone() {
            return "purged".to_owned();
        }
        if self.is_redacted() {
            return "redacted".to_owned();
        }
        if self.surface == Surface::External {
            return "hand edit".to_owned();
        }
        if self.updates.is_empty() {
            return "no updates recorded".to_owned();
        }
        let actions: Vec<&str> = self.updates.iter().map(MemoryUpdate::action).collect();
        actions.join(", ")
    }

    /// Whether this is the tombstone a purge leaves: no content, nothing to revert to.
    pub fn is_tombstone(&self) -> bool {
        self.text.is_none() && self.updates.is_empty() && !self.is_redacted()
    }

    /// Whether its text and updates were erased ([`crate::MemoryProvider::redact`]): it keeps
    /// its number, time, origin, sizes and hashes, and nothing to revert to.
    pub fn is_redacted(&self) -> bool {
        self.redacted_at.is_some()
    }

    /// This revision with its text and updates erased at `at`, as a redaction leaves it. A
    /// rename's update stays: it holds the note's paths, no text, and is how history follows
    /// the note across the rename.
    pub fn redacted(&self, at: SystemTime) -> Revision {
        let mut redacted = self.clone();
        redacted.text = None;
        redacted
            .updates
            .retain(|update| matches!(update, MemoryUpdate::Rename { .. }));
        redacted.redacted_at = Some(at);
        redacted
    }

    /// Whether it is the arrival of a note moved here by a `rename`: its text cannot be rebuilt
    /// from its updates, so every store keeps it whole.
    pub fn is_arrival(&self) -> bool {
        matches!(
            self.updates.as_slice(),
            [MemoryUpdate::Rename { to, .. }] if Some(to) == self.document.note_path()
        )
    }

    /// Whether it is stored as its change alone: no text, but the updates that make its text from
    /// the revision before it (see [`crate::raw::kept_revisions`]). What a store reads back for a
    /// revision that is no checkpoint
    /// ([`Retention::is_checkpoint`](crate::Retention::is_checkpoint)); never what
    /// [`crate::MemoryProvider::history`] returns.
    pub fn is_change_only(&self) -> bool {
        self.text.is_none() && !self.updates.is_empty() && !self.is_redacted()
    }

    /// Whether a store keeps this revision's whole text, so that the revisions after it can be
    /// rebuilt from it without any before: a checkpoint, a hand edit or a tombstone (the
    /// empty document). A store may drop every other revision that is older than the newest
    /// such base at or below the oldest revision its retention keeps. A redacted revision
    /// counts as one too: it has no text, but the revision after it is stored whole (the
    /// redaction's rebase), so nothing after it is rebuilt through it.
    pub fn is_base(&self) -> bool {
        !self.is_change_only()
    }

    /// Whether its text can be rebuilt without the revision before it: it has its text, is
    /// the first, or is a change whose updates start with `replace`.
    pub fn stands_alone(&self) -> bool {
        !self.is_change_only()
            || self.number == 1
            || matches!(self.updates.first(), Some(MemoryUpdate::Replace { .. }))
    }

    /// Who made it, as the history's lines show it: `personality ada, user grace, session s1`,
    /// each part only where known; `None` when nothing is (a hand edit, a purge from the CLI).
    pub fn who(&self) -> Option<String> {
        let parts: Vec<String> = [
            (
                "personality",
                self.personality.as_ref().map(|id| id.as_str()),
            ),
            ("user", self.user.as_ref().map(|id| id.as_str())),
            ("session", self.session.as_deref()),
        ]
        .into_iter()
        .filter_map(|(what, id)| id.map(|id| format!("{what} {id}")))
        .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// The text this revision started from, where `history` (newest first, as
    /// [`crate::MemoryProvider::history`] gives it) tells it: the empty document before the
    /// first revision or after a purge's tombstone, else the text of the revision just before
    /// it. `None` when that one is not kept (pruned) or was redacted, or for a tombstone
    /// itself.
    pub fn text_before<'a>(&self, history: &'a [Revision]) -> Option<&'a str> {
        if self.is_tombstone() {
            return None;
        }
        let Some(before) = self.number.checked_sub(1).filter(|before| *before > 0) else {
            return Some("");
        };
        history
            .iter()
            .find(|revision| revision.number == before && !revision.is_redacted())
            .map(|revision| revision.text.as_deref().unwrap_or(""))
    }

    /// What this revision changed, as a unified diff against the revision before it in
    /// `history` (see [`Revision::text_before`]), its labels `<name>@<number>`; empty when the
    /// text did not change. `None` when there is nothing to compare: a tombstone, or the
    /// revision before it is not kept. Past `deadline` the diff is exact but not the smallest
    /// (see [`unified_diff`]).
    pub fn diff_in(&self, history: &[Revision], name: &str, deadline: Instant) -> Option<String> {
        let after = self.text.as_deref()?;
        let before = self.text_before(history)?;
        Some(unified_diff(
            before,
            after,
            &format!("{name}@{}", self.number - 1),
            &format!("{name}@{}", self.number),
            deadline,
        ))
    }

    /// The tombstone a purge of `document` leaves after `tip`: the size of the erased text,
    /// and nothing derived from its content: no text, and the hash and version of the empty
    /// document on both sides (a hash of personal text could confirm a guess of it, and
    /// markdown versions are such hashes).
    pub fn tombstone(
        document: &DocumentId,
        tip: &RevisionTip,
        never_written: Version,
        surface: Surface,
        time: SystemTime,
    ) -> Revision {
        Revision {
            number: tip.number.saturating_add(1),
            document: document.clone(),
            version_before: never_written.clone(),
            version_after: never_written,
            sha256_before: sha256_hex(""),
            sha256_after: sha256_hex(""),
            bytes_before: tip.bytes_after,
            bytes_after: 0,
            time,
            surface,
            personality: None,
            user: None,
            idempotency_key: None,
            session: None,
            updates: Vec::new(),
            text: None,
            redacted_at: None,
        }
    }
}

/// What a purge erased.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Purged {
    /// The document.
    pub document: DocumentId,
    /// Where the backend kept it.
    pub location: String,
    /// The size of the text erased (0 when there was none).
    pub bytes: usize,
    /// How many revisions were erased with it.
    pub revisions: usize,
    /// The tombstone left in its history; `None` when history is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tombstone: Option<Revision>,
}

/// What the newest recorded revision says a document holds: what the next revision builds on,
/// and what tells a change nobody recorded (a hand edit) from the document as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevisionTip {
    /// Its number; 0 when nothing was ever recorded.
    pub number: u64,
    /// The version it left the document at.
    pub version_after: Version,
    /// The SHA-256 of the text it left.
    pub sha256_after: String,
    /// The size of the text it left.
    pub bytes_after: usize,
}

impl RevisionTip {
    /// The tip of a document with no recorded revision: the empty document, at the backend's
    /// version for a document never written.
    pub fn empty(never_written: Version) -> RevisionTip {
        RevisionTip {
            number: 0,
            version_after: never_written,
            sha256_after: sha256_hex(""),
            bytes_after: 0,
        }
    }

    /// The tip that `revision` makes.
    pub fn of(revision: &Revision) -> RevisionTip {
        RevisionTip {
            number: revision.number,
            version_after: revision.version_after.clone(),
            sha256_after: revision.sha256_after.clone(),
            bytes_after: revision.bytes_after,
        }
    }

    /// The revision recording a change nobody reported: `Some` when `current` (the document as
    /// read now) is not the text this tip recorded. Its time is the document's `modified`
    /// (a file's mtime) where known, else `now`.
    pub fn unrecorded(&self, current: &Document, now: SystemTime) -> Option<Revision> {
        self.unrecorded_hashed(current, sha256_hex(&current.text), now)
    }

    /// [`RevisionTip::unrecorded`] given `sha256`, the hash of `current`'s text.
    pub(crate) fn unrecorded_hashed(
        &self,
        current: &Document,
        sha256: String,
        now: SystemTime,
    ) -> Option<Revision> {
        (sha256 != self.sha256_after).then(|| Revision {
            number: self.number.saturating_add(1),
            document: current.id.clone(),
            version_before: self.version_after.clone(),
            version_after: current.version.clone(),
            sha256_before: self.sha256_after.clone(),
            sha256_after: sha256,
            bytes_before: self.bytes_after,
            bytes_after: current.text.len(),
            time: current.modified.unwrap_or(now),
            surface: Surface::External,
            personality: None,
            user: None,
            idempotency_key: None,
            session: None,
            updates: Vec::new(),
            text: Some(current.text.clone()),
            redacted_at: None,
        })
    }
}
