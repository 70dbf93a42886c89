//! A document's history (`memory_core::Revision`s): the journal `.<NAME>.history.jsonl` beside
//! it, one revision per line as JSON, oldest first, so `cat`, `jq` and `grep` read it.
//!
//! A file system cannot replace two files in one step, so a write appends its revisions to the
//! journal first and then renames the document in, both under the document's lock (as with
//! receipts). A writer killed between the two leaves a tip whose write never landed: readers
//! hide it and the next writer cuts it off, so the journal tells what the document went
//! through. A writer killed mid-append leaves a last line without its newline: ignored and cut
//! off the same way.
//!
//! Appends are not flushed to disk: a second fsync per write would cost 20% to 200% of a write's
//! p50 (measured over 200 adds; under 7% without it). After a power loss the document (which is
//! flushed) may be ahead of the journal; the next write then records the difference as an
//! `external` revision. No text is lost, only who wrote it.
//!
//! The middle layer: the journal file and its lines, built on `files` alone. What a write or a
//! purge does with it is `store`'s.

use std::fs::File;
use std::io::{self, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use memory_core::raw::{RevisionTip, sha256_hex};
use memory_core::{Document, DocumentId, MemoryError, Retention, Revision, Version};

use crate::files;

/// How much of the journal's end a write reads first to find its last line: a revision holds
/// a whole document, so a few of them.
const TAIL: u64 = 16 * 1024;

/// Revision numbers past this are not ours: JSON readers in JavaScript lose precision above
/// 2^53, and far below `u64::MAX` the `+ 1` of the next revision cannot overflow.
const MAX_NUMBER: u64 = 1 << 53;

/// The journal of the document at `document`.
pub(crate) fn path(document: &Path) -> PathBuf {
    files::beside(document, "history.jsonl")
}

/// The markdown version of a document never written: the hash of the empty text.
pub(crate) fn never_written() -> Version {
    Version::new(sha256_hex(""))
}

/// Now, in whole milliseconds: the journal keeps times to the millisecond, so a revision
/// handed back (a purge's tombstone) is the one `history` reads back.
pub(crate) fn now() -> SystemTime {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    UNIX_EPOCH + Duration::from_millis(u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

/// The tip of a journal with no revisions.
pub(crate) fn empty_tip() -> RevisionTip {
    RevisionTip::empty(never_written())
}

/// The journal as a write finds it, under the document's lock: its tip, read from its end
/// without reading the rest, and how much of it holds whole revisions whose writes landed.
pub(crate) struct Journal {
    path: PathBuf,
    document: DocumentId,
    /// Open for reading, when it exists.
    file: Option<File>,
    /// Its newest landed revision.
    last: Option<Revision>,
    /// Where the newest landed revision's line starts (0: it is the only one).
    last_start: u64,
    /// Where the whole, landed revisions end: the rest (a torn line, a revision whose write
    /// never landed) is cut off before the next append.
    end: u64,
    /// Its length as found.
    len: u64,
}

impl Journal {
    /// Reads the journal of the document at `document`, which holds `current` now. The caller
    /// holds the document's lock. Reads and changes nothing but what it must to find the tip.
    ///
    /// # Errors
    /// `Corrupt` when the journal is not a file, or its last whole line is not a revision of
    /// this document; `Unavailable` when it cannot be read.
    pub(crate) fn open(
        document: &Path,
        id: &DocumentId,
        current: &Document,
    ) -> Result<Journal, MemoryError> {
        let path = path(document);
        let mut journal = Journal {
            file: None,
            last: None,
            last_start: 0,
            end: 0,
            len: 0,
            document: id.clone(),
            path,
        };
        let Some((mut file, len)) = open_file(&journal.path)? else {
            return Ok(journal);
        };
        journal.len = len;
        let sha256 = text_sha256(current);
        let mut end = len;
        // Each turn drops one revision whose write never landed; there is at most one unless
        // the journal was edited by hand.
        while let Some((start, line_end, line)) =
            last_line(&mut file, end).map_err(|err| files::io_error(&journal.path, err))?
        {
            let place = format!("the line at byte {start}");
            let revision = parse_line(&journal.path, id, &line, &place)?;
            if never_landed(&revision, sha256, current.modified) {
                end = start;
                continue;
            }
            journal.last = Some(revision);
            journal.last_start = start;
            journal.end = line_end;
            break;
        }
        journal.file = Some(file);
        Ok(journal)
    }

    /// What the next revision builds on.
    pub(crate) fn tip(&self) -> RevisionTip {
        self.last.as_ref().map_or_else(empty_tip, RevisionTip::of)
    }

    /// Records `revisions` (the write's, from `PlannedWrite::revisions` on [`Journal::tip`])
    /// before the write renames its document in: one append, after cutting off what did not
    /// land. When the journal holds more than `keep + keep / 2` revisions, or its oldest is
    /// half as old again as `max_age`, it is rewritten with only what `retention` keeps, so a
    /// write appends a few lines on average however long the history.
    ///
    /// # Errors
    /// `Unavailable` when the journal cannot be written; `Corrupt` when a rewrite finds a line
    /// that is not a revision of this document.
    pub(crate) fn record(
        mut self,
        revisions: &[Revision],
        retention: Retention,
        now: SystemTime,
    ) -> Result<(), MemoryError> {
        let Some(newest) = revisions.last() else {
            return Ok(());
        };
        if self.prune_due(revisions, retention, now)? {
            let mut kept = self.read_landed()?;
            kept.extend_from_slice(revisions);
            kept.retain(|r| !retention.prunes(r.number, r.time, newest.number, now));
            return files::replace(&self.path, &lines(&self.path, &kept)?);
        }
        let io = |err| files::io_error(&self.path, err);
        let mut file = files::private_file()
            .append(true)
            .create(true)
            .open(&self.path)
            .map_err(io)?;
        if self.end < self.len {
            file.set_len(self.end).map_err(io)?;
        }
        // One write of all the lines: a crash tears at most the end of the last one.
        file.write_all(lines(&self.path, revisions)?.as_bytes())
            .map_err(io)
    }

    /// Whether the journal, with `revisions` appended, holds more than the retention keeps by
    /// enough to rewrite it. Reads the oldest line only when the count or age could tell.
    fn prune_due(
        &mut self,
        revisions: &[Revision],
        retention: Retention,
        now: SystemTime,
    ) -> Result<bool, MemoryError> {
        let (Some(newest), Some(arriving)) = (revisions.last(), revisions.first()) else {
            return Ok(false);
        };
        let keep = u64::try_from(retention.keep).unwrap_or(u64::MAX);
        let most = keep.saturating_add(keep / 2);
        // Numbers start at 1, so the count is at most the newest number.
        if newest.number <= most && retention.max_age.is_none() {
            return Ok(false);
        }
        let (first_number, first_time) = match (&self.last, self.last_start) {
            (Some(last), 0) => (last.number, last.time),
            (Some(_), _) => {
                let first = self.first()?;
                (first.number, first.time)
            }
            (None, _) => (arriving.number, arriving.time),
        };
        let count = (newest.number + 1).saturating_sub(first_number);
        // By age only once the oldest is half as old again as the limit: after a rewrite all
        // are younger than it, so the next comes max_age / 2 later at the soonest, and a
        // revision is rewritten a few times in its life, not on every write.
        let stale = retention.max_age.is_some_and(|age| {
            now.duration_since(first_time)
                .is_ok_and(|since| since > age.saturating_add(age / 2))
        });
        Ok(count > most || stale)
    }

    /// The oldest revision, from the journal's first line (the journal holds more than one).
    fn first(&mut self) -> Result<Revision, MemoryError> {
        let bytes = match self.file.as_mut() {
            Some(file) => first_line(file, self.end),
            None => Ok(Vec::new()),
        };
        let line = bytes.map_err(|err| files::io_error(&self.path, err))?;
        parse_line(&self.path, &self.document, &line, "line 1")
    }

    /// Every whole, landed revision, oldest first, read in full; none without a journal.
    fn read_landed(&mut self) -> Result<Vec<Revision>, MemoryError> {
        let bytes = match self.file.as_mut() {
            Some(file) => read_range(file, 0, self.end),
            None => Ok(Vec::new()),
        };
        let bytes = bytes.map_err(|err| files::io_error(&self.path, err))?;
        parse_all(&self.path, &self.document, &bytes)
    }
}

/// The journal open for reading and its length; `None` when there is none.
fn open_file(path: &Path) -> Result<Option<(File, u64)>, MemoryError> {
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

/// The SHA-256 of `document`'s text, which is its markdown version: no need to hash it again.
fn text_sha256(document: &Document) -> &str {
    document.version.as_str()
}

/// Whether `tip`'s write never reached the document, which now holds text hashing to `sha256`,
/// last modified at `modified`: the document holds the text from before the tip and was last
/// changed before the tip was recorded. The time tells a write that never landed from a hand
/// edit that put the text back afterwards (an editor's undo, a `git checkout`), which is a
/// change of its own. A missing document has no time; a first write that never landed is far
/// likelier there than a document deleted by hand.
fn never_landed(tip: &Revision, sha256: &str, modified: Option<SystemTime>) -> bool {
    // Recorded times are whole milliseconds, rounded down: the document's time, from just
    // before the tip, can be up to a millisecond past it.
    let landed_after = tip.time.checked_add(Duration::from_millis(1));
    tip.sha256_before == sha256
        && tip.sha256_after != sha256
        && modified.is_none_or(|modified| landed_after.is_none_or(|after| modified < after))
}

/// One revision of `document`, from a journal line; `place` says where, for the error.
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
    Ok(revision)
}

/// Every revision in `bytes` (a journal's whole lines, or more), oldest first, checked to be
/// this document's and numbered one after another. A last line without its newline is a
/// torn append and is left out.
fn parse_all(
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
        if let Some(previous) = revisions.last()
            && revision.number != previous.number + 1
        {
            return Err(MemoryError::Corrupt {
                location: path.display().to_string(),
                reason: format!(
                    "{place} is revision {} after revision {}: numbers go up by one",
                    revision.number, previous.number
                ),
            });
        }
        revisions.push(revision);
    }
    Ok(revisions)
}

/// `revisions` as journal lines: compact JSON, one a line, each ending in a newline.
pub(crate) fn lines(path: &Path, revisions: &[Revision]) -> Result<String, MemoryError> {
    let mut out = String::new();
    for revision in revisions {
        let line = serde_json::to_string(revision)
            .map_err(|err| MemoryError::unavailable(path.display().to_string(), err))?;
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// Bytes `from..to` of `file`.
fn read_range(file: &mut File, from: u64, to: u64) -> io::Result<Vec<u8>> {
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
fn last_line(file: &mut File, len: u64) -> io::Result<Option<(u64, u64, Vec<u8>)>> {
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

/// The first line among the first `len` bytes of `file`, which hold a newline, without it.
fn first_line(file: &mut File, len: u64) -> io::Result<Vec<u8>> {
    let mut chunk = TAIL;
    loop {
        let to = chunk.min(len);
        let mut bytes = read_range(file, 0, to)?;
        if let Some(newline) = bytes.iter().position(|byte| *byte == b'\n') {
            bytes.truncate(newline);
            return Ok(bytes);
        }
        if to == len {
            return Ok(bytes);
        }
        chunk = chunk.saturating_mul(2);
    }
}

/// The whole, landed revisions of the document at `document` (which holds `current`), oldest
/// first: without a torn last line, and without a tip whose write never landed.
pub(crate) fn read_landed(
    document: &Path,
    id: &DocumentId,
    current: &Document,
) -> Result<Vec<Revision>, MemoryError> {
    let path = path(document);
    let Some((mut file, len)) = open_file(&path)? else {
        return Ok(Vec::new());
    };
    let bytes = read_range(&mut file, 0, len).map_err(|err| files::io_error(&path, err))?;
    let mut revisions = parse_all(&path, id, &bytes)?;
    let sha256 = text_sha256(current);
    while revisions
        .last()
        .is_some_and(|tip| never_landed(tip, sha256, current.modified))
    {
        revisions.pop();
    }
    Ok(revisions)
}

/// Removes the journal of the document at `document`, if it has one: history is off.
pub(crate) fn remove_journal(document: &Path) -> Result<(), MemoryError> {
    files::erase(&path(document))
}
