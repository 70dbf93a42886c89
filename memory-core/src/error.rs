//! The one error type every provider returns.

use crate::{DocumentId, DocumentReport, IdKind, UserId, Version};

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

    /// The backend cannot be reached or failed to do I/O; retry later.
    ///
    /// A `sync` that fails this way wrote nothing, unless the connection broke after the
    /// server applied the write and before its reply arrived. Backends check for that with one
    /// read and report success when the write shows, so this error means the outcome could not
    /// be told: read the document before repeating an `add`.
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

impl MemoryError {
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
