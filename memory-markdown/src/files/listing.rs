//! The documents the directories hold: every document of the layout, and an id whose directory
//! differs from an existing one only in case.

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use memory_core::{DocumentId, IdKind, MemoryError, PersonalityId, UserId};

use super::errors::io_error;
use crate::layout::{Layout, Tree};

/// Refuses a write to a personality's or user's document when it has no directory under its
/// exact id but one differs from it only in case (`ada` beside `Ada`): on a case-insensitive
/// file system (macOS, Windows) the two ids would share one file.
pub(crate) fn refuse_case_twin(tree: &Tree, document: &DocumentId) -> Result<(), MemoryError> {
    if tree.layout != Layout::Ethos {
        // One file per document, named by the layout rather than by an id.
        return Ok(());
    }
    let (kind, noun, dir, id) = match document {
        DocumentId::GlobalMemory => return Ok(()),
        // A note's directory is under its scope's: the scope's id is the one to check. Notes
        // that differ only in case are refused by the scope's own rule.
        DocumentId::Note(note) => return refuse_case_twin(tree, &note.scope.document()),
        DocumentId::PersonalityMemory { personality } => (
            IdKind::Personality,
            "personality",
            "personalities",
            personality.as_str(),
        ),
        DocumentId::UserProfile { user } => (IdKind::User, "user", "users", user.as_str()),
    };
    let parent = tree.root.join(dir);
    // The directory listing is needed only when the id's directory is missing (a case-sensitive
    // file system may hold a twin) or when the file system finds it under another case too
    // (a case-insensitive one finds the twin under either name). Otherwise two stats do.
    let swapped: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_uppercase() {
                c.to_ascii_lowercase()
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect();
    if parent.join(id).exists() && (swapped == id || !parent.join(&swapped).exists()) {
        return Ok(());
    }
    let entries = match fs::read_dir(&parent) {
        Ok(entries) => entries,
        Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(());
        }
        Err(err) => return Err(io_error(&parent, err)),
    };
    let mut twin = None;
    for entry in entries {
        let file = entry.map_err(|err| io_error(&parent, err))?.file_name();
        match file.to_str() {
            // Its own directory exists under exactly its name: it is the one it always used.
            Some(file) if file == id => return Ok(()),
            Some(file) if file.eq_ignore_ascii_case(id) => twin = Some(file.to_owned()),
            _ => {}
        }
    }
    match twin {
        None => Ok(()),
        Some(twin) => Err(MemoryError::InvalidId {
            kind,
            value: id.to_owned(),
            reason: format!(
                "it differs only in case from the existing {noun} '{twin}' in {}; on a case-insensitive file system they would share one file; nothing was written",
                parent.display()
            ),
        }),
    }
}

/// Every document of the layout in `tree` and every note that exists, sorted; stray files and
/// bad ids are skipped.
pub(crate) fn list(tree: &Tree) -> Result<Vec<DocumentId>, MemoryError> {
    if let Some(documents) = tree.metis_documents() {
        let mut found = Vec::new();
        for document in documents {
            if is_file(&tree.file(&document)?)? {
                found.push(document);
            }
        }
        return Ok(found);
    }
    let root = &tree.root;
    type IdOf = fn(&str) -> Option<DocumentId>;
    let kinds: [(&str, &str, IdOf); 2] = [
        ("personalities", "MEMORY.md", |name| {
            let personality = PersonalityId::new(name).ok()?;
            Some(DocumentId::PersonalityMemory { personality })
        }),
        ("users", "USER.md", |name| {
            Some(DocumentId::user(&UserId::new(name).ok()?))
        }),
    ];

    let mut found = Vec::new();
    if is_file(&tree.file(&DocumentId::GlobalMemory)?)? {
        found.push(DocumentId::GlobalMemory);
    }
    for (dir, file, id_of) in kinds {
        let dir = root.join(dir);
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            // No such directory, or a stray file by that name: no documents of this kind.
            Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                continue;
            }
            Err(err) => return Err(MemoryError::unavailable(dir.display().to_string(), err)),
        };
        for entry in entries {
            let entry =
                entry.map_err(|err| MemoryError::unavailable(dir.display().to_string(), err))?;
            let Some(id) = entry.file_name().to_str().and_then(id_of) else {
                continue;
            };
            if is_file(&entry.path().join(file))? {
                found.push(id);
            }
        }
    }
    found.extend(super::notes::all_notes(tree)?);
    found.sort();
    Ok(found)
}

fn is_file(path: &Path) -> Result<bool, MemoryError> {
    match fs::metadata(path) {
        Ok(meta) => Ok(meta.is_file()),
        Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            Ok(false)
        }
        Err(err) => Err(MemoryError::unavailable(path.display().to_string(), err)),
    }
}
