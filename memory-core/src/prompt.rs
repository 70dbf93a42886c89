//! The memory context as the agent reads it: both documents under their headings, then the
//! index of the scopes' notes, kept within the prefetch budget by dropping the oldest text.

use std::cmp::Reverse;

use crate::document::Store;
use crate::note::NoteMeta;
use crate::update::is_blank;

/// The most notes the prompt's index names; the rest are counted.
pub const NOTES_INDEX_LINES: usize = 20;
/// The most chars the index's note lines take together; the rest are counted.
pub const NOTES_INDEX_CHARS: usize = 2_000;

/// The notes a prompt's index can name: the newest [`NOTES_INDEX_LINES`] of a context's notes,
/// most recently updated first (never-dated last, then by store and path), and how many notes
/// there are in all. What [`crate::MemoryProvider::newest_notes`] gives: a backend that keeps
/// its listing gives it without handing over every note.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewestNotes {
    newest: Vec<(Store, NoteMeta)>,
    total: usize,
}

/// Most recently updated first, never-dated last, then by store and path.
fn newest_first(a: &(Store, &NoteMeta), b: &(Store, &NoteMeta)) -> std::cmp::Ordering {
    (Reverse(a.1.modified), a.0, &a.1.path).cmp(&(Reverse(b.1.modified), b.0, &b.1.path))
}

impl NewestNotes {
    /// The newest of `notes` (each with its scope's store), and their count.
    pub fn of<'a>(notes: impl IntoIterator<Item = (Store, &'a NoteMeta)>) -> NewestNotes {
        let mut candidates: Vec<(Store, &NoteMeta)> = notes.into_iter().collect();
        let total = candidates.len();
        // The newest few of many without sorting them all: a prefetch runs this every turn.
        if candidates.len() > NOTES_INDEX_LINES {
            candidates.select_nth_unstable_by(NOTES_INDEX_LINES - 1, newest_first);
            candidates.truncate(NOTES_INDEX_LINES);
        }
        candidates.sort_by(newest_first);
        NewestNotes {
            newest: candidates
                .into_iter()
                .map(|(store, note)| (store, note.clone()))
                .collect(),
            total,
        }
    }

    /// The newest of `parts` together (each scope's, say): the newest of their newest, and
    /// all their notes counted.
    pub fn merged<'a>(parts: impl IntoIterator<Item = &'a NewestNotes>) -> NewestNotes {
        let parts: Vec<&NewestNotes> = parts.into_iter().collect();
        let mut merged = NewestNotes::of(
            parts
                .iter()
                .flat_map(|part| part.newest.iter().map(|(store, note)| (*store, note))),
        );
        merged.total = parts.iter().map(|part| part.total).sum();
        merged
    }

    /// The newest notes, newest first: at most [`NOTES_INDEX_LINES`].
    pub fn newest(&self) -> &[(Store, NoteMeta)] {
        &self.newest
    }

    /// How many notes there are in all.
    pub fn total(&self) -> usize {
        self.total
    }
}

/// Renders `## About You` then `## Memory`, dropping blank sections, then keeps the tail within
/// `max_chars` chars (see [`truncate_keeping_tail`]). `None` when both are blank.
pub fn render(user: &str, memory: &str, max_chars: usize) -> Option<String> {
    render_with_notes(user, memory, &NewestNotes::default(), max_chars)
}

/// [`render`] with the index of `notes` (see [`notes_index`]) as a last section. With no notes
/// it is exactly [`render`]'s text.
pub fn render_with_notes(
    user: &str,
    memory: &str,
    notes: &NewestNotes,
    max_chars: usize,
) -> Option<String> {
    let sections: Vec<String> = [("About You", user), ("Memory", memory)]
        .into_iter()
        .filter(|(_, text)| !is_blank(text))
        .map(|(heading, text)| format!("## {heading}\n\n{}", text.trim()))
        .chain(notes_index(notes))
        .collect();
    if sections.is_empty() {
        return None;
    }
    Some(truncate_keeping_tail(&sections.join("\n\n"), max_chars))
}

