//! Recall on the labelled set in `tests/data/recall.json`: recall@5 and @10 of vector-only,
//! full-text-only and hybrid search, printed as a table. Hybrid must beat full text and match or
//! beat vector-only on the held-out half and on the whole set, must not fall below the figures
//! it had before the fusion was retuned on real conversations (LoCoMo) by more than one query's
//! share, and no query may return another personality's entry (the set plants better matches
//! there on purpose).

#[path = "support/labelled.rs"]
mod labelled;

use std::sync::Arc;

use labelled::Split;
use memory_vector::{Embedder, ModelConfig, ModelName, Ranking, RecallConfig};

#[tokio::test(flavor = "multi_thread")]
async fn hybrid_recall_beats_vector_and_full_text_on_the_labelled_set() {
    let config = RecallConfig::default();
    let embedder = Arc::new(Embedder::load(&ModelConfig::from_env()).unwrap());
    let evaluation = labelled::evaluate(labelled::english(), embedder, config).await;
    let set = &evaluation.set;
    assert!(set.entries.len() >= 300 && set.queries.len() >= 60);
    labelled::print_table(&evaluation, &config);

    assert_eq!(
        evaluation.scope_leaks(),
        Vec::<String>::new(),
        "left the scope"
    );
    // Hybrid recall@5 and @10 with the rank fusion this set was written to tune (held-out,
    // all), before the defaults were chosen on LoCoMo: one query of the 77 may go either way.
    let before = [(Split::HeldOut, 0.974, 0.974), (Split::All, 0.974, 0.974)];
    for (split, at5_before, at10_before) in before {
        let [(_, vector), (_, text), (ranking, hybrid)] = evaluation.table(split);
        assert_eq!(ranking, Ranking::Hybrid);
        assert!(
            hybrid.at5 >= vector.at5 && hybrid.at10 >= vector.at10,
            "{split:?}: hybrid {hybrid:?} must match or beat vector {vector:?}"
        );
        assert!(
            hybrid.at5 > text.at5 && hybrid.at10 > text.at10,
            "{split:?}: hybrid {hybrid:?} must beat full text {text:?}"
        );
        let one_query = 1.0 / set.queries.iter().filter(|q| split.holds(q)).count() as f64;
        assert!(
            hybrid.at5 >= at5_before - one_query && hybrid.at10 >= at10_before - one_query,
            "{split:?}: hybrid {hybrid:?} fell below {at5_before} / {at10_before}"
        );
    }
}

/// Memory kept in German, Portuguese, Japanese and Spanish (`tests/data/recall-multilingual.json`,
/// mostly paraphrases, some asked in English): multilingual-e5-small recalls what
/// all-MiniLM-L6-v2, trained on English, cannot.
#[tokio::test(flavor = "multi_thread")]
async fn e5_recalls_memory_kept_in_other_languages_that_minilm_cannot() {
    let config = RecallConfig::default();
    let mut hybrid = Vec::new();
    for model in [ModelName::MiniLm, ModelName::E5Small] {
        let embedder = Arc::new(Embedder::load(&ModelConfig::of(model)).unwrap());
        let evaluation = labelled::evaluate(labelled::multilingual(), embedder, config).await;
        let set = &evaluation.set;
        assert!(set.entries.len() >= 180 && set.queries.len() >= 64);
        println!("{model}:");
        labelled::print_table(&evaluation, &config);
        assert_eq!(
            evaluation.scope_leaks(),
            Vec::<String>::new(),
            "left the scope"
        );
        let [_, _, (ranking, recall)] = evaluation.table(Split::All);
        assert_eq!(ranking, Ranking::Hybrid);
        hybrid.push(recall);
    }
    // Measured: hybrid recall@5 0.797 with e5, 0.484 with MiniLM (vector weight 0.7).
    let (minilm, e5) = (hybrid[0], hybrid[1]);
    assert!(
        e5.at5 >= minilm.at5 + 0.2 && e5.at5 >= 0.7,
        "e5 {e5:?} against MiniLM {minilm:?}"
    );
}
