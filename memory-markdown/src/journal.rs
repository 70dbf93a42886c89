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
//! A line holds a revision's change (its updates), never a whole text but a hand edit's. At
//! each checkpoint ([`Retention::is_checkpoint`]) the journal is split: the write renames the
//! live segment to `.<NAME>.history.<first>.jsonl` and starts a new one with its line, and the
//! next write hard-links the document file it replaces, which holds the checkpoint's text, as
//! `.<NAME>.history.<number>.md`. Pruning unlinks the segments before the newest checkpoint at
//! or below the oldest revision kept. So no write rewrites a segment or writes a text twice:
//! measured, one rewrite in a hundred writes (the journal from the last base, texts included)
//! put markdown's add p99 20-25% above history off, on a 75 KB and on a 1.5 MB document. A
//! write takes its tip from the head of the live segment's last line: from its first KiB when
//! this provider wrote that line (`KnownTips`), else from the line, read with serde skipping
//! what it holds.
//!
//! Appends are not flushed to disk: a second fsync per write would cost 20% to 200% of a write's
//! p50 (measured over 200 adds; under 7% without it). After a power loss the document (which is
//! flushed) may be ahead of the journal; the next write then records the difference as an
//! `external` revision. No text is lost, only who wrote it.
//!
//! The middle layer: the journal file and its lines, built on `files` alone. What a write or a
//! purge does with it is `store`'s.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{self, BufRead, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use memory_core::raw::{RevisionTip, from_signed_unix_millis, sha256_hex};
use memory_core::{Document, DocumentId, MemoryError, Retention, Revision, Surface, Version};
use serde::Deserialize;

use crate::files;

/// How much of the journal's end a write reads first to find its last line: a revision holds
/// a whole document, so a few of them.
const TAIL: u64 = 16 * 1024;

/// Revision numbers past this are not ours: JSON readers in JavaScript lose precision above
/// 2^53, and far below `u64::MAX` the `+ 1` of the next revision cannot overflow.
const MAX_NUMBER: u64 = 1 << 53;

/// The journal of the document at `document`: its live segment, the one writes append to.
pub(crate) fn path(document: &Path) -> PathBuf {
    files::beside(document, "history.jsonl")
}

/// An older segment of the journal, holding the revisions from `first` on.
fn segment_path(document: &Path, first: u64) -> PathBuf {
    files::beside(document, &format!("history.{first}.jsonl"))
}

/// The whole text of revision `number`, a checkpoint whose line holds its change alone.
fn text_path(document: &Path, number: u64) -> PathBuf {
    files::beside(document, &format!("history.{number}.md"))
}

/// The journal's older segments and its checkpoints' texts, by revision number, as the
/// document's directory lists them now.
#[derive(Debug, Default)]
struct Stored {
    segments: BTreeMap<u64, PathBuf>,
    texts: BTreeMap<u64, PathBuf>,
}

