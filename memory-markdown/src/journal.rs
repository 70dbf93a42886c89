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
//! A revision's line holds its whole text only at checkpoints (every `keep`th, at most every
//! 100th, and hand edits); between them a line holds the updates the write applied, and
//! `history` rebuilds the text from the checkpoint before it. A write takes its tip from the
//! head of the last line: from its first KiB when this provider wrote that line (`KnownTips`),
//! else from the line, read with serde skipping its text. Pruning rewrites the journal from
//! the newest base at or below the oldest revision the retention keeps (a copy of the bytes
//! from there on, without parsing the texts), and only in the write that records a periodic
//! checkpoint: that write stores a whole text anyway, so one write in a hundred is slow rather
//! than two (measured: two slow writes in a hundred put markdown's add p99 on a large document
//! 27-49% above history off).
//!
//! Appends are not flushed to disk: a second fsync per write would cost 20% to 200% of a write's
//! p50 (measured over 200 adds; under 7% without it). After a power loss the document (which is
//! flushed) may be ahead of the journal; the next write then records the difference as an
//! `external` revision. No text is lost, only who wrote it.
//!
//! The middle layer: the journal file and its lines, built on `files` alone. What a write or a
//! purge does with it is `store`'s.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use memory_core::raw::{RevisionTip, droppable, from_signed_unix_millis, sha256_hex};
use memory_core::{Document, DocumentId, MemoryError, Retention, Revision, Version};
use serde::Deserialize;

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

/// How many bytes of a journal's last line [`KnownTips`] compares: all of its head (the fields
/// before `updates` and `text`), whose ids are at most `MAX_ID_LEN` bytes, fits well within.
const KNOWN_PREFIX: usize = 1024;

/// The last line of each journal this provider wrote, as it left it, so that the next write
/// finds its tip by comparing the line's first bytes and the journal's length rather than by
/// reading the line: after a checkpoint the line holds a whole text, and reading and parsing
/// it (1.5 MB) made the write after each checkpoint as slow as the checkpoint. A journal that
/// anyone else changed since (another process, a person) no longer matches and is read.
#[derive(Debug, Default, Clone)]
pub(crate) struct KnownTips(Arc<Mutex<HashMap<PathBuf, KnownTip>>>);

/// A journal's last line as a write left it.
#[derive(Debug, Clone)]
struct KnownTip {
    /// Where the line starts.
    start: u64,
    /// Where it ends, past its newline: the journal's length then.
    end: u64,
    /// Its first bytes, at most [`KNOWN_PREFIX`].
    prefix: Vec<u8>,
    /// Its head.
    head: Head,
}

impl KnownTips {
    fn get(&self, journal: &Path) -> Option<KnownTip> {
        let known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        known.get(journal).cloned()
    }

    fn set(&self, journal: &Path, tip: Option<KnownTip>) {
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match tip {
            Some(tip) => known.insert(journal.to_path_buf(), tip),
            None => known.remove(journal),
        };
    }
}

impl KnownTip {
    /// The last line a write left: it put `text` (whole lines, the last one `newest`'s) at
    /// byte `at` of the journal.
    fn of_written(at: u64, text: &str, newest: &Revision) -> KnownTip {
        let body = text.strip_suffix('\n').unwrap_or(text);
        let start_in_text = body.rfind('\n').map_or(0, |newline| newline + 1);
        let line = &body.as_bytes()[start_in_text..];
        KnownTip {
            start: at + start_in_text as u64,
            end: at + text.len() as u64,
            prefix: line[..line.len().min(KNOWN_PREFIX)].to_vec(),
            head: Head::of(newest),
        }
    }

    /// Whether `file`, `len` bytes long, still ends in this line: the same length, a line
    /// starting at the same place with the same first bytes (so the same head).
    fn still_ends(&self, file: &mut File, len: u64) -> io::Result<bool> {
        if len != self.end {
            return Ok(false);
        }
        let from = self.start.saturating_sub(1);
        let to = self.start + self.prefix.len() as u64;
        let bytes = read_range(file, from, to.min(len))?;
        let line = match self.start {
            0 => &bytes[..],
            _ if bytes.first() == Some(&b'\n') => &bytes[1..],
            _ => return Ok(false),
        };
        Ok(line == self.prefix.as_slice())
    }
}

