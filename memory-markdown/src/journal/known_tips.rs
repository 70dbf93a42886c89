//! Where this provider's own writes left each journal's last line, so that the next write need
//! not read that line again.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::parser::Head;
use super::reader::read_range;

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
pub(super) struct KnownTip {
    /// Where the line starts.
    pub(super) start: u64,
    /// Where it ends, past its newline: the journal's length then.
    pub(super) end: u64,
    /// Its first bytes, at most [`KNOWN_PREFIX`].
    prefix: Vec<u8>,
    /// Its head.
    pub(super) head: Head,
}

impl KnownTips {
    pub(super) fn get(&self, journal: &Path) -> Option<KnownTip> {
        let known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        known.get(journal).cloned()
    }

    pub(super) fn set(&self, journal: &Path, tip: Option<KnownTip>) {
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
    pub(super) fn of_written(at: u64, text: &str, head: Head) -> KnownTip {
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
    pub(super) fn still_ends(&self, file: &mut File, len: u64) -> io::Result<bool> {
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
