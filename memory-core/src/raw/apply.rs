//! The contract's update table: a batch of updates applied to a document's text, then its caps
//! checked. Pure: backends read, call [`apply_batch`], and write what it returns.

use crate::document::DocumentId;
use crate::error::MemoryError;
use crate::update::{Caps, MemoryUpdate, is_blank};

/// What a batch did to one document's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The text after the batch (equal to the input when nothing changed).
    pub text: String,
    /// Whether the text differs from the input: when not, nothing is written.
    pub changed: bool,
    /// Lines dropped by the batch's `remove` updates.
    pub lines_removed: usize,
    /// Whether the result is over the soft cap.
    pub over_soft_cap: bool,
}

/// Applies `updates` (each with its position in the caller's call) in order to `text`, the
/// current content of `document`, then checks `caps`. Pure: no I/O, no clock.
///
/// # Errors
/// The first refusal, naming the update's position: [`MemoryError::InvalidUpdate`],
/// [`MemoryError::NoMatch`], [`MemoryError::AmbiguousMatch`], or
/// [`MemoryError::HardCapExceeded`] for the batch as a whole. On error nothing may be written.
pub fn apply_batch<'a>(
    document: &DocumentId,
    text: &str,
    updates: impl IntoIterator<Item = (usize, &'a MemoryUpdate)>,
    caps: Caps,
) -> Result<Applied, MemoryError> {
    let mut current = text.to_owned();
    let mut lines_removed = 0;
    for (index, update) in updates {
        if let Some(reason) = update.malformed() {
            return Err(MemoryError::InvalidUpdate {
                index,
                document: document.clone(),
                reason: reason.to_owned(),
            });
        }
        if let Some(refusal) = note_refusal(document, index, update, &current) {
            return Err(refusal);
        }
        current = match update {
            MemoryUpdate::Add { content, .. } if is_blank(&current) => {
                format!("{}\n", content.trim())
            }
            MemoryUpdate::Add { content, .. } => {
                format!("{}\n\n{}\n", current.trim_end(), content.trim())
            }
            MemoryUpdate::Replace { content, .. } | MemoryUpdate::Create { content, .. } => {
                terminated(content.trim())
            }
            // A note without text does not exist; a rename's target is planned with its note.
            MemoryUpdate::Delete { .. } | MemoryUpdate::Rename { .. } => String::new(),
            MemoryUpdate::Remove {
                substring_match, ..
            } => {
                let (kept, removed) = remove_lines(&current, substring_match);
                lines_removed += removed;
                kept
            }
            MemoryUpdate::Edit { old, new, .. } => match occurrences(&current, old).as_slice() {
                [at] => format!("{}{new}{}", &current[..*at], &current[at + old.len()..]),
                [] => {
                    return Err(MemoryError::NoMatch {
                        index,
                        document: document.clone(),
                        old: old.clone(),
                    });
                }
                many => {
                    return Err(MemoryError::AmbiguousMatch {
                        index,
                        document: document.clone(),
                        old: old.clone(),
                        count: many.len(),
                    });
                }
            },
        };
    }
    let bytes = current.len();
    if let Some(hard_cap) = caps.hard {
        // A batch that does not grow an over-cap document stays allowed, so an agent can
        // always consolidate its way back under a cap that was lowered.
        if bytes > hard_cap && bytes > text.len() {
            return Err(MemoryError::HardCapExceeded {
                document: document.clone(),
                bytes,
                hard_cap,
            });
        }
    }
    Ok(Applied {
        changed: current != text,
        over_soft_cap: caps.soft.is_some_and(|soft| bytes > soft),
        lines_removed,
        text: current,
    })
}

/// Why `update` cannot apply to `document` holding `current`, as the rules of notes go: a note
/// must exist for every update but `replace` and `create`, and not exist for `create`; the
/// notes' own actions are for notes only.
fn note_refusal(
    document: &DocumentId,
    index: usize,
    update: &MemoryUpdate,
    current: &str,
) -> Option<MemoryError> {
    let for_notes_only = matches!(
        update,
        MemoryUpdate::Create { .. } | MemoryUpdate::Delete { .. } | MemoryUpdate::Rename { .. }
    );
    let Some(path) = document.note_path() else {
        return for_notes_only.then(|| MemoryError::InvalidUpdate {
            index,
            document: document.clone(),
            reason: format!("`{}` is for notes: name one with `note`", update.action()),
        });
    };
    let exists = !is_blank(current);
    let (scope, path, action) = (document.scope().document(), path.clone(), update.action());
    match update {
        MemoryUpdate::Create { .. } if exists => Some(MemoryError::NoteExists {
            index,
            action,
            scope,
            path,
        }),
        MemoryUpdate::Replace { .. } | MemoryUpdate::Create { .. } => None,
        MemoryUpdate::Rename { to, .. } if *to == path => Some(MemoryError::InvalidUpdate {
            index,
            document: document.clone(),
            reason: "the note a `rename` moves here is planned with the note it leaves".to_owned(),
        }),
        _ if !exists => Some(MemoryError::NoteNotFound {
            index,
            action,
            scope,
            path,
        }),
        _ => None,
    }
}

