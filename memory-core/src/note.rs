//! Notes: their paths, what a listing shows of them and the caps of a scope (`CONTRACT.md`,
//! Notes).
//!
//! A note is addressed by a relative path within its scope. The rule is checked once, at
//! construction ([`path`] holds the type, [`rule`] the check), before any read or write, and
//! is the same for every backend and surface, so a path one accepts is a path all accept, and
//! a note's markdown file is valid on any file system it is copied to.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::document::{Document, Version};
use crate::note::path::NotePath;

pub(crate) mod path;
pub(crate) mod rule;

/// The longest description a listing shows, in chars.
pub const MAX_DESCRIPTION_CHARS: usize = 120;

/// One note as a listing shows it: enough to choose which to open, without its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteMeta {
    /// Its path within its scope.
    pub path: NotePath,
    /// Its size in UTF-8 bytes.
    pub bytes: usize,
    /// Its current version: reading it gives this version or a newer one.
    pub version: Version,
    /// When its content was last written (milliseconds since the Unix epoch on the wire).
    #[serde(default, with = "crate::time::unix_millis")]
    pub modified: Option<SystemTime>,
    /// Its [`note_description`].
    pub description: String,
}

impl NoteMeta {
    /// What a listing shows of `document`, the note at `path`.
    pub fn of(path: NotePath, document: &Document) -> NoteMeta {
        NoteMeta {
            path,
            bytes: document.text.len(),
            version: document.version.clone(),
            modified: document.modified,
            description: note_description(&document.text),
        }
    }
}

/// What a scope's notes come to after a write: the figures a note's report gives.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeTotals {
    /// How many notes.
    pub notes: usize,
    /// Their bytes together.
    pub bytes: u64,
}

/// The limits on one scope's notes (a personality's `caps.notes` in `memory.toml`). Each is a
/// hard limit: a write past it is refused and writes nothing.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NoteCaps {
    /// The largest note, in UTF-8 bytes (default 100,000, as Anthropic's memory stores).
    pub max_note_bytes: usize,
    /// The most notes a scope holds (default 10,000).
    pub max_notes: usize,
    /// The most bytes a scope's notes hold together (default 100,000,000).
    pub max_bytes: u64,
}

impl NoteCaps {
    /// The defaults: 100,000 bytes a note, 10,000 notes and 100,000,000 bytes a scope.
    pub const DEFAULT: NoteCaps = NoteCaps {
        max_note_bytes: 100_000,
        max_notes: 10_000,
        max_bytes: 100_000_000,
    };

    /// Each limit the smaller of the two.
    pub fn tightest(self, other: NoteCaps) -> NoteCaps {
        NoteCaps {
            max_note_bytes: self.max_note_bytes.min(other.max_note_bytes),
            max_notes: self.max_notes.min(other.max_notes),
            max_bytes: self.max_bytes.min(other.max_bytes),
        }
    }
}

impl Default for NoteCaps {
    fn default() -> Self {
        NoteCaps::DEFAULT
    }
}

/// The one line a listing shows for a note's `text`: the `description:` of its front matter
/// (a first line `---`, up to the next `---`), else its first non-blank line after any front
/// matter, without a heading's `#` marks; at most [`MAX_DESCRIPTION_CHARS`] chars, cut with
/// `…`. Empty for a blank note.
///
/// ```
/// # use memory_core::note_description;
/// assert_eq!(note_description("\n# Kyoto trip #\n\nTemples first."), "Kyoto trip");
/// assert_eq!(
///     note_description("---\nname: kyoto\ndescription: Plans for May\n---\n# Kyoto"),
///     "Plans for May"
/// );
/// ```
pub fn note_description(text: &str) -> String {
    let mut lines = text.lines();
    let mut body = text.lines();
    if text.lines().next().map(str::trim_end) == Some("---") {
        lines.next();
        let mut front = Vec::new();
        let mut closed = false;
        for line in lines.by_ref() {
            if line.trim_end() == "---" {
                closed = true;
                break;
            }
            front.push(line);
        }
        if closed {
            let described = front.iter().find_map(|line| {
                line.strip_prefix("description:")
                    .map(|value| value.trim().trim_matches(['"', '\'']).trim())
                    .filter(|value| !value.is_empty())
            });
            if let Some(description) = described {
                return shortened(description);
            }
            body = lines;
        }
    }
    body.map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| shortened(heading_text(line)))
        .unwrap_or_default()
}

/// `line` without the `#` marks of an ATX heading (`## Kyoto ##` is `Kyoto`).
fn heading_text(line: &str) -> &str {
    let marks = line.chars().take_while(|&c| c == '#').count();
    match line[marks..].strip_prefix([' ', '\t']) {
        Some(rest) if (1..=6).contains(&marks) => {
            let rest = rest.trim_end();
            let closing = rest.trim_end_matches('#');
            if closing.ends_with([' ', '\t']) || closing.is_empty() {
                closing.trim_end()
            } else {
                rest
            }
        }
        _ => line,
    }
}

fn shortened(line: &str) -> String {
    if line.chars().count() <= MAX_DESCRIPTION_CHARS {
        return line.to_owned();
    }
    let mut short: String = line.chars().take(MAX_DESCRIPTION_CHARS - 1).collect();
    short.truncate(short.trim_end().len());
    short.push('…');
    short
}

#[cfg(test)]
mod tests;
