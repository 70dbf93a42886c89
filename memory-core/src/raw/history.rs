//! History: every write a revision, recorded in the same atomic step as the write, so a bad
//! rewrite can be seen, compared and undone. The rules are here, pure; backends only store them.
//!
//! A document's revisions are numbered from 1, one more per revision, never reused (a purge
//! leaves a tombstone that the numbering continues from). Each revision holds the text the
//! document had after it, so any kept revision can be shown, compared and reverted to.
//!
//! ```
//! # use memory_core::*;
//! # async fn demo() -> Result<(), MemoryError> {
//! let memory = InMemoryProvider::new();
//! let ctx = MemoryContext::new(PersonalityId::new("ada")?, UserId::new("u1")?)
//!     .with_surface(Surface::Tool);
//! memory.sync(&ctx, &[MemoryUpdate::add(Store::Memory, "Likes tea.")], &IfMatch::NONE).await?;
//! memory.sync(&ctx, &[MemoryUpdate::replace(Store::Memory, "")], &IfMatch::NONE).await?;
//! let log = memory.history(&ctx.document(Store::Memory), 10).await?;
//! assert_eq!(log[0].number, 2, "newest first");
//! // Undo the bad rewrite: itself a revision, so it can be undone too.
//! memory.revert(&ctx, Store::Memory, 1, None).await?;
//! assert_eq!(memory.read(&ctx.document(Store::Memory)).await?.text, "Likes tea.\n");
//! # Ok(()) }
//! ```

use std::fmt;
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use crate::{
    Document, DocumentId, IdempotencyKey, MemoryError, MemoryUpdate, PersonalityId, UserId,
    Version, sha256_hex,
};

/// Revisions kept per document unless a provider is configured otherwise.
pub const DEFAULT_KEEP: usize = 100;

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
    #[serde(with = "crate::document::unix_millis_required")]
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
    /// tombstone, which keeps no content. In storage, `None` too for a revision kept as its
    /// change alone ([`Revision::is_change_only`]), whose text is rebuilt from its updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl Revision {
    /// What it did, in a few words for a log line: `purged`, `hand edit`, or its updates'
    /// actions (`add, edit`).
    pub fn what_changed(&self) -> String {
        if self.is_tombstone() {
            return "purged".to_owned();
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
        self.text.is_none() && self.updates.is_empty()
    }

    /// Whether it is stored as its change alone: no text, but the updates that make its text
    /// from the revision before it (see [`crate::raw::kept_revisions`]). What a store reads back
    /// for a revision that is no checkpoint ([`Retention::is_checkpoint`]); never what
    /// [`crate::MemoryProvider::history`] returns.
    pub fn is_change_only(&self) -> bool {
        self.text.is_none() && !self.updates.is_empty()
    }

    /// Whether a store keeps this revision's whole text, so that the revisions after it can be
    /// rebuilt from it without any before: a checkpoint, a hand edit or a tombstone (the
    /// empty document). A store may drop every other revision that is older than the newest
    /// such base at or below the oldest revision its retention keeps.
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
    /// it. `None` when that one is not kept (pruned), or for a tombstone itself.
    pub fn text_before<'a>(&self, history: &'a [Revision]) -> Option<&'a str> {
        if self.is_tombstone() {
            return None;
        }
        let Some(before) = self.number.checked_sub(1).filter(|before| *before > 0) else {
            return Some("");
        };
        history
            .iter()
            .find(|revision| revision.number == before)
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
        }
    }
}

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
    /// The whole text after it (null for a tombstone), when asked for; absent otherwise.
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
            time: crate::shown_unix_millis(revision.time),
            time_utc: crate::format_utc(revision.time),
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
            text: with_text.then(|| revision.text.clone()),
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
        })
    }
}

/// A document's kept revisions as a reader should see them: newest first, at most `limit`,
/// headed by an external revision for a change made since the newest one was recorded
/// (numbered as the next write will record it), so the log has no silent gap. That one counts
/// as the newest for `retention`: the view shows what the next write will keep, never more
/// than `keep`.
///
/// `recorded` is newest first; `current` is the document read in the same step.
pub fn history_view(
    mut recorded: Vec<Revision>,
    tip: &RevisionTip,
    current: &Document,
    limit: usize,
    now: SystemTime,
    retention: &Retention,
) -> Vec<Revision> {
    if let Some(external) = tip.unrecorded(current, now) {
        recorded.retain(|revision| {
            !retention.prunes(revision.number, revision.time, external.number, now)
        });
        recorded.insert(0, external);
    }
    recorded.truncate(limit);
    recorded
}

/// How much history a provider keeps per document: the newest `keep` revisions, and of those
/// only the ones younger than `max_age` when it is set. `keep = 0` keeps none: history off.
///
/// In a provider's configuration: `history = { keep = 100, max_age_days = 90 }`, both optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "RetentionConfig", into = "RetentionConfig")]
pub struct Retention {
    /// Revisions kept per document (default [`DEFAULT_KEEP`]); 0 records none.
    pub keep: usize,
    /// Revisions older than this are pruned too; `None` (the default) keeps them by count only.
    pub max_age: Option<Duration>,
}

/// [`Retention`] as configuration files write it.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RetentionConfig {
    #[serde(default = "default_keep")]
    keep: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_age_days: Option<u32>,
}

