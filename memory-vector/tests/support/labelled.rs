//! The labelled recall sets, indexed and scored: `tests/data/recall.json` (English) and
//! `tests/data/recall-multilingual.json` (German, Portuguese, Japanese and Spanish). Shared by
//! the recall tests (which assert) and the benchmark (which prints).
//!
//! Each query's vector, full-text and hybrid rankings are fetched through
//! [`VectorProvider::recall`] under one configuration; a sweep evaluates the set once per
//! configuration.

// The test and the benchmark each use part of this.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;

use memory_core::{
    IfMatch, MemoryContext, MemoryProvider, MemoryUpdate, PersonalityId, Store, UserId,
};
use memory_markdown::MarkdownProvider;
use memory_vector::{Embedder, Ranking, RecallConfig, VectorProvider, entries};
use serde::Deserialize;

/// The vector weights of the fusion sweep.
pub const SWEEP_VECTOR_WEIGHT: [f32; 6] = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

#[derive(Deserialize)]
pub struct LabelledSet {
    pub entries: Vec<LabelledEntry>,
    pub queries: Vec<LabelledQuery>,
}

#[derive(Deserialize)]
pub struct LabelledEntry {
    pub id: String,
    pub personality: String,
    pub text: String,
}

#[derive(Deserialize)]
pub struct LabelledQuery {
    pub id: String,
    pub personality: String,
    pub text: String,
    pub relevant: Vec<String>,
    /// What the query tests: `keyword`, `paraphrase`, `mixed`, `cross-lingual`.
    pub kind: String,
    /// An entry of another personality worded like the query: it must never be returned.
    #[serde(default)]
    pub trap: Option<String>,
    pub split: Half,
}

/// The half of the set a query is in, as the data file names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Half {
    /// The fusion parameters were chosen on these.
    Tune,
    /// Only reported.
    HeldOut,
}

/// Which queries a figure is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    Tune,
    HeldOut,
    All,
}

impl Split {
    pub fn holds(self, query: &LabelledQuery) -> bool {
        match self {
            Split::Tune => query.split == Half::Tune,
            Split::HeldOut => query.split == Half::HeldOut,
            Split::All => true,
        }
    }
}

/// Mean recall@5 and recall@10 over some queries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recall {
    pub at5: f64,
    pub at10: f64,
}

impl Recall {
    /// The figure a sweep maximises.
    pub fn mean(self) -> f64 {
        (self.at5 + self.at10) / 2.0
    }
}

/// What the index returned for one query, as entry hashes, best first.
pub struct Ranked {
    pub vector: Vec<String>,
    pub text: Vec<String>,
    /// What `recall(.., Ranking::Hybrid, 10)` returned with the provider's configuration.
    pub hybrid: Vec<String>,
}

/// The labelled set, indexed under the real model, with every query's rankings.
pub struct Evaluation {
    pub set: LabelledSet,
    pub ranked: Vec<Ranked>,
    pub personality_of: HashMap<String, String>,
    pub id_of_hash: HashMap<String, String>,
    /// How long indexing the whole set took (embedding included).
    pub indexing: std::time::Duration,
    /// The hybrid ranking's vector weight: the configured one, else the model's own.
    pub vector_weight: f32,
}

/// The English set: four assistants' notes, keyword, paraphrase and mixed queries.
pub fn english() -> LabelledSet {
    serde_json::from_str(include_str!("../data/recall.json")).expect("the labelled set parses")
}

/// The set kept in other languages: four assistants each writing in one of German, Portuguese,
/// Japanese and Spanish; paraphrase, mixed and cross-lingual (asked in English) queries.
pub fn multilingual() -> LabelledSet {
    serde_json::from_str(include_str!("../data/recall-multilingual.json"))
        .expect("the multilingual labelled set parses")
}

fn ctx(personality: &str) -> MemoryContext {
    MemoryContext::new(
        PersonalityId::new(personality).unwrap(),
        UserId::new("eval").unwrap(),
    )
}

