//! Unified diffs.

use super::*;

#[test]
fn diffs_are_unified() {
    let diff = unified_diff("a\nb\n", "a\nc\n", "#1", "#2", diff_deadline());
    assert!(diff.starts_with("--- #1\n+++ #2\n"), "{diff}");
    assert!(diff.contains("-b\n+c\n"), "{diff}");
    assert_eq!(unified_diff("same", "same", "a", "b", diff_deadline()), "");
}

/// The lines of `diff` a side keeps: `' '` and `'-'` lines for the old text, `' '` and
/// `'+'` for the new (one hunk: the texts are short).
fn side(diff: &str, mark: char) -> String {
    diff.lines()
        .skip(3)
        .filter(|line| line.starts_with(' ') || line.starts_with(mark))
        .map(|line| format!("{}\n", &line[1..]))
        .collect()
}

#[test]
fn a_diff_past_its_deadline_is_exact_but_not_the_smallest() {
    let old = "a\nX\nb\nY\nc\n";
    let new = "a\nX2\nb\nY2\nc\n";
    let smallest = unified_diff(old, new, "old", "new", diff_deadline());
    assert!(smallest.contains("-X\n+X2\n b\n-Y\n+Y2\n"), "{smallest}");

    let now = Instant::now();
    let past = now.checked_sub(Duration::from_millis(1)).unwrap_or(now);
    let rushed = unified_diff(old, new, "old", "new", past);
    assert!(rushed.contains("-X\n-b\n-Y\n+X2\n+b\n+Y2\n"), "{rushed}");
    assert_eq!(side(&rushed, '-'), old);
    assert_eq!(side(&rushed, '+'), new);
}