fn default_keep() -> usize {
    DEFAULT_KEEP
}

impl From<RetentionConfig> for Retention {
    fn from(config: RetentionConfig) -> Self {
        Retention {
            keep: config.keep,
            max_age: config
                .max_age_days
                .map(|days| Duration::from_secs(u64::from(days) * 86_400)),
        }
    }
}

impl From<Retention> for RetentionConfig {
    fn from(retention: Retention) -> Self {
        RetentionConfig {
            keep: retention.keep,
            max_age_days: retention
                .max_age
                .map(|age| u32::try_from(age.as_secs().div_ceil(86_400)).unwrap_or(u32::MAX)),
        }
    }
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            keep: DEFAULT_KEEP,
            max_age: None,
        }
    }
}

impl Retention {
    /// Keeps nothing: writes record no revision.
    pub const OFF: Retention = Retention {
        keep: 0,
        max_age: None,
    };

    /// Whether a purge that erased a text (`erased_text`) or `erased_revisions` revisions
    /// leaves a tombstone: when history is on and there was something to erase. Each store
    /// stores it in the purge's own atomic step (Redis's purge script follows this rule).
    pub fn leaves_tombstone(&self, erased_text: bool, erased_revisions: usize) -> bool {
        self.is_on() && (erased_text || erased_revisions > 0)
    }

    /// How often a write's revision is stored whole, a checkpoint: every `keep`th, and at
    /// least every [`CHECKPOINT_EVERY_MOST`]th. Between checkpoints a revision keeps only its
    /// updates, and its text is rebuilt from the checkpoint before it. With a checkpoint per
    /// `keep` revisions the kept revisions and those back to the checkpoint below them hold at
    /// most two whole texts, and reading one rebuilds it over at most
    /// [`CHECKPOINT_EVERY_MOST`] - 1 revisions.
    pub fn checkpoint_every(&self) -> u64 {
        u64::try_from(self.keep)
            .unwrap_or(u64::MAX)
            .clamp(1, CHECKPOINT_EVERY_MOST)
    }

    /// Whether revision `number`, written by an agent at `now` on a document last written at
    /// `last_write`, is stored whole: every [`Retention::checkpoint_every`]th, and with an age
    /// limit also the first write of each half of it (`max_age / 2` since the Unix epoch), so
    /// that the base of the oldest revision the age limit keeps is at most half the limit
    /// older, and a store drops what is past it by one and a half times the limit at most.
    /// Hand edits are always stored whole: the writer does not hold the text they replaced,
    /// so it could not write them as a change.
    pub fn is_checkpoint(
        &self,
        number: u64,
        last_write: Option<SystemTime>,
        now: SystemTime,
    ) -> bool {
        let new_period = self.max_age.is_some_and(|age| {
            let half = (age / 2).as_millis().max(1);
            let period = |time: SystemTime| {
                time.duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |since| since.as_millis() / half)
            };
            last_write.is_none_or(|last| period(last) != period(now))
        });
        new_period || number.is_multiple_of(self.checkpoint_every())
    }

    /// Keeps the newest `keep` revisions of each document.
    pub fn keep(keep: usize) -> Retention {
        Retention {
            keep,
            max_age: None,
        }
    }

    /// Also prunes revisions older than `max_age`.
    pub fn with_max_age(mut self, max_age: Duration) -> Retention {
        self.max_age = Some(max_age);
        self
    }

    /// Whether writes record revisions at all.
    pub fn is_on(&self) -> bool {
        self.keep > 0
    }

    /// The lowest revision number kept once `tip` is the newest: older ones are pruned.
    pub fn oldest_kept(&self, tip: u64) -> u64 {
        let keep = u64::try_from(self.keep).unwrap_or(u64::MAX);
        (tip + 1).saturating_sub(keep).max(1)
    }

    /// Whether a revision made at `time` is past the age limit at `now`. A time in the future
    /// (a clock set back) is never past it.
    pub fn too_old(&self, time: SystemTime, now: SystemTime) -> bool {
        self.max_age
            .is_some_and(|max_age| now.duration_since(time).is_ok_and(|age| age > max_age))
    }

    /// Whether revision `number`, made at `time`, is pruned once `tip` is the newest. The tip
    /// itself is always kept, however old: it is what tells the next hand edit apart.
    pub fn prunes(&self, number: u64, time: SystemTime, tip: u64, now: SystemTime) -> bool {
        number < tip && (number < self.oldest_kept(tip) || self.too_old(time, now))
    }

    /// How many of `stored` (each revision's number and time) it keeps once `tip` is the
    /// newest, at `now`: what `history` shows and a purge reports erasing, whatever a store
    /// holds beyond them to rebuild the kept ones from. With history off, every one (what an
    /// earlier configuration left).
    pub fn count_kept(
        &self,
        stored: impl IntoIterator<Item = (u64, SystemTime)>,
        tip: u64,
        now: SystemTime,
    ) -> usize {
        stored
            .into_iter()
            .filter(|&(number, time)| !self.is_on() || !self.prunes(number, time, tip, now))
            .count()
    }
}

/// The most revisions between two checkpoints: see [`Retention::checkpoint_every`].
pub const CHECKPOINT_EVERY_MOST: u64 = 100;

