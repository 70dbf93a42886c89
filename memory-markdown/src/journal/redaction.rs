//! A redaction in the journal: the line of one revision written anew without its text, the
//! next one's with its whole text where it held its change alone, each segment replaced by
//! rename so that readers without the lock see it before or after, never half-way.

use std::fs;
use std::path::{Path, PathBuf};

use memory_core::{DocumentId, MemoryError, Revision};

use super::known_tips::KnownTips;
use super::parser::parse_head;
use super::reader::first_head;
use super::segments::{Stored, path, text_path};
use super::writer::lines;
use crate::files;

/// Stores a redaction planned on the journal of the document at `document` (the caller holds
/// its lock): `rebased` first, so that a reader between the two segments finds a text twice
/// rather than a change without its base, then `redacted`, then the checkpoint text kept for
/// `redacted`'s revision, if any. The journal's tip this provider knew is forgotten: its
/// bytes moved.
///
/// # Errors
/// `Unavailable` when a segment cannot be read or replaced; `Corrupt` when a line the
/// revision is looked for among is not a revision of this document.
pub(crate) fn redact(
    document: &Path,
    id: &DocumentId,
    redacted: &Revision,
    rebased: Option<&Revision>,
    known: &KnownTips,
) -> Result<(), MemoryError> {
    known.set(&path(document), None);
    for revision in rebased.into_iter().chain([redacted]) {
        rewrite_line(document, id, revision)?;
    }
    files::erase(&text_path(document, redacted.number))
}

/// Replaces the line of `revision`'s number, in the segment that holds it, with `revision`'s.
/// What follows the last newline (a line torn by a killed writer, which the next write cuts
/// off anyway) is dropped.
fn rewrite_line(document: &Path, id: &DocumentId, revision: &Revision) -> Result<(), MemoryError> {
    let segment = segment_of(document, id, revision.number)?;
    let bytes = fs::read(&segment).map_err(|err| files::read_error(&segment, err))?;
    let whole = match bytes.iter().rposition(|byte| *byte == b'\n') {
        Some(last) => &bytes[..=last],
        None => &[][..],
    };
    let mut text = String::with_capacity(whole.len());
    let mut found = false;
    for (index, line) in whole.split_inclusive(|byte| *byte == b'\n').enumerate() {
        let place = format!("line {}", index + 1);
        let head = parse_head(&segment, id, line.trim_ascii_end(), &place)?;
        if head.number == revision.number {
            text.push_str(&lines(&segment, std::slice::from_ref(revision))?);
            found = true;
        } else {
            // Lines are JSON, which is UTF-8; one that is not fails `parse_head` above.
            text.push_str(&String::from_utf8_lossy(line));
        }
    }
    if !found {
        return Err(MemoryError::unavailable(
            segment.display().to_string(),
            format!(
                "revision {} left it while it was redacted, under the lock",
                revision.number
            ),
        ));
    }
    files::replace(&segment, &text)
}

/// The segment whose lines hold revision `number`: the live one when its first line is at or
/// below it, else the older segment that starts nearest below it.
fn segment_of(document: &Path, id: &DocumentId, number: u64) -> Result<PathBuf, MemoryError> {
    let live = path(document);
    if live.exists() && first_head(&live, id)?.number <= number {
        return Ok(live);
    }
    Stored::list(document)?
        .segments
        .range(..=number)
        .next_back()
        .map(|(_, segment)| segment.clone())
        .ok_or_else(|| MemoryError::Corrupt {
            location: live.display().to_string(),
            reason: format!("no segment of the journal holds revision {number}"),
        })
}
