//! What the index holds: the entries of a document, as people write memory in markdown: each
//! list item, each paragraph, each `§`-separated note, with the heading it sits under.

use std::collections::{BTreeSet, HashSet};

use sha2::{Digest, Sha256};

/// One entry of a document: a list item, a paragraph or a `§`-separated note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// 0-based position among the document's entries.
    pub position: usize,
    /// The entry as written, trimmed: a list item's line(s) with its marker (`- Window seat on
    /// trains.`), or a paragraph. Always a substring of the document, so an agent can hand it
    /// back as the text to edit or remove.
    pub text: String,
    /// The nearest markdown heading above the entry (`## Travel`), as written, trimmed; `None`
    /// before the first heading.
    pub heading: Option<String>,
    /// SHA-256 of [`Entry::indexed`]: what the index diffs by, so renaming a heading re-embeds
    /// the entries under it.
    pub hash: String,
}

impl Entry {
    /// What is embedded and full-text indexed: the heading, then the text. A bullet such as
    /// `- Window seat.` says little alone; under `## Travel` it is found by a travel question.
    pub fn indexed(&self) -> String {
        match &self.heading {
            Some(heading) => format!("{heading}\n{}", self.text),
            None => self.text.clone(),
        }
    }

    /// Whether the entry is a list item, which renders joined to the items beside it.
    fn is_list_item(&self) -> bool {
        list_item(&self.text)
    }
}

/// The entries of `document`, in order. An entry that occurs twice (same text under the same
/// heading) is one entry, at its first position: the index keeps one row per distinct entry.
pub fn entries(document: &str) -> Vec<Entry> {
    let mut seen = HashSet::new();
    let mut found = Vec::new();
    let mut heading: Option<&str> = None;
    // The open entry: byte range in `document`, and whether it is a list item.
    let mut open: Option<(usize, usize, bool)> = None;
    // The closing marker of the fenced code block the open entry is in, if any.
    let mut fence: Option<&str> = None;
    let mut close = |open: &mut Option<(usize, usize, bool)>, heading: Option<&str>| {
        let Some((start, end, _)) = open.take() else {
            return;
        };
        let text = document[start..end].trim();
        if text.is_empty() {
            return;
        }
        let hash = hash_of(heading, text);
        if seen.insert(hash.clone()) {
            found.push(Entry {
                position: found.len(),
                text: text.to_owned(),
                heading: heading.map(str::to_owned),
                hash,
            });
        }
    };
    let mut offset = 0;
    for raw in document.split_inclusive('\n') {
        let (start, end) = (offset, offset + raw.trim_end_matches(['\n', '\r']).len());
        offset += raw.len();
        let line = &document[start..end];
        let trimmed = line.trim();
        // Inside a fenced code block nothing splits: a blank line, a `# comment` or a `- `
        // in code is code, kept whole in the entry that holds the block.
        if let Some(marker) = fence {
            if let Some(entry) = open.as_mut() {
                entry.1 = end;
            }
            if trimmed.starts_with(marker) {
                fence = None;
            }
            continue;
        }
        // A blank line ends an entry: paragraphs are what people wrote before lists.
        // A line `§` ends one too: the separator of Hermes-style memory files.
        if trimmed.is_empty() || trimmed == "§" {
            close(&mut open, heading);
            continue;
        }
        // A heading is never an entry: it is context for the entries under it, which it
        // starts afresh.
        if is_heading(line) {
            close(&mut open, heading);
            heading = Some(trimmed);
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
        }
        match open.as_mut() {
            // Each list item is an entry of its own, nested ones included: one fact per bullet
            // is how people write lists, and a query should get the bullet, not the list.
            _ if list_item(trimmed) => {
                close(&mut open, heading);
                open = Some((start, end, true));
            }
            // An indented line under an item continues it (a wrapped bullet, its code block).
            Some((_, open_end, true)) if line.starts_with(char::is_whitespace) => *open_end = end,
            // The plain lines of a paragraph stay together.
            Some((_, open_end, false)) => *open_end = end,
            // Anything else starts a paragraph: the first line after a blank one, or an
            // unindented line after an item, which ends the list.
            _ => {
                close(&mut open, heading);
                open = Some((start, end, false));
            }
        }
    }
    close(&mut open, heading);
    found
}

/// The SHA-256 of the indexed text of an entry under `heading` (see [`Entry::indexed`]), in
/// lower-case hex: what `sha256_hex(&entry.indexed())` gives, without building the indexed text
/// or formatting byte by byte (a document of 100,000 entries hashes every one on each change).
fn hash_of(heading: Option<&str>, text: &str) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hasher = Sha256::new();
    if let Some(heading) = heading {
        hasher.update(heading.as_bytes());
        hasher.update(b"\n");
    }
    hasher.update(text.as_bytes());
    let digest = hasher.finalize();
    let mut hex = String::with_capacity(2 * digest.len());
    for byte in digest {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    hex
}