/// How many of a document's oldest stored revisions a store may drop once `tip` is the
/// newest, at `now`: those below the newest base ([`Revision::is_base`], or the first) at or
/// below the oldest revision `retention` keeps, so that every kept revision can still be
/// rebuilt. `stored` gives each revision's number, time and whether it is a base, oldest
/// first.
pub fn droppable(
    stored: impl IntoIterator<Item = (u64, SystemTime, bool)>,
    tip: u64,
    now: SystemTime,
    retention: &Retention,
) -> usize {
    let mut from = 0;
    for (index, (number, time, base)) in stored.into_iter().enumerate() {
        if base || number == 1 {
            from = index;
        }
        if !retention.prunes(number, time, tip, now) {
            break;
        }
    }
    from
}

/// The revisions of `recorded` (newest first, as a store reads them, back at least to the
/// base of the oldest one kept) that `retention` keeps once `tip` is the newest, at `now`,
/// each with its text: a revision stored as its change alone is rebuilt (see
/// `rebuild_texts`). A store reads back to a base when the oldest it read does not
/// [`Revision::stands_alone`].
///
/// # Errors
/// [`MemoryError::Corrupt`] at `<location>#<number>` for a kept revision that cannot be
/// rebuilt: a damaged chain, or one whose base is missing.
pub fn kept_revisions(
    recorded: Vec<Revision>,
    tip: u64,
    now: SystemTime,
    retention: &Retention,
    location: &str,
) -> Result<Vec<Revision>, MemoryError> {
    let (rebuilt, unreachable) = rebuild_texts(recorded, location)?;
    // A change past the retention may have lost its base with it; a kept one not.
    if let Some(lost) = unreachable
        && !retention.prunes(lost.number, lost.time, tip, now)
    {
        return Err(MemoryError::Corrupt {
            location: format!("{location}#{}", lost.number),
            reason: "it is stored as a change, and no revision before it is kept to rebuild \
                     it from"
                .to_owned(),
        });
    }
    Ok(rebuilt
        .into_iter()
        .filter(|revision| !retention.prunes(revision.number, revision.time, tip, now))
        .collect())
}

/// `revisions` (newest first, as a store reads them) with the text of every revision stored
/// as its change alone ([`Revision::is_change_only`]) rebuilt: its updates replayed on the
/// text of the revision before it (the empty document before revision 1, after a purge's
/// tombstone, or before a batch that starts with `replace`), each checked against the size
/// and SHA-256 recorded with it.
///
/// The oldest revisions may be changes whose base is older than what was read: they are
/// left out, and the second value is the newest of them. Anything else that cannot be
/// rebuilt is a damaged chain.
///
/// # Errors
/// [`MemoryError::Corrupt`] at `<location>#<number>` for a revision whose text is not the one
/// recorded, or whose revision before it is missing while older ones are there.
fn rebuild_texts(
    revisions: Vec<Revision>,
    location: &str,
) -> Result<(Vec<Revision>, Option<Revision>), MemoryError> {
    let corrupt = |number: u64, reason: String| MemoryError::Corrupt {
        location: format!("{location}#{number}"),
        reason,
    };
    let mut rebuilt: Vec<Revision> = Vec::with_capacity(revisions.len());
    let mut unreachable = None;
    // The number and text of the revision just rebuilt or read.
    let mut previous: Option<(u64, String)> = None;
    for mut revision in revisions.into_iter().rev() {
        if !revision.is_change_only() {
            previous = Some((revision.number, revision.text.clone().unwrap_or_default()));
            rebuilt.push(revision);
            continue;
        }
        let base = match &previous {
            _ if revision.stands_alone() => "",
            Some((number, text)) if number + 1 == revision.number => text.as_str(),
            None => {
                unreachable = Some(revision);
                continue;
            }
            Some((number, _)) => {
                return Err(corrupt(
                    revision.number,
                    format!(
                        "it is stored as a change, and the revision before it is missing (the one \
                         kept before it is {number})"
                    ),
                ));
            }
        };
        let applied = crate::apply_batch(
            &revision.document,
            base,
            revision.updates.iter().enumerate(),
            crate::Caps::default(),
        )
        .map_err(|err| corrupt(revision.number, format!("its updates do not apply: {err}")))?;
        if applied.text.len() != revision.bytes_after
            || sha256_hex(&applied.text) != revision.sha256_after
        {
            return Err(corrupt(
                revision.number,
                "rebuilt from the revision before it, its text is not the one its sha256_after \
                 and bytes_after describe"
                    .to_owned(),
            ));
        }
        previous = Some((revision.number, applied.text.clone()));
        revision.text = Some(applied.text);
        rebuilt.push(revision);
    }
    rebuilt.reverse();
    Ok((rebuilt, unreachable))
}

/// The revision numbered `number` among `history` (newest first, as
/// [`crate::MemoryProvider::history`] gives it), with text to revert to.
///
/// # Errors
/// [`MemoryError::RevisionNotFound`] when it is not kept (never made, or pruned) or is a
/// purge's tombstone.
pub fn revision_to_restore(
    document: &DocumentId,
    history: &[Revision],
    number: u64,
) -> Result<String, MemoryError> {
    let not_found = |reason: String| MemoryError::RevisionNotFound {
        document: document.clone(),
        number,
        reason,
    };
    let Some(revision) = history.iter().find(|revision| revision.number == number) else {
        let kept = match (history.last(), history.first()) {
            (Some(oldest), Some(newest)) => {
                format!("revisions {} to {} are kept", oldest.number, newest.number)
            }
            _ => "it has no revisions".to_owned(),
        };
        return Err(not_found(kept));
    };
    revision.text.clone().ok_or_else(|| {
        not_found("it is the tombstone of a purge, which keeps no content".to_owned())
    })
}

