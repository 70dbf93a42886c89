//! The note path rule, case by case and as a property, and the listing's description.

use std::path::{Component, Path};

use proptest::prelude::*;
use unicode_normalization::is_nfc;

use super::*;
use crate::error::{ErrorKind, MemoryError};
use crate::note::path::{
    MAX_NOTE_PATH_BYTES, MAX_NOTE_PATH_SEGMENTS, MAX_NOTE_SEGMENT_BYTES, NotePath,
};

fn refused(path: &str) -> String {
    match NotePath::new(path) {
        Err(MemoryError::InvalidNotePath {
            path: given,
            reason,
        }) => {
            assert_eq!(given, path, "the error names the path as given");
            reason
        }
        other => panic!("{path:?} should be refused, got {other:?}"),
    }
}

#[test]
fn ordinary_paths_are_notes() {
    for path in [
        "kyoto.md",
        "projects/kyoto.md",
        "customer_service_guidelines.xml",
        "a",
        "a b/c d.md",
        "日本/京都.md",
        "café.md",
        "x/MEMORY.md",
        "MEMORY.md.bak",
        "notes-2026/week 49/day-1.md",
        "a/b/c/d/e/f/g/h.md",
        "console.md",
        "com10.md",
        "a.b.c",
    ] {
        let note = NotePath::new(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        assert_eq!(note.as_str(), path);
        assert_eq!(note.to_string(), path);
    }
    let longest_segment = "a".repeat(MAX_NOTE_SEGMENT_BYTES);
    NotePath::new(longest_segment.as_str()).expect("a segment of the longest length");
    let longest = [longest_segment.as_str(); 3].join("/");
    let longest = &longest[..MAX_NOTE_PATH_BYTES];
    assert!(!longest.ends_with('/'));
    NotePath::new(longest).expect("a path of the longest length");
}

#[test]
fn escaping_paths_are_refused() {
    for path in [
        "/etc/passwd",
        "/kyoto.md",
        "../USER.md",
        "a/../../b.md",
        "./a.md",
        "a/./b.md",
        "..",
        ".",
        "a\\b.md",
        "..\\..\\windows",
        "C:/x.md",
        "C:x.md",
        "a//b.md",
        "a/",
        "",
    ] {
        refused(path);
    }
}

#[test]
fn hidden_and_reserved_files_are_refused() {
    for path in [
        ".hidden.md",
        "a/.git/config",
        ".MEMORY.md.history.jsonl",
        "MEMORY.md",
        "memory.md",
        "USER.md",
        "User.Md",
        "con",
        "CON.md",
        "x/Nul.txt",
        "lpt9/a.md",
        "com1.tar.gz",
    ] {
        refused(path);
    }
    assert!(refused("MEMORY.md").contains("always-loaded"));
}

#[test]
fn control_invisible_and_forbidden_characters_are_refused() {
    for path in [
        "a\0b.md",
        "a\nb.md",
        "a\rb.md",
        "a\tb.md",
        "a\u{7f}.md",
        "a\u{85}.md",
        "a\u{9b}.md",
        "a\u{a0}b.md",
        "a\u{ad}b.md",
        "a\u{200b}b.md",
        "a\u{200e}.md",
        "evil\u{202e}dm.exe",
        "\u{feff}a.md",
        "a\u{2028}b",
        "a\u{3000}b",
        "a\u{e0041}.md",
        "a:b.md",
        "a*.md",
        "a?.md",
        "a\"b\".md",
        "<a>.md",
        "a|b.md",
        "%2e%2e/a.md",
        "a%2fb.md",
    ] {
        refused(path);
    }
}

#[test]
fn badly_shaped_segments_are_refused() {
    for path in [
        " a.md", "a.md ", "a /b.md", "a/ b.md", "a.", "a./b.md", "a...",
    ] {
        refused(path);
    }
}

#[test]
fn a_path_whose_compatibility_form_is_refused_is_refused() {
    for (path, why) in [
        ("\u{ff0e}\u{ff0e}/USER.md", "starts with '.'"),
        ("a/\u{ff0e}git/config", "starts with '.'"),
        (
            "\u{ff2d}\u{ff25}\u{ff2d}\u{ff2f}\u{ff32}\u{ff39}.md",
            "always-loaded",
        ),
        ("a\u{ff0f}b.md", "segments elsewhere"),
        ("\u{ff43}\u{ff4f}\u{ff4e}.md", "Windows device"),
        ("a\u{ff1a}b.md", "holds ':'"),
        ("x\u{fe52}", "ends with '.'"),
    ] {
        let reason = refused(path);
        assert!(reason.contains("compatibility form"), "{path:?}: {reason}");
        assert!(reason.contains(why), "{path:?}: {reason}");
    }
    // A compatibility spelling that is fine as a path stays one.
    NotePath::new("\u{fb01}le.md").expect("the ligature fi");
    NotePath::new("\u{ff41}.md").expect("a full-width a");
}

#[test]
fn too_long_or_too_deep_paths_are_refused() {
    let long = format!("{}.md", "a".repeat(MAX_NOTE_SEGMENT_BYTES));
    assert!(refused(&long).contains("over 100"));
    let deep = ["a"; MAX_NOTE_PATH_SEGMENTS + 1].join("/");
    assert!(refused(&deep).contains("segments"));
    let longest = vec!["a".repeat(60); 5].join("/");
    assert!(longest.len() > MAX_NOTE_PATH_BYTES);
    assert!(refused(&longest).contains("bytes long"));
    // Bytes, not chars: 34 three-byte chars are 102 bytes.
    refused(&"京".repeat(34));
}

#[test]
fn a_path_not_in_nfc_is_refused_naming_its_nfc_form() {
    let decomposed = "cafe\u{301}.md";
    let reason = refused(decomposed);
    assert!(reason.contains("NFC"), "{reason}");
    assert!(reason.contains("café.md"), "{reason}");
}

#[test]
fn the_error_is_invalid_input_and_says_nothing_was_touched() {
    let error = NotePath::new("../x").unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidInput);
    assert_eq!(error.code(), "invalid-note-path");
    let message = error.to_string();
    assert!(message.contains("\"../x\""), "{message}");
    assert!(message.contains("nothing was read or written"), "{message}");
}

