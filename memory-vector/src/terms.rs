//! Query terms and how much of a query an entry covers: the lexical half of the ranking.
//!
//! Terms are made exactly as the full-text index makes them (LanceDB's default English
//! analyzer: split on non-alphanumerics, drop tokens over 40 bytes, lower-case, Snowball stem,
//! drop English stop words, fold to ASCII), so the entries the index finds by BM25 and the
//! coverage computed here agree on what a word is.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use lance_tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
    StopWordFilter, TextAnalyzer,
};

/// The longest token the full-text index keeps, in bytes (LanceDB's default).
const MAX_TOKEN_BYTES: usize = 40;

/// Builds the analyzer the full-text index uses by default.
fn analyzer() -> TextAnalyzer {
    let builder = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter_dynamic(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter_dynamic(LowerCaser)
        .filter_dynamic(Stemmer::new(Language::English));
    let builder = match StopWordFilter::new(Language::English) {
        Some(stop_words) => builder.filter_dynamic(stop_words),
        None => builder,
    };
    builder.filter_dynamic(AsciiFoldingFilter).build()
}

thread_local! {
    /// One analyzer per thread: building one (its stemmer, its stop-word set) costs more than
    /// analysing a short entry, and a query analyses a hundred.
    static ANALYZER: RefCell<TextAnalyzer> = RefCell::new(analyzer());
}

/// The distinct terms of `text`.
pub(crate) fn terms(text: &str) -> HashSet<String> {
    ANALYZER.with_borrow_mut(|analyzer| {
        let mut stream = analyzer.token_stream(text);
        let mut found = HashSet::new();
        while let Some(token) = stream.next() {
            found.insert(token.text.clone());
        }
        found
    })
}

/// How many entries of a document hold each term: what a term's weight is computed from.
#[derive(Debug, Default)]
pub(crate) struct TermStats {
    entries: usize,
    holding: HashMap<String, u32>,
}

impl TermStats {
    /// The statistics of a document's entries (their indexed texts).
    pub fn of(texts: impl IntoIterator<Item = impl AsRef<str>>) -> Self {
        let mut stats = TermStats::default();
        for text in texts {
            stats.entries += 1;
            for term in terms(text.as_ref()) {
                *stats.holding.entry(term).or_default() += 1;
            }
        }
        stats
    }

    /// A term's weight: BM25's inverse document frequency, as the full-text index computes
    /// it. A rare word (a name, a ticket id) weighs more than one most entries hold; a term no
    /// entry holds weighs most, though no entry can match it.
    pub fn weight(&self, term: &str) -> f32 {
        let entries = self.entries as f32;
        let holding = self.holding.get(term).copied().unwrap_or(0) as f32;
        ((entries - holding + 0.5) / (holding + 0.5) + 1.0).ln()
    }

    /// The share of `query`'s weight that an entry with `terms` holds, from 0 (none of its
    /// words) to 1 (all of them); 0 for a query of stop words only.
    ///
    /// Unlike a BM25 score, which is only comparable within one query, this is a fixed scale
    /// that can be added to a cosine similarity: an entry matching one common word of a long
    /// question scores low even when it is the best lexical match there is.
    pub fn coverage(&self, query: &HashSet<String>, terms: &HashSet<String>) -> f32 {
        let total: f32 = query.iter().map(|term| self.weight(term)).sum();
        if total <= 0.0 {
            return 0.0;
        }
        let held: f32 = query
            .intersection(terms)
            .map(|term| self.weight(term))
            .sum();
        held / total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(words: &[&str]) -> HashSet<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn terms_are_stemmed_lower_cased_and_free_of_stop_words() {
        assert_eq!(
            terms("When did Caroline go to the LGBTQ support groups?"),
            set(&["carolin", "go", "lgbtq", "support", "group"])
        );
        assert_eq!(terms("Café RUNNING runs"), set(&["cafe", "run"]));
        assert!(terms("what was it?").is_empty());
        assert!(terms(&"x".repeat(41)).is_empty(), "too long to index");
    }

    #[test]
    fn coverage_weighs_rare_terms_more() {
        let stats = TermStats::of([
            "Caroline went to the support group.",
            "Caroline painted a sunrise.",
            "Caroline adopted a dog.",
            "Melanie ran a marathon.",
        ]);
        assert!(stats.weight("carolin") < stats.weight("sunris"));
        assert!(stats.weight("unseen") > stats.weight("sunris"));
        let query = terms("When did Caroline paint a sunrise?");
        let sunrise = stats.coverage(&query, &terms("Caroline painted a sunrise."));
        let name_only = stats.coverage(&query, &terms("Caroline adopted a dog."));
        assert!((sunrise - 1.0).abs() < 1e-6, "{sunrise}");
        assert!(name_only > 0.0 && name_only < 0.25, "{name_only}");
        assert_eq!(
            stats.coverage(&query, &terms("Melanie ran a marathon.")),
            0.0
        );
        assert_eq!(stats.coverage(&terms("what is it"), &terms("it is")), 0.0);
        assert_eq!(
            TermStats::default().coverage(&query, &query),
            1.0,
            "an empty document still has a scale"
        );
    }
}
