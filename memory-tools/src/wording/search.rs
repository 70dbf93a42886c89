//! What `memory_search` says.

use memory_core::{Recalled, RecalledEntry, Store};

use super::names::entries;

/// `memory_search` where the provider cannot recall.
pub(crate) const CANNOT_SEARCH: &str = "This memory cannot search.";

/// `memory_search` with a blank query.
pub(crate) const BLANK_QUERY: &str = "Invalid arguments for memory_search: the query is blank.";

/// What a search for `query` found: the ranked entries, best first, and when the index is
/// behind, the entries it has not indexed yet.
pub(crate) fn found(query: &str, found: &Recalled) -> String {
    let listed: Vec<String> = found
        .ranked
        .iter()
        .enumerate()
        .map(|(rank, entry)| format!("[{}] {}", rank + 1, shown(entry)))
        .collect();
    let mut text = match (listed.is_empty(), &found.behind) {
        (true, None) => return format!("No entry of MEMORY.md matches {query:?}."),
        (true, Some(_)) => format!("No indexed entry of MEMORY.md matches {query:?}."),
        (false, _) => {
            let from_notes = found.ranked.iter().any(|entry| entry.note.is_some());
            format!(
                "{} of MEMORY.md{} for {query:?}, best first:\n\n{}",
                entries(listed.len()),
                if from_notes { " and its notes" } else { "" },
                listed.join("\n\n")
            )
        }
    };
    if let Some(behind) = &found.behind {
        let unranked: Vec<String> = found
            .unranked
            .iter()
            .map(|entry| format!("[-] {}", shown(entry)))
            .collect();
        text.push_str(&format!(
            "\n\n(The search index is behind MEMORY.md: {behind}. {} it has not indexed \
             yet, unranked, in file order:)\n\n{}",
            entries(unranked.len()),
            unranked.join("\n\n")
        ));
    }
    text
}

/// An entry as a search lists it: one of a note names the note first, as prefetch's list of
/// notes names it (`memory_notes` reads it).
fn shown(entry: &RecalledEntry) -> String {
    match &entry.note {
        None => entry.text.trim().to_owned(),
        Some(note) => format!("({}/{note}) {}", Store::Memory, entry.text.trim()),
    }
}

#[cfg(test)]
mod tests {
    use memory_core::NotePath;

    use super::*;

    #[test]
    fn a_notes_entry_names_its_note_and_memorys_do_not() {
        let recalled = Recalled {
            ranked: vec![
                RecalledEntry {
                    text: "The cat eats twice a day.\n".to_owned(),
                    note: Some(NotePath::new("pets/cat.md").unwrap()),
                },
                RecalledEntry::of_document("Likes tea."),
            ],
            unranked: Vec::new(),
            behind: None,
        };
        assert_eq!(
            found("cat", &recalled),
            "2 entries of MEMORY.md and its notes for \"cat\", best first:\n\n\
             [1] (memory/pets/cat.md) The cat eats twice a day.\n\n[2] Likes tea."
        );
    }
}
