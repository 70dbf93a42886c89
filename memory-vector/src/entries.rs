//! What the index holds: the entries of a document, its blank-line-separated paragraphs.

use memory_core::sha256_hex;

/// One paragraph of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// 0-based position among the document's entries.
    pub position: usize,
    /// The paragraph, trimmed.
    pub text: String,
    /// SHA-256 of `text`: what the index diffs by.
    pub hash: String,
}

/// The entries of `document`, in order. A paragraph that occurs twice is one entry, at its
/// first position: the index keeps one row per distinct text.
pub fn entries(document: &str) -> Vec<Entry> {
    let mut seen = std::collections::HashSet::new();
    let mut found = Vec::new();
    let mut paragraph: Vec<&str> = Vec::new();
    for line in document.lines().chain(std::iter::once("")) {
        if !line.trim().is_empty() {
            paragraph.push(line);
            continue;
        }
        let text = paragraph.join("\n").trim().to_owned();
        paragraph.clear();
        if text.is_empty() {
            continue;
        }
        let hash = sha256_hex(&text);
        if seen.insert(hash.clone()) {
            found.push(Entry {
                position: found.len(),
                text,
                hash,
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_split_on_blank_lines_and_keep_their_lines() {
        let doc = "first\n\nsecond line one\nsecond line two\n \n\n\nthird  \n\nfirst\n";
        let found = entries(doc);
        let texts: Vec<_> = found.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(
            texts,
            ["first", "second line one\nsecond line two", "third"]
        );
        assert_eq!(found[2].position, 2);
        assert_eq!(found[0].hash, sha256_hex("first"));
        assert!(entries("").is_empty() && entries(" \n\n").is_empty());
    }
}
