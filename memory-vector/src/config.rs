//! How a query picks entries: a vector provider's `recall` settings (`recall = { k = 8 }` in
//! `memory.toml`), checked when the provider opens.

use serde::Deserialize;

use crate::embed::ModelName;

/// How a query picks entries.
///
/// An entry's score is `vector_weight × similarity + (1 − vector_weight) × coverage`: its
/// cosine similarity to the query, and the share of the query's words it holds, each word
/// weighted by how rare it is in the document (BM25's inverse document frequency). Both are on
/// fixed scales, so their magnitudes add up where ranks alone would not: a close paraphrase
/// wins on similarity, an entry holding the query's rare words (a name, a ticket id, "LGBTQ")
/// wins on coverage, and an entry matching one common word stays low on both.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecallConfig {
    /// Entries rendered for a query; default 8.
    pub k: usize,
    /// How many candidates each ranking (nearest vectors, BM25) contributes; default 50.
    pub candidates: usize,
    /// The share of an entry's score that is its similarity to the query, from 0 to 1; the
    /// rest is its coverage of the query's words. Default: the model's own
    /// ([`ModelName::vector_weight`]), since each model's similarities spread differently.
    pub vector_weight: Option<f32>,
    /// Indexed entries from which vector search uses an approximate (IVF-HNSW) index, built
    /// by [`VectorProvider::optimize`]; below it, exact brute force is fast enough. Default
    /// 10,000.
    ///
    /// [`VectorProvider::optimize`]: crate::VectorProvider::optimize
    pub ann_index_rows: usize,
    /// How long a query waits for the index to catch up with its source, in milliseconds;
    /// default 2,000. Past it the query is answered with the entries the index has not
    /// covered shown unranked beside the ranked ones, and the catch-up goes on in the
    /// background.
    pub catch_up_ms: u64,
}

impl Default for RecallConfig {
    fn default() -> Self {
        RecallConfig {
            k: 8,
            candidates: 50,
            vector_weight: None,
            ann_index_rows: 10_000,
            catch_up_ms: 2_000,
        }
    }
}

impl RecallConfig {
    /// Why this configuration cannot rank, if it cannot.
    pub(crate) fn invalid(&self) -> Option<String> {
        if self.k == 0 {
            return Some(
                "recall.k is 0, which would show the agent no memory for a query; it must be at \
                 least 1"
                    .to_owned(),
            );
        }
        match self.vector_weight {
            Some(weight) if !(0.0..=1.0).contains(&weight) => Some(format!(
                "recall.vector_weight is {weight}; it is the share of an entry's score that is \
                 its similarity to the query, from 0 to 1"
            )),
            _ => None,
        }
    }

    /// The share of an entry's score that is its similarity, when `model` embeds: the one set,
    /// else the model's own.
    pub fn vector_weight_for(&self, model: ModelName) -> f32 {
        self.vector_weight.unwrap_or_else(|| model.vector_weight())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vector_weight_is_the_models_own_unless_set() {
        let default = RecallConfig::default();
        assert_eq!(default.vector_weight_for(ModelName::E5Small), 0.8);
        assert_eq!(default.vector_weight_for(ModelName::MiniLm), 0.7);
        let set = RecallConfig {
            vector_weight: Some(0.5),
            ..default
        };
        for model in ModelName::ALL {
            assert_eq!(set.vector_weight_for(model), 0.5);
        }
    }

    #[test]
    fn a_weight_outside_zero_to_one_or_no_k_is_refused() {
        assert_eq!(RecallConfig::default().invalid(), None);
        for vector_weight in [-0.1, 1.5, f32::NAN] {
            let config = RecallConfig {
                vector_weight: Some(vector_weight),
                ..RecallConfig::default()
            };
            assert!(config.invalid().unwrap().contains("vector_weight"));
        }
        let no_k = RecallConfig {
            k: 0,
            ..RecallConfig::default()
        };
        assert!(no_k.invalid().unwrap().contains("recall.k is 0"));
    }
}