/// Indexes `set` (each personality's entries in its own MEMORY.md) and ranks every query.
pub async fn evaluate(
    set: LabelledSet,
    embedder: Arc<Embedder>,
    config: RecallConfig,
) -> Evaluation {
    let vector_weight = config.vector_weight_for(embedder.model());
    let dir = tempfile::tempdir().unwrap();
    let source = Arc::new(MarkdownProvider::new(dir.path().join("memory")));
    let provider = VectorProvider::open(source, &dir.path().join("index"), embedder, config)
        .await
        .unwrap();

    let started = std::time::Instant::now();
    let mut id_of_hash: HashMap<String, String> = HashMap::new();
    let mut by_personality: HashMap<&str, Vec<&LabelledEntry>> = HashMap::new();
    for entry in &set.entries {
        by_personality
            .entry(&entry.personality)
            .or_default()
            .push(entry);
        id_of_hash.insert(entries(&entry.text)[0].hash.clone(), entry.id.clone());
    }
    for (personality, labelled) in &by_personality {
        let updates: Vec<_> = labelled
            .iter()
            .map(|e| MemoryUpdate::add(Store::Memory, &e.text))
            .collect();
        let report = provider
            .sync(&ctx(personality), &updates, &IfMatch::NONE)
            .await
            .unwrap();
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    }
    assert_eq!(provider.settle().await, Vec::<String>::new());
    let indexing = started.elapsed();

    let mut ranked = Vec::new();
    for q in &set.queries {
        let document = ctx(&q.personality).document(Store::Memory);
        let rank = |ranking, limit| provider.recall(&document, &q.text, ranking, limit);
        ranked.push(Ranked {
            vector: rank(Ranking::Vector, config.candidates).await.unwrap(),
            text: rank(Ranking::FullText, config.candidates).await.unwrap(),
            hybrid: rank(Ranking::Hybrid, 10).await.unwrap(),
        });
    }
    let personality_of = set
        .entries
        .iter()
        .map(|e| (e.id.clone(), e.personality.clone()))
        .collect();
    Evaluation {
        set,
        ranked,
        personality_of,
        id_of_hash,
        indexing,
        vector_weight,
    }
}

impl Evaluation {
    /// Recall of `pick` (a ranking of a query's hashes, from its fetched rankings) over `split`.
    pub fn recall(&self, split: Split, pick: impl Fn(&Ranked) -> Vec<String>) -> Recall {
        let (mut at5, mut at10, mut n) = (0.0, 0.0, 0.0);
        for (q, ranked) in self.set.queries.iter().zip(&self.ranked) {
            if !split.holds(q) {
                continue;
            }
            let found: Vec<&String> = pick(ranked).iter().map(|h| &self.id_of_hash[h]).collect();
            let share = |k: usize| {
                let top = &found[..found.len().min(k)];
                q.relevant.iter().filter(|r| top.contains(r)).count() as f64
                    / q.relevant.len() as f64
            };
            at5 += share(5);
            at10 += share(10);
            n += 1.0;
        }
        Recall {
            at5: at5 / n,
            at10: at10 / n,
        }
    }

    /// Recall of vector only, full text only and hybrid, in that order.
    pub fn table(&self, split: Split) -> [(Ranking, Recall); 3] {
        [
            (Ranking::Vector, self.recall(split, |r| r.vector.clone())),
            (Ranking::FullText, self.recall(split, |r| r.text.clone())),
            (Ranking::Hybrid, self.recall(split, |r| r.hybrid.clone())),
        ]
    }

    /// Every returned id that is out of its query's scope or its trap, as "query: id" lines.
    pub fn scope_leaks(&self) -> Vec<String> {
        let mut leaks = Vec::new();
        for (q, ranked) in self.set.queries.iter().zip(&self.ranked) {
            for hash in ranked
                .vector
                .iter()
                .chain(&ranked.text)
                .chain(&ranked.hybrid)
            {
                let id = &self.id_of_hash[hash];
                if self.personality_of[id] != q.personality || q.trap.as_ref() == Some(id) {
                    leaks.push(format!("{}: {id}", q.id));
                }
            }
        }
        leaks
    }
}

/// Prints a recall table: one row per ranking, recall@5 and @10 on the held-out half and on
/// every query.
pub fn print_table(evaluation: &Evaluation) {
    let held_out = evaluation.table(Split::HeldOut);
    let all = evaluation.table(Split::All);
    let count = |split: Split| {
        evaluation
            .set
            .queries
            .iter()
            .filter(|q| split.holds(q))
            .count()
    };
    println!(
        "recall on {} entries: {} held-out queries, {} in all (vector weight {})",
        evaluation.set.entries.len(),
        count(Split::HeldOut),
        count(Split::All),
        evaluation.vector_weight,
    );
    println!("| ranking | held-out recall@5 | held-out recall@10 | all recall@5 | all recall@10 |");
    println!("| --- | --- | --- | --- | --- |");
    for ((ranking, h), (_, a)) in held_out.iter().zip(&all) {
        println!(
            "| {ranking:?} | {:.3} | {:.3} | {:.3} | {:.3} |",
            h.at5, h.at10, a.at5, a.at10
        );
    }
}
