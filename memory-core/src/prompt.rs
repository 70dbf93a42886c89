//! The memory context as the agent reads it: both documents under their headings, kept within
//! the prefetch budget by dropping the oldest text.

use crate::update::is_blank;

/// Renders `## About You` then `## Memory`, dropping blank sections, then keeps the tail within
/// `max_chars` chars (see [`truncate_keeping_tail`]). `None` when both are blank.
pub fn render(user: &str, memory: &str, max_chars: usize) -> Option<String> {
    let sections: Vec<String> = [("About You", user), ("Memory", memory)]
        .into_iter()
        .filter(|(_, text)| !is_blank(text))
        .map(|(heading, text)| format!("## {heading}\n\n{}", text.trim()))
        .collect();
    if sections.is_empty() {
        return None;
    }
    Some(truncate_keeping_tail(&sections.join("\n\n"), max_chars))
}

/// Keeps the end of `text` within `max_chars` chars (Unicode scalar values), marker included.
///
/// Recent memory is at the end, so the head goes. The cut moves forward to the next line start
/// when one is within a quarter of the budget (at most 200 chars), dropping the blank
/// lines that follow it, and the result opens with
/// `[...truncated N chars]` on its own line, N counting every char dropped. A char is never
/// split. The result never exceeds `max_chars`: a budget too small for the marker yields as
/// much of the marker as fits, so the agent still sees that something was cut.
pub fn truncate_keeping_tail(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_owned();
    }
    // Sized for the largest N possible, so the final marker never overflows the budget.
    let marker_budget = marker(total).chars().count();
    if max_chars <= marker_budget {
        return marker(total).chars().take(max_chars).collect();
    }
    let keep = max_chars.saturating_sub(marker_budget);
    let cut = text
        .char_indices()
        .nth(total - keep)
        .map_or(text.len(), |(at, _)| at);
    let mut tail = &text[cut..];
    if !text[..cut].ends_with('\n') {
        let near = (keep / 4).min(200);
        if let Some((at, _)) = tail.char_indices().take(near).find(|&(_, c)| c == '\n') {
            tail = tail[at + 1..].trim_start_matches('\n');
        }
    }
    let dropped = total - tail.chars().count();
    format!("{}{tail}", marker(dropped))
}

fn marker(dropped: usize) -> String {
    format!("[...truncated {dropped} chars]\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_and_blank_handling() {
        assert_eq!(render("", " \n", 100), None);
        assert_eq!(render("Ada\n", "", 100).unwrap(), "## About You\n\nAda");
        assert_eq!(render("", "note\n", 100).unwrap(), "## Memory\n\nnote");
        assert_eq!(
            render("Ada\n", "note\n", 100).unwrap(),
            "## About You\n\nAda\n\n## Memory\n\nnote"
        );
    }

    #[test]
    fn truncation_keeps_the_tail_within_budget() {
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let out = truncate_keeping_tail(&text, 120);
        assert!(out.chars().count() <= 120, "{out}");
        assert!(out.starts_with("[...truncated "));
        assert!(out.ends_with("line 99\n"));
        // Cut at a line boundary: the first kept line is whole.
        let first_kept = out.lines().nth(1).unwrap();
        assert!(first_kept.starts_with("line "), "{first_kept:?}");
        let dropped: usize = out["[...truncated ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            dropped + out.lines().skip(1).map(|l| l.len() + 1).sum::<usize>(),
            text.len()
        );
    }

    #[test]
    fn truncation_counts_chars_and_never_splits_one() {
        let text = "日本語🙂".repeat(50); // 200 chars, 650 bytes, no newline
        let out = truncate_keeping_tail(&text, 60);
        assert_eq!(out.chars().count(), 60);
        assert!(out.ends_with("🙂"));
        assert!(out.starts_with("[...truncated 165 chars]\n"), "{out}");
    }

    #[test]
    fn tiny_budget_yields_as_much_marker_as_fits() {
        let text = "abcdefghijklmnopqrstuvwxyz";
        assert_eq!(truncate_keeping_tail(text, 3), "[..");
        assert_eq!(truncate_keeping_tail(text, 0), "");
        assert_eq!(truncate_keeping_tail(text, 24), "[...truncated 26 chars]\n");
        assert_eq!(
            truncate_keeping_tail(text, 25),
            "[...truncated 25 chars]\nz"
        );
        for budget in 0..=26 {
            assert!(truncate_keeping_tail(text, budget).chars().count() <= budget);
        }
    }

    #[test]
    fn truncation_looks_for_a_line_start_only_near_the_cut() {
        // The cut falls 30 chars before a newline: further than a quarter of what is kept
        // (75 chars), so the partial line stays rather than losing 30 more chars.
        let text = format!("{}\n{}", "y".repeat(100), "z".repeat(44));
        assert_eq!(
            truncate_keeping_tail(&text, 100),
            format!(
                "[...truncated 70 chars]\n{}\n{}",
                "y".repeat(30),
                "z".repeat(44)
            )
        );
        // 10 chars before it: within reach, so the kept text starts at the line.
        let text = format!("{}\n{}", "y".repeat(80), "z".repeat(64));
        assert_eq!(
            truncate_keeping_tail(&text, 100),
            format!("[...truncated 81 chars]\n{}", "z".repeat(64))
        );
    }
}
