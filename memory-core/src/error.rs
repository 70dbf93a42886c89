//! The one error type every provider returns.

use crate::document::{DocumentId, Version};
use crate::id::{IdKind, PersonalityId, UserId};
use crate::note::path::NotePath;
use crate::report::DocumentReport;

/// A boxed error from a backend driver, kept as the [`std::error::Error::source`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong with memory, as kinds a caller can act on.
///
/// Match on the variant, never on the message: messages are for people (and models) and say what
/// to do next; variants are the contract. Update indices are 0-based positions in the slice given
/// to [`crate::MemoryProvider::sync`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// An id does not match `^[A-Za-z0-9_-]{1,64}$`. Raised before any read or write.
    #[error("invalid {kind} {value:?}: {reason}; {}", .kind.rule())]
    InvalidId {
        /// Which kind of id.
        kind: IdKind,
        /// The value as given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },

    /// An update is malformed whatever the document holds (blank `add`, empty `substringMatch` or
    /// `old`). The whole call wrote nothing.
    #[error("update #{index} on {document} is invalid: {reason}; nothing was written")]
    InvalidUpdate {
        /// Position of the update in the call.
        index: usize,
        /// The document it targets.
        document: DocumentId,
        /// What is wrong with it.
        reason: String,
    },

    /// An `edit` whose `old` text does not occur in the document. The whole call wrote nothing.
    #[error(
        "update #{index} on {document}: the text to edit ({old:?}) was not found; read the document again and quote text it contains; nothing was written"
    )]
    NoMatch {
        /// Position of the update in the call.
        index: usize,
        /// The document it targets.
        document: DocumentId,
        /// The `old` text that was looked for.
        old: String,
    },

    /// An `edit` whose `old` text occurs more than once. The whole call wrote nothing.
    #[error(
        "update #{index} on {document}: the text to edit ({old:?}) occurs {count} times; quote more of it so that it matches exactly once; nothing was written"
    )]
    AmbiguousMatch {
        /// Position of the update in the call.
        index: usize,
        /// The document it targets.
        document: DocumentId,
        /// The `old` text that was looked for.
        old: String,
        /// How many times it occurs (overlapping occurrences count).
        count: usize,
    },

    /// The batch would grow the document past its hard byte cap. The whole call wrote nothing.
    #[error(
        "{document} would be {bytes} bytes, over its hard cap of {hard_cap}; consolidate it (replace it with a shorter version) first; nothing was written"
    )]
    HardCapExceeded {
        /// The document.
        document: DocumentId,
        /// Its size after the batch, in UTF-8 bytes.
        bytes: usize,
        /// The cap.
        hard_cap: usize,
    },

    /// An `if_match` precondition failed: the document changed since that version was read.
    #[error(
        "{document} is at version {current}, not {expected}; read it again and redo the change; nothing was written"
    )]
    Conflict {
        /// The document.
        document: DocumentId,
        /// The version the caller expected.
        expected: Version,
        /// The version it holds now.
        current: Version,
    },

    /// Other writers kept the document busy past the backend's bound (compare-and-swap retries,
    /// or a lock wait): this call wrote nothing and can be retried.
    #[error(
        "{document} stayed busy with other writers for {attempts} attempts; nothing was written, retry later"
    )]
    Contention {
        /// The document.
        document: DocumentId,
        /// How many attempts were made.
        attempts: u32,
    },

    /// The backend cannot be reached or failed to do I/O before anything was written; retry
    /// later.
    #[error("{what} is unavailable: {message}; retry later")]
    Unavailable {
        /// What could not be reached: a document, a path, a server.
        what: String,
        /// What went wrong.
        message: String,
        /// The driver's error, if any.
        #[source]
        source: Option<BoxError>,
    },

    /// A write was sent and no reply told whether it landed (the connection broke, or the call's
    /// deadline passed, after the request left). Backends check with one read and report
    /// success when the write shows; this error means even that could not tell. Read the
    /// document before repeating an `add`, or repeat the call with the same idempotency key
    /// ([`crate::MemoryContext::with_idempotency_key`]), which never applies it twice.
    #[error(
        "the write to {document} may or may not have landed: {message}; read it before repeating the change, or retry with the same idempotency key"
    )]
    OutcomeUnknown {
        /// The document whose write went unanswered (the first, when the call wrote two).
        document: DocumentId,
        /// What went wrong.
        message: String,
        /// The driver's error, if any.
        #[source]
        source: Option<BoxError>,
    },

    /// Stored bytes are not a document of ours (not UTF-8, wrong type or shape). They are never
    /// overwritten: fix or move them by hand.
    #[error("{location} is corrupt: {reason}; it was left untouched, fix or move it by hand")]
    Corrupt {
        /// Where the bytes are: a path or a key.
        location: String,
        /// What is wrong with them.
        reason: String,
    },

    /// A call that touched both documents landed its first write, then failed on the second
    /// (an I/O failure between the two). Backends that commit both in one transaction never
    /// return this. Read both documents again before retrying: `landed` is already there.
    #[error("{source}; but this call had already written {}", describe_landed(.landed))]
    PartiallyApplied {
        /// The reports of the documents that were written.
        landed: Vec<DocumentReport>,
        /// Why the rest was not.
        source: Box<MemoryError>,
    },

    /// [`crate::IdentityMap::link`] without `relink` on an identity already linked to another
    /// user. Nothing was written.
    #[error(
        "{identity} is already linked to user '{linked_to}', not '{requested}'; relink it explicitly to move it; nothing was written"
    )]
    IdentityTaken {
        /// The identity, as `platform:platform-user-id`.
        identity: String,
        /// The user it is linked to now.
        linked_to: UserId,
        /// The user the call asked for.
        requested: UserId,
    },

    /// An idempotency key the document's receipts hold for another call (other updates): a key
    /// names one call, so the call was refused rather than taken for a repeat of that one.
    /// Nothing was written.
    #[error(
        "idempotency key {key:?} was already used on {document} for another call (other updates); a key names one call: use a fresh key for a new call; nothing was written"
    )]
    KeyReused {
        /// The document whose receipts hold the key.
        document: DocumentId,
        /// The key.
        key: String,
    },

    /// A revert named a revision the document's history does not keep (never made, pruned, or
    /// a purge's tombstone). Nothing was written.
    #[error(
        "{document} has no revision {number}: {reason}; see its history for the revisions kept; nothing was written"
    )]
    RevisionNotFound {
        /// The document.
        document: DocumentId,
        /// The revision asked for.
        number: u64,
        /// Why it cannot be restored, and what is kept.
        reason: String,
    },

    /// A redaction named the revision whose text the document still holds: erasing it would
    /// leave the document's own text unrecorded. Nothing was written.
    #[error(
        "revision {number} of {document} holds the text the document has now, which a redaction cannot erase; change the document first (or purge it), then redact revision {number}; nothing was written"
    )]
    RevisionInUse {
        /// The document.
        document: DocumentId,
        /// The revision asked for.
        number: u64,
    },

    /// A write named a document by its path that the wiring does not write for its owner: a
    /// personality configured with global scope writes the global `MEMORY.md`, never its own
    /// file. Nothing was written.
    #[error(
        "{} is not where personality '{personality}' keeps its memory: the config gives it global scope, so its writes go to {}; write that instead, or change its scope to write this file; nothing was written",
        .document.relative_path(),
        .routed.relative_path()
    )]
    Misrouted {
        /// The document named.
        document: DocumentId,
        /// Where the personality's writes go.
        routed: DocumentId,
        /// The personality.
        personality: PersonalityId,
    },

    /// A document the provider's layout has no place for: a Metis workspace holds one
    /// personality's `MEMORY.md` and one user's `USER.md`, nothing else. Nothing was read or
    /// written.
    #[error(
        "{} has no place in {location}: {holds}; nothing was read or written",
        .document.relative_path()
    )]
    NotInLayout {
        /// The document named.
        document: DocumentId,
        /// The provider's root.
        location: String,
        /// What the layout does hold, and how to reach it.
        holds: String,
    },

    /// A note path the rule of `CONTRACT.md` (Notes) refuses: checked before any read or
    /// write, so nothing was read or written.
    #[error(
        "invalid note path {path:?}: {reason}; a note path is relative to its scope, like projects/kyoto.md (see {}); nothing was read or written",
        crate::note::path::NOTE_PATH_RULE
    )]
    InvalidNotePath {
        /// The path as given.
        path: String,
        /// The rule it breaks.
        reason: String,
    },

    /// A write would leave two notes of one scope that differ only by case or Unicode
    /// normalisation, or a note where a folder of notes is (or the reverse). Nothing was
    /// written.
    #[error(
        "note {path} cannot be written beside {scope}: it collides with the note {existing} (they differ only by case or Unicode normalisation, or one would be a folder of the other); use {existing} or another path; nothing was written"
    )]
    NoteCollision {
        /// The pair document whose scope the notes are in.
        scope: DocumentId,
        /// The path the call would create.
        path: NotePath,
        /// The note already there.
        existing: NotePath,
    },

    /// An update needs a note that does not exist (`add`, `remove`, `edit`, `delete`, the
    /// source of a `rename`): a note exists while its text is not blank. Nothing was written.
    #[error(
        "update {index} ({action}) needs the note {path} beside {scope}, which does not exist; list the notes to see which do, or `create` it; nothing was written"
    )]
    NoteNotFound {
        /// The update's position in the call.
        index: usize,
        /// Its action.
        action: &'static str,
        /// The pair document whose scope the note is in.
        scope: DocumentId,
        /// The note's path.
        path: NotePath,
    },

    /// An update would create a note that exists (`create`, the target of a `rename`).
    /// Nothing was written.
    #[error(
        "update {index} ({action}) would create the note {path} beside {scope}, which exists; read it and edit it, or use another path; nothing was written"
    )]
    NoteExists {
        /// The update's position in the call.
        index: usize,
        /// Its action.
        action: &'static str,
        /// The pair document whose scope the note is in.
        scope: DocumentId,
        /// The note's path.
        path: NotePath,
    },

    /// A write would take a scope's notes past a cap of `memory.toml`'s `notes` table: their
    /// count or their bytes together. Nothing was written.
    #[error(
        "the notes beside {scope} would be {would_be} by {cap}, over its limit of {limit}; delete or shorten notes first; nothing was written"
    )]
    NotesCapExceeded {
        /// The pair document whose scope the notes are in.
        scope: DocumentId,
        /// Which cap: `max_notes` or `max_bytes`.
        cap: &'static str,
        /// The cap.
        limit: u64,
        /// What the write would make of it.
        would_be: u64,
    },

    /// A provider was configured wrongly.
    #[error("configuration error: {message}")]
    Config {
        /// What is wrong and how to fix it.
        message: String,
    },
}

