//! Recall on the labelled set in `tests/data/recall.json`: recall@5 and @10 of vector-only,
//! full-text-only and hybrid search, printed as a table. Hybrid must beat both on the held-out
//! half and on the whole set, the default fusion must be the best of the sweep on the tuning
//! half (where it was chosen), and no query may return another personality's entry (the set
//! plants better matches there on purpose).

#[path = "support/labelled.rs"]
mod labelled;

use std::sync::Arc;

use labelled::Split;
use memory_vector::{Embedder, ModelConfig, Ranking, RecallConfig};

#[tokio::test(flavor = "multi_thread")]
async fn hybrid_recall_beats_vector_and_full_text_on_the_labelled_set() {
    let config = RecallConfig::default();
    let embedder = Arc::new(Embedder::load(&ModelConfig::from_env()).unwrap());
    let evaluation = labelled::evaluate(embedder, config).await;
    let set = &evaluation.set;
    assert!(set.entries.len() >= 300 && set.queries.len() >= 60);
    labelled::print_table(&evaluation, &config);

    assert_eq!(
        evaluation.scope_leaks(),
        Vec::<String>::new(),
        "left the scope"
    );
    for (q, ranked) in set.queries.iter().zip(&evaluation.ranked) {
        assert_eq!(
            ranked.hybrid,
            config.fuse(&ranked.vector, &ranked.text, 10),
            "{}: the table's hybrid ranking is what recall returns",
            q.id
        );
    }

    for split in [Split::HeldOut, Split::All] {
        let [(_, vector), (_, text), (ranking, hybrid)] = evaluation.table(split, &config);
        assert_eq!(ranking, Ranking::Hybrid);
        for other in [vector, text] {
            assert!(
                hybrid.at5 > other.at5 && hybrid.at10 > other.at10,
                "{split:?}: hybrid {hybrid:?} must beat vector {vector:?} and full text {text:?}"
            );
        }
    }

    let best = evaluation
        .sweep(Split::Tune)
        .into_iter()
        .map(|(_, _, recall)| recall.mean())
        .fold(0.0, f64::max);
    let chosen = evaluation.table(Split::Tune, &config)[2].1.mean();
    assert!(
        chosen >= best - 1e-9,
        "the default fusion ({chosen:.4}) is no longer the best of the sweep ({best:.4}) on the tuning half"
    );
}