/// The text `document` had after revision `number` of `history` (newest first, as
/// [`crate::MemoryProvider::history`] gives it); revision 0 is the empty document before the
/// first.
///
/// # Errors
/// As [`revision_to_restore`].
pub fn text_after(
    document: &DocumentId,
    history: &[Revision],
    number: u64,
) -> Result<String, MemoryError> {
    match number {
        0 => Ok(String::new()),
        number => revision_to_restore(document, history, number),
    }
}

/// A diff between two states of one document, as `memory diff` prints it and the HTTP API
/// returns it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevisionDiff {
    /// The revision compared from (0: the empty document before the first).
    pub from: u64,
    /// The revision compared to; `None` for the document as it is now.
    pub to: Option<u64>,
    /// The unified diff (`diff -u` form), empty when the texts are equal.
    pub diff: String,
}

impl RevisionDiff {
    /// The diff of `document` between revisions `from` and `to` of `history` (newest first):
    /// with `to` unset, from `from` to `current` (the document's text now); without `from`,
    /// revision `to` (the newest when unset) against the one before it (the empty document
    /// when that is a purge's tombstone). The diff's labels are `<path>@<number>` and
    /// `<path>@current`. Past `deadline` the diff is exact but not the smallest (see
    /// [`unified_diff`]).
    ///
    /// # Errors
    /// [`MemoryError::RevisionNotFound`] for a revision not kept or a tombstone, or when the
    /// document has no revision to compare.
    pub fn between(
        document: &DocumentId,
        history: &[Revision],
        current: &str,
        from: Option<u64>,
        to: Option<u64>,
        deadline: Instant,
    ) -> Result<RevisionDiff, MemoryError> {
        let path = document.relative_path();
        let label = |number: u64| format!("{path}@{number}");
        let (from, old, to) = match (from, to) {
            (Some(from), to) => (from, text_after(document, history, from)?, to),
            (None, to) => {
                let to = match (to, history.first()) {
                    (Some(to), _) => to,
                    (None, Some(newest)) => newest.number,
                    (None, None) => {
                        return Err(MemoryError::RevisionNotFound {
                            document: document.clone(),
                            number: 0,
                            reason: "it has no revisions to compare: it was never written, or its provider keeps no history".to_owned(),
                        });
                    }
                };
                // `to` first: a purge's tombstone has no text to compare.
                text_after(document, history, to)?;
                let before = to.saturating_sub(1);
                let old = history
                    .iter()
                    .find(|revision| revision.number == to)
                    .and_then(|revision| revision.text_before(history));
                let old = match old {
                    Some(old) => old.to_owned(),
                    // Not kept: the error names it.
                    None => text_after(document, history, before)?,
                };
                (before, old, Some(to))
            }
        };
        let (new, new_label) = match to {
            Some(to) => (text_after(document, history, to)?, label(to)),
            None => (current.to_owned(), format!("{path}@current")),
        };
        Ok(RevisionDiff {
            from,
            to,
            diff: unified_diff(&old, &new, &label(from), &new_label, deadline),
        })
    }
}

/// How long the diffs of one call may search for the smallest change: finding it takes time
/// quadratic in the lines changed (a minute for two unrelated documents of 16,000 lines), so
/// past this the diff gives up on being smallest. See [`diff_deadline`].
pub const DIFF_TIME: Duration = Duration::from_secs(1);

/// The deadline of a call's diffs begun now: [`DIFF_TIME`] from now.
pub fn diff_deadline() -> Instant {
    let now = Instant::now();
    now.checked_add(DIFF_TIME).unwrap_or(now)
}