fn describe_landed(landed: &[DocumentReport]) -> String {
    landed
        .iter()
        .map(|d| format!("{} (now at version {})", d.document, d.version_after))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What kind of failure a [`MemoryError`] is, and so what a caller can do about it: the one
/// classification behind the CLI's exit codes, the web API's status codes and the texts the
/// tools give the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The call is malformed whatever memory holds (a bad id or key, a malformed update): fix
    /// the call. Nothing was written.
    InvalidInput,
    /// The call does not fit what the document holds now (text to edit not found or found
    /// twice, a hard cap, an idempotency key its receipts hold for another call): read the
    /// document and redo the change. Nothing was written.
    Refused,
    /// The document moved on since the version the call was guarded by (a failed `if_match`):
    /// read it again and redo the change. Nothing was written.
    PreconditionFailed,
    /// Someone else got there first (an identity linked to another user): look again and
    /// decide. Nothing was written.
    Conflict,
    /// Other writers kept the document busy: nothing was written, a retry can succeed.
    Busy,
    /// The backend could not be reached: nothing was written, a retry can succeed.
    Unavailable,
    /// The write may have landed: read before repeating it, or retry with the same key.
    OutcomeUnknown,
    /// Part of the call landed, the rest did not: read both documents before retrying.
    PartiallyApplied,
    /// Stored bytes are not ours: a person must fix or move them.
    Corrupt,
    /// The configuration is wrong: fix it.
    Config,
}

