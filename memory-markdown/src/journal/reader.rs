//! The readers: a journal's whole history as `history` and `purge` read it, without the lock,
//! and the pieces a write reads of it (its last line, a segment's first).

use std::fs::{self, File};
use std::io::{self, BufRead, ErrorKind, Read, Seek, SeekFrom};
use std::path::Path;

use memory_core::raw::sha256_hex;
use memory_core::{Document, DocumentId, MemoryError, Revision};

use super::parser::{Head, follows, parse_all, parse_head};
use super::segments::{Stored, path};
use super::tip::{never_landed, text_sha256};
use crate::files;

/// How much of the journal's end a write reads first to find its last line: a revision holds
/// a whole document, so a few of them.
const TAIL: u64 = 16 * 1024;

/// The journal open for reading and its length; `None` when there is none.
pub(super) fn open_file(path: &Path) -> Result<Option<(File, u64)>, MemoryError> {
    let file = match File::open(path) {
        Ok(file) => file,
        // NotADirectory: a file where the document's directory should be, which reading the
        // document reports already.
        Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(None);
        }
        Err(err) => return Err(files::read_error(path, err)),
    };
    let meta = file.metadata().map_err(|err| files::io_error(path, err))?;
    if meta.is_dir() {
        // Opening a directory succeeds; reading it would fail less clearly.
        return Err(files::io_error(path, ErrorKind::IsADirectory.into()));
    }
    Ok(Some((file, meta.len())))
}

/// The head of the first line of the journal segment at `path`.
pub(super) fn first_head(path: &Path, document: &DocumentId) -> Result<Head, MemoryError> {
    let file = File::open(path).map_err(|err| files::read_error(path, err))?;
    let mut line = Vec::new();
    io::BufReader::new(file)
        .read_until(b'\n', &mut line)
        .map_err(|err| files::io_error(path, err))?;
    parse_head(path, document, line.trim_ascii_end(), "line 1")
}

/// Bytes `from..to` of `file`.
pub(super) fn read_range(file: &mut File, from: u64, to: u64) -> io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    file.take(to.saturating_sub(from)).read_to_end(&mut bytes)?;
    if (bytes.len() as u64) < to.saturating_sub(from) {
        return Err(io::Error::new(
            ErrorKind::UnexpectedEof,
            "the journal shrank while it was read",
        ));
    }
    Ok(bytes)
}

/// The last whole line among the first `len` bytes of `file`, without its newline, with where
/// it starts and ends (past its newline); `None` when they hold no newline. Reads from the end
/// in growing chunks, so a write reads about one revision, not the whole journal.
pub(super) fn last_line(file: &mut File, len: u64) -> io::Result<Option<(u64, u64, Vec<u8>)>> {
    let mut chunk = TAIL;
    loop {
        let from = len.saturating_sub(chunk);
        let bytes = read_range(file, from, len)?;
        let at = |index: usize| from + index as u64;
        match bytes.iter().rposition(|byte| *byte == b'\n') {
            Some(newline) => {
                let start = bytes[..newline].iter().rposition(|byte| *byte == b'\n');
                match start {
                    Some(before) => {
                        let line = bytes[before + 1..newline].to_vec();
                        return Ok(Some((at(before + 1), at(newline + 1), line)));
                    }
                    None if from == 0 => {
                        return Ok(Some((0, at(newline + 1), bytes[..newline].to_vec())));
                    }
                    None => {}
                }
            }
            None if from == 0 => return Ok(None),
            None => {}
        }
        chunk = chunk.saturating_mul(2);
    }
}

/// The whole, landed revisions of the document at `document` (which holds `current`), oldest
/// first: without a torn last line, and without a tip whose write never landed. A periodic
/// checkpoint gets its text from its `.md` file when that holds the text recorded (by its
/// SHA-256); otherwise it stays a change, rebuilt from the revisions before it.
pub(crate) fn read_landed(
    document: &Path,
    id: &DocumentId,
    current: &Document,
) -> Result<Vec<Revision>, MemoryError> {
    // A file that vanishes while it is read was pruned by a write meanwhile: read again.
    const ATTEMPTS: usize = 3;
    let mut revisions = None;
    for _ in 0..ATTEMPTS {
        revisions = read_segments(document, id)?;
        if revisions.is_some() {
            break;
        }
    }
    let mut revisions = revisions.ok_or_else(|| {
        MemoryError::unavailable(
            path(document).display().to_string(),
            "its segments were pruned each time it was read",
        )
    })?;
    let sha256 = text_sha256(current);
    while revisions.last().is_some_and(|tip| {
        never_landed(
            &tip.sha256_before,
            &tip.sha256_after,
            tip.time,
            sha256,
            current.modified,
        )
    }) {
        revisions.pop();
    }
    Ok(revisions)
}

/// Every revision in the journal's segments, oldest first, with the checkpoints' texts;
/// `None` when a file listed was gone by the time it was read.
fn read_segments(document: &Path, id: &DocumentId) -> Result<Option<Vec<Revision>>, MemoryError> {
    let gone = |err: &io::Error| err.kind() == ErrorKind::NotFound;
    // The live segment before the older ones: a write that starts a segment renames the live
    // one before it creates the next, so this order misses no revision. One read both as the
    // live segment and, renamed since, as an older one is taken once.
    let live_path = path(document);
    let live = match fs::read(&live_path) {
        Ok(bytes) => Some(bytes),
        Err(err) if gone(&err) || err.kind() == ErrorKind::NotADirectory => None,
        Err(err) => return Err(files::read_error(&live_path, err)),
    };
    let stored = Stored::list(document)?;
    let mut revisions: Vec<Revision> = Vec::new();
    let mut segments = Vec::with_capacity(stored.segments.len() + 1);
    for path in stored.segments.values() {
        match fs::read(path) {
            Ok(bytes) => segments.push((path.as_path(), bytes)),
            Err(err) if gone(&err) => return Ok(None),
            Err(err) => return Err(files::read_error(path, err)),
        }
    }
    segments.extend(live.map(|bytes| (live_path.as_path(), bytes)));
    for (path, bytes) in segments {
        let segment = parse_all(path, id, &bytes)?;
        let (Some(first), Some(last)) = (segment.first(), revisions.last()) else {
            revisions.extend(segment);
            continue;
        };
        if path == live_path && first.number <= last.number {
            continue;
        }
        follows(path, "its first line", first, last)?;
        revisions.extend(segment);
    }
    let Some(oldest) = revisions.first().map(|revision| revision.number) else {
        return Ok(Some(revisions));
    };
    for (number, path) in &stored.texts {
        let index = number
            .checked_sub(oldest)
            .and_then(|i| usize::try_from(i).ok());
        let Some(revision) = index.and_then(|index| revisions.get_mut(index)) else {
            continue;
        };
        if !revision.is_change_only() {
            continue;
        }
        let text = match fs::read(path) {
            Ok(bytes) => String::from_utf8(bytes).ok(),
            Err(err) if gone(&err) => return Ok(None),
            Err(err) => return Err(files::read_error(path, err)),
        };
        revision.text = text.filter(|text| sha256_hex(text) == revision.sha256_after);
    }
    Ok(Some(revisions))
}
