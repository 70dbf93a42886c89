//! Redaction's plan: which revision may be erased, and which one after it must be stored whole.

use super::*;
use crate::history::redaction::{Redaction, plan_redaction, redactable};
use crate::raw::kept::{history_view, kept_revisions};

/// Three adds stored as changes (revision 1 stands alone), as a store reads them newest
/// first, and as `history` shows them with the document holding `current` (its texts
/// rebuilt, a hand edit at its head).
fn three_changes(current: Option<&str>) -> (Vec<Revision>, Vec<Revision>) {
    let (one, text_one) = change(1, "", vec![MemoryUpdate::add(Store::Memory, "a")]);
    let (two, text_two) = change(2, &text_one, vec![MemoryUpdate::add(Store::Memory, "b")]);
    let (three, text_three) = change(3, &text_two, vec![MemoryUpdate::add(Store::Memory, "c")]);
    let stored = vec![three, two, one];
    let tip = RevisionTip::of(&stored[0]);
    let kept = kept_revisions(stored.clone(), 3, at(), &Retention::default(), "j").unwrap();
    let current = current.unwrap_or(&text_three);
    let current = doc(current, &sha256_hex(current));
    let shown = history_view(
        kept,
        &tip,
        &current,
        usize::MAX,
        at(),
        &Retention::default(),
    );
    (stored, shown)
}

fn at() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(7)
}

fn plan(current: Option<&str>, number: u64) -> Result<Redaction, MemoryError> {
    let (stored, shown) = three_changes(current);
    plan_redaction(&DocumentId::GlobalMemory, &stored, &shown, number, at())
}

#[test]
fn the_revision_after_a_redacted_change_is_stored_whole() {
    let Ok(Redaction::Store { redacted, rebased }) = plan(None, 2) else {
        panic!("revision 2 can be redacted: {:?}", plan(None, 2));
    };
    assert_eq!(
        (
            redacted.number,
            redacted.text.as_ref(),
            redacted.updates.len()
        ),
        (2, None, 0)
    );
    assert_eq!(redacted.redacted_at, Some(at()));
    assert!(redacted.is_redacted() && !redacted.is_tombstone() && !redacted.is_change_only());
    let rebased = rebased.expect("3 was a change built on 2");
    assert_eq!(
        (rebased.number, rebased.text.as_deref()),
        (3, Some("a\n\nb\n\nc\n"))
    );
}

#[test]
fn the_newest_is_in_use_and_missing_ones_are_not_found() {
    assert!(matches!(
        plan(None, 3),
        Err(MemoryError::RevisionInUse { number: 3, .. })
    ));
    for number in [0, 4] {
        assert!(
            matches!(
                plan(None, number),
                Err(MemoryError::RevisionNotFound { .. })
            ),
            "{number}"
        );
    }
}

#[test]
fn a_hand_edit_frees_the_newest_and_is_itself_in_use() {
    let edited = Some("by hand\n");
    assert!(matches!(
        plan(edited, 4),
        Err(MemoryError::RevisionInUse { number: 4, .. })
    ));
    let Ok(Redaction::Store { rebased, .. }) = plan(edited, 3) else {
        panic!("the document no longer holds revision 3");
    };
    assert_eq!(rebased, None, "after it the hand edit, recorded whole");
}

#[test]
fn a_redacted_revision_is_done_and_a_tombstone_is_not_found() {
    let (mut stored, mut shown) = three_changes(None);
    let redacted = shown[1].redacted(at());
    stored[1] = redacted.clone();
    shown[1] = redacted.clone();
    let done = plan_redaction(&DocumentId::GlobalMemory, &stored, &shown, 2, at());
    assert!(
        matches!(&done, Ok(Redaction::Done(revision)) if *revision == redacted),
        "{done:?}"
    );
    let id = DocumentId::GlobalMemory;
    let tip = RevisionTip::of(&shown[0]);
    let purged = [Revision::tombstone(
        &id,
        &tip,
        Version::new("0"),
        Surface::Cli,
        at(),
    )];
    assert!(matches!(
        redactable(&id, &purged, 4),
        Err(MemoryError::RevisionNotFound { number: 4, .. })
    ));
}

/// A change stored after a redacted revision without being stored whole cannot be rebuilt:
/// `Corrupt` naming it, not a text made from nothing.
#[test]
fn a_change_after_a_redacted_revision_is_corrupt() {
    let (mut stored, _) = three_changes(None);
    stored[1] = stored[1].redacted(at());
    let err = kept_revisions(stored, 3, at(), &Retention::default(), "j").unwrap_err();
    assert!(
        matches!(&err, MemoryError::Corrupt { location, reason } if location == "j#3" && reason.contains("redacted")),
        "{err:?}"
    );
}

/// A redaction keeps a rename's update (paths, no text) and nothing else of the updates, and
/// reverting to or diffing against it is `RevisionNotFound`.
#[test]
fn a_redacted_revision_keeps_a_rename_and_cannot_be_restored() {
    let kyoto = crate::note::path::NotePath::new("kyoto.md").unwrap();
    let trips = crate::note::path::NotePath::new("trips/kyoto.md").unwrap();
    let renamed = Revision {
        updates: vec![
            MemoryUpdate::rename(Store::Memory, kyoto, trips),
            MemoryUpdate::add(Store::Memory, "secret"),
        ],
        ..revision(2, Some("x\n"))
    };
    let redacted = renamed.redacted(at());
    assert_eq!(redacted.updates, renamed.updates[..1]);
    assert_eq!(redacted.what_changed(), "redacted");
    let history = [redacted, revision(1, Some("x\n"))];
    let id = DocumentId::GlobalMemory;
    let err = revision_to_restore(&id, &history, 2).unwrap_err();
    assert!(
        matches!(&err, MemoryError::RevisionNotFound { reason, .. } if reason.contains("redacted")),
        "{err}"
    );
    assert_eq!(history[0].text_before(&history), Some("x\n"));
    let after = revision(3, Some("y\n"));
    assert_eq!(after.text_before(&history), None, "nothing to diff against");
}
