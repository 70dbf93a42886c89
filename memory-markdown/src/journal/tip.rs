//! The journal's tip, what the next revision builds on, and whether the write that recorded
//! it ever reached the document.

use std::time::{Duration, SystemTime};

use memory_core::raw::{RevisionTip, sha256_hex};
use memory_core::{Document, Version};

/// The markdown version of a document never written: the hash of the empty text.
pub(crate) fn never_written() -> Version {
    Version::new(sha256_hex(""))
}

/// The tip of a journal with no revisions.
pub(crate) fn empty_tip() -> RevisionTip {
    RevisionTip::empty(never_written())
}

/// The SHA-256 of `document`'s text, which is its markdown version: no need to hash it again.
pub(super) fn text_sha256(document: &Document) -> &str {
    document.version.as_str()
}

/// Whether `tip`'s write never reached the document, which now holds text hashing to `sha256`,
/// last modified at `modified`: the document holds the text from before the tip and was last
/// changed before the tip was recorded. The time tells a write that never landed from a hand
/// edit that put the text back afterwards (an editor's undo, a `git checkout`), which is a
/// change of its own. A missing document has no time; a first write that never landed is far
/// likelier there than a document deleted by hand.
pub(super) fn never_landed(
    tip_sha256_before: &str,
    tip_sha256_after: &str,
    tip_time: SystemTime,
    sha256: &str,
    modified: Option<SystemTime>,
) -> bool {
    // Recorded times are whole milliseconds, rounded down: the document's time, from just
    // before the tip, can be up to a millisecond past it.
    let landed_after = tip_time.checked_add(Duration::from_millis(1));
    tip_sha256_before == sha256
        && tip_sha256_after != sha256
        && modified.is_none_or(|modified| landed_after.is_none_or(|after| modified < after))
}
