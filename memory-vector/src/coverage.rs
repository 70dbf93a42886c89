//! What the index covers of its source: per document, the version it last reflected, kept in
//! `coverage.json` beside the table, and the lock every process holds while it writes the index.
//!
//! A query compares the source's version with the one recorded here; only when they differ does
//! it diff entries by hash and embed what is new. The record is written after the table, under
//! the lock, so a crash in between leaves an old record behind, which costs one more diff and
//! never hides an entry.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use memory_core::raw::Backoff;
use memory_core::{Document, MemoryError, NoteMeta};
use serde::{Deserialize, Serialize};

const FILE: &str = "coverage.json";
const LOCK: &str = ".index.lock";

/// What the index reflects, as stored in `coverage.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// Per document path in the markdown layout, the source state its rows were made from.
    #[serde(default)]
    pub documents: BTreeMap<String, Mark>,
    /// The table version right after the last housekeeping: how many versions the table has
    /// piled up since is counted from here, whichever process wrote them.
    #[serde(default)]
    pub cleaned_at: u64,
}

/// One state of a source document, as far as the index can tell states apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Mark {
    /// The source's version token.
    version: String,
    /// The text's length in bytes: free to compare, and it catches a raw edit of a stored row
    /// (an append in psql, say) that forgot to bump the version.
    #[serde(default)]
    bytes: usize,
    /// The source's modified time in milliseconds since the Unix epoch (negative before it):
    /// counters restart when a store is wiped and refilled, times do not repeat with them.
    modified_ms: Option<i64>,
    /// The model the rows were embedded by.
    model: String,
}

impl Mark {
    /// The mark of `document` as read from the source, for rows embedded by `model`.
    pub fn of(document: &Document, model: &str) -> Mark {
        Mark {
            version: document.version.as_str().to_owned(),
            bytes: document.text.len(),
            modified_ms: document.modified.map(unix_millis),
            model: model.to_owned(),
        }
    }

    /// The mark a listing shows of a note (a listing agrees with a read of it), for rows
    /// embedded by `model`.
    pub fn listed(note: &NoteMeta, model: &str) -> Mark {
        Mark {
            version: note.version.as_str().to_owned(),
            bytes: note.bytes,
            modified_ms: note.modified.map(unix_millis),
            model: model.to_owned(),
        }
    }
}

fn unix_millis(time: SystemTime) -> i64 {
    let millis = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => millis(after),
        Err(before) => -millis(before.duration()),
    }
}

/// The coverage file and the index lock of one index directory.
#[derive(Debug)]
pub(crate) struct Coverage {
    dir: PathBuf,
}

/// Held while this process writes the index; dropping it lets the next writer in.
pub(crate) struct IndexLock {
    _file: File,
}

impl Coverage {
    pub fn new(dir: &Path) -> Self {
        Coverage {
            dir: dir.to_path_buf(),
        }
    }

    /// The record as stored now. A missing or unreadable file is an empty record: every
    /// document is then diffed again, which is always safe.
    ///
    /// Read on the async thread: it is one small file, read once per query, and cheaper to read
    /// than to hand to the blocking pool.
    pub fn read(&self) -> Record {
        match std::fs::read(self.dir.join(FILE)) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
            Err(_) => Record::default(),
        }
    }

    /// Replaces the record by an atomic rename, so a reader sees the old one or the new one.
    /// Call it with the lock held.
    pub fn write(&self, record: &Record) -> Result<(), MemoryError> {
        let path = self.dir.join(FILE);
        let temporary = self.dir.join(format!(".{FILE}.{}.tmp", std::process::id()));
        let failed =
            |err: std::io::Error| MemoryError::unavailable(path.display().to_string(), err);
        let json = serde_json::to_vec_pretty(record)
            .map_err(|err| MemoryError::unavailable(path.display().to_string(), err))?;
        std::fs::write(&temporary, json).map_err(failed)?;
        std::fs::rename(&temporary, &path).map_err(failed)
    }

    /// Waits for the index lock. Processes on one host that share an index directory write it
    /// one at a time, so two catch-ups never interleave their diffs.
    ///
    /// Polled rather than waited on in the blocking pool: a caller that stops waiting (a query
    /// past its time budget, a runtime shutting down) must not leave a thread stuck on the lock.
    pub async fn lock(&self) -> Result<IndexLock, MemoryError> {
        let mut backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(50));
        loop {
            if let Some(lock) = self.try_lock()? {
                return Ok(lock);
            }
            tokio::time::sleep(backoff.next_pause()).await;
        }
    }

    /// The index lock if no other writer holds it now.
    pub fn try_lock(&self) -> Result<Option<IndexLock>, MemoryError> {
        let path = self.dir.join(LOCK);
        let failed =
            |err: std::io::Error| MemoryError::unavailable(path.display().to_string(), err);
        std::fs::create_dir_all(&self.dir).map_err(failed)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(failed)?;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Some(IndexLock { _file: file })),
                Err(TryLockError::WouldBlock) => return Ok(None),
                Err(TryLockError::Error(err)) if err.kind() == ErrorKind::Interrupted => {}
                Err(TryLockError::Error(err)) => return Err(failed(err)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::{DocumentId, Version};

    fn document(version: &str, modified: Option<SystemTime>) -> Document {
        Document {
            id: DocumentId::GlobalMemory,
            text: "A note.\n".to_owned(),
            version: Version::new(version),
            location: String::new(),
            modified,
        }
    }

    #[test]
    fn marks_tell_versions_times_and_models_apart() {
        let at = |ms| Some(UNIX_EPOCH + Duration::from_millis(ms));
        let base = Mark::of(&document("3", at(1_000)), "m");
        assert_eq!(base, Mark::of(&document("3", at(1_000)), "m"));
        assert_ne!(base, Mark::of(&document("4", at(1_000)), "m"));
        assert_ne!(
            base,
            Mark::of(&document("3", at(2_000)), "m"),
            "a refilled store"
        );
        assert_ne!(base, Mark::of(&document("3", at(1_000)), "other"));
        let mut appended = document("3", at(1_000));
        appended.text.push_str("An edit that kept the version.\n");
        assert_ne!(base, Mark::of(&appended, "m"));
        let before_1970 = UNIX_EPOCH - Duration::from_secs(5);
        assert_eq!(
            Mark::of(&document("1", Some(before_1970)), "m").modified_ms,
            Some(-5_000)
        );
    }

    #[test]
    fn a_missing_or_damaged_record_is_empty_and_a_written_one_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let coverage = Coverage::new(dir.path());
        assert_eq!(coverage.read(), Record::default());
        std::fs::write(dir.path().join(FILE), "{not json").unwrap();
        assert_eq!(coverage.read(), Record::default());
        let mut record = Record {
            cleaned_at: 7,
            ..Record::default()
        };
        record
            .documents
            .insert("MEMORY.md".into(), Mark::of(&document("v", None), "m"));
        coverage.write(&record).unwrap();
        assert_eq!(coverage.read(), record);
    }

    #[tokio::test]
    async fn the_lock_excludes_a_second_holder_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (Coverage::new(dir.path()), Coverage::new(dir.path()));
        let held = a.lock().await.unwrap();
        let waiting = tokio::time::timeout(Duration::from_millis(100), b.lock()).await;
        assert!(waiting.is_err(), "a second holder got the lock");
        assert!(b.try_lock().unwrap().is_none());
        drop(held);
        tokio::time::timeout(Duration::from_secs(5), b.lock())
            .await
            .expect("the lock is free again")
            .unwrap();
    }
}
