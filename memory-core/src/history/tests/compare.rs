//! A revision's text, to restore or compare.

use super::*;

#[test]
fn a_tombstone_cannot_be_restored_and_missing_revisions_name_what_is_kept() {
    let tip = RevisionTip::empty(Version::new("0"));
    let dead = Revision::tombstone(
        &DocumentId::GlobalMemory,
        &tip,
        Version::new("0"),
        Surface::Cli,
        SystemTime::now(),
    );
    let err = revision_to_restore(&DocumentId::GlobalMemory, &[dead], 1).unwrap_err();
    assert!(err.to_string().contains("tombstone"), "{err}");
    let err = revision_to_restore(&DocumentId::GlobalMemory, &[], 7).unwrap_err();
    assert!(err.to_string().contains("no revisions"), "{err}");
}

#[test]
fn a_missing_revision_names_the_ones_kept_and_zero_is_the_empty_document() {
    let history = [revision(5, Some("five\n")), revision(3, Some("three\n"))];
    let err = revision_to_restore(&DocumentId::GlobalMemory, &history, 4).unwrap_err();
    assert!(
        matches!(&err, MemoryError::RevisionNotFound { number: 4, reason, .. }
            if reason == "revisions 3 to 5 are kept"),
        "{err:?}"
    );
    assert_eq!(
        text_after(&DocumentId::GlobalMemory, &history, 3).unwrap(),
        "three\n"
    );
    assert_eq!(
        text_after(&DocumentId::GlobalMemory, &history, 0).unwrap(),
        ""
    );
    assert!(text_after(&DocumentId::GlobalMemory, &history, 4).is_err());
}

#[test]
fn a_diff_after_a_purge_starts_from_the_empty_document() {
    let tip = RevisionTip::of(&revision(1, Some("old\n")));
    let dead = Revision::tombstone(
        &DocumentId::GlobalMemory,
        &tip,
        Version::new("0"),
        Surface::Cli,
        SystemTime::now(),
    );
    let history = [
        revision(4, Some("newer\n")),
        revision(3, Some("new\n")),
        dead,
        revision(1, Some("old\n")),
    ];
    let diff = RevisionDiff::between(
        &DocumentId::GlobalMemory,
        &history,
        "",
        None,
        Some(3),
        diff_deadline(),
    )
    .unwrap();
    assert_eq!((diff.from, diff.to), (2, Some(3)));
    assert!(diff.diff.contains("+new\n"), "{}", diff.diff);
    assert!(!diff.diff.contains("old"), "{}", diff.diff);
    // Before a revision that is no tombstone: its text.
    let diff = RevisionDiff::between(
        &DocumentId::GlobalMemory,
        &history,
        "",
        None,
        None,
        diff_deadline(),
    )
    .unwrap();
    assert_eq!((diff.from, diff.to), (3, Some(4)));
    assert!(diff.diff.contains("-new\n+newer\n"), "{}", diff.diff);
}