impl ErrorKind {
    /// Every kind, in the order of the contract's table.
    pub const ALL: [ErrorKind; 10] = [
        ErrorKind::InvalidInput,
        ErrorKind::PreconditionFailed,
        ErrorKind::Conflict,
        ErrorKind::Refused,
        ErrorKind::Busy,
        ErrorKind::Unavailable,
        ErrorKind::OutcomeUnknown,
        ErrorKind::PartiallyApplied,
        ErrorKind::Corrupt,
        ErrorKind::Config,
    ];

    /// The kind's stable name, as the web API's `kind` field and the tools' texts give it.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "invalid-input",
            ErrorKind::Refused => "refused",
            ErrorKind::PreconditionFailed => "precondition-failed",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Busy => "busy",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::OutcomeUnknown => "outcome-unknown",
            ErrorKind::PartiallyApplied => "partially-applied",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Config => "config",
        }
    }

    /// Whether repeating the same call unchanged can succeed: only when nothing was written and
    /// the cause was passing. (An [`ErrorKind::OutcomeUnknown`] call can be repeated safely
    /// with the same idempotency key, and only so.)
    pub fn retry_can_help(self) -> bool {
        matches!(self, ErrorKind::Busy | ErrorKind::Unavailable)
    }

    /// The `memory` CLI's exit status for the kind (0 is success, 1 a failure outside memory).
    /// A command's configuration is its user's own input, so a configuration error is the
    /// invalid-input status there; a server's is its operator's, so it is a 500 there.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::InvalidInput | ErrorKind::Config => 2,
            ErrorKind::PreconditionFailed | ErrorKind::Conflict => 3,
            ErrorKind::Refused => 4,
            ErrorKind::Busy | ErrorKind::Unavailable => 5,
            ErrorKind::OutcomeUnknown => 6,
            ErrorKind::PartiallyApplied => 7,
            ErrorKind::Corrupt => 8,
        }
    }

    /// The HTTP status for the kind: a caller's mistake is 4xx, what the server or its storage
    /// must fix is 5xx, and a retry-later is 503. A failed `if_match` is RFC 9110's
    /// `412 Precondition Failed`, as for a stale `If-Match` header.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::InvalidInput => 400,
            ErrorKind::PreconditionFailed => 412,
            ErrorKind::Conflict => 409,
            ErrorKind::Refused => 422,
            ErrorKind::Busy | ErrorKind::Unavailable => 503,
            ErrorKind::OutcomeUnknown => 504,
            ErrorKind::PartiallyApplied | ErrorKind::Corrupt | ErrorKind::Config => 500,
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The [`MemoryError::code`] of an idempotency key used for another call: the HTTP API's
/// replay cache refuses such a request with it too, before the call reaches the memory.
pub const KEY_REUSED_CODE: &str = "key-reused";