/// The journal as a write finds it, under the document's lock: its tip, read from its end
/// without reading the rest, and how much of it holds whole revisions whose writes landed.
pub(crate) struct Journal {
    path: PathBuf,
    document: DocumentId,
    /// Open for reading, when it exists.
    file: Option<File>,
    /// Its newest landed revision.
    last: Option<Head>,
    /// Where the newest landed revision's line starts (0: it is the only one).
    last_start: u64,
    /// Where the whole, landed revisions end: the rest (a torn line, a revision whose write
    /// never landed) is cut off before the next append.
    end: u64,
    /// Its length as found.
    len: u64,
    /// Where the write that records revisions leaves its last line.
    known: KnownTips,
}

impl Journal {
    /// Reads the journal of the document at `document`, which holds `current` now. The caller
    /// holds the document's lock. Reads and changes nothing but what it must to find the tip:
    /// when the journal still ends as this provider's last write to it left it (`known`), a
    /// few bytes of its last line.
    ///
    /// # Errors
    /// `Corrupt` when the journal is not a file, or its last whole line is not a revision of
    /// this document; `Unavailable` when it cannot be read.
    pub(crate) fn open(
        document: &Path,
        id: &DocumentId,
        current: &Document,
        known: &KnownTips,
    ) -> Result<Journal, MemoryError> {
        let path = path(document);
        let mut journal = Journal {
            file: None,
            last: None,
            last_start: 0,
            end: 0,
            len: 0,
            document: id.clone(),
            known: known.clone(),
            path,
        };
        let Some((mut file, len)) = open_file(&journal.path)? else {
            return Ok(journal);
        };
        journal.len = len;
        let sha256 = text_sha256(current);
        let io = |err| files::io_error(&journal.path, err);
        if let Some(tip) = known.get(&journal.path)
            && tip.still_ends(&mut file, len).map_err(io)?
            && !tip.head.never_landed(sha256, current.modified)
        {
            journal.last = Some(tip.head);
            journal.last_start = tip.start;
            journal.end = tip.end;
            journal.file = Some(file);
            return Ok(journal);
        }
        let mut end = len;
        // Each turn drops one revision whose write never landed; there is at most one unless
        // the journal was edited by hand.
        while let Some((start, line_end, line)) =
            last_line(&mut file, end).map_err(|err| files::io_error(&journal.path, err))?
        {
            let place = format!("the line at byte {start}");
            let revision = parse_head(&journal.path, id, &line, &place)?;
            if revision.never_landed(sha256, current.modified) {
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
        self.last
            .as_ref()
            .map_or_else(empty_tip, |last| RevisionTip {
                number: last.number,
                version_after: last.version_after.clone(),
                sha256_after: last.sha256_after.clone(),
                bytes_after: last.bytes_after,
            })
    }

    /// Records `revisions` (the write's, from `PlannedWrite::revisions` on [`Journal::tip`])
    /// before the write renames its document in: one append, after cutting off what did not
    /// land. A write that records a periodic checkpoint also rewrites the journal from the
    /// newest base at or below the oldest revision `retention` keeps, when there is anything
    /// before it, so a write appends a few lines on average however long the history, and a
    /// rewrite copies the kept lines' bytes without parsing their texts.
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
        let (Some(arriving), Some(newest)) = (revisions.first(), revisions.last()) else {
            return Ok(());
        };
        // The lines before the base of the oldest revision kept are dropped by rewriting the
        // journal, and only in a write that records a periodic checkpoint: that write is
        // slow anyway (it stores a whole text), so one write in `checkpoint_every` pays for
        // pruning and the rest append a line. The journal then holds at most
        // `keep + checkpoint_every` lines.
        let keep = u64::try_from(retention.keep).unwrap_or(u64::MAX);
        let every = retention.checkpoint_every();
        let records_checkpoint = (arriving.number - 1) / every != newest.number / every;
        let oldest_base = (newest.number + 1).saturating_sub(keep) / every * every;
        // The first revision kept now: the journal's first line, else the first arriving.
        let first = match self.end {
            0 => Some(arriving.number),
            _ => self.first_number(),
        };
        let periodic = records_checkpoint && first.is_none_or(|first| first < oldest_base);
        // By age once the oldest line is half as old again as the limit: after a rewrite the
        // oldest is at most that old (see `Retention::is_checkpoint`), so a line is rewritten
        // a few times in its life, not on every write.
        let stale = retention.max_age.is_some_and(|age| {
            self.oldest_time().is_some_and(|oldest| {
                now.duration_since(oldest)
                    .is_ok_and(|since| since > age.saturating_add(age / 2))
            })
        });
        // Forgotten first: a write that fails part way leaves the journal unknown.
        self.known.set(&self.path, None);
        let (at, text) = if periodic || stale {
            let text = self.rewritten(revisions, retention, now)?;
            files::replace(&self.path, &text)?;
            (0, text)
        } else {
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
            let text = lines(&self.path, revisions)?;
            file.write_all(text.as_bytes()).map_err(io)?;
            (self.end, text)
        };
        let tip = KnownTip::of_written(at, &text, newest);
        self.known.set(&self.path, Some(tip));
        Ok(())
    }

    /// The journal with `arriving` recorded, from the newest base at or below the oldest
    /// revision `retention` keeps (see `droppable`): the landed lines' bytes from there on,
    /// read by their heads only, and the arriving ones.
    fn rewritten(
        &mut self,
        arriving: &[Revision],
        retention: Retention,
        now: SystemTime,
    ) -> Result<String, MemoryError> {
        let bytes = match self.file.as_mut() {
            Some(file) => read_range(file, 0, self.end),
            None => Ok(Vec::new()),
        };
        let bytes = bytes.map_err(|err| files::io_error(&self.path, err))?;
        let landed: Vec<&[u8]> = bytes.split_inclusive(|byte| *byte == b'\n').collect();
        let mut heads = Vec::with_capacity(landed.len() + arriving.len());
        for (index, line) in landed.iter().enumerate() {
            let place = format!("line {}", index + 1);
            let head = parse_head(&self.path, &self.document, line.trim_ascii_end(), &place)?;
            heads.push((head.number, head.time, head.is_base()));
        }
        heads.extend(arriving.iter().map(|r| (r.number, r.time, r.is_base())));
        let tip = heads.last().map_or(0, |(number, ..)| *number);
        let dropped = droppable(heads, tip, now, &retention);
        let kept_landed = landed.get(dropped..).unwrap_or_default().concat();
        let mut text = String::from_utf8(kept_landed).map_err(|_| MemoryError::Corrupt {
            location: self.path.display().to_string(),
            reason: "it is not UTF-8".to_owned(),
        })?;
        let from = dropped.saturating_sub(landed.len());
        text.push_str(&lines(&self.path, &arriving[from.min(arriving.len())..])?);
        Ok(text)
    }

    /// The time of the journal's oldest revision (see [`Journal::first_field`]).
    fn oldest_time(&mut self) -> Option<SystemTime> {
        let millis = self.first_field("time")?;
        Some(from_signed_unix_millis(millis))
    }

    /// The number of the journal's oldest revision (see [`Journal::first_field`]); `None`
    /// also for an empty journal, which has nothing to prune.
    fn first_number(&mut self) -> Option<u64> {
        u64::try_from(self.first_field("number")?).ok()
    }

    /// The integer field `name` of the journal's first line, from its head (a few KB, never
    /// a text); `None` without a journal, or when the head does not tell.
    fn first_field(&mut self, name: &str) -> Option<i64> {
        const HEAD: u64 = 4 * 1024;
        let head = read_range(self.file.as_mut()?, 0, self.end.min(HEAD)).ok()?;
        let key = format!("\"{name}\":");
        let at = head
            .windows(key.len())
            .position(|window| window == key.as_bytes())?
            + key.len();
        let digits: Vec<u8> = head[at..]
            .iter()
            .copied()
            .enumerate()
            .take_while(|(index, byte)| byte.is_ascii_digit() || (*index == 0 && *byte == b'-'))
            .map(|(_, byte)| byte)
            .collect();
        std::str::from_utf8(&digits).ok()?.parse().ok()
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
fn never_landed(
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

/// A journal line's head: what a write needs of a revision, read without its text (which
/// serde skips over rather than copies) or its updates.
#[derive(Debug, Clone, serde::Deserialize)]
struct Head {
    number: u64,
    document: DocumentId,
    version_after: Version,
    sha256_before: String,
    sha256_after: String,
    bytes_after: usize,
    #[serde(deserialize_with = "stored_time")]
    time: SystemTime,
    #[serde(default)]
    updates: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    text: Option<serde::de::IgnoredAny>,
}

impl Head {
    /// Whether the revisions after it can be rebuilt from it alone (see
    /// `Revision::is_base`): it has its text, is a tombstone, or is the first.
    fn is_base(&self) -> bool {
        self.text.is_some() || self.updates.is_none() || self.number == 1
    }

    /// The head of `revision`'s line.
    fn of(revision: &Revision) -> Head {
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
    fn never_landed(&self, sha256: &str, modified: Option<SystemTime>) -> bool {
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
fn parse_head(
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

/// Removes the journal of the document at `document`, if it has one: history is off.
pub(crate) fn remove_journal(document: &Path) -> Result<(), MemoryError> {
    files::erase(&path(document))
}
