//! A MEMORY.md or USER.md split into its entries (list items, paragraphs, `§` notes, each with
//! its heading), as the recall index does: any text a person or an agent wrote.
//!
//! The splitter lives in memory-vector, which pulls in lancedb and DataFusion; its file needs
//! only `sha2`, so it is compiled here from its source, the very code the index runs.
//!
//! Beyond not panicking: every entry is a non-empty, trimmed substring of the document, the
//! entries come in document order at positions 0, 1, 2, ..., each hash is the SHA-256 of what
//! is indexed and no two are equal, a heading is one of the document's heading lines, and a
//! rendered selection holds every entry selected.

#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use memory_core::raw::sha256_hex;

#[path = "../../memory-vector/src/entries.rs"]
#[allow(dead_code, missing_docs)]
mod entries;

use entries::{entries, render_selection};

fuzz_target!(|data: &[u8]| {
    // Documents are UTF-8 (a file that is not is refused before it is split).
    let Ok(document) = std::str::from_utf8(data) else {
        return;
    };
    let found = entries(document);
    let mut hashes = BTreeSet::new();
    // Where the previous entry was found: each next one is found after it.
    let mut cursor = 0;
    for (position, entry) in found.iter().enumerate() {
        assert_eq!(entry.position, position, "{entry:?}");
        assert!(!entry.text.is_empty(), "an empty entry in {document:?}");
        assert_eq!(entry.text, entry.text.trim(), "an untrimmed entry");
        let at = document[cursor..]
            .find(&entry.text)
            .unwrap_or_else(|| panic!("{entry:?} is not in {document:?} after byte {cursor}"));
        cursor += at + entry.text.len();
        assert_eq!(entry.hash, sha256_hex(&entry.indexed()), "{entry:?}");
        assert!(hashes.insert(entry.hash.clone()), "{entry:?} twice");
        if let Some(heading) = &entry.heading {
            assert!(
                document
                    .lines()
                    .any(|line| line.starts_with('#') && line.trim() == heading),
                "{heading:?} is not a heading line of {document:?}"
            );
        }
    }
    // Every other entry, and all of them: each selected one is shown, under its heading.
    for step in [1, 2] {
        let shown: BTreeSet<usize> = (0..found.len()).step_by(step).collect();
        let text = render_selection(&found, &shown);
        for &i in &shown {
            let entry = &found[i];
            assert!(text.contains(&entry.text), "{entry:?} not in {text:?}");
            if let Some(heading) = &entry.heading {
                assert!(
                    text.contains(heading.as_str()),
                    "{heading:?} not in {text:?}"
                );
            }
        }
        if shown.is_empty() {
            assert_eq!(text, "");
        }
    }
});
