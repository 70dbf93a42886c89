//! The model of the update table of CONTRACT.md, written apart from `apply_batch`: what a
//! batch of updates makes of a text, or which refusal it meets. Shared by
//! no_panic_on_update_json.rs and the fuzz target fuzz/fuzz_targets/update_json.rs (which
//! includes this file by path), so the two check against one statement of the table.

use memory_core::{Caps, MemoryUpdate};

fn blank(text: &str) -> bool {
    text.chars().all(char::is_whitespace)
}

/// Why an update is refused whatever the text (the contract's table plus the NUL rule of
/// `MemoryUpdate`'s docs).
pub fn malformed(update: &MemoryUpdate) -> bool {
    match update {
        MemoryUpdate::Add { content, .. } => blank(content) || content.contains('\0'),
        MemoryUpdate::Replace { content, .. } => content.contains('\0'),
        MemoryUpdate::Remove {
            substring_match, ..
        } => substring_match.is_empty(),
        MemoryUpdate::Edit { old, new, .. } => old.is_empty() || new.contains('\0'),
        MemoryUpdate::Create { content, .. } => blank(content) || content.contains('\0'),
        MemoryUpdate::Delete { .. } | MemoryUpdate::Rename { .. } => false,
    }
}

#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// A notes-only action (`create`, `delete`, `rename`) on one of the pair.
    NotesOnly(usize),
    NoMatch(usize),
    Ambiguous(usize, usize),
    HardCap(usize),
}

#[derive(Debug, PartialEq)]
pub struct Outcome {
    pub text: String,
    pub lines_removed: usize,
}

/// Every start of `needle` in `text` at a char boundary, overlapping ones included.
fn count_overlapping(text: &str, needle: &str) -> Vec<usize> {
    (0..=text.len())
        .filter(|&i| text.is_char_boundary(i) && text[i..].starts_with(needle))
        .collect()
}

fn ended(trimmed: &str) -> String {
    if trimmed.is_empty() {
        String::new()
    } else {
        format!("{trimmed}\n")
    }
}

pub fn model(
    text: &str,
    updates: &[(usize, &MemoryUpdate)],
    caps: Caps,
) -> Result<Outcome, Refusal> {
    let mut t = text.to_owned();
    let mut lines_removed = 0;
    for &(index, update) in updates {
        t = match update {
            MemoryUpdate::Add { content, .. } if blank(&t) => format!("{}\n", content.trim()),
            MemoryUpdate::Add { content, .. } => {
                format!("{}\n\n{}\n", t.trim_end(), content.trim())
            }
            MemoryUpdate::Replace { content, .. } => ended(content.trim()),
            MemoryUpdate::Remove {
                substring_match, ..
            } => {
                let lines: Vec<&str> = t.split('\n').collect();
                let kept: Vec<&str> = lines
                    .iter()
                    .copied()
                    .filter(|l| !l.contains(substring_match.as_str()))
                    .collect();
                if kept.len() == lines.len() {
                    t
                } else {
                    lines_removed += lines.len() - kept.len();
                    ended(kept.join("\n").trim_end())
                }
            }
            MemoryUpdate::Edit { old, new, .. } => match count_overlapping(&t, old).as_slice() {
                [at] => format!("{}{new}{}", &t[..*at], &t[at + old.len()..]),
                [] => return Err(Refusal::NoMatch(index)),
                many => return Err(Refusal::Ambiguous(index, many.len())),
            },
            MemoryUpdate::Create { .. }
            | MemoryUpdate::Delete { .. }
            | MemoryUpdate::Rename { .. } => return Err(Refusal::NotesOnly(index)),
        };
    }
    if let Some(hard) = caps.hard
        && t.len() > hard
        && t.len() > text.len()
    {
        return Err(Refusal::HardCap(t.len()));
    }
    Ok(Outcome {
        text: t,
        lines_removed,
    })
}
