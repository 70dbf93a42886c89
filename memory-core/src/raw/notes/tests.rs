//! The scope rules: collisions and caps, as a write sees the scope in its atomic step.

use super::*;

fn path(p: &str) -> NotePath {
    NotePath::new(p).unwrap()
}

fn scope() -> DocumentId {
    DocumentId::GlobalMemory
}

/// Checks writing `written` into a scope holding `existing`.
fn check(
    existing: &[(&str, usize)],
    written: &[(&str, usize)],
    caps: NoteCaps,
) -> Result<ScopeTotals, MemoryError> {
    let existing: Vec<(NotePath, usize)> = existing.iter().map(|(p, b)| (path(p), *b)).collect();
    let written: Vec<(NotePath, usize)> = written.iter().map(|(p, b)| (path(p), *b)).collect();
    check_scope(
        &scope(),
        existing.iter().map(|(p, b)| (p, *b)),
        &written,
        caps,
    )
}

fn collision(result: Result<ScopeTotals, MemoryError>) -> (String, String) {
    match result {
        Err(MemoryError::NoteCollision { path, existing, .. }) => {
            (path.to_string(), existing.to_string())
        }
        other => panic!("expected a collision, got {other:?}"),
    }
}

#[test]
fn writes_that_fit_report_the_scope_after_them() {
    let caps = NoteCaps::default();
    assert_eq!(
        check(&[], &[("a.md", 10)], caps).unwrap(),
        ScopeTotals {
            notes: 1,
            bytes: 10
        }
    );
    assert_eq!(
        check(
            &[("a.md", 10), ("b.md", 5)],
            &[("a.md", 3), ("c/d.md", 7)],
            caps
        )
        .unwrap(),
        ScopeTotals {
            notes: 3,
            bytes: 15
        },
        "an edit changes bytes, a create adds a note"
    );
    assert_eq!(
        check(&[("a.md", 10), ("b.md", 5)], &[("a.md", 0)], caps).unwrap(),
        ScopeTotals { notes: 1, bytes: 5 },
        "0 bytes is a delete"
    );
    assert_eq!(
        check(&[("a.md", 10)], &[("a.md", 0), ("b.md", 10)], caps).unwrap(),
        ScopeTotals {
            notes: 1,
            bytes: 10
        },
        "a rename deletes one and creates the other"
    );
}

#[test]
fn notes_differing_only_by_case_or_normalisation_are_refused() {
    let caps = NoteCaps::default();
    assert_eq!(
        collision(check(&[("kyoto.md", 1)], &[("Kyoto.md", 1)], caps)),
        ("Kyoto.md".into(), "kyoto.md".into())
    );
    assert_eq!(
        collision(check(&[("file.md", 1)], &[("\u{fb01}le.md", 1)], caps)).1,
        "file.md"
    );
    // Two created by one call collide with each other.
    collision(check(&[], &[("a/X.md", 1), ("a/x.md", 1)], caps));
    // Writing the note itself again, or one that differs by more, is fine.
    check(&[("kyoto.md", 1)], &[("kyoto.md", 4)], caps).unwrap();
    check(&[("kyoto.md", 1)], &[("kyoto2.md", 4)], caps).unwrap();
    // A note deleted by the same call frees its spelling: a rename that changes case.
    check(
        &[("kyoto.md", 1)],
        &[("kyoto.md", 0), ("Kyoto.md", 1)],
        caps,
    )
    .unwrap();
}

#[test]
fn a_note_and_a_folder_of_one_name_are_refused() {
    let caps = NoteCaps::default();
    assert_eq!(
        collision(check(&[("a.md", 1)], &[("a.md/b.md", 1)], caps)),
        ("a.md/b.md".into(), "a.md".into())
    );
    assert_eq!(
        collision(check(&[("x/y/z.md", 1)], &[("X/Y", 1)], caps)),
        ("X/Y".into(), "x/y/z.md".into())
    );
    assert_eq!(
        collision(check(&[("A", 1)], &[("a/b/c.md", 1)], caps)).1,
        "A"
    );
    // Siblings and names that merely share a prefix are fine.
    check(&[("a.md", 1), ("ab/c.md", 1)], &[("a/b.md", 1)], caps).unwrap();
    check(&[("a/b.md", 1)], &[("a/c.md", 1), ("a.md", 1)], caps).unwrap();
}

