//! Reading a document's file: its text as a `Document`, its bytes with their time, and the
//! stamp that tells one version of a file from the next.

use std::fs::{self, File};
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use memory_core::raw::sha256_hex;
use memory_core::{Document, DocumentId, MemoryError, Version};

use super::errors::io_error;
use super::links::read_error;
use crate::layout::Tree;

/// The document as stored now; a missing file is the empty document, and so is a note's path
/// where a folder of notes is, or under another note's file: no note is there.
pub(crate) fn read(tree: &Tree, id: DocumentId) -> Result<Document, MemoryError> {
    let path = tree.file(&id)?;
    let no_note_there = id.note_path().is_some()
        && match fs::metadata(&path) {
            Ok(meta) => meta.is_dir(),
            Err(err) => err.kind() == ErrorKind::NotADirectory,
        };
    if no_note_there {
        return Ok(Document {
            id,
            version: Version::new(sha256_hex("")),
            text: String::new(),
            location: path.display().to_string(),
            modified: None,
        });
    }
    read_at(path, id)
}

pub(crate) fn read_at(path: PathBuf, id: DocumentId) -> Result<Document, MemoryError> {
    let location = path.display().to_string();
    let (bytes, modified) = read_bytes(&path)?.map_or((Vec::new(), None), |(bytes, modified)| {
        (bytes, Some(modified))
    });
    let text = String::from_utf8(bytes).map_err(|err| MemoryError::Corrupt {
        location: location.clone(),
        reason: format!(
            "not valid UTF-8 (byte offset {})",
            err.utf8_error().valid_up_to()
        ),
    })?;
    Ok(Document {
        id,
        version: Version::new(sha256_hex(&text)),
        text,
        location,
        modified,
    })
}

/// The bytes of the file at `path` and when they were last modified; `None` when it does not
/// exist. The time comes from the same open file as the bytes: a rename between reading one and
/// stat-ing the path could pair this text with the next version's time.
pub(crate) fn read_bytes(path: &Path) -> Result<Option<(Vec<u8>, SystemTime)>, MemoryError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(read_error(path, err)),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|err| io_error(path, err))?;
    let modified = file
        .metadata()
        .and_then(|meta| meta.modified())
        .map_err(|err| io_error(path, err))?;
    Ok(Some((bytes, modified)))
}

/// What identifies one version of a file: a write renames a new file in (a new inode), a hand
/// edit changes its time or size.
pub(crate) fn stamp(path: &Path) -> Result<Option<(SystemTime, u64, u64)>, MemoryError> {
    match fs::metadata(path) {
        Ok(meta) => {
            #[cfg(unix)]
            let inode = std::os::unix::fs::MetadataExt::ino(&meta);
            #[cfg(not(unix))]
            let inode = 0;
            let modified = meta.modified().map_err(|err| io_error(path, err))?;
            Ok(Some((modified, meta.len(), inode)))
        }
        Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            Ok(None)
        }
        Err(err) => Err(read_error(path, err)),
    }
}