/// Whether `line` is an ATX heading: one to six `#` then a space, from the line's start (an
/// indented `#` line continues a list item).
fn is_heading(line: &str) -> bool {
    let level = line.bytes().take_while(|b| *b == b'#').count();
    (1..=6).contains(&level) && line[level..].starts_with(' ')
}

/// Whether `trimmed` (a line, leading whitespace trimmed) starts a list item: `- `, `* `, `+ `,
/// or a number followed by `. ` or `) `.
fn list_item(trimmed: &str) -> bool {
    if ["- ", "* ", "+ "].iter().any(|m| trimmed.starts_with(m)) {
        return true;
    }
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    (1..=9).contains(&digits)
        && [". ", ") "]
            .iter()
            .any(|m| trimmed[digits..].starts_with(m))
}

/// The entries of `all` at the positions in `shown`, as a query renders them: in document
/// order, each heading written once above the first shown entry under it, list items under one
/// heading one per line (a list stays a list), everything else a blank line apart. The model
/// sees `## Travel\n- Window seat on trains.`, not a bare bullet.
pub fn render_selection(all: &[Entry], shown: &BTreeSet<usize>) -> String {
    let mut text = String::new();
    let mut previous: Option<&Entry> = None;
    for entry in shown.iter().filter_map(|i| all.get(*i)) {
        let same_heading = previous.is_some_and(|p| p.heading == entry.heading);
        if let Some(previous) = previous {
            let list_goes_on = same_heading && previous.is_list_item() && entry.is_list_item();
            text.push_str(if list_goes_on { "\n" } else { "\n\n" });
        }
        if let Some(heading) = entry.heading.as_deref().filter(|_| !same_heading) {
            text.push_str(heading);
            text.push('\n');
        }
        text.push_str(&entry.text);
        previous = Some(entry);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::raw::sha256_hex;

    fn texts(document: &str) -> Vec<String> {
        entries(document).into_iter().map(|e| e.text).collect()
    }

    #[test]
    fn paragraphs_split_on_blank_lines_and_keep_their_lines() {
        let doc = "first\n\nsecond line one\nsecond line two\n \n\n\nthird  \n\nfirst\n";
        let found = entries(doc);
        assert_eq!(
            texts(doc),
            ["first", "second line one\nsecond line two", "third"]
        );
        assert_eq!(found[2].position, 2);
        assert_eq!(found[0].hash, sha256_hex("first"));
        assert!(found.iter().all(|e| e.heading.is_none()));
        assert!(entries("").is_empty() && entries(" \n\n").is_empty());
    }

    #[test]
    fn each_list_item_is_an_entry_carrying_its_heading() {
        let doc = "# Memory\n\n## Travel\n- Window seat on trains.\n- Aisle seat on flights.\n\n\
                   ## Health\n* Dentist: Dr. Okafor.\n* Allergic to shellfish.\n\n\
                   ## Chores\n1. Taxes due 30 April.\n2) Bins out on Tuesday.\n+ Water the ferns.\n";
        let found = entries(doc);
        let pairs: Vec<_> = found
            .iter()
            .map(|e| (e.heading.as_deref().unwrap(), e.text.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("## Travel", "- Window seat on trains."),
                ("## Travel", "- Aisle seat on flights."),
                ("## Health", "* Dentist: Dr. Okafor."),
                ("## Health", "* Allergic to shellfish."),
                ("## Chores", "1. Taxes due 30 April."),
                ("## Chores", "2) Bins out on Tuesday."),
                ("## Chores", "+ Water the ferns."),
            ]
        );
        assert_eq!(found[6].position, 6);
        assert_eq!(found[0].indexed(), "## Travel\n- Window seat on trains.");
        assert!(found.iter().all(|e| doc.contains(&e.text)));
    }

    #[test]
    fn indented_lines_continue_an_item_and_nested_items_are_their_own() {
        let doc = "## Work\n- Standup at 9:30,\n  in the small room.\n  - Bring the laptop.\n    \
                   Charged.\n- Fridays from home.\nNot a continuation.\nStill the paragraph.\n";
        assert_eq!(
            texts(doc),
            [
                "- Standup at 9:30,\n  in the small room.",
                "- Bring the laptop.\n    Charged.",
                "- Fridays from home.",
                "Not a continuation.\nStill the paragraph.",
            ]
        );
        // A paragraph followed by a list: the list items split off.
        assert_eq!(
            texts("Shopping:\n- milk\n- eggs\n"),
            ["Shopping:", "- milk", "- eggs"]
        );
        // Not markers: bold text, a hashtag, a year, a rule.
        assert_eq!(
            texts("**bold** note\n#tag here\n2024 was busy.\n---\n"),
            ["**bold** note\n#tag here\n2024 was busy.\n---"]
        );
    }

    #[test]
    fn section_sign_lines_separate_entries() {
        let doc = "Prefers window seats on trains.\n§\nDentist is Dr. Okafor,\non Tuesdays.\n \
                   § \nFiles taxes in April.\n§\n";
        assert_eq!(
            texts(doc),
            [
                "Prefers window seats on trains.",
                "Dentist is Dr. Okafor,\non Tuesdays.",
                "Files taxes in April.",
            ]
        );
        // `§` inside a line is text.
        assert_eq!(texts("Section § 4 applies.\n"), ["Section § 4 applies."]);
    }

    #[test]
    fn fenced_code_stays_in_one_entry() {
        let doc = "## Shell\nDeploy with:\n```sh\n# not a heading\n\n- not an item\n§\n```\n\
                   - Then check:\n  ```\n  make check\n\n  ```\n- Done.\n";
        assert_eq!(
            texts(doc),
            [
                "Deploy with:\n```sh\n# not a heading\n\n- not an item\n§\n```",
                "- Then check:\n  ```\n  make check\n\n  ```",
                "- Done.",
            ]
        );
        let found = entries(doc);
        assert!(
            found
                .iter()
                .all(|e| e.heading.as_deref() == Some("## Shell"))
        );
        // An unclosed fence runs to the end of the document.
        assert_eq!(texts("```\na\n\nb\n"), ["```\na\n\nb"]);
    }

    #[test]
    fn the_nearest_heading_is_carried_and_hashed() {
        let doc = "Before any heading.\n\n# Top\n## Travel\nA paragraph.\n### Deeper\n- Item.\n";
        let headings: Vec<_> = entries(doc).into_iter().map(|e| e.heading).collect();
        assert_eq!(
            headings,
            [None, Some("## Travel".into()), Some("### Deeper".into())]
        );
        let under = |heading: &str| entries(&format!("{heading}\n- Window seat.\n")).remove(0);
        let (travel, trips) = (under("## Travel"), under("## Trips"));
        assert_eq!(travel.text, trips.text);
        assert_ne!(travel.hash, trips.hash, "renaming a heading re-embeds");
        assert_eq!(travel.hash, sha256_hex("## Travel\n- Window seat."));
        for entry in entries("Before.\n\n## Über\n- Café ☕ at 9.\n") {
            assert_eq!(entry.hash, sha256_hex(&entry.indexed()));
        }
        // A CRLF document: the text is still exactly a substring.
        let crlf = "## Travel\r\n- Window seat,\r\n  front car.\r\n";
        let found = entries(crlf);
        assert_eq!(found[0].heading.as_deref(), Some("## Travel"));
        assert!(crlf.contains(&found[0].text), "{:?}", found[0].text);
    }

    #[test]
    fn an_entry_repeated_under_the_same_heading_is_one() {
        let doc = "## A\n- same\n- other\n- same\n\n## B\n- same\n";
        let found = entries(doc);
        let pairs: Vec<_> = found
            .iter()
            .map(|e| (e.position, e.heading.as_deref().unwrap(), e.text.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                (0, "## A", "- same"),
                (1, "## A", "- other"),
                (2, "## B", "- same")
            ]
        );
    }

    #[test]
    fn a_selection_renders_under_its_headings() {
        let doc = "## Travel\n- Aisle seat on flights.\n- Window seat on trains.\n- Passport in the \
                   drawer.\n\nTrips are booked by Ada.\n\n## Health\n- Dentist on Tuesday.\n- \
                   Allergic to shellfish.\n";
        let all = entries(doc);
        let render = |shown: &[usize]| render_selection(&all, &shown.iter().copied().collect());
        assert_eq!(render(&[1]), "## Travel\n- Window seat on trains.");
        assert_eq!(
            render(&[0, 2]),
            "## Travel\n- Aisle seat on flights.\n- Passport in the drawer."
        );
        assert_eq!(
            render(&[1, 3, 5]),
            "## Travel\n- Window seat on trains.\n\nTrips are booked by Ada.\n\n\
             ## Health\n- Allergic to shellfish."
        );
        assert_eq!(
            render(&[2, 4]),
            "## Travel\n- Passport in the drawer.\n\n## Health\n- Dentist on Tuesday."
        );
        // Without headings: blank-line separated, as before.
        let plain = entries("one\n\ntwo\n\nthree\n");
        let shown = [0, 2].into_iter().collect();
        assert_eq!(render_selection(&plain, &shown), "one\n\nthree");
        assert_eq!(render(&[]), "");
    }
}
