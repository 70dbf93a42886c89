#![doc = include_str!("../README.md")]

mod context;
mod document;
mod error;
mod history;
mod id;
mod idempotency;
mod identity;
mod note;
mod prefetch;
mod prompt;
mod provider;
mod recall;
mod reference;
mod report;
mod sha256;
mod time;
mod update;

pub mod raw;

pub use context::{DEFAULT_MAX_CHARS, MemoryContext};
pub use document::{
    Document, DocumentId, DocumentMeta, MemoryScope, NoteId, NoteScope, Store, Version, format_utc,
    format_utc_seconds,
};
pub use error::{BoxError, ErrorKind, KEY_REUSED_CODE, MemoryError};
pub use history::compare::RevisionDiff;
pub use history::diff::{DIFF_TIME, diff_deadline, unified_diff};
pub use history::entry::RevisionEntry;
pub use history::redaction::redactable;
pub use history::retention::{DEFAULT_KEEP, Retention};
pub use history::revision::{Purged, Revision, Surface};
pub use id::{IdKind, MAX_ID_LEN, PersonalityId, UserId};
pub use idempotency::exactly_once::{revert_exactly_once, sync_exactly_once};
pub use idempotency::key::{IdempotencyKey, MAX_KEY_LEN};
pub use identity::{Identity, IdentityMap, InMemoryIdentityMap, MAX_PLATFORM_USER_LEN};
pub use note::path::{
    MAX_NOTE_PATH_BYTES, MAX_NOTE_PATH_SEGMENTS, MAX_NOTE_SEGMENT_BYTES, NotePath,
};
pub use note::{MAX_DESCRIPTION_CHARS, NoteCaps, NoteMeta, ScopeTotals, note_description};
pub use prefetch::Prefetch;
pub use prompt::NewestNotes;
pub use provider::{
    MemoryProvider, history_across_renames, newest_notes_of_context, notes_of_context,
    revert_document,
};
pub use recall::{Recall, Recalled, RecalledEntry};
pub use reference::InMemoryProvider;
pub use report::{DocumentReport, IfMatch, MemoryEvent, Subscription, SyncReport};
pub use update::{Budgets, Caps, MemoryUpdate, is_blank};