impl Stored {
    /// What is stored beside the document at `document`; nothing when its directory is not
    /// there.
    fn list(document: &Path) -> Result<Stored, MemoryError> {
        let (dir, name) = files::split(document);
        let prefix = format!(".{name}.history.");
        let mut stored = Stored::default();
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                return Ok(stored);
            }
            Err(err) => return Err(files::io_error(dir, err)),
        };
        for entry in entries {
            let entry = entry.map_err(|err| files::io_error(dir, err))?;
            let file = entry.file_name();
            let Some(rest) = file.to_str().and_then(|file| file.strip_prefix(&prefix)) else {
                continue;
            };
            let (number, kind) = rest.split_once('.').unwrap_or((rest, ""));
            // Only the name a number prints as (`7`, not `07` or `+7`) is one of ours.
            let number = match number.parse::<u64>() {
                Ok(parsed) if parsed.to_string() == number => parsed,
                _ => continue,
            };
            match kind {
                "jsonl" => stored.segments.insert(number, entry.path()),
                "md" => stored.texts.insert(number, entry.path()),
                _ => continue,
            };
        }
        Ok(stored)
    }

    /// Every file listed.
    fn files(&self) -> impl Iterator<Item = &PathBuf> {
        self.segments.values().chain(self.texts.values())
    }
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
    /// The last line a write left: it put `text` (whole lines, the last one with `head`) at
    /// byte `at` of the journal.
    fn of_written(at: u64, text: &str, head: Head) -> KnownTip {
        let body = text.strip_suffix('\n').unwrap_or(text);
        let start_in_text = body.rfind('\n').map_or(0, |newline| newline + 1);
        let line = &body.as_bytes()[start_in_text..];
        KnownTip {
            start: at + start_in_text as u64,
            end: at + text.len() as u64,
            prefix: line[..line.len().min(KNOWN_PREFIX)].to_vec(),
            head,
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
    /// The document's own path, which the other segments and the checkpoint texts are named
    /// after.
    document_path: PathBuf,
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
        let mut journal = Journal {
            last: None,
            last_start: 0,
            end: 0,
            len: 0,
            document: id.clone(),
            known: known.clone(),
            path: path(document),
            document_path: document.to_path_buf(),
        };
        journal.find_tip(current)?;
        // A live segment with no landed revision (a write that started one was killed before
        // its document landed, or before the segment was created) gives way to the newest
        // older segment, which holds the tip.
        if journal.last.is_none()
            && let Some((_, newest)) = Stored::list(document)?.segments.pop_last()
        {
            fs::rename(&newest, &journal.path).map_err(|err| files::io_error(&newest, err))?;
            journal.find_tip(current)?;
        }
        Ok(journal)
    }

    /// Finds the tip of the live segment, dropping what never landed (see [`Journal::open`]).
    fn find_tip(&mut self, current: &Document) -> Result<(), MemoryError> {
        let Some((mut file, len)) = open_file(&self.path)? else {
            return Ok(());
        };
        self.len = len;
        let sha256 = text_sha256(current);
        let io = |err| files::io_error(&self.path, err);
        if let Some(tip) = self.known.get(&self.path)
            && tip.still_ends(&mut file, len).map_err(io)?
            && !tip.head.never_landed(sha256, current.modified)
        {
            self.last = Some(tip.head);
            self.last_start = tip.start;
            self.end = tip.end;
            return Ok(());
        }
        let mut end = len;
        // Each turn drops one revision whose write never landed; there is at most one unless
        // the journal was edited by hand.
        while let Some((start, line_end, line)) = last_line(&mut file, end).map_err(io)? {
            let place = format!("the line at byte {start}");
            let revision = parse_head(&self.path, &self.document, &line, &place)?;
            if revision.never_landed(sha256, current.modified) {
                end = start;
                continue;
            }
            self.last = Some(revision);
            self.last_start = start;
            self.end = line_end;
            break;
        }
        Ok(())
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
    /// before the write renames its document in, replacing `before` (its file: `target`).
    ///
    /// Most writes append their lines to the live segment, after cutting off what did not
    /// land. A write whose revisions include a base (a periodic checkpoint, a hand edit) starts
    /// a new live segment at the last of them: the old one is renamed to
    /// `.<NAME>.history.<first>.jsonl`, and the segments older than the newest base at or
    /// below the oldest revision `retention` keeps are unlinked, so pruning writes nothing.
    /// A periodic checkpoint's line holds its change alone: the next write links the file it
    /// replaces, which holds the checkpoint's text, as `.<NAME>.history.<number>.md`, so a
    /// checkpoint costs no bytes either.
    ///
    /// # Errors
    /// `Unavailable` when the journal cannot be written; `Corrupt` when a segment's first line
    /// is not a revision of this document.
    pub(crate) fn record(
        mut self,
        revisions: &[Revision],
        retention: Retention,
        now: SystemTime,
        before: &Document,
        target: &Path,
    ) -> Result<(), MemoryError> {
        let Some(newest) = revisions.last() else {
            return Ok(());
        };
        // Forgotten first: a write that fails part way leaves the journal unknown.
        self.known.set(&self.path, None);
        self.keep_checkpoint_text(before, target)?;
        let mut head = Head::of(newest);
        let (at, text) = match revisions.iter().rposition(Revision::is_base) {
            Some(index) => {
                let (older, newer) = revisions.split_at(index);
                let (at, text, stripped) = self.start_segment(older, newer, retention, now)?;
                if stripped && newer.len() == 1 {
                    head.text = None;
                }
                (at, text)
            }
            None => self.append(revisions)?,
        };
        let tip = KnownTip::of_written(at, &text, head);
        self.known.set(&self.path, Some(tip));
        Ok(())
    }

    /// Appends `revisions`' lines to the live segment, after cutting off what did not land:
    /// where they start, and the lines.
    fn append(&mut self, revisions: &[Revision]) -> Result<(u64, String), MemoryError> {
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
        let at = self.end;
        self.end += text.len() as u64;
        self.len = self.end;
        Ok((at, text))
    }

    /// Cuts off what did not land, past the whole, landed revisions: a torn line, a revision
    /// whose write never landed.
    fn cut(&mut self) -> Result<(), MemoryError> {
        if self.end < self.len {
            let io = |err| files::io_error(&self.path, err);
            let file = files::private_file()
                .write(true)
                .open(&self.path)
                .map_err(io)?;
            file.set_len(self.end).map_err(io)?;
            self.len = self.end;
        }
        Ok(())
    }

    /// Appends `older` to the live segment, then starts a new one with `newer`, the first of
    /// them a base, and unlinks the segments no kept revision needs: where the new segment's
    /// lines start (0), the lines, and whether the first line's text was left to be linked.
    fn start_segment(
        &mut self,
        older: &[Revision],
        newer: &[Revision],
        retention: Retention,
        now: SystemTime,
    ) -> Result<(u64, String, bool), MemoryError> {
        if older.is_empty() {
            // What did not land is cut off here too: renamed into an older segment, a
            // revision whose write never landed would be read as history, and the new live
            // segment, numbered from the same revision, would be taken for a copy of it.
            self.cut()?;
        } else {
            self.append(older)?;
        }
        let started = self.end > 0;
        let renamed = match started {
            true => match first_head(&self.path, &self.document) {
                Ok(first) => Some(segment_path(&self.document_path, first.number)),
                // A first line that is not ours (edited by hand) names no segment: the write
                // appends, whole texts included, and reading the journal reports the line.
                Err(_) => return self.append(newer).map(|(at, text)| (at, text, false)),
            },
            false => None,
        };
        let mut text = String::new();
        for (index, revision) in newer.iter().enumerate() {
            let line = match revision {
                // The next write links its text (see `record`).
                own if index == 0 && is_own_checkpoint(own) => Revision {
                    text: None,
                    ..own.clone()
                },
                other => other.clone(),
            };
            text.push_str(&lines(&self.path, std::slice::from_ref(&line))?);
        }
        if let Some(older) = &renamed {
            fs::rename(&self.path, older).map_err(|err| files::io_error(older, err))?;
        }
        let io = |err| files::io_error(&self.path, err);
        let mut file = files::private_file()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&self.path)
            .map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)?;
        if let (Some(first), Some(tip)) = (newer.first(), newer.last())
            && started
        {
            // Its first line is a base unless it is this write's checkpoint, linked later.
            let live = (first.number, first.time, !is_own_checkpoint(first));
            self.prune(live, tip.number, retention, now)?;
        }
        let stripped = newer.first().is_some_and(is_own_checkpoint);
        Ok((0, text, stripped))
    }

    /// Unlinks the older segments, and their texts, that lie before the newest segment that
    /// starts with a base at or below the oldest revision `retention` keeps once `tip` is the
    /// newest; `live` is the live segment's first revision (number, time, whether a base). A
    /// segment whose first line is not ours is taken for no base, as new as now: it is kept
    /// until a base after it may be dropped to, and never fails the write.
    fn prune(
        &self,
        live: (u64, SystemTime, bool),
        tip: u64,
        retention: Retention,
        now: SystemTime,
    ) -> Result<(), MemoryError> {
        let stored = Stored::list(&self.document_path)?;
        let mut starts = Vec::with_capacity(stored.segments.len() + 1);
        for (&first, path) in &stored.segments {
            let (time, base) = match first_head(path, &self.document) {
                Ok(head) => (head.time, head.is_base()),
                Err(_) => (now, false),
            };
            starts.push((first, time, base || stored.texts.contains_key(&first)));
        }
        starts.push(live);
        let mut from = 0;
        for (index, &(first, time, base)) in starts.iter().enumerate() {
            // The revision before this segment's first is as old as it or older.
            if index > 0 && !retention.prunes(first.saturating_sub(1), time, tip, now) {
                break;
            }
            if base {
                from = index;
            }
        }
        let Some(&(kept_from, ..)) = starts.get(from) else {
            return Ok(());
        };
        let segments = stored.segments.range(..kept_from);
        for (_, path) in segments.chain(stored.texts.range(..kept_from)) {
            files::erase(path)?;
        }
        Ok(())
    }

    /// Links the document's file, about to be replaced, as the text of the live segment's
    /// first revision when that is the tip and a checkpoint stored as its change (see
    /// [`Journal::record`]). When the document no longer holds that text (a hand edit), a
    /// link to the same file that a write killed before its rename left is removed: it holds
    /// the hand edit, not the checkpoint.
    fn keep_checkpoint_text(&self, before: &Document, target: &Path) -> Result<(), MemoryError> {
        let Some(tip) = self
            .last
            .as_ref()
            .filter(|tip| self.last_start == 0 && !tip.is_base())
        else {
            return Ok(());
        };
        let path = text_path(&self.document_path, tip.number);
        let same_file = || match (fs::metadata(&path), fs::metadata(target)) {
            (Ok(text), Ok(document)) => same_inode(&text, &document),
            _ => false,
        };
        if text_sha256(before) != tip.sha256_after {
            if same_file() {
                files::erase(&path)?;
            }
            return Ok(());
        }
        if same_file() {
            return Ok(());
        }
        files::erase(&path)?;
        // A file system without hard links (or a document linked in from another one) gets
        // a copy.
        if fs::hard_link(target, &path).is_err() {
            files::replace(&path, &before.text)?;
        }
        Ok(())
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

/// Whether `revision` is a checkpoint the write that records it made (not a hand edit it
/// found): its line holds its change, and the next write links its text.
fn is_own_checkpoint(revision: &Revision) -> bool {
    revision.text.is_some() && revision.surface != Surface::External && !revision.updates.is_empty()
}

/// The head of the first line of the journal segment at `path`.
fn first_head(path: &Path, document: &DocumentId) -> Result<Head, MemoryError> {
    let file = File::open(path).map_err(|err| files::read_error(path, err))?;
    let mut line = Vec::new();
    io::BufReader::new(file)
        .read_until(b'\n', &mut line)
        .map_err(|err| files::io_error(path, err))?;
    parse_head(path, document, line.trim_ascii_end(), "line 1")
}

/// Whether two files' metadata are of one file (hard links to it).
fn same_inode(one: &fs::Metadata, other: &fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        one.dev() == other.dev() && one.ino() == other.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (one, other);
        false
    }
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
        if let Some(previous) = revisions.last() {
            follows(path, &place, &revision, previous)?;
        }
        revisions.push(revision);
    }
    Ok(revisions)
}

/// `Corrupt` at `path` unless `revision` (at `place` there) is the one after `previous`: a
/// journal's numbers go up by one, within a segment and from one segment to the next.
fn follows(
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

/// Every file of the journal of the document at `document` that is there now: the older
/// segments, the live one, then the checkpoints' texts.
pub(crate) fn files(document: &Path) -> Result<Vec<PathBuf>, MemoryError> {
    let stored = Stored::list(document)?;
    let live = Some(path(document)).filter(|live| live.exists());
    let texts = stored.texts.into_values();
    Ok(stored
        .segments
        .into_values()
        .chain(live)
        .chain(texts)
        .collect())
}

/// Removes the journal of the document at `document`, if it has one: history is off.
pub(crate) fn remove_journal(document: &Path) -> Result<(), MemoryError> {
    remove_older(document)?;
    files::erase(&path(document))
}

/// Removes the journal's older segments and its checkpoints' texts: all of it but the live
/// segment.
pub(crate) fn remove_older(document: &Path) -> Result<(), MemoryError> {
    for file in Stored::list(document)?.files() {
        files::erase(file)?;
    }
    Ok(())
}
