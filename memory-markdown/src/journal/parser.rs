//! The parser: a journal's lines read back as revisions (or, for a write, as their heads alone),
//! each checked to be this document's and to agree with itself, and numbered one after another.

use std::path::Path;
use std::time::SystemTime;

use memory_core::raw::{from_signed_unix_millis, sha256_hex};
use memory_core::{DocumentId, MemoryError, Revision, Version};
use serde::Deserialize;

use super::tip::never_landed;

/// Revision numbers past this are not ours: JSON readers in JavaScript lose precision above
/// 2^53, and far below `u64::MAX` the `+ 1` of the next revision cannot overflow.
const MAX_NUMBER: u64 = 1 << 53;

/// One revision of `document`, from a journal line that agrees with itself; `place` says where,
/// for the error.
fn parse_line(
    path: &Path,
    document: &DocumentId,
    line: &[u8],
    place: &str,
) -> Result<Revision, MemoryError> {
    let corrupt = |reason: String| MemoryError::Corrupt {
        location: path.display().to_string(),
        reason: format!("{place} is not a revision of {document}: {reason}"),
    };
    let revision: Revision =
        serde_json::from_slice(line).map_err(|err| corrupt(err.to_string()))?;
    if revision.document != *document {
        return Err(corrupt(format!("it is one of {}", revision.document)));
    }
    if !(1..=MAX_NUMBER).contains(&revision.number) {
        return Err(corrupt(format!(
            "its number {} is not between 1 and {MAX_NUMBER}",
            revision.number
        )));
    }
    // A line that contradicts itself is not ours either: history would show (and a revert
    // restore) a text other than the one the line records, and the next write's change, rebuilt
    // from that text, would not come out as recorded, leaving the whole history unreadable. The
    // databases' stored revisions are checked the same way (`StoredRevision::check`).
    if let Some(text) = &revision.text
        && (text.len() != revision.bytes_after || sha256_hex(text) != revision.sha256_after)
    {
        return Err(corrupt(
            "its text is not the one its sha256_after and bytes_after describe".to_owned(),
        ));
    }
    if revision.is_tombstone()
        && (revision.bytes_after != 0 || revision.sha256_after != sha256_hex(""))
    {
        return Err(corrupt(
            "it has neither updates nor a text, as a purge's tombstone has, but its sha256_after \
             and bytes_after are not the empty document's"
                .to_owned(),
        ));
    }
    Ok(revision)
}

/// A journal line's head: what a write needs of a revision, read without its text (which
/// serde skips over rather than copies) or its updates.
#[derive(Debug, Clone, serde::Deserialize)]
pub(super) struct Head {
    pub(super) number: u64,
    pub(super) document: DocumentId,
    pub(super) version_after: Version,
    pub(super) sha256_before: String,
    pub(super) sha256_after: String,
    pub(super) bytes_after: usize,
    #[serde(deserialize_with = "stored_time")]
    pub(super) time: SystemTime,
    #[serde(default)]
    pub(super) updates: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(super) text: Option<serde::de::IgnoredAny>,
}

impl Head {
    /// Whether the revisions after it can be rebuilt from it alone (see
    /// `Revision::is_base`): it has its text, is a tombstone, or is the first.
    pub(super) fn is_base(&self) -> bool {
        self.text.is_some() || self.updates.is_none() || self.number == 1
    }

    /// The head of `revision`'s line.
    pub(super) fn of(revision: &Revision) -> Head {
        Head {
            number: revision.number,
            document: revision.document.clone(),
            version_after: revision.version_after.clone(),
            sha256_before: revision.sha256_before.clone(),
            sha256_after: revision.sha256_after.clone(),
            bytes_after: revision.bytes_after,
            time: revision.time,
            updates: (!revision.updates.is_empty()).then_some(serde::de::IgnoredAny),
            text: revision.text.as_ref().map(|_| serde::de::IgnoredAny),
        }
    }

    /// Whether its write never reached the document (see [`never_landed`]).
    pub(super) fn never_landed(&self, sha256: &str, modified: Option<SystemTime>) -> bool {
        never_landed(
            &self.sha256_before,
            &self.sha256_after,
            self.time,
            sha256,
            modified,
        )
    }
}

/// A revision's time as the journal stores it (see `Revision`'s serde form): milliseconds
/// from the Unix epoch, negative before it.
fn stored_time<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
    let millis = serde_json::Number::deserialize(d)?;
    let millis = millis
        .as_i64()
        .or_else(|| millis.as_u64().map(|_| i64::MAX))
        .ok_or_else(|| serde::de::Error::custom("a time in milliseconds since the Unix epoch"))?;
    Ok(from_signed_unix_millis(millis))
}

/// The head of one revision of `document`, from a journal line; checked as `parse_line`
/// checks a whole one.
pub(super) fn parse_head(
    path: &Path,
    document: &DocumentId,
    line: &[u8],
    place: &str,
) -> Result<Head, MemoryError> {
    let corrupt = |reason: String| MemoryError::Corrupt {
        location: path.display().to_string(),
        reason: format!("{place} is not a revision of {document}: {reason}"),
    };
    let head: Head = serde_json::from_slice(line).map_err(|err| corrupt(err.to_string()))?;
    if head.document != *document {
        return Err(corrupt(format!("it is one of {}", head.document)));
    }
    if !(1..=MAX_NUMBER).contains(&head.number) {
        return Err(corrupt(format!(
            "its number {} is not between 1 and {MAX_NUMBER}",
            head.number
        )));
    }
    Ok(head)
}

/// Every revision in `bytes` (a journal's whole lines, or more), oldest first, checked to be
/// this document's and numbered one after another. A last line without its newline is a
/// torn append and is left out.
pub(super) fn parse_all(
    path: &Path,
    document: &DocumentId,
    bytes: &[u8],
) -> Result<Vec<Revision>, MemoryError> {
    let Some(end) = bytes.iter().rposition(|byte| *byte == b'\n') else {
        return Ok(Vec::new());
    };
    let mut revisions: Vec<Revision> = Vec::new();
    for (index, line) in bytes[..end].split(|byte| *byte == b'\n').enumerate() {
        let place = format!("line {}", index + 1);
        let revision = parse_line(path, document, line, &place)?;
        if let Some(previous) = revisions.last() {
            follows(path, &place, &revision, previous)?;
        }
        revisions.push(revision);
    }
    Ok(revisions)
}

/// `Corrupt` at `path` unless `revision` (at `place` there) is the one after `previous`: a
/// journal's numbers go up by one, within a segment and from one segment to the next.
pub(super) fn follows(
    path: &Path,
    place: &str,
    revision: &Revision,
    previous: &Revision,
) -> Result<(), MemoryError> {
    if revision.number == previous.number + 1 {
        return Ok(());
    }
    Err(MemoryError::Corrupt {
        location: path.display().to_string(),
        reason: format!(
            "{place} is revision {} after revision {}: numbers go up by one",
            revision.number, previous.number
        ),
    })
}
