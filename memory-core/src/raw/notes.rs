//! The rules a write checks against a whole scope of notes (`CONTRACT.md`, Notes): no two
//! notes that differ only by case or normalisation, no note where a folder is, and the scope's
//! count and bytes within its caps. Pure: a backend reads the scope's listing in the write's
//! atomic step (under its lock, in its transaction or script), calls [`check_scope`], and
//! writes only when it passes.

use std::collections::{BTreeMap, HashMap};

use crate::document::{Document, DocumentId};
use crate::error::MemoryError;
use crate::note::path::NotePath;
use crate::note::{NoteCaps, ScopeTotals};

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

/// The text of a scope's index as a versioned store keeps it: one line per note that exists,
/// `<bytes>\t<path>`, sorted by path.
pub(crate) fn index_text(notes: &[(NotePath, usize)]) -> String {
    let mut sorted: Vec<&(NotePath, usize)> =
        notes.iter().filter(|(_, bytes)| *bytes > 0).collect();
    sorted.sort();
    sorted
        .iter()
        .map(|(path, bytes)| format!("{bytes}\t{path}\n"))
        .collect()
}

/// The notes a scope's index holds ([`index_text`]).
///
/// # Errors
/// [`MemoryError::Corrupt`] naming the line that is not `<bytes>\t<path>`.
pub(crate) fn parse_index(index: &Document) -> Result<Vec<(NotePath, usize)>, MemoryError> {
    index
        .text
        .lines()
        .enumerate()
        .map(|(number, line)| {
            let parsed = line.split_once('\t').and_then(|(bytes, path)| {
                Some((NotePath::new(path).ok()?, bytes.parse::<usize>().ok()?))
            });
            parsed.ok_or_else(|| MemoryError::Corrupt {
                location: format!("{}, line {}", index.location, number + 1),
                reason: "a scope's index line is `<bytes>\\t<path>`".to_owned(),
            })
        })
        .collect()
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