#[test]
fn a_write_past_a_scope_cap_is_refused_and_one_within_it_is_not() {
    let caps = NoteCaps {
        max_note_bytes: 100,
        max_notes: 2,
        max_bytes: 20,
    };
    let over = |result: Result<ScopeTotals, MemoryError>| match result {
        Err(MemoryError::NotesCapExceeded {
            cap,
            limit,
            would_be,
            ..
        }) => (cap, limit, would_be),
        other => panic!("expected a cap, got {other:?}"),
    };
    assert_eq!(
        over(check(&[("a", 1), ("b", 1)], &[("c", 1)], caps)),
        ("max_notes", 2, 3)
    );
    assert_eq!(
        over(check(&[("a", 15)], &[("b", 6)], caps)),
        ("max_bytes", 20, 21)
    );
    assert_eq!(
        over(check(&[("a", 15)], &[("a", 21)], caps)),
        ("max_bytes", 20, 21)
    );
    check(&[("a", 15)], &[("b", 5)], caps).unwrap();
    // A scope already over (its caps lowered since) may shrink or stay as it is.
    let lowered = NoteCaps {
        max_notes: 1,
        max_bytes: 5,
        ..caps
    };
    check(&[("a", 10), ("b", 10)], &[("a", 4)], lowered).unwrap();
    check(&[("a", 10), ("b", 10)], &[("a", 0)], lowered).unwrap();
    over(check(&[("a", 10), ("b", 10)], &[("a", 11)], lowered));
}

#[test]
fn a_large_scope_is_checked_by_lookups() {
    let existing: Vec<(String, usize)> = (0..9_999)
        .map(|i| (format!("folder-{}/note-{i}.md", i % 100), 10))
        .collect();
    let existing: Vec<(&str, usize)> = existing.iter().map(|(p, b)| (p.as_str(), *b)).collect();
    let caps = NoteCaps::default();
    assert_eq!(
        check(&existing, &[("folder-7/new.md", 10)], caps)
            .unwrap()
            .notes,
        10_000,
        "the default cap holds exactly 10,000"
    );
    assert_eq!(
        collision(check(&existing, &[("FOLDER-7/Note-7.md", 1)], caps)).1,
        "folder-7/note-7.md"
    );
    let (_, inside) = collision(check(&existing, &[("folder-7", 1)], caps));
    assert!(inside.starts_with("folder-7/"), "{inside}");
}

#[test]
fn a_scope_index_reads_back_as_written_and_names_a_damaged_line() {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use crate::document::{Document, Version};
    use crate::raw::notes::{Indexed, IndexedListing, index_text, parse_index};
    let at = |millis: u64| UNIX_EPOCH + Duration::from_millis(millis);
    let index = |text: &str, modified: Option<SystemTime>| Document {
        id: DocumentId::GlobalMemory,
        text: text.to_owned(),
        version: Version::new("9"),
        location: "mem://index".to_owned(),
        modified,
    };
    let earlier = Indexed {
        path: path("b.md"),
        bytes: 7,
        listed: Some(IndexedListing {
            version: 3,
            modified: Some(at(1_700_000_000_123)),
            description: "Tabs\tstay in a description".to_owned(),
        }),
    };
    let notes = vec![
        earlier.clone(),
        Indexed::written(path("a/é tab.md"), "# Kyoto\nTemples.", 2),
        Indexed::written(path("gone.md"), "", 5),
        Indexed {
            path: path("old.md"),
            bytes: 4,
            listed: None,
        },
    ];
    let text = index_text(&notes);
    assert_eq!(
        text,
        "16\t2\t=\ta/é tab.md\tKyoto\n\
         7\t3\t1700000000123\tb.md\tTabs\tstay in a description\n\
         4\told.md\n",
        "sorted, without deleted notes; written now dated by the index; unknown listings short"
    );
    let written_at = at(1_800_000_000_000);
    let read = parse_index(&index(&text, Some(written_at))).unwrap();
    let kyoto = read[0].meta().expect("listed whole");
    assert_eq!(
        (kyoto.path.as_str(), kyoto.bytes, kyoto.version.as_str()),
        ("a/é tab.md", 16, "2")
    );
    assert_eq!(
        (kyoto.modified, kyoto.description.as_str()),
        (Some(written_at), "Kyoto"),
        "dated as the index"
    );
    assert_eq!(read[1], earlier);
    assert_eq!((read[2].path.as_str(), read[2].bytes), ("old.md", 4));
    assert_eq!(read[2].meta(), None, "a line without its listing");
    let undated = parse_index(&index(&text, None)).unwrap();
    assert_eq!(
        undated[0].listed, None,
        "the index's time unknown: its own lines are listed by a read"
    );
    assert_eq!(undated[1], earlier);
    assert_eq!(parse_index(&index("", None)).unwrap(), []);
    for damaged in [
        "7 b.md\n",
        "x\tb.md\n",
        "7\t../b.md\n",
        "7\tb.md\n\n",
        "7\t1\tb.md\n",
        "7\tx\t1\tb.md\td\n",
        "7\t1\tsoon\tb.md\td\n",
    ] {
        match parse_index(&index(damaged, None)) {
            Err(MemoryError::Corrupt { location, .. }) => {
                assert!(location.starts_with("mem://index, line "), "{location}");
            }
            other => panic!("{damaged:?}: {other:?}"),
        }
    }
}
