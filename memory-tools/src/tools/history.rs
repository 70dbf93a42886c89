//! `memory_history` without `revert_to`: a file's newest revisions, each with a diff against
//! the one before it, within a size a model's context can take.

use std::time::Instant;

use memory_core::{Revision, Store};

use crate::definitions::{DEFAULT_HISTORY_RESULTS, MAX_HISTORY_RESULTS};
use crate::dispatch::MemoryTools;
use crate::wording::{self, refusal};

/// The most characters of one revision's diff that `memory_history` shows; the rest is cut,
/// and the output says so.
pub const MAX_DIFF_CHARS: usize = 2_000;

/// The most characters one `memory_history` listing comes to: older revisions past it are left
/// out, and the output says so. Enough for the default five revisions with short diffs, little
/// enough not to crowd a model's context.
pub const MAX_HISTORY_CHARS: usize = 12_000;

impl MemoryTools {
    /// `memory_history` without `revert_to`: the newest `limit` revisions, each with a diff
    /// against the one before it, within [`MAX_HISTORY_CHARS`].
    pub(crate) async fn history(
        &self,
        store: Store,
        limit: Option<usize>,
    ) -> Result<String, String> {
        // Within 1 to MAX_HISTORY_RESULTS: the schema's bounds, checked before the call.
        let limit = limit.unwrap_or(DEFAULT_HISTORY_RESULTS);
        let name = wording::file_name(store);
        // One more than shown: the oldest one shown is diffed against it.
        let revisions = self
            .provider
            .history(&self.ctx.document(store), limit + 1)
            .await
            .map_err(|e| refusal(&e))?;
        if revisions.is_empty() {
            return Ok(wording::no_revisions(store));
        }
        let shown = revisions.len().min(limit);
        let mut text = wording::revisions_heading(store);
        let mut listed = 0;
        let deadline = memory_core::diff_deadline();
        for revision in revisions.iter().take(shown) {
            let entry = describe_revision(name, revision, &revisions, deadline);
            if listed > 0 && !fits(text.len(), entry.len()) {
                break;
            }
            text.push_str("\n\n");
            text.push_str(&entry);
            listed += 1;
        }
        if listed < shown {
            text.push_str(&wording::older_not_shown(shown - listed));
        } else if revisions.len() > limit && limit < MAX_HISTORY_RESULTS {
            text.push_str(&wording::older_kept());
        }
        text.push_str(&wording::how_to_undo(store));
        Ok(text)
    }
}

/// Whether an entry of `entry` characters still fits in a listing of `listed` characters.
fn fits(listed: usize, entry: usize) -> bool {
    listed + entry <= MAX_HISTORY_CHARS
}

/// One revision for the model: a header line (number, time, surface, who, sizes, what), then
/// its diff against the revision before it in `history` (searched for until `deadline`, see
/// [`memory_core::unified_diff`]), cut to [`MAX_DIFF_CHARS`].
fn describe_revision(
    name: &str,
    revision: &Revision,
    history: &[Revision],
    deadline: Instant,
) -> String {
    let mut text = wording::revision_heading(revision);
    let before_redacted = || {
        history
            .iter()
            .any(|before| before.number + 1 == revision.number && before.is_redacted())
    };
    let diff = match revision.diff_in(history, name, deadline) {
        _ if revision.is_tombstone() => wording::PURGED.to_owned(),
        _ if revision.is_redacted() => wording::REDACTED.to_owned(),
        None if before_redacted() => wording::AFTER_REDACTED.to_owned(),
        None => wording::NO_DIFF.to_owned(),
        Some(diff) if diff.is_empty() => wording::NO_CHANGE.to_owned(),
        Some(diff) => cut_diff(diff),
    };
    text.push('\n');
    text.push_str(diff.trim_end());
    text
}

/// A diff cut at a line boundary to at most [`MAX_DIFF_CHARS`], saying how much was cut.
fn cut_diff(diff: String) -> String {
    if diff.len() <= MAX_DIFF_CHARS {
        return diff;
    }
    let mut end = MAX_DIFF_CHARS;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    let end = diff[..end].rfind('\n').map_or(end, |at| at + 1);
    format!("{}{}", &diff[..end], wording::diff_cut(diff.len() - end))
}

#[cfg(test)]
mod tests {
    use memory_core::{Surface, Version};

    use super::*;

    #[test]
    fn an_entry_fits_up_to_the_listings_cap() {
        assert!(fits(MAX_HISTORY_CHARS - 10, 10));
        assert!(!fits(MAX_HISTORY_CHARS - 10, 11));
    }

    #[test]
    fn a_long_diff_is_cut_at_a_line_and_a_character_boundary() {
        let lines: String = (0..30).map(|n| format!("{n:>99}\n")).collect();
        assert_eq!(lines.len(), 3_000);
        let cut = cut_diff(lines.clone());
        assert_eq!(
            cut,
            format!("{}(diff cut: 1000 more characters)", &lines[..2_000])
        );
        // No newline to cut at, and byte 2000 inside a two-byte character: cut before it.
        let wide = format!("x{}", "é".repeat(1_500));
        let cut = cut_diff(wide.clone());
        assert_eq!(
            cut,
            format!("{}(diff cut: 1002 more characters)", &wide[..1_999])
        );
        let short = "--- a\n+++ b\n".to_owned();
        assert_eq!(cut_diff(short.clone()), short);
    }

    fn revision(number: u64, text: Option<&str>) -> Revision {
        Revision {
            number,
            document: memory_core::DocumentId::GlobalMemory,
            version_before: Version::new((number - 1).to_string()),
            version_after: Version::new(number.to_string()),
            sha256_before: String::new(),
            sha256_after: String::new(),
            bytes_before: 0,
            bytes_after: text.map_or(0, str::len),
            time: std::time::UNIX_EPOCH,
            surface: Surface::Api,
            personality: None,
            user: None,
            idempotency_key: None,
            session: None,
            updates: Vec::new(),
            text: text.map(str::to_owned),
            redacted_at: None,
        }
    }

    /// What `memory_history` says of the revision at `at` of `history` (MEMORY.md's).
    fn described(history: &[Revision], at: usize) -> String {
        describe_revision(
            "MEMORY.md",
            &history[at],
            history,
            memory_core::diff_deadline(),
        )
    }

    #[test]
    fn each_revision_says_what_its_change_was() {
        let history = [
            revision(4, None),
            revision(3, Some("same\n")),
            revision(2, Some("same\n")),
        ];
        assert!(
            described(&history, 0).ends_with("· purged\n(Purged: the text and the revisions before were erased; nothing to show or revert to.)"),
            "{}",
            described(&history, 0)
        );
        assert!(
            described(&history, 1).ends_with("\n(No change in the text.)"),
            "{}",
            described(&history, 1)
        );
        assert!(
            described(&history, 2)
                .ends_with("\n(The revision before it is no longer kept, so there is no diff.)"),
            "{}",
            described(&history, 2)
        );
    }

    #[test]
    fn a_redacted_revision_and_the_one_after_it_say_so() {
        let redacted = revision(2, Some("secret\n")).redacted(std::time::UNIX_EPOCH);
        let history = [
            revision(3, Some("after\n")),
            redacted,
            revision(1, Some("a\n")),
        ];
        assert!(
            described(&history, 1).ends_with("· redacted\n(Redacted: its text and updates were erased; nothing to show or revert to.)"),
            "{}",
            described(&history, 1)
        );
        assert!(
            described(&history, 0)
                .ends_with("\n(The revision before it was redacted, so there is no diff.)"),
            "{}",
            described(&history, 0)
        );
    }
}