/// `trimmed + "\n"`, or empty when nothing is left: a document ends with exactly one newline
/// or is empty.
fn terminated(trimmed: &str) -> String {
    if trimmed.is_empty() {
        String::new()
    } else {
        format!("{trimmed}\n")
    }
}

/// Drops every line containing `needle`; returns the new text and how many lines went.
/// When none went the text is returned as it was, so the batch can write nothing.
fn remove_lines(text: &str, needle: &str) -> (String, usize) {
    let lines: Vec<&str> = text.split('\n').collect();
    let kept: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| !line.contains(needle))
        .collect();
    let removed = lines.len() - kept.len();
    if removed == 0 {
        return (text.to_owned(), 0);
    }
    (terminated(kept.join("\n").trim_end()), removed)
}

/// Byte offsets of every occurrence of `needle` in `haystack`, overlapping ones included
/// (`"aa"` occurs twice in `"aaa"`, so an edit of it is ambiguous).
fn occurrences(haystack: &str, needle: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = haystack[from..].find(needle) {
        let at = from + offset;
        found.push(at);
        // Step one char past the match start to find overlapping occurrences.
        from = at + haystack[at..].chars().next().map_or(1, char::len_utf8);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Store;

    fn doc() -> DocumentId {
        DocumentId::GlobalMemory
    }

    fn apply(text: &str, updates: &[MemoryUpdate]) -> Result<Applied, MemoryError> {
        apply_batch(&doc(), text, updates.iter().enumerate(), Caps::default())
    }

    fn text_after(text: &str, update: MemoryUpdate) -> String {
        apply(text, &[update]).unwrap().text
    }

    const M: Store = Store::Memory;

    #[test]
    fn add_follows_the_newline_discipline() {
        assert_eq!(text_after("", MemoryUpdate::add(M, "  a  ")), "a\n");
        assert_eq!(text_after(" \n\t", MemoryUpdate::add(M, "a")), "a\n");
        assert_eq!(
            text_after("a\n\n\n", MemoryUpdate::add(M, "\nb\n")),
            "a\n\nb\n"
        );
        assert_eq!(text_after("a", MemoryUpdate::add(M, "b")), "a\n\nb\n");
        assert!(matches!(
            apply("a\n", &[MemoryUpdate::add(M, " \n ")]),
            Err(MemoryError::InvalidUpdate { index: 0, .. })
        ));
    }

    #[test]
    fn replace_normalises_and_may_clear() {
        assert_eq!(
            text_after("old\n", MemoryUpdate::replace(M, "\n new \n")),
            "new\n"
        );
        assert_eq!(text_after("old\n", MemoryUpdate::replace(M, "  ")), "");
    }

    #[test]
    fn remove_drops_matching_lines_and_counts_them() {
        let out = apply(
            "keep\nDROP a\nx DROP\ndrop me\n",
            &[MemoryUpdate::remove(M, "DROP")],
        )
        .unwrap();
        assert_eq!(out.text, "keep\ndrop me\n");
        assert_eq!(out.lines_removed, 2);
        let none = apply("a\n\n\n", &[MemoryUpdate::remove(M, "zzz")]).unwrap();
        assert_eq!(
            (none.text.as_str(), none.lines_removed, none.changed),
            ("a\n\n\n", 0, false)
        );
        let all = apply("x1\nx2\n", &[MemoryUpdate::remove(M, "x")]).unwrap();
        assert_eq!((all.text.as_str(), all.lines_removed), ("", 2));
        assert!(matches!(
            apply("a", &[MemoryUpdate::remove(M, "")]),
            Err(MemoryError::InvalidUpdate { .. })
        ));
    }

    #[test]
    fn edit_is_literal_and_unique() {
        assert_eq!(
            text_after(
                "cost $5 (a.b)\n",
                MemoryUpdate::edit(M, "$5 (a.b)", "$& \\1")
            ),
            "cost $& \\1\n"
        );
        assert!(matches!(
            apply("abc", &[MemoryUpdate::edit(M, "x", "y")]),
            Err(MemoryError::NoMatch { index: 0, .. })
        ));
        assert!(matches!(
            apply("aaa", &[MemoryUpdate::edit(M, "aa", "b")]),
            Err(MemoryError::AmbiguousMatch { count: 2, .. })
        ));
        assert!(matches!(
            apply("a", &[MemoryUpdate::edit(M, "", "b")]),
            Err(MemoryError::InvalidUpdate { .. })
        ));
    }

    #[test]
    fn batch_applies_in_order_and_names_the_failing_update() {
        let ok = apply(
            "",
            &[
                MemoryUpdate::add(M, "one"),
                MemoryUpdate::edit(M, "one", "two"),
            ],
        )
        .unwrap();
        assert_eq!(ok.text, "two\n");
        let err = apply(
            "",
            &[
                MemoryUpdate::add(M, "one"),
                MemoryUpdate::edit(M, "zzz", "two"),
            ],
        );
        assert!(matches!(err, Err(MemoryError::NoMatch { index: 1, .. })));
    }

    #[test]
    fn caps_count_utf8_bytes() {
        // "日本" is 6 bytes; with the newline 7.
        let caps = Caps {
            soft: Some(6),
            hard: Some(7),
        };
        let out = apply_batch(&doc(), "", [(0, &MemoryUpdate::add(M, "日本"))], caps).unwrap();
        assert!(out.over_soft_cap);
        let err = apply_batch(&doc(), "", [(0, &MemoryUpdate::add(M, "日本語"))], caps);
        assert!(matches!(
            err,
            Err(MemoryError::HardCapExceeded {
                bytes: 10,
                hard_cap: 7,
                ..
            })
        ));
    }

    /// `n` bytes of text ending in the newline every document ends with.
    fn of_len(n: usize) -> String {
        format!("{}\n", "x".repeat(n - 1))
    }

    #[test]
    fn a_document_of_exactly_the_hard_cap_is_written_one_byte_more_is_refused() {
        let caps = Caps {
            soft: None,
            hard: Some(8),
        };
        let at_cap = apply_batch(
            &doc(),
            "",
            [(0, &MemoryUpdate::replace(M, of_len(8)))],
            caps,
        )
        .unwrap();
        assert_eq!(at_cap.text.len(), 8);
        assert!(at_cap.changed);
        let over = apply_batch(
            &doc(),
            "",
            [(0, &MemoryUpdate::replace(M, of_len(9)))],
            caps,
        );
        assert!(
            matches!(
                &over,
                Err(MemoryError::HardCapExceeded {
                    bytes: 9,
                    hard_cap: 8,
                    ..
                })
            ),
            "{over:?}"
        );
    }

    #[test]
    fn a_document_of_exactly_the_soft_cap_is_not_over_it_one_byte_more_is() {
        let caps = Caps {
            soft: Some(8),
            hard: None,
        };
        let at_cap =
            apply_batch(&doc(), "", [(0, &MemoryUpdate::add(M, of_len(8)))], caps).unwrap();
        assert_eq!(at_cap.text.len(), 8);
        assert!(!at_cap.over_soft_cap, "exactly the soft cap is not over it");
        let over = apply_batch(&doc(), "", [(0, &MemoryUpdate::add(M, of_len(9)))], caps).unwrap();
        assert_eq!(over.text.len(), 9);
        assert!(over.over_soft_cap);
    }

    #[test]
    fn an_over_cap_document_may_change_without_growing_but_not_grow() {
        let caps = Caps {
            soft: None,
            hard: Some(4),
        };
        // Same size: allowed, though still over the cap.
        let same = apply_batch(
            &doc(),
            "aaaaaa\n",
            [(0, &MemoryUpdate::edit(M, "aaaaaa", "bbbbbb"))],
            caps,
        )
        .unwrap();
        assert_eq!(same.text, "bbbbbb\n");
        // One byte more: refused.
        let grown = apply_batch(
            &doc(),
            "aaaaaa\n",
            [(0, &MemoryUpdate::edit(M, "aaaaaa", "bbbbbbb"))],
            caps,
        );
        assert!(
            matches!(
                &grown,
                Err(MemoryError::HardCapExceeded {
                    bytes: 8,
                    hard_cap: 4,
                    ..
                })
            ),
            "{grown:?}"
        );
    }

    #[test]
    fn shrinking_an_over_cap_document_is_allowed() {
        let caps = Caps {
            soft: None,
            hard: Some(4),
        };
        let out = apply_batch(
            &doc(),
            "aaaaaa\nbbbbbb\n",
            [(0, &MemoryUpdate::remove(M, "a"))],
            caps,
        )
        .unwrap();
        assert_eq!(out.text, "bbbbbb\n");
    }
}
