//! The rules a write checks against a whole scope of notes (`CONTRACT.md`, Notes): no two
//! notes that differ only by case or normalisation, no note where a folder is, and the scope's
//! count and bytes within its caps. Pure: a backend reads the scope's listing in the write's
//! atomic step (under its lock, in its transaction or script), calls [`check_scope`], and
//! writes only when it passes.

use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

use crate::document::{Document, DocumentId, Version};
use crate::error::MemoryError;
use crate::note::path::NotePath;
use crate::note::{NoteCaps, NoteMeta, ScopeTotals, note_description};
use crate::time::{from_signed_unix_millis, signed_unix_millis};
use crate::update::is_blank;

/// Checks a write to the notes of `scope` (named by its pair document) whose notes are now
/// `existing` (each path with its bytes). `written` gives each note the write changes with its
/// bytes after it; 0 is a note the write deletes (a note exists while its text is not blank).
///
/// A scope already past a cap (one lowered since) may still shrink or be edited: only a write
/// that would grow a count or a total past its cap is refused.
///
/// # Errors
/// [`MemoryError::NoteCollision`] for a note the write creates that collides with one the
/// scope keeps ([`NotePath::collides_with`]), or with another it creates;
/// [`MemoryError::NotesCapExceeded`] when the count or the bytes would pass `caps`.
pub fn check_scope<'a>(
    scope: &DocumentId,
    existing: impl IntoIterator<Item = (&'a NotePath, usize)>,
    written: &[(NotePath, usize)],
    caps: NoteCaps,
) -> Result<ScopeTotals, MemoryError> {
    let mut after: HashMap<&NotePath, usize> = existing.into_iter().collect();
    let before = totals(after.values().copied());
    let created: Vec<&NotePath> = written
        .iter()
        .filter(|(path, bytes)| *bytes > 0 && !after.contains_key(path))
        .map(|(path, _)| path)
        .collect();
    for (path, bytes) in written {
        if *bytes == 0 {
            after.remove(path);
        } else {
            after.insert(path, *bytes);
        }
    }
    if !created.is_empty() {
        refuse_collisions(scope, &after, &created)?;
    }
    let totals = totals(after.values().copied());
    for (cap, limit, was, would_be) in [
        (
            "max_notes",
            caps.max_notes as u64,
            before.notes as u64,
            totals.notes as u64,
        ),
        ("max_bytes", caps.max_bytes, before.bytes, totals.bytes),
    ] {
        if would_be > limit && would_be > was {
            return Err(MemoryError::NotesCapExceeded {
                scope: scope.clone(),
                cap,
                limit,
                would_be,
            });
        }
    }
    Ok(totals)
}

/// One note of a scope's index: its path and bytes (what the scope's rules need), and what a
/// listing shows of it, where the index knows that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Indexed {
    /// Its path within the scope.
    pub(crate) path: NotePath,
    /// Its size in UTF-8 bytes.
    pub(crate) bytes: usize,
    /// What a listing shows of it; `None` for a line written before the index kept it, or
    /// dated by an index write whose time is not known: a listing reads that note instead.
    pub(crate) listed: Option<IndexedListing>,
}

/// What a scope's index keeps of a note for a listing, so that listing a scope reads one
/// document, not every note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexedListing {
    /// Its version counter.
    pub(crate) version: u64,
    /// When it was last written, by the store's clock; `None` for a note the index's own last
    /// write wrote, which the store dated with the index (one compare-and-swap, one time), so
    /// it is the index's `modified`.
    pub(crate) modified: Option<SystemTime>,
    /// Its [`crate::note_description`].
    pub(crate) description: String,
}

impl Indexed {
    /// The index's line for the note at `path` as a write leaves it, with `text` at version
    /// counter `version`, dated by the write itself. A blank text is listed by a read, which
    /// leaves it out as a note that does not exist.
    pub(crate) fn written(path: NotePath, text: &str, version: u64) -> Indexed {
        Indexed {
            path,
            bytes: text.len(),
            listed: (!is_blank(text)).then(|| IndexedListing {
                version,
                modified: None,
                description: note_description(text),
            }),
        }
    }

    /// What a listing shows of this note, where the index knows it all.
    pub(crate) fn meta(&self) -> Option<NoteMeta> {
        let listed = self.listed.as_ref()?;
        Some(NoteMeta {
            path: self.path.clone(),
            bytes: self.bytes,
            version: Version::new(listed.version.to_string()),
            modified: Some(listed.modified?),
            description: listed.description.clone(),
        })
    }
}

/// The mark of a line dated by the index's own write ([`IndexedListing::modified`]).
const DATED_BY_INDEX: &str = "=";

