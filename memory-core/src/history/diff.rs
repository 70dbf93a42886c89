//! Unified diffs of two texts, within a deadline.

use std::time::{Duration, Instant};

/// How long the diffs of one call may search for the smallest change: finding it takes time
/// quadratic in the lines changed (a minute for two unrelated documents of 16,000 lines), so
/// past this the diff gives up on being smallest. See [`diff_deadline`].
pub const DIFF_TIME: Duration = Duration::from_secs(1);

/// The deadline of a call's diffs begun now: [`DIFF_TIME`] from now.
pub fn diff_deadline() -> Instant {
    let now = Instant::now();
    now.checked_add(DIFF_TIME).unwrap_or(now)
}

/// A unified diff (`diff -u` form, 3 lines of context) from `old` to `new`, with the two
/// labels as file names; empty when the texts are equal.
///
/// The search for the smallest diff stops at `deadline`: what is left to compare then is
/// given as removed and added whole, in time linear in its size. The diff stays exact
/// (applied to `old` it gives `new`), only larger than it could be.
pub fn unified_diff(
    old: &str,
    new: &str,
    old_label: &str,
    new_label: &str,
    deadline: Instant,
) -> String {
    if old == new {
        return String::new();
    }
    similar::TextDiff::configure()
        .deadline(deadline)
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_label, new_label)
        .missing_newline_hint(true)
        .to_string()
}
