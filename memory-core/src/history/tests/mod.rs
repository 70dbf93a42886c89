//! History's rules, pure: revisions, retention, rebuilding, restoring and diffs.

mod compare;
mod diff;
mod redaction;
mod retention;
mod revision;

use std::time::{Duration, Instant, SystemTime};

use crate::document::{Document, DocumentId, Store, Version};
use crate::error::MemoryError;
use crate::history::compare::{RevisionDiff, revision_to_restore, text_after};
use crate::history::diff::{diff_deadline, unified_diff};
use crate::history::retention::{CHECKPOINT_EVERY_MOST, Retention};
use crate::history::revision::{Revision, RevisionTip, Surface};
use crate::id::{PersonalityId, UserId};
use crate::raw::apply::apply_batch;
use crate::sha256::sha256_hex;
use crate::update::{Caps, MemoryUpdate};

pub(crate) fn doc(text: &str, version: &str) -> Document {
    Document {
        id: DocumentId::GlobalMemory,
        text: text.to_owned(),
        version: Version::new(version),
        location: String::new(),
        modified: None,
    }
}

pub(crate) fn revision(number: u64, text: Option<&str>) -> Revision {
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
        redacted_at: None,
    }
}

/// Revision `number` made by `updates` from `before`, stored as its change alone (text
/// None), with the size and SHA-256 of the text they make.
pub(crate) fn change(number: u64, before: &str, updates: Vec<MemoryUpdate>) -> (Revision, String) {
    let applied = apply_batch(
        &DocumentId::GlobalMemory,
        before,
        updates.iter().enumerate(),
        Caps::default(),
    )
    .unwrap();
    let mut revision = revision(number, None);
    revision.bytes_after = applied.text.len();
    revision.sha256_after = sha256_hex(&applied.text);
    revision.updates = updates;
    (revision, applied.text)
}