/// The `## Notes` section naming the notes the agent can open: one line per note, most
/// recently updated first (never-dated last, then by store and path),
/// `- <store>/<path> (<bytes> bytes): <description>`, at most [`NOTES_INDEX_LINES`] lines and
/// [`NOTES_INDEX_CHARS`] chars of them, then `- ... and N more` for the rest. `None` for no
/// notes.
pub fn notes_index(notes: &NewestNotes) -> Option<String> {
    if notes.total == 0 {
        return None;
    }
    let mut section = String::from("## Notes\n");
    let (mut shown, mut chars) = (0, 0);
    for (store, note) in &notes.newest {
        let mut line = format!("\n- {store}/{} ({} bytes)", note.path, note.bytes);
        if !note.description.is_empty() {
            line.push_str(": ");
            line.push_str(&note.description);
        }
        let length = line.chars().count();
        if shown == NOTES_INDEX_LINES || chars + length > NOTES_INDEX_CHARS {
            break;
        }
        section.push_str(&line);
        shown += 1;
        chars += length;
    }
    if shown < notes.total {
        section.push_str(&format!("\n- ... and {} more", notes.total - shown));
    }
    Some(section)
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
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::document::Version;
    use crate::note::path::NotePath;

    fn note(path: &str, bytes: usize, at: Option<u64>, description: &str) -> NoteMeta {
        NoteMeta {
            path: NotePath::new(path).unwrap(),
            bytes,
            version: Version::new("1"),
            modified: at.map(|s| UNIX_EPOCH + Duration::from_secs(s)),
            description: description.into(),
        }
    }

    fn newest(notes: &[(Store, NoteMeta)]) -> NewestNotes {
        NewestNotes::of(notes.iter().map(|(store, note)| (*store, note)))
    }

    #[test]
    fn the_newest_of_each_scope_merged_are_the_newest_of_all() {
        // Times that interleave between the scopes, ties and undated notes among them.
        let notes: Vec<(Store, NoteMeta)> = (0..90u64)
            .map(|i| {
                let store = if i % 3 == 0 {
                    Store::User
                } else {
                    Store::Memory
                };
                let at = (i % 7 != 0).then_some((i * 37) % 50);
                (store, note(&format!("n{i:02}.md"), 1, at, "d"))
            })
            .collect();
        let whole = newest(&notes);
        assert_eq!(
            (whole.total(), whole.newest().len()),
            (90, NOTES_INDEX_LINES)
        );
        let mut sorted = notes.clone();
        sorted.sort_by_key(|(store, note)| (Reverse(note.modified), *store, note.path.clone()));
        assert_eq!(whole.newest(), &sorted[..NOTES_INDEX_LINES]);
        let scope = |wanted: Store| {
            let part: Vec<(Store, NoteMeta)> = notes
                .iter()
                .filter(|(store, _)| *store == wanted)
                .cloned()
                .collect();
            newest(&part)
        };
        let merged = NewestNotes::merged([&scope(Store::Memory), &scope(Store::User)]);
        assert_eq!(merged, whole);
    }

    #[test]
    fn without_notes_the_prompt_is_the_pairs_alone() {
        for (user, memory) in [("", ""), ("Ada\n", ""), ("", "note\n"), ("Ada", "x\n\ny")] {
            assert_eq!(
                render_with_notes(user, memory, &NewestNotes::default(), 100),
                render(user, memory, 100)
            );
        }
        assert_eq!(notes_index(&NewestNotes::default()), None);
    }

    #[test]
    fn the_notes_index_names_the_newest_notes_first() {
        let notes = [
            (
                Store::Memory,
                note("projects/kyoto.md", 120, Some(20), "Kyoto trip"),
            ),
            (Store::User, note("diet.md", 30, Some(30), "Vegetarian")),
            (Store::Memory, note("undated.md", 5, None, "")),
        ];
        assert_eq!(
            render_with_notes("Ada\n", "", &newest(&notes), 1_000).unwrap(),
            "## About You\n\nAda\n\n## Notes\n\n- user/diet.md (30 bytes): Vegetarian\n- memory/projects/kyoto.md (120 bytes): Kyoto trip\n- memory/undated.md (5 bytes)"
        );
        assert_eq!(
            render_with_notes("", "", &newest(&notes[..1]), 1_000).unwrap(),
            "## Notes\n\n- memory/projects/kyoto.md (120 bytes): Kyoto trip",
            "notes alone are a memory context"
        );
    }

    #[test]
    fn the_notes_index_is_bounded_and_counts_the_rest() {
        let many: Vec<(Store, NoteMeta)> = (0..50)
            .map(|i| (Store::Memory, note(&format!("n{i:02}.md"), 1, Some(i), "d")))
            .collect();
        let index = notes_index(&newest(&many)).unwrap();
        assert_eq!(
            index.lines().filter(|l| l.ends_with(": d")).count(),
            NOTES_INDEX_LINES
        );
        assert!(index.contains("- memory/n49.md"), "the newest is shown");
        assert!(!index.contains("n29.md"), "the oldest are counted");
        assert!(index.ends_with("\n- ... and 30 more"), "{index}");

        let long = "x".repeat(110);
        let wide: Vec<(Store, NoteMeta)> = (0..20)
            .map(|i| (Store::User, note(&format!("w{i:02}.md"), 1, Some(i), &long)))
            .collect();
        let index = notes_index(&newest(&wide)).unwrap();
        let lines: usize = index
            .lines()
            .filter(|l| l.starts_with("- user/"))
            .map(|l| l.chars().count() + 1)
            .sum();
        assert!(lines <= NOTES_INDEX_CHARS, "{lines}");
        assert!(index.ends_with(" more"), "{index}");
    }

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
