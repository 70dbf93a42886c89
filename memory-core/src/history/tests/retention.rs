//! Retention: what is kept, and what is stored whole.

use super::*;

#[test]
fn retention_counts_from_the_tip_and_ages_by_the_clock() {
    assert_eq!(Retention::keep(3).oldest_kept(10), 8);
    assert_eq!(Retention::keep(3).oldest_kept(2), 1);
    assert_eq!(Retention::keep(usize::MAX).oldest_kept(5), 1);
    let day = Duration::from_secs(86_400);
    let retention = Retention::default().with_max_age(day);
    let now = SystemTime::now();
    assert!(retention.too_old(now - 2 * day, now));
    assert!(!retention.too_old(now + day, now), "a clock set back");
    assert!(!Retention::default().too_old(now - 1000 * day, now));
    assert!(retention.prunes(1, now - 2 * day, 2, now));
    assert!(!retention.prunes(2, now - 2 * day, 2, now), "the tip stays");
    assert!(Retention::keep(3).prunes(7, now, 10, now));
    assert!(!Retention::keep(3).prunes(8, now, 10, now));
}

#[test]
fn retention_reads_as_configured() {
    let parsed: Retention = serde_json::from_str(r#"{"max_age_days": 2}"#).unwrap();
    assert_eq!(
        parsed,
        Retention::default().with_max_age(Duration::from_secs(2 * 86_400))
    );
    assert_eq!(
        serde_json::from_str::<Retention>(r#"{"keep": 0}"#).unwrap(),
        Retention::OFF
    );
    let err = serde_json::from_str::<Retention>(r#"{"kept": 3}"#).unwrap_err();
    assert!(err.to_string().contains("unknown field"), "{err}");
}

#[test]
fn retention_is_on_when_it_keeps_any() {
    assert!(!Retention::OFF.is_on());
    assert!(!Retention::keep(0).is_on());
    assert!(Retention::keep(1).is_on());
    assert!(Retention::default().is_on());
}

#[test]
fn a_revision_exactly_max_age_old_is_not_too_old() {
    let day = Duration::from_secs(86_400);
    let retention = Retention::default().with_max_age(day);
    let now = SystemTime::now();
    assert!(!retention.too_old(now - day, now));
    assert!(retention.too_old(now - day - Duration::from_millis(1), now));
}

#[test]
fn checkpoints_come_every_keep_at_most_every_hundred_and_each_half_age() {
    assert_eq!(Retention::keep(0).checkpoint_every(), 1);
    assert_eq!(Retention::keep(7).checkpoint_every(), 7);
    assert_eq!(Retention::keep(100).checkpoint_every(), 100);
    assert_eq!(
        Retention::keep(5000).checkpoint_every(),
        CHECKPOINT_EVERY_MOST
    );
    let epoch = SystemTime::UNIX_EPOCH;
    let at = |seconds: u64| epoch + Duration::from_secs(seconds);
    let by_count = Retention::keep(4);
    let numbers: Vec<u64> = (1..=12)
        .filter(|&n| by_count.is_checkpoint(n, Some(at(10)), at(11)))
        .collect();
    assert_eq!(numbers, [4, 8, 12]);
    // With an age limit of 20 s, also the first write of each 10 s period.
    let aged = by_count.with_max_age(Duration::from_secs(20));
    assert!(!aged.is_checkpoint(5, Some(at(10)), at(19)), "same period");
    assert!(aged.is_checkpoint(5, Some(at(19)), at(20)), "a new period");
    assert!(aged.is_checkpoint(5, None, at(5)), "a first write");
    assert!(!by_count.is_checkpoint(5, None, at(5)), "no age, no period");
}
