//! Notes: the path rule and the description a listing shows (`CONTRACT.md`, Notes).
//!
//! A note is addressed by a relative path within its scope. The rule is checked here, before
//! any read or write, and is the same for every backend and surface, so a path one accepts is
//! a path all accept, and a note's markdown file is valid on any file system it is copied to.

use std::fmt;

use serde::{Deserialize, Serialize};
use unicode_normalization::{UnicodeNormalization, is_nfc};

use crate::error::MemoryError;

/// The longest note path, in UTF-8 bytes.
pub const MAX_NOTE_PATH_BYTES: usize = 255;
/// The most segments (folders and the file) a note path has.
pub const MAX_NOTE_PATH_SEGMENTS: usize = 8;
/// The longest segment of a note path, in UTF-8 bytes: a file system allows 255 per name,
/// and a note's sidecar files add to its name.
pub const MAX_NOTE_SEGMENT_BYTES: usize = 100;
/// Where the whole rule is written, for messages that refuse a path.
pub(crate) const NOTE_PATH_RULE: &str = "CONTRACT.md, Notes";
/// The longest description a listing shows, in chars.
pub const MAX_DESCRIPTION_CHARS: usize = 120;

/// A note's path within its scope (`projects/kyoto.md`), valid by construction.
///
/// ```
/// # use memory_core::NotePath;
/// let path = NotePath::new("projects/kyoto.md")?;
/// assert_eq!(path.as_str(), "projects/kyoto.md");
/// assert!(NotePath::new("../USER.md").is_err());
/// assert!(path.collides_with(&NotePath::new("Projects/Kyoto.md")?));
/// # Ok::<(), memory_core::MemoryError>(())
/// ```
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct NotePath(String);

impl NotePath {
    /// Checks `path` against the rule of `CONTRACT.md` (Notes).
    ///
    /// # Errors
    /// [`MemoryError::InvalidNotePath`] naming the path and the first rule it breaks.
    pub fn new(path: impl Into<String>) -> Result<Self, MemoryError> {
        let path = path.into();
        match refusal(&path) {
            Some(reason) => Err(MemoryError::InvalidNotePath { path, reason }),
            None => Ok(NotePath(path)),
        }
    }

    /// The path as given, with `/` separators.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its folders then its file name.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// What two paths that may not both be notes of one scope have in common: the lower case
    /// of the NFKC form, so `Kyoto.md`, `kyoto.md` and a compatibility spelling of either
    /// share one key.
    pub fn fold_key(&self) -> String {
        self.0.nfkc().flat_map(char::to_lowercase).collect()
    }

    /// Whether `self` and `other` cannot both be notes of one scope: they differ but share a
    /// [`NotePath::fold_key`], or one would be a folder of the other (`a.md` and `a.md/b.md`,
    /// compared by fold key). A path never collides with itself.
    pub fn collides_with(&self, other: &NotePath) -> bool {
        if self == other {
            return false;
        }
        let (mine, theirs) = (self.fold_key(), other.fold_key());
        let (short, long) = if mine.len() <= theirs.len() {
            (&mine, &theirs)
        } else {
            (&theirs, &mine)
        };
        mine == theirs
            || long
                .strip_prefix(short.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
    }
}

impl fmt::Display for NotePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for NotePath {
    type Error = MemoryError;

    fn try_from(path: String) -> Result<Self, Self::Error> {
        NotePath::new(path)
    }
}

impl From<NotePath> for String {
    fn from(path: NotePath) -> String {
        path.0
    }
}

/// Characters a Windows file name cannot hold, and `%`, so that no surface decodes a path
/// twice into another.
const FORBIDDEN: &[char] = &['\\', ':', '*', '?', '"', '<', '>', '|', '%'];

/// Names Windows reserves for devices, with or without an extension.
const DEVICES: &[&str] = &[
    "con", "prn", "aux", "nul", "com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8",
    "com9", "lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9",
];

/// The pair's names, which a note may not take at the top of its scope.
const PAIR: &[&str] = &["memory.md", "user.md"];

/// Why `path` is not a note path, or `None` when it is one.
fn refusal(path: &str) -> Option<String> {
    if path.is_empty() {
        return Some("it is empty".into());
    }
    if path.len() > MAX_NOTE_PATH_BYTES {
        return Some(format!(
            "it is {} bytes long, over {MAX_NOTE_PATH_BYTES}",
            path.len()
        ));
    }
    if let Some(c) = path.chars().find(|&c| invisible(c)) {
        return Some(format!(
            "it holds {}, a control or invisible character",
            c.escape_unicode()
        ));
    }
    if let Some(c) = path.chars().find(|c| FORBIDDEN.contains(c)) {
        return Some(format!(
            "it holds {c:?}; a note path holds none of \\ : * ? \" < > | %"
        ));
    }
    if path.starts_with('/') {
        return Some(
            "it is absolute; give it relative to the scope, like projects/kyoto.md".into(),
        );
    }
    if !is_nfc(path) {
        let nfc: String = path.nfc().collect();
        return Some(format!("it is not in Unicode NFC; write it as {nfc:?}"));
    }
    let segments: Vec<&str> = path.split('/').collect();
    if segments.len() > MAX_NOTE_PATH_SEGMENTS {
        return Some(format!(
            "it has {} segments, over {MAX_NOTE_PATH_SEGMENTS}",
            segments.len()
        ));
    }
    if let Some(reason) = segments.iter().find_map(|segment| segment_refusal(segment)) {
        return Some(reason);
    }
    if segments.len() == 1 && PAIR.contains(&path.to_lowercase().as_str()) {
        return Some(format!(
            "{path} at the top of a scope is the always-loaded document, not a note; update it as the document, or put the note in a folder"
        ));
    }
    None
}

/// Why one segment of a path is refused, or `None`.
fn segment_refusal(segment: &str) -> Option<String> {
    if segment.is_empty() {
        return Some("it has an empty segment (a leading, trailing or doubled /)".into());
    }
    if segment.len() > MAX_NOTE_SEGMENT_BYTES {
        return Some(format!(
            "its segment {segment:?} is {} bytes long, over {MAX_NOTE_SEGMENT_BYTES}",
            segment.len()
        ));
    }
    if segment.starts_with('.') {
        return Some(format!(
            "its segment {segment:?} starts with '.': hidden files, . and .. are not notes"
        ));
    }
    if segment.starts_with(char::is_whitespace) || segment.ends_with(char::is_whitespace) {
        return Some(format!(
            "its segment {segment:?} starts or ends with white space"
        ));
    }
    if segment.ends_with('.') {
        return Some(format!(
            "its segment {segment:?} ends with '.', which Windows drops"
        ));
    }
    let stem = segment.split('.').next().unwrap_or(segment).to_lowercase();
    if DEVICES.contains(&stem.as_str()) {
        return Some(format!(
            "its segment {segment:?} is named as a Windows device"
        ));
    }
    None
}

/// Control characters, white space other than the space, and the format characters that
/// change nothing visible (soft hyphen, zero-width and bidirectional marks, the BOM), so two
/// paths that look alike are alike.
fn invisible(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            c,
            '\u{00ad}'
                | '\u{034f}'
                | '\u{061c}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{17b4}'
                | '\u{17b5}'
                | '\u{180b}'..='\u{180f}'
                | '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff0}'..='\u{fffb}'
                | '\u{e0000}'..='\u{e0fff}'
        )
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