/// A unified diff (`diff -u` form, 3 lines of context) from `old` to `new`, with the two
/// labels as file names; empty when the texts are equal.
///
/// The search for the smallest diff stops at `deadline`: what is left to compare then is
/// given as removed and added whole, in time linear in its size. The diff stays exact
/// (applied to `old` it gives `new`), only larger than it could be.
pub fn unified_diff(
    old: &str,
    new: &str,
    old_label: &str,
    new_label: &str,
    deadline: Instant,
) -> String {
    if old == new {
        return String::new();
    }
    similar::TextDiff::configure()
        .deadline(deadline)
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_label, new_label)
        .missing_newline_hint(true)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str, version: &str) -> Document {
        Document {
            id: DocumentId::GlobalMemory,
            text: text.to_owned(),
            version: Version::new(version),
            location: String::new(),
            modified: None,
        }
    }

    #[test]
    fn only_an_unrecorded_change_makes_an_external_revision() {
        let empty = RevisionTip::empty(Version::new("0"));
        assert_eq!(empty.unrecorded(&doc("", "0"), SystemTime::now()), None);
        let now = SystemTime::now();
        let found = empty.unrecorded(&doc("by hand\n", "1"), now).unwrap();
        assert_eq!(
            (found.number, found.surface, found.text.as_deref()),
            (1, Surface::External, Some("by hand\n"))
        );
        assert_eq!(found.time, now);
        let tip = RevisionTip::of(&found);
        assert_eq!(tip.unrecorded(&doc("by hand\n", "1"), now), None);
        let again = tip.unrecorded(&doc("edited\n", "2"), now).unwrap();
        assert_eq!((again.number, again.bytes_before), (2, 8));
    }

    #[test]
    fn retention_counts_from_the_tip_and_ages_by_the_clock() {
        assert_eq!(Retention::keep(3).oldest_kept(10), 8);
        assert_eq!(Retention::keep(3).oldest_kept(2), 1);
        assert_eq!(Retention::keep(usize::MAX).oldest_kept(5), 1);
        let day = Duration::from_secs(86_400);
        let retention = Retention::default().with_max_age(day);
        let now = SystemTime::now();
        assert!(retention.too_old(now - 2 * day, now));
        assert!(!retention.too_old(now + day, now), "a clock set back");
        assert!(!Retention::default().too_old(now - 1000 * day, now));
        assert!(retention.prunes(1, now - 2 * day, 2, now));
        assert!(!retention.prunes(2, now - 2 * day, 2, now), "the tip stays");
        assert!(Retention::keep(3).prunes(7, now, 10, now));
        assert!(!Retention::keep(3).prunes(8, now, 10, now));
    }

    #[test]
    fn a_tombstone_cannot_be_restored_and_missing_revisions_name_what_is_kept() {
        let tip = RevisionTip::empty(Version::new("0"));
        let dead = Revision::tombstone(
            &DocumentId::GlobalMemory,
            &tip,
            Version::new("0"),
            Surface::Cli,
            SystemTime::now(),
        );
        let err = revision_to_restore(&DocumentId::GlobalMemory, &[dead], 1).unwrap_err();
        assert!(err.to_string().contains("tombstone"), "{err}");
        let err = revision_to_restore(&DocumentId::GlobalMemory, &[], 7).unwrap_err();
        assert!(err.to_string().contains("no revisions"), "{err}");
    }

    #[test]
    fn retention_reads_as_configured() {
        let parsed: Retention = serde_json::from_str(r#"{"max_age_days": 2}"#).unwrap();
        assert_eq!(
            parsed,
            Retention::default().with_max_age(Duration::from_secs(2 * 86_400))
        );
        assert_eq!(
            serde_json::from_str::<Retention>(r#"{"keep": 0}"#).unwrap(),
            Retention::OFF
        );
        let err = serde_json::from_str::<Retention>(r#"{"kept": 3}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }

    #[test]
    fn diffs_are_unified() {
        let diff = unified_diff("a\nb\n", "a\nc\n", "#1", "#2", diff_deadline());
        assert!(diff.starts_with("--- #1\n+++ #2\n"), "{diff}");
        assert!(diff.contains("-b\n+c\n"), "{diff}");
        assert_eq!(unified_diff("same", "same", "a", "b", diff_deadline()), "");
    }

    /// The lines of `diff` a side keeps: `' '` and `'-'` lines for the old text, `' '` and
    /// `'+'` for the new (one hunk: the texts are short).
    fn side(diff: &str, mark: char) -> String {
        diff.lines()
            .skip(3)
            .filter(|line| line.starts_with(' ') || line.starts_with(mark))
            .map(|line| format!("{}\n", &line[1..]))
            .collect()
    }

    #[test]
    fn a_diff_past_its_deadline_is_exact_but_not_the_smallest() {
        let old = "a\nX\nb\nY\nc\n";
        let new = "a\nX2\nb\nY2\nc\n";
        let smallest = unified_diff(old, new, "old", "new", diff_deadline());
        assert!(smallest.contains("-X\n+X2\n b\n-Y\n+Y2\n"), "{smallest}");

        let now = Instant::now();
        let past = now.checked_sub(Duration::from_millis(1)).unwrap_or(now);
        let rushed = unified_diff(old, new, "old", "new", past);
        assert!(rushed.contains("-X\n-b\n-Y\n+X2\n+b\n+Y2\n"), "{rushed}");
        assert_eq!(side(&rushed, '-'), old);
        assert_eq!(side(&rushed, '+'), new);
    }

    fn revision(number: u64, text: Option<&str>) -> Revision {
        Revision {
            number,
            document: DocumentId::GlobalMemory,
            version_before: Version::new((number - 1).to_string()),
            version_after: Version::new(number.to_string()),
            sha256_before: String::new(),
            sha256_after: String::new(),
            bytes_before: 0,
            bytes_after: text.map_or(0, str::len),
            time: SystemTime::UNIX_EPOCH,
            surface: Surface::Api,
            personality: None,
            user: None,
            idempotency_key: None,
            session: None,
            updates: Vec::new(),
            text: text.map(str::to_owned),
        }
    }

    #[test]
    fn who_names_what_is_known_in_order() {
        let mut made = revision(2, Some("x\n"));
        assert_eq!(made.who(), None);
        made.session = Some("s1".into());
        assert_eq!(made.who().as_deref(), Some("session s1"));
        made.personality = Some(crate::PersonalityId::new("ada").unwrap());
        made.user = Some(crate::UserId::new("grace").unwrap());
        assert_eq!(
            made.who().as_deref(),
            Some("personality ada, user grace, session s1")
        );
        made.session = None;
        assert_eq!(made.who().as_deref(), Some("personality ada, user grace"));
    }

    #[test]
    fn a_revision_starts_from_the_one_before_it_when_that_is_kept() {
        let tip = RevisionTip::of(&revision(2, Some("old\n")));
        let dead = Revision::tombstone(
            &DocumentId::GlobalMemory,
            &tip,
            Version::new("0"),
            Surface::Cli,
            SystemTime::UNIX_EPOCH,
        );
        let history = [
            revision(6, Some("six\n")),
            revision(5, Some("five\n")),
            dead.clone(),
            revision(2, Some("two\n")),
            revision(1, Some("one\n")),
        ];
        assert_eq!(history[0].text_before(&history), Some("five\n"));
        // After a tombstone: the empty document; before the first: the same.
        assert_eq!(
            history[1].text_before(&history),
            None,
            "revision 4 is not kept"
        );
        assert_eq!(revision(4, Some("four\n")).text_before(&history), Some(""));
        assert_eq!(history[4].text_before(&history), Some(""));
        assert_eq!(history[3].text_before(&history), Some("one\n"));
        assert_eq!(
            dead.text_before(&history),
            None,
            "a tombstone has no change"
        );

        assert_eq!(
            history[0]
                .diff_in(&history, "MEMORY.md", diff_deadline())
                .as_deref(),
            Some("--- MEMORY.md@5\n+++ MEMORY.md@6\n@@ -1 +1 @@\n-five\n+six\n")
        );
        assert_eq!(
            history[1].diff_in(&history, "MEMORY.md", diff_deadline()),
            None
        );
        assert_eq!(dead.diff_in(&history, "MEMORY.md", diff_deadline()), None);
        // No change in the text: an empty diff, not none.
        assert_eq!(
            revision(7, Some("six\n"))
                .diff_in(&history, "M", diff_deadline())
                .as_deref(),
            Some("")
        );
    }

    #[test]
    fn surfaces_display_as_their_json_names() {
        for surface in [
            Surface::Tool,
            Surface::Cli,
            Surface::Web,
            Surface::Api,
            Surface::External,
        ] {
            let json = serde_json::to_string(&surface).unwrap();
            assert_eq!(format!("\"{surface}\""), json);
        }
        assert_eq!(Surface::External.to_string(), "external");
    }

    #[test]
    fn a_revision_says_what_changed() {
        let mut written = revision(1, Some("b\n"));
        assert_eq!(written.what_changed(), "no updates recorded");
        written.updates = vec![
            MemoryUpdate::add(crate::Store::Memory, "a"),
            MemoryUpdate::edit(crate::Store::Memory, "a", "b"),
        ];
        assert_eq!(written.what_changed(), "add, edit");
        assert!(!written.is_tombstone());
        let by_hand = Revision {
            surface: Surface::External,
            ..revision(2, Some("c\n"))
        };
        assert_eq!(by_hand.what_changed(), "hand edit");
        let dead = Revision::tombstone(
            &DocumentId::GlobalMemory,
            &RevisionTip::of(&by_hand),
            Version::new("0"),
            Surface::Cli,
            SystemTime::now(),
        );
        assert!(dead.is_tombstone());
        assert_eq!(dead.what_changed(), "purged");
    }

    #[test]
    fn retention_is_on_when_it_keeps_any() {
        assert!(!Retention::OFF.is_on());
        assert!(!Retention::keep(0).is_on());
        assert!(Retention::keep(1).is_on());
        assert!(Retention::default().is_on());
    }

    #[test]
    fn a_revision_exactly_max_age_old_is_not_too_old() {
        let day = Duration::from_secs(86_400);
        let retention = Retention::default().with_max_age(day);
        let now = SystemTime::now();
        assert!(!retention.too_old(now - day, now));
        assert!(retention.too_old(now - day - Duration::from_millis(1), now));
    }

    #[test]
    fn a_missing_revision_names_the_ones_kept_and_zero_is_the_empty_document() {
        let history = [revision(5, Some("five\n")), revision(3, Some("three\n"))];
        let err = revision_to_restore(&DocumentId::GlobalMemory, &history, 4).unwrap_err();
        assert!(
            matches!(&err, MemoryError::RevisionNotFound { number: 4, reason, .. }
                if reason == "revisions 3 to 5 are kept"),
            "{err:?}"
        );
        assert_eq!(
            text_after(&DocumentId::GlobalMemory, &history, 3).unwrap(),
            "three\n"
        );
        assert_eq!(
            text_after(&DocumentId::GlobalMemory, &history, 0).unwrap(),
            ""
        );
        assert!(text_after(&DocumentId::GlobalMemory, &history, 4).is_err());
    }

    #[test]
    fn a_diff_after_a_purge_starts_from_the_empty_document() {
        let tip = RevisionTip::of(&revision(1, Some("old\n")));
        let dead = Revision::tombstone(
            &DocumentId::GlobalMemory,
            &tip,
            Version::new("0"),
            Surface::Cli,
            SystemTime::now(),
        );
        let history = [
            revision(4, Some("newer\n")),
            revision(3, Some("new\n")),
            dead,
            revision(1, Some("old\n")),
        ];
        let diff = RevisionDiff::between(
            &DocumentId::GlobalMemory,
            &history,
            "",
            None,
            Some(3),
            diff_deadline(),
        )
        .unwrap();
        assert_eq!((diff.from, diff.to), (2, Some(3)));
        assert!(diff.diff.contains("+new\n"), "{}", diff.diff);
        assert!(!diff.diff.contains("old"), "{}", diff.diff);
        // Before a revision that is no tombstone: its text.
        let diff = RevisionDiff::between(
            &DocumentId::GlobalMemory,
            &history,
            "",
            None,
            None,
            diff_deadline(),
        )
        .unwrap();
        assert_eq!((diff.from, diff.to), (3, Some(4)));
        assert!(diff.diff.contains("-new\n+newer\n"), "{}", diff.diff);
    }

    #[test]
    fn surfaces_parse_from_their_names_and_nothing_else() {
        for surface in Surface::ALL {
            assert_eq!(surface.to_string().parse::<Surface>(), Ok(surface));
        }
        let err = "robot".parse::<Surface>().unwrap_err();
        assert!(err.contains("\"robot\" is not tool, cli"), "{err}");
    }

    /// Revision `number` made by `updates` from `before`, stored as its change alone (text
    /// None), with the size and SHA-256 of the text they make.
    fn change(number: u64, before: &str, updates: Vec<MemoryUpdate>) -> (Revision, String) {
        let applied = crate::apply_batch(
            &DocumentId::GlobalMemory,
            before,
            updates.iter().enumerate(),
            crate::Caps::default(),
        )
        .unwrap();
        let mut revision = revision(number, None);
        revision.bytes_after = applied.text.len();
        revision.sha256_after = sha256_hex(&applied.text);
        revision.updates = updates;
        (revision, applied.text)
    }

    #[test]
    fn what_a_stored_revision_is() {
        let tombstone = revision(4, None);
        let (change, _) = change(5, "", vec![MemoryUpdate::add(crate::Store::Memory, "a")]);
        let whole = revision(6, Some("a\n"));
        assert!(tombstone.is_tombstone() && tombstone.is_base() && !tombstone.is_change_only());
        assert!(!change.is_tombstone() && !change.is_base() && change.is_change_only());
        assert!(!whole.is_tombstone() && whole.is_base() && !whole.is_change_only());
        // A change stands alone when it is the first, or starts by replacing everything.
        assert!(!change.stands_alone() && whole.stands_alone() && tombstone.stands_alone());
        let first = Revision {
            number: 1,
            ..change.clone()
        };
        assert!(first.stands_alone());
        let replaced = Revision {
            updates: vec![MemoryUpdate::replace(crate::Store::Memory, "b")],
            ..change
        };
        assert!(replaced.stands_alone());
    }

    #[test]
    fn checkpoints_come_every_keep_at_most_every_hundred_and_each_half_age() {
        assert_eq!(Retention::keep(0).checkpoint_every(), 1);
        assert_eq!(Retention::keep(7).checkpoint_every(), 7);
        assert_eq!(Retention::keep(100).checkpoint_every(), 100);
        assert_eq!(
            Retention::keep(5000).checkpoint_every(),
            CHECKPOINT_EVERY_MOST
        );
        let epoch = SystemTime::UNIX_EPOCH;
        let at = |seconds: u64| epoch + Duration::from_secs(seconds);
        let by_count = Retention::keep(4);
        let numbers: Vec<u64> = (1..=12)
            .filter(|&n| by_count.is_checkpoint(n, Some(at(10)), at(11)))
            .collect();
        assert_eq!(numbers, [4, 8, 12]);
        // With an age limit of 20 s, also the first write of each 10 s period.
        let aged = by_count.with_max_age(Duration::from_secs(20));
        assert!(!aged.is_checkpoint(5, Some(at(10)), at(19)), "same period");
        assert!(aged.is_checkpoint(5, Some(at(19)), at(20)), "a new period");
        assert!(aged.is_checkpoint(5, None, at(5)), "a first write");
        assert!(!by_count.is_checkpoint(5, None, at(5)), "no age, no period");
    }

    #[test]
    fn a_store_drops_only_what_no_kept_revision_is_rebuilt_from() {
        let epoch = SystemTime::UNIX_EPOCH;
        // (number, time, base), oldest first: checkpoints at 3 and 6.
        let stored = |tip: u64| {
            (1..=tip)
                .map(|n| (n, epoch, n % 3 == 0))
                .collect::<Vec<_>>()
        };
        let keep = Retention::keep(3);
        // Keeping 5, 6, 7: 5 is rebuilt from 3, so 1 and 2 go.
        assert_eq!(droppable(stored(7), 7, epoch, &keep), 2);
        // Keeping 6, 7, 8: 6 is whole, so 1 to 5 go.
        assert_eq!(droppable(stored(8), 8, epoch, &keep), 5);
        // Keeping 2, 3, 4: 2 is rebuilt from 1 (the first), nothing goes.
        assert_eq!(droppable(stored(4), 4, epoch, &keep), 0);
        // By age: at 100 s, with a limit of 30 s, revisions before 70 s go.
        let aged = Retention::default().with_max_age(Duration::from_secs(30));
        let at = |seconds: u64| epoch + Duration::from_secs(seconds);
        let timed = [
            (1, at(10), true),
            (2, at(50), false),
            (3, at(60), true),
            (4, at(80), false),
        ];
        assert_eq!(
            droppable(timed, 4, at(100), &aged),
            2,
            "4 is rebuilt from 3"
        );
        assert_eq!(
            Retention::keep(3).count_kept(stored(8).into_iter().map(|(n, t, _)| (n, t)), 8, epoch),
            3
        );
        assert_eq!(
            Retention::OFF.count_kept([(1, epoch), (2, epoch)], 2, epoch),
            2,
            "with history off, whatever an earlier configuration left"
        );
    }

    #[test]
    fn changes_are_rebuilt_from_the_whole_revision_before_them() {
        let epoch = SystemTime::UNIX_EPOCH;
        let keep = Retention::keep(4);
        let (one, text_one) = change(1, "", vec![MemoryUpdate::add(crate::Store::Memory, "a")]);
        let whole = Revision {
            text: Some("a\n\nhand\n".to_owned()),
            bytes_after: 9,
            sha256_after: sha256_hex("a\n\nhand\n"),
            ..revision(2, None)
        };
        let (three, text_three) = change(
            3,
            "a\n\nhand\n",
            vec![MemoryUpdate::edit(crate::Store::Memory, "hand", "agent")],
        );
        let (four, text_four) = change(
            4,
            &text_three,
            vec![MemoryUpdate::add(crate::Store::Memory, "b")],
        );
        let stored = vec![four.clone(), three.clone(), whole.clone(), one.clone()];
        let kept = kept_revisions(stored, 4, epoch, &keep, "j").unwrap();
        let texts: Vec<_> = kept.iter().map(|r| r.text.clone().unwrap()).collect();
        assert_eq!(
            texts,
            [
                text_four.clone(),
                text_three.clone(),
                "a\n\nhand\n".to_owned(),
                text_one
            ]
        );

        // Kept 3 and 4 only (keeping 2): read back to their base 2, 1 past the retention.
        let two = Retention::keep(2);
        let kept = kept_revisions(
            vec![four.clone(), three.clone(), whole.clone()],
            4,
            epoch,
            &two,
            "j",
        );
        assert_eq!(
            kept.unwrap().iter().map(|r| r.number).collect::<Vec<_>>(),
            [4, 3]
        );

        // Kept changes whose base was not read (or is gone) are Corrupt, naming the newest.
        let err =
            kept_revisions(vec![four.clone(), three.clone()], 4, epoch, &keep, "j").unwrap_err();
        assert!(
            matches!(&err, MemoryError::Corrupt { location, .. } if location == "j#4"),
            "{err:?}"
        );
        // A change past the retention whose base is gone is left out, not an error.
        let checkpoint = Revision {
            text: Some(text_three.clone()),
            ..three.clone()
        };
        let (lost, _) = change(2, "z", vec![MemoryUpdate::add(crate::Store::Memory, "b")]);
        let kept = kept_revisions(vec![checkpoint, lost], 3, epoch, &Retention::keep(1), "j");
        assert_eq!(
            kept.unwrap().iter().map(|r| r.number).collect::<Vec<_>>(),
            [3]
        );
        // A gap between a change and the revision kept before it is Corrupt.
        let err =
            kept_revisions(vec![four.clone(), whole.clone()], 4, epoch, &keep, "j").unwrap_err();
        assert!(
            matches!(&err, MemoryError::Corrupt { location, reason }
            if location == "j#4" && reason.contains("the one kept before it is 2")),
            "{err:?}"
        );
        // Updates that do not make the recorded text are Corrupt.
        let mut damaged = four;
        damaged.sha256_after = sha256_hex("something else");
        let err = kept_revisions(vec![damaged, three, whole], 4, epoch, &keep, "j").unwrap_err();
        assert!(
            matches!(&err, MemoryError::Corrupt { location, reason }
            if location == "j#4" && reason.contains("sha256_after")),
            "{err:?}"
        );
        // Updates that do not apply at all are Corrupt too.
        let (mut stray, _) = change(
            2,
            "x",
            vec![MemoryUpdate::edit(crate::Store::Memory, "x", "y")],
        );
        stray.sha256_after = sha256_hex(&text_four);
        let err = kept_revisions(vec![stray, one], 2, epoch, &keep, "j").unwrap_err();
        assert!(
            matches!(&err, MemoryError::Corrupt { location, reason }
            if location == "j#2" && reason.contains("do not apply")),
            "{err:?}"
        );
    }

    #[test]
    fn an_unrecorded_hand_edit_counts_as_the_newest_for_retention() {
        let epoch = SystemTime::UNIX_EPOCH;
        let recorded = vec![revision(2, Some("b")), revision(1, Some("a"))];
        let tip = RevisionTip::of(&recorded[0]);
        let edited = Document {
            text: "by hand".to_owned(),
            ..doc("", "3")
        };
        let view = history_view(
            recorded.clone(),
            &tip,
            &edited,
            10,
            epoch,
            &Retention::keep(2),
        );
        assert_eq!(
            view.iter()
                .map(|r| (r.number, r.surface))
                .collect::<Vec<_>>(),
            [(3, Surface::External), (2, Surface::Api)]
        );
        let view = history_view(recorded, &tip, &edited, 10, epoch, &Retention::keep(3));
        assert_eq!(view.len(), 3);
    }
}