#[test]
fn paths_that_differ_only_by_case_or_normalisation_collide() {
    let path = |p: &str| NotePath::new(p).unwrap();
    assert!(path("Kyoto.md").collides_with(&path("kyoto.md")));
    assert!(path("projects/KYOTO.md").collides_with(&path("Projects/kyoto.md")));
    // U+FB01 (the ligature fi) is `fi` in NFKC.
    assert!(path("\u{fb01}le.md").collides_with(&path("file.md")));
    // Full-width letters are ASCII in NFKC.
    assert!(path("ａ.md").collides_with(&path("A.md")));
    assert!(path("Straße.md").collides_with(&path("straße.md")));
    // A note and a folder of the same name cannot both be.
    assert!(path("a.md").collides_with(&path("a.md/b.md")));
    assert!(path("A.md/b.md").collides_with(&path("a.md")));
    assert!(path("x/y").collides_with(&path("x/Y/z.md")));

    assert!(!path("a.md").collides_with(&path("a.md")));
    assert!(!path("a.md").collides_with(&path("a.mdx")));
    assert!(!path("a.md").collides_with(&path("a.mdx/b.md")));
    assert!(!path("a/b.md").collides_with(&path("a/c.md")));
    assert!(!path("ab/c.md").collides_with(&path("a")));
}

#[test]
fn a_path_is_a_json_string_checked_when_read() {
    let path = NotePath::new("projects/kyoto.md").unwrap();
    assert_eq!(
        serde_json::to_string(&path).unwrap(),
        "\"projects/kyoto.md\""
    );
    let back: NotePath = serde_json::from_str("\"projects/kyoto.md\"").unwrap();
    assert_eq!(back, path);
    let error = serde_json::from_str::<NotePath>("\"../x\"").unwrap_err();
    assert!(error.to_string().contains("invalid note path"), "{error}");
}

/// Strings that look like paths, weighted towards the characters the rule is about.
fn path_like() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("/".to_owned()),
        Just(".".to_owned()),
        Just("..".to_owned()),
        Just("\\".to_owned()),
        Just(" ".to_owned()),
        Just("\u{301}".to_owned()),
        Just("\u{202e}".to_owned()),
        Just("%2e".to_owned()),
        Just("MEMORY.md".to_owned()),
        "[a-zA-Z0-9_.-]{1,12}",
        any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

proptest! {
    /// Whatever is accepted stays inside the scope's folder when joined to it, is short and
    /// shallow enough, and holds nothing a file system or a terminal would read otherwise.
    #[test]
    fn an_accepted_path_stays_inside_its_folder(path in path_like()) {
        if let Ok(note) = NotePath::new(path.as_str()) {
            let joined = Path::new("/root/notes").join(note.as_str());
            prop_assert!(joined.starts_with("/root/notes"));
            prop_assert!(Path::new(note.as_str())
                .components()
                .all(|c| matches!(c, Component::Normal(_))));
            prop_assert!(note.as_str().len() <= MAX_NOTE_PATH_BYTES);
            prop_assert!(note.segments().count() <= MAX_NOTE_PATH_SEGMENTS);
            prop_assert!(note.segments().all(|s| !s.is_empty() && !s.starts_with('.')));
            prop_assert!(!note.as_str().chars().any(|c| c.is_control() || c == '\\'));
            prop_assert!(is_nfc(note.as_str()));
            prop_assert!(!note.collides_with(&note));
        } else {
            // A refusal never panics and always says why.
            let error = NotePath::new(path.as_str()).unwrap_err();
            prop_assert!(!error.to_string().is_empty());
        }
    }

    /// Collision is symmetric.
    #[test]
    fn collision_is_symmetric(a in path_like(), b in path_like()) {
        if let (Ok(a), Ok(b)) = (NotePath::new(a), NotePath::new(b)) {
            prop_assert_eq!(a.collides_with(&b), b.collides_with(&a));
        }
    }
}

#[test]
fn a_description_is_the_front_matter_or_the_first_line() {
    assert_eq!(note_description(""), "");
    assert_eq!(note_description("  \n\n"), "");
    assert_eq!(
        note_description("Temples first.\n# Kyoto"),
        "Temples first."
    );
    assert_eq!(note_description("\n## Kyoto trip ##\nx"), "Kyoto trip");
    assert_eq!(note_description("# Kyoto#1\n"), "Kyoto#1");
    assert_eq!(note_description("#hashtag\n"), "#hashtag");
    assert_eq!(
        note_description("---\ndescription: 'Refund rules'\n---\n# Refunds"),
        "Refund rules"
    );
    assert_eq!(
        note_description("---\nname: x\n---\n\n# Refunds\n"),
        "Refunds",
        "front matter without a description: the first line after it"
    );
    let long = "word ".repeat(60);
    let description = note_description(&long);
    assert_eq!(description.chars().count(), MAX_DESCRIPTION_CHARS);
    assert!(description.ends_with('…'));
    assert!(!description.ends_with(" …"));
}
