//! The journal's files beside the document: the live segment writes append to, the older
//! segments (`.<NAME>.history.<first>.jsonl`) and the checkpoints' texts
//! (`.<NAME>.history.<number>.md`), how they are named, found and removed.

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use memory_core::MemoryError;

use crate::files;

/// The journal of the document at `document`: its live segment, the one writes append to.
pub(crate) fn path(document: &Path) -> PathBuf {
    files::beside(document, "history.jsonl")
}

/// An older segment of the journal, holding the revisions from `first` on.
pub(super) fn segment_path(document: &Path, first: u64) -> PathBuf {
    files::beside(document, &format!("history.{first}.jsonl"))
}

/// The whole text of revision `number`, a checkpoint whose line holds its change alone.
pub(super) fn text_path(document: &Path, number: u64) -> PathBuf {
    files::beside(document, &format!("history.{number}.md"))
}

/// The journal's older segments and its checkpoints' texts, by revision number, as the
/// document's directory lists them now.
#[derive(Debug, Default)]
pub(super) struct Stored {
    pub(super) segments: BTreeMap<u64, PathBuf>,
    pub(super) texts: BTreeMap<u64, PathBuf>,
}

impl Stored {
    /// What is stored beside the document at `document`; nothing when its directory is not
    /// there.
    pub(super) fn list(document: &Path) -> Result<Stored, MemoryError> {
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
    pub(super) fn files(&self) -> impl Iterator<Item = &PathBuf> {
        self.segments.values().chain(self.texts.values())
    }
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
