//! The note path rule of `CONTRACT.md` (Notes), and the constructors that check it.

use unicode_normalization::{UnicodeNormalization, is_nfc};

use crate::error::MemoryError;
use crate::note::path::{
    MAX_NOTE_PATH_BYTES, MAX_NOTE_PATH_SEGMENTS, MAX_NOTE_SEGMENT_BYTES, NotePath,
};

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
}

impl TryFrom<String> for NotePath {
    type Error = MemoryError;

    fn try_from(path: String) -> Result<Self, Self::Error> {
        NotePath::new(path)
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
    // What looks like a refused path is one: `．．` (full-width dots) reads as `..`, `ａ／ｂ`
    // (a full-width solidus) as two segments, `ＭＥＭＯＲＹ.md` as the document, so the
    // compatibility form must pass too, and keep the segments where they are.
    let compatible: String = path.nfkc().collect();
    if compatible != path {
        if compatible.matches('/').count() != path.matches('/').count() {
            return Some(format!(
                "its compatibility form (NFKC) {compatible:?} has its segments elsewhere: separate folders with / only"
            ));
        }
        if let Some(reason) = refusal(&compatible) {
            return Some(format!(
                "its compatibility form (NFKC) {compatible:?} is refused: {reason}"
            ));
        }
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