/// The text of a scope's index as a versioned store keeps it: one line per note that exists,
/// sorted by path, `<bytes>\t<version>\t<modified>\t<path>\t<description>` (`modified` in
/// milliseconds from the Unix epoch, or `=` for the index's own time), or `<bytes>\t<path>`
/// where the listing is not known. A path holds no tab or line break and a description no line
/// break, so the fields split unambiguously.
pub(crate) fn index_text(notes: &[Indexed]) -> String {
    let mut sorted: Vec<&Indexed> = notes.iter().filter(|note| note.bytes > 0).collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut text = String::new();
    for note in sorted {
        let (bytes, path) = (note.bytes, &note.path);
        match &note.listed {
            Some(listed) => {
                let modified = listed.modified.map_or_else(
                    || DATED_BY_INDEX.to_owned(),
                    |time| signed_unix_millis(time).to_string(),
                );
                let (version, description) = (listed.version, &listed.description);
                text.push_str(&format!(
                    "{bytes}\t{version}\t{modified}\t{path}\t{description}\n"
                ));
            }
            None => text.push_str(&format!("{bytes}\t{path}\n")),
        }
    }
    text
}

/// The notes a scope's index holds ([`index_text`]), each dated: a line marked as the index's
/// own write takes `index`'s `modified` (none known: its listing is not known either).
///
/// # Errors
/// [`MemoryError::Corrupt`] naming the line that is neither form.
pub(crate) fn parse_index(index: &Document) -> Result<Vec<Indexed>, MemoryError> {
    index
        .text
        .lines()
        .enumerate()
        .map(|(number, line)| {
            parse_line(line, index.modified).ok_or_else(|| MemoryError::Corrupt {
                location: format!("{}, line {}", index.location, number + 1),
                reason: "a scope's index line is `<bytes>\\t<version>\\t<modified>\\t<path>\\t<description>` or `<bytes>\\t<path>`".to_owned(),
            })
        })
        .collect()
}

fn parse_line(line: &str, index_modified: Option<SystemTime>) -> Option<Indexed> {
    let fields: Vec<&str> = line.splitn(5, '\t').collect();
    let (bytes, path, listed) = match fields[..] {
        [bytes, path] => (bytes, path, None),
        [bytes, version, modified, path, description] => {
            let version = version.parse().ok()?;
            let modified = match modified {
                DATED_BY_INDEX => index_modified,
                millis => Some(from_signed_unix_millis(millis.parse().ok()?)),
            };
            let listed = modified.map(|modified| IndexedListing {
                version,
                modified: Some(modified),
                description: description.to_owned(),
            });
            (bytes, path, listed)
        }
        _ => return None,
    };
    Some(Indexed {
        path: NotePath::new(path).ok()?,
        bytes: bytes.parse().ok()?,
        listed,
    })
}

fn totals(bytes: impl Iterator<Item = usize>) -> ScopeTotals {
    bytes.fold(ScopeTotals { notes: 0, bytes: 0 }, |sum, bytes| {
        ScopeTotals {
            notes: sum.notes + 1,
            bytes: sum.bytes + bytes as u64,
        }
    })
}

/// Refuses the first of `created` that collides with another note of `after` (which holds
/// them): by fold key directly, as a folder of a note, or as a note where a folder is. One
/// fold per note and ordered lookups, so a scope of thousands costs milliseconds.
fn refuse_collisions(
    scope: &DocumentId,
    after: &HashMap<&NotePath, usize>,
    created: &[&NotePath],
) -> Result<(), MemoryError> {
    let mut folded: BTreeMap<String, Vec<&NotePath>> = BTreeMap::new();
    for path in after.keys() {
        folded.entry(path.fold_key()).or_default().push(path);
    }
    let collision = |path: &NotePath, existing: &NotePath| MemoryError::NoteCollision {
        scope: scope.clone(),
        path: path.clone(),
        existing: existing.clone(),
    };
    for path in created {
        let key = path.fold_key();
        // Another note with the same fold key.
        if let Some(other) = folded[&key].iter().find(|other| **other != *path) {
            return Err(collision(path, other));
        }
        // A note inside the folder this one would be.
        let folder = format!("{key}/");
        if let Some((inside, paths)) = folded.range(folder.clone()..).next()
            && inside.starts_with(&folder)
        {
            return Err(collision(path, paths[0]));
        }
        // A note where one of this one's folders would be.
        for (at, _) in key.match_indices('/') {
            if let Some(paths) = folded.get(&key[..at]) {
                return Err(collision(path, paths[0]));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