impl MemoryError {
    /// What kind of failure this is; see [`ErrorKind`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            MemoryError::InvalidId { .. } | MemoryError::InvalidUpdate { .. } => {
                ErrorKind::InvalidInput
            }
            MemoryError::NoMatch { .. }
            | MemoryError::AmbiguousMatch { .. }
            | MemoryError::HardCapExceeded { .. }
            | MemoryError::KeyReused { .. }
            | MemoryError::NotesCapExceeded { .. }
            | MemoryError::RevisionInUse { .. } => ErrorKind::Refused,
            MemoryError::Conflict { .. } => ErrorKind::PreconditionFailed,
            MemoryError::IdentityTaken { .. }
            | MemoryError::NoteExists { .. }
            | MemoryError::NoteCollision { .. } => ErrorKind::Conflict,
            MemoryError::Contention { .. } => ErrorKind::Busy,
            MemoryError::Unavailable { .. } => ErrorKind::Unavailable,
            MemoryError::OutcomeUnknown { .. } => ErrorKind::OutcomeUnknown,
            MemoryError::PartiallyApplied { .. } => ErrorKind::PartiallyApplied,
            MemoryError::Corrupt { .. } => ErrorKind::Corrupt,
            MemoryError::Config { .. } => ErrorKind::Config,
            MemoryError::RevisionNotFound { .. }
            | MemoryError::Misrouted { .. }
            | MemoryError::NotInLayout { .. }
            | MemoryError::InvalidNotePath { .. }
            | MemoryError::NoteNotFound { .. } => ErrorKind::InvalidInput,
        }
    }

    /// Which error this is within its kind, as a stable kebab-case name (`no-match`,
    /// `ambiguous-match`, `hard-cap-exceeded`, `key-reused`, ...): what a client matches on to
    /// tell the refusals of one kind apart without reading the message. The HTTP API sends it
    /// as the problem document's `code`.
    pub fn code(&self) -> &'static str {
        match self {
            MemoryError::InvalidId { .. } => "invalid-id",
            MemoryError::InvalidUpdate { .. } => "invalid-update",
            MemoryError::NoMatch { .. } => "no-match",
            MemoryError::AmbiguousMatch { .. } => "ambiguous-match",
            MemoryError::HardCapExceeded { .. } => "hard-cap-exceeded",
            MemoryError::Conflict { .. } => "stale-version",
            MemoryError::Contention { .. } => "contention",
            MemoryError::Unavailable { .. } => "unavailable",
            MemoryError::OutcomeUnknown { .. } => "outcome-unknown",
            MemoryError::Corrupt { .. } => "corrupt",
            MemoryError::PartiallyApplied { .. } => "partially-applied",
            MemoryError::IdentityTaken { .. } => "identity-taken",
            MemoryError::KeyReused { .. } => KEY_REUSED_CODE,
            MemoryError::RevisionNotFound { .. } => "revision-not-found",
            MemoryError::RevisionInUse { .. } => "revision-in-use",
            MemoryError::Misrouted { .. } => "misrouted",
            MemoryError::NotInLayout { .. } => "not-in-layout",
            MemoryError::InvalidNotePath { .. } => "invalid-note-path",
            MemoryError::NoteNotFound { .. } => "note-not-found",
            MemoryError::NoteExists { .. } => "note-exists",
            MemoryError::NoteCollision { .. } => "note-collision",
            MemoryError::NotesCapExceeded { .. } => "notes-cap-exceeded",
            MemoryError::Config { .. } => "config",
        }
    }

    /// An [`MemoryError::Unavailable`] for an I/O failure on `what`.
    pub fn unavailable(what: impl Into<String>, source: impl Into<BoxError>) -> Self {
        let source = source.into();
        MemoryError::Unavailable {
            what: what.into(),
            message: source.to_string(),
            source: Some(source),
        }
    }
}

#[cfg(test)]
mod tests;
