//! Revisions and tips.

use super::*;

#[test]
fn only_an_unrecorded_change_makes_an_external_revision() {
    let empty = RevisionTip::empty(Version::new("0"));
    assert_eq!(empty.unrecorded(&doc("", "0"), SystemTime::now()), None);
    let now = SystemTime::now();
    let found = empty.unrecorded(&doc("by hand\n", "1"), now).unwrap();
    assert_eq!(
        (found.number, found.surface, found.text.as_deref()),
        (1, Surface::External, Some("by hand\n"))
    );
    assert_eq!(found.time, now);
    let tip = RevisionTip::of(&found);
    assert_eq!(tip.unrecorded(&doc("by hand\n", "1"), now), None);
    let again = tip.unrecorded(&doc("edited\n", "2"), now).unwrap();
    assert_eq!((again.number, again.bytes_before), (2, 8));
}

#[test]
fn who_names_what_is_known_in_order() {
    let mut made = revision(2, Some("x\n"));
    assert_eq!(made.who(), None);
    made.session = Some("s1".into());
    assert_eq!(made.who().as_deref(), Some("session s1"));
    made.personality = Some(PersonalityId::new("ada").unwrap());
    made.user = Some(UserId::new("grace").unwrap());
    assert_eq!(
        made.who().as_deref(),
        Some("personality ada, user grace, session s1")
    );
    made.session = None;
    assert_eq!(made.who().as_deref(), Some("personality ada, user grace"));
}

#[test]
fn a_revision_starts_from_the_one_before_it_when_that_is_kept() {
    let tip = RevisionTip::of(&revision(2, Some("old\n")));
    let dead = Revision::tombstone(
        &DocumentId::GlobalMemory,
        &tip,
        Version::new("0"),
        Surface::Cli,
        SystemTime::UNIX_EPOCH,
    );
    let history = [
        revision(6, Some("six\n")),
        revision(5, Some("five\n")),
        dead.clone(),
        revision(2, Some("two\n")),
        revision(1, Some("one\n")),
    ];
    assert_eq!(history[0].text_before(&history), Some("five\n"));
    // After a tombstone: the empty document; before the first: the same.
    assert_eq!(
        history[1].text_before(&history),
        None,
        "revision 4 is not kept"
    );
    assert_eq!(revision(4, Some("four\n")).text_before(&history), Some(""));
    assert_eq!(history[4].text_before(&history), Some(""));
    assert_eq!(history[3].text_before(&history), Some("one\n"));
    assert_eq!(
        dead.text_before(&history),
        None,
        "a tombstone has no change"
    );

    assert_eq!(
        history[0]
            .diff_in(&history, "MEMORY.md", diff_deadline())
            .as_deref(),
        Some("--- MEMORY.md@5\n+++ MEMORY.md@6\n@@ -1 +1 @@\n-five\n+six\n")
    );
    assert_eq!(
        history[1].diff_in(&history, "MEMORY.md", diff_deadline()),
        None
    );
    assert_eq!(dead.diff_in(&history, "MEMORY.md", diff_deadline()), None);
    // No change in the text: an empty diff, not none.
    assert_eq!(
        revision(7, Some("six\n"))
            .diff_in(&history, "M", diff_deadline())
            .as_deref(),
        Some("")
    );
}

#[test]
fn surfaces_display_as_their_json_names() {
    for surface in [
        Surface::Tool,
        Surface::Cli,
        Surface::Web,
        Surface::Api,
        Surface::External,
    ] {
        let json = serde_json::to_string(&surface).unwrap();
        assert_eq!(format!("\"{surface}\""), json);
    }
    assert_eq!(Surface::External.to_string(), "external");
}

#[test]
fn a_revision_says_what_changed() {
    let mut written = revision(1, Some("b\n"));
    assert_eq!(written.what_changed(), "no updates recorded");
    written.updates = vec![
        MemoryUpdate::add(Store::Memory, "a"),
        MemoryUpdate::edit(Store::Memory, "a", "b"),
    ];
    assert_eq!(written.what_changed(), "add, edit");
    assert!(!written.is_tombstone());
    let by_hand = Revision {
        surface: Surface::External,
        ..revision(2, Some("c\n"))
    };
    assert_eq!(by_hand.what_changed(), "hand edit");
    let dead = Revision::tombstone(
        &DocumentId::GlobalMemory,
        &RevisionTip::of(&by_hand),
        Version::new("0"),
        Surface::Cli,
        SystemTime::now(),
    );
    assert!(dead.is_tombstone());
    assert_eq!(dead.what_changed(), "purged");
}

#[test]
fn surfaces_parse_from_their_names_and_nothing_else() {
    for surface in Surface::ALL {
        assert_eq!(surface.to_string().parse::<Surface>(), Ok(surface));
    }
    let err = "robot".parse::<Surface>().unwrap_err();
    assert!(err.contains("\"robot\" is not tool, cli"), "{err}");
}

#[test]
fn what_a_stored_revision_is() {
    let tombstone = revision(4, None);
    let (change, _) = change(5, "", vec![MemoryUpdate::add(Store::Memory, "a")]);
    let whole = revision(6, Some("a\n"));
    assert!(tombstone.is_tombstone() && tombstone.is_base() && !tombstone.is_change_only());
    assert!(!change.is_tombstone() && !change.is_base() && change.is_change_only());
    assert!(!whole.is_tombstone() && whole.is_base() && !whole.is_change_only());
    // A change stands alone when it is the first, or starts by replacing everything.
    assert!(!change.stands_alone() && whole.stands_alone() && tombstone.stands_alone());
    let first = Revision {
        number: 1,
        ..change.clone()
    };
    assert!(first.stands_alone());
    let replaced = Revision {
        updates: vec![MemoryUpdate::replace(Store::Memory, "b")],
        ..change
    };
    assert!(replaced.stands_alone());
}
