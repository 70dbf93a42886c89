//! The writer: a write finds the journal's tip under the document's lock, cuts off what did not
//! land, and records its revisions, starting a new segment at a base and pruning what the
//! retention no longer keeps.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use memory_core::raw::RevisionTip;
use memory_core::{Document, DocumentId, MemoryError, Retention, Revision, Surface};

use super::known_tips::{KnownTip, KnownTips};
use super::parser::{Head, parse_head};
use super::reader::{first_head, last_line, open_file};
use super::segments::{Stored, path, segment_path, text_path};
use super::tip::{empty_tip, text_sha256};
use crate::files;

/// Now, in whole milliseconds: the journal keeps times to the millisecond, so a revision
/// handed back (a purge's tombstone) is the one `history` reads back.
pub(crate) fn now() -> SystemTime {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    UNIX_EPOCH + Duration::from_millis(u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
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

/// Whether `revision` is a checkpoint the write that records it made (not a hand edit it
/// found): its line holds its change, and the next write links its text.
fn is_own_checkpoint(revision: &Revision) -> bool {
    revision.text.is_some()
        && revision.surface != Surface::External
        && !revision.updates.is_empty()
        // Its text is in no file the next write replaces: the note it came from keeps it.
        && !revision.is_arrival()
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
