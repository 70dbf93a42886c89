//! What a store drops, rebuilds and shows.

use std::time::{Duration, SystemTime};

use super::*;
use crate::document::Store;
use crate::history::revision::Surface;
use crate::history::tests::{change, doc, revision};
use crate::update::MemoryUpdate;

#[test]
fn a_store_drops_only_what_no_kept_revision_is_rebuilt_from() {
    let epoch = SystemTime::UNIX_EPOCH;
    // (number, time, base), oldest first: checkpoints at 3 and 6.
    let stored = |tip: u64| {
        (1..=tip)
            .map(|n| (n, epoch, n % 3 == 0))
            .collect::<Vec<_>>()
    };
    let keep = Retention::keep(3);
    // Keeping 5, 6, 7: 5 is rebuilt from 3, so 1 and 2 go.
    assert_eq!(droppable(stored(7), 7, epoch, &keep), 2);
    // Keeping 6, 7, 8: 6 is whole, so 1 to 5 go.
    assert_eq!(droppable(stored(8), 8, epoch, &keep), 5);
    // Keeping 2, 3, 4: 2 is rebuilt from 1 (the first), nothing goes.
    assert_eq!(droppable(stored(4), 4, epoch, &keep), 0);
    // By age: at 100 s, with a limit of 30 s, revisions before 70 s go.
    let aged = Retention::default().with_max_age(Duration::from_secs(30));
    let at = |seconds: u64| epoch + Duration::from_secs(seconds);
    let timed = [
        (1, at(10), true),
        (2, at(50), false),
        (3, at(60), true),
        (4, at(80), false),
    ];
    assert_eq!(
        droppable(timed, 4, at(100), &aged),
        2,
        "4 is rebuilt from 3"
    );
    assert_eq!(
        Retention::keep(3).count_kept(stored(8).into_iter().map(|(n, t, _)| (n, t)), 8, epoch),
        3
    );
    assert_eq!(
        Retention::OFF.count_kept([(1, epoch), (2, epoch)], 2, epoch),
        2,
        "with history off, whatever an earlier configuration left"
    );
}

#[test]
fn changes_are_rebuilt_from_the_whole_revision_before_them() {
    let epoch = SystemTime::UNIX_EPOCH;
    let keep = Retention::keep(4);
    let (one, text_one) = change(1, "", vec![MemoryUpdate::add(Store::Memory, "a")]);
    let whole = Revision {
        text: Some("a\n\nhand\n".to_owned()),
        bytes_after: 9,
        sha256_after: sha256_hex("a\n\nhand\n"),
        ..revision(2, None)
    };
    let (three, text_three) = change(
        3,
        "a\n\nhand\n",
        vec![MemoryUpdate::edit(Store::Memory, "hand", "agent")],
    );
    let (four, text_four) = change(4, &text_three, vec![MemoryUpdate::add(Store::Memory, "b")]);
    let stored = vec![four.clone(), three.clone(), whole.clone(), one.clone()];
    let kept = kept_revisions(stored, 4, epoch, &keep, "j").unwrap();
    let texts: Vec<_> = kept.iter().map(|r| r.text.clone().unwrap()).collect();
    assert_eq!(
        texts,
        [
            text_four.clone(),
            text_three.clone(),
            "a\n\nhand\n".to_owned(),
            text_one
        ]
    );

    // Kept 3 and 4 only (keeping 2): read back to their base 2, 1 past the retention.
    let two = Retention::keep(2);
    let kept = kept_revisions(
        vec![four.clone(), three.clone(), whole.clone()],
        4,
        epoch,
        &two,
        "j",
    );
    assert_eq!(
        kept.unwrap().iter().map(|r| r.number).collect::<Vec<_>>(),
        [4, 3]
    );

    // Kept changes whose base was not read (or is gone) are Corrupt, naming the newest.
    let err = kept_revisions(vec![four.clone(), three.clone()], 4, epoch, &keep, "j").unwrap_err();
    assert!(
        matches!(&err, MemoryError::Corrupt { location, .. } if location == "j#4"),
        "{err:?}"
    );
    // A change past the retention whose base is gone is left out, not an error.
    let checkpoint = Revision {
        text: Some(text_three.clone()),
        ..three.clone()
    };
    let (lost, _) = change(2, "z", vec![MemoryUpdate::add(Store::Memory, "b")]);
    let kept = kept_revisions(vec![checkpoint, lost], 3, epoch, &Retention::keep(1), "j");
    assert_eq!(
        kept.unwrap().iter().map(|r| r.number).collect::<Vec<_>>(),
        [3]
    );
    // A gap between a change and the revision kept before it is Corrupt.
    let err = kept_revisions(vec![four.clone(), whole.clone()], 4, epoch, &keep, "j").unwrap_err();
    assert!(
        matches!(&err, MemoryError::Corrupt { location, reason }
        if location == "j#4" && reason.contains("the one kept before it is 2")),
        "{err:?}"
    );
    // Updates that do not make the recorded text are Corrupt.
    let mut damaged = four;
    damaged.sha256_after = sha256_hex("something else");
    let err = kept_revisions(vec![damaged, three, whole], 4, epoch, &keep, "j").unwrap_err();
    assert!(
        matches!(&err, MemoryError::Corrupt { location, reason }
        if location == "j#4" && reason.contains("sha256_after")),
        "{err:?}"
    );
    // Updates that do not apply at all are Corrupt too.
    let (mut stray, _) = change(2, "x", vec![MemoryUpdate::edit(Store::Memory, "x", "y")]);
    stray.sha256_after = sha256_hex(&text_four);
    let err = kept_revisions(vec![stray, one], 2, epoch, &keep, "j").unwrap_err();
    assert!(
        matches!(&err, MemoryError::Corrupt { location, reason }
        if location == "j#2" && reason.contains("do not apply")),
        "{err:?}"
    );
}

#[test]
fn an_unrecorded_hand_edit_counts_as_the_newest_for_retention() {
    let epoch = SystemTime::UNIX_EPOCH;
    let recorded = vec![revision(2, Some("b")), revision(1, Some("a"))];
    let tip = RevisionTip::of(&recorded[0]);
    let edited = Document {
        text: "by hand".to_owned(),
        ..doc("", "3")
    };
    let view = history_view(
        recorded.clone(),
        &tip,
        &edited,
        10,
        epoch,
        &Retention::keep(2),
    );
    assert_eq!(
        view.iter()
            .map(|r| (r.number, r.surface))
            .collect::<Vec<_>>(),
        [(3, Surface::External), (2, Surface::Api)]
    );
    let view = history_view(recorded, &tip, &edited, 10, epoch, &Retention::keep(3));
    assert_eq!(view.len(), 3);
}
