//! Recall on the labelled set in `tests/data/recall.json`: recall@5 and @10 of vector-only,
//! full-text-only and hybrid search, printed as a table. Hybrid must beat both, and no query
//! may return another personality's entry (the set plants better matches there on purpose).

use std::collections::HashMap;
use std::sync::Arc;

use memory_core::{
    IfMatch, MemoryContext, MemoryProvider, MemoryUpdate, PersonalityId, Store, UserId,
};
use memory_markdown::MarkdownProvider;
use memory_vector::{Embedder, ModelConfig, Ranking, RecallConfig, VectorProvider, entries};
use serde::Deserialize;

#[derive(Deserialize)]
struct LabelledSet {
    entries: Vec<LabelledEntry>,
    queries: Vec<LabelledQuery>,
}

#[derive(Deserialize)]
struct LabelledEntry {
    id: String,
    personality: String,
    text: String,
}

#[derive(Deserialize)]
struct LabelledQuery {
    id: String,
    personality: String,
    text: String,
    relevant: Vec<String>,
    #[serde(default)]
    trap: Option<String>,
}

fn ctx(personality: &str) -> MemoryContext {
    MemoryContext::new(
        PersonalityId::new(personality).unwrap(),
        UserId::new("eval").unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn hybrid_recall_beats_vector_and_full_text_on_the_labelled_set() {
    let set: LabelledSet =
        serde_json::from_str(include_str!("data/recall.json")).expect("the labelled set parses");
    assert!(set.entries.len() >= 300 && set.queries.len() >= 60);
    let dir = tempfile::tempdir().unwrap();
    let embedder = Arc::new(Embedder::load(&ModelConfig::from_env()).unwrap());
    let source = Arc::new(MarkdownProvider::new(dir.path().join("memory")));
    let p = VectorProvider::open(
        source,
        &dir.path().join("index"),
        embedder,
        RecallConfig::default(),
    )
    .await
    .unwrap();

    let mut by_personality: HashMap<&str, Vec<&LabelledEntry>> = HashMap::new();
    for entry in &set.entries {
        by_personality
            .entry(&entry.personality)
            .or_default()
            .push(entry);
    }
    let mut id_of_hash: HashMap<String, &str> = HashMap::new();
    for (personality, labelled) in &by_personality {
        let updates: Vec<_> = labelled
            .iter()
            .map(|e| MemoryUpdate::add(Store::Memory, &e.text))
            .collect();
        let report = p
            .sync(&ctx(personality), &updates, &IfMatch::NONE)
            .await
            .unwrap();
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        for e in labelled {
            id_of_hash.insert(entries(&e.text)[0].hash.clone(), &e.id);
        }
    }

    let personality_of: HashMap<&str, &str> = set
        .entries
        .iter()
        .map(|e| (e.id.as_str(), e.personality.as_str()))
        .collect();
    println!(
        "recall on {} entries, {} queries",
        set.entries.len(),
        set.queries.len()
    );
    println!("{:<10} {:>9} {:>10}", "ranking", "recall@5", "recall@10");
    let mut results = HashMap::new();
    for ranking in [Ranking::Vector, Ranking::FullText, Ranking::Hybrid] {
        let (mut at5, mut at10) = (0.0, 0.0);
        for q in &set.queries {
            let document = ctx(&q.personality).document(Store::Memory);
            let found = p.recall(&document, &q.text, ranking, 10).await.unwrap();
            let found: Vec<&str> = found.iter().map(|h| id_of_hash[h]).collect();
            for id in &found {
                assert_eq!(
                    personality_of[id], q.personality,
                    "{}: {ranking:?} left the scope",
                    q.id
                );
            }
            if let Some(trap) = &q.trap {
                assert!(
                    !found.contains(&trap.as_str()),
                    "{}: {ranking:?} returned the trap",
                    q.id
                );
            }
            let hits = |k: usize| {
                q.relevant
                    .iter()
                    .filter(|r| found.iter().take(k).any(|f| f == r))
                    .count() as f64
                    / q.relevant.len() as f64
            };
            at5 += hits(5);
            at10 += hits(10);
        }
        let n = set.queries.len() as f64;
        println!(
            "{:<10} {:>9.3} {:>10.3}",
            format!("{ranking:?}"),
            at5 / n,
            at10 / n
        );
        results.insert(format!("{ranking:?}"), (at5 / n, at10 / n));
    }
    let (hybrid, vector, text) = (results["Hybrid"], results["Vector"], results["FullText"]);
    assert!(
        hybrid.0 > vector.0 && hybrid.0 > text.0 && hybrid.1 > vector.1 && hybrid.1 > text.1,
        "hybrid {hybrid:?} must beat vector {vector:?} and full text {text:?}"
    );
}
