//! Figures for memory-vector, printed, never asserted: embedding throughput, the cost of an
//! add through the index, recall on the labelled set with the fusion sweep that chose the
//! defaults, and query latency at 1k, 10k and 100k entries, before and after the ANN index.
//! `cargo bench -p agent-memory-vector` (release; `BENCH_SIZES=1000,10000` to skip the largest,
//! which embeds 100k entries first; `BENCH_MODEL=all-MiniLM-L6-v2` for the other model).

#[path = "../tests/support/labelled.rs"]
mod labelled;

use std::sync::Arc;
use std::time::{Duration, Instant};

use memory_core::{
    IfMatch, MemoryContext, MemoryProvider, MemoryUpdate, PersonalityId, Store, UserId,
};
use memory_markdown::MarkdownProvider;
use memory_vector::{Embedder, ModelConfig, ModelName, Ranking, RecallConfig, VectorProvider};

const TOPICS: [&str; 12] = [
    "flight to Lisbon",
    "dentist appointment",
    "shellfish allergy",
    "piano lessons",
    "car insurance renewal",
    "quarterly tax filing",
    "database failover",
    "deploy freeze",
    "sourdough starter",
    "marathon training",
    "school pickup",
    "passport renewal",
];

fn note(i: usize) -> String {
    let topic = TOPICS[i % TOPICS.len()];
    format!(
        "Note {i}: about the {topic}, remembered on day {} with reference R-{:05}.",
        i / 7,
        i * 31 % 99_991
    )
}

fn percentiles(mut samples: Vec<Duration>) -> String {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    format!("p50 {:>9.3?}  p95 {:>9.3?}", at(0.5), at(0.95))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sizes: Vec<usize> = std::env::var("BENCH_SIZES")
        .unwrap_or_else(|_| "1000,10000,100000".into())
        .split(',')
        .map(|s| s.trim().parse())
        .collect::<Result<_, _>>()?;
    let model: ModelName = match std::env::var("BENCH_MODEL") {
        Ok(name) => name.parse()?,
        Err(_) => ModelName::default(),
    };
    let embedder = Arc::new(Embedder::load(&ModelConfig::of(model))?);

    let texts: Vec<String> = (0..2_000).map(note).collect();
    let started = Instant::now();
    embedder.embed(&texts)?;
    let rate = texts.len() as f64 / started.elapsed().as_secs_f64();
    println!(
        "{model}: embedding {rate:.0} entries/s (batches of 32, {} threads)",
        std::thread::available_parallelism()?
    );

    let dir = tempfile::tempdir()?;
    let markdown = Arc::new(MarkdownProvider::new(dir.path().join("memory")));
    let vector = VectorProvider::open(
        markdown.clone(),
        &dir.path().join("index"),
        embedder.clone(),
        RecallConfig::default(),
    )
    .await?;
    let ctx = MemoryContext::new(PersonalityId::new("adds")?, UserId::new("bench")?);
    let (mut plain, mut indexed) = (Vec::new(), Vec::new());
    for i in 0..200 {
        let add = [MemoryUpdate::add(Store::Memory, note(i))];
        let started = Instant::now();
        markdown
            .sync(
                &ctx.clone().with_scope(memory_core::MemoryScope::Global),
                &add,
                &IfMatch::NONE,
            )
            .await?;
        plain.push(started.elapsed());
        let started = Instant::now();
        vector.sync(&ctx, &add, &IfMatch::NONE).await?;
        indexed.push(started.elapsed());
    }
    println!(
        "one-add sync, 200 adds: markdown alone {}; through the index {}",
        percentiles(plain),
        percentiles(indexed)
    );

    print_recall(embedder.clone()).await;

    for size in sizes {
        let dir = tempfile::tempdir()?;
        let ctx = MemoryContext::new(PersonalityId::new("large")?, UserId::new("bench")?);
        let file = dir
            .path()
            .join("memory")
            .join(ctx.document(Store::Memory).relative_path());
        std::fs::create_dir_all(file.parent().unwrap())?;
        std::fs::write(
            &file,
            (0..size).map(note).collect::<Vec<_>>().join("\n\n") + "\n",
        )?;
        let source = Arc::new(MarkdownProvider::new(dir.path().join("memory")));
        let recall = RecallConfig {
            ann_index_rows: usize::MAX,
            ..RecallConfig::default()
        };
        let p = VectorProvider::open(
            source.clone(),
            &dir.path().join("index"),
            embedder.clone(),
            recall,
        )
        .await?;
        let started = Instant::now();
        p.reindex().await?;
        println!("{size} entries: indexed in {:.1?}", started.elapsed());
        let document = ctx.document(Store::Memory);
        print_query_latency("brute force", &p, &document).await?;
        let recall = RecallConfig {
            ann_index_rows: 0,
            ..RecallConfig::default()
        };
        let with_ann =
            VectorProvider::open(source, &dir.path().join("index"), embedder.clone(), recall)
                .await?;
        let started = Instant::now();
        with_ann.optimize().await?;
        println!("  ANN index built in {:.1?}", started.elapsed());
        print_query_latency("ANN (IVF-HNSW)", &with_ann, &document).await?;
    }
    Ok(())
}

async fn print_query_latency(
    label: &str,
    provider: &VectorProvider,
    document: &memory_core::DocumentId,
) -> Result<(), memory_core::MemoryError> {
    for ranking in [Ranking::Vector, Ranking::Hybrid] {
        let mut samples = Vec::new();
        for q in 0..100 {
            let query = format!(
                "what about the {} and reference R-{:05}?",
                TOPICS[q % TOPICS.len()],
                q * 97
            );
            let started = Instant::now();
            provider.recall(document, &query, ranking, 8).await?;
            samples.push(started.elapsed());
        }
        println!("  {label:<15} {ranking:?} query: {}", percentiles(samples));
    }
    Ok(())
}

/// The recall table of the labelled set, and hybrid recall on it (mean of recall@5 and @10,
/// held-out half and all) for each vector weight of the sweep.
async fn print_recall(embedder: Arc<Embedder>) {
    let config = RecallConfig::default();
    let evaluation = labelled::evaluate(labelled::english(), embedder.clone(), config).await;
    println!("labelled set indexed in {:.1?}", evaluation.indexing);
    labelled::print_table(&evaluation);
    println!("vector weight sweep, hybrid, mean of recall@5 and @10:");
    println!("| vector weight | held-out | all |");
    println!("| --- | --- | --- |");
    for vector_weight in labelled::SWEEP_VECTOR_WEIGHT {
        let config = RecallConfig {
            vector_weight: Some(vector_weight),
            ..RecallConfig::default()
        };
        let evaluation = labelled::evaluate(labelled::english(), embedder.clone(), config).await;
        let mean = |split| evaluation.table(split)[2].1.mean();
        println!(
            "| {vector_weight} | {:.3} | {:.3} |",
            mean(labelled::Split::HeldOut),
            mean(labelled::Split::All)
        );
    }
}
