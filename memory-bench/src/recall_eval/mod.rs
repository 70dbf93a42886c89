//! `memory-bench recall-eval`: recall@k of the vector provider on real conversations in the
//! layout of LoCoMo's JSON Lines (`turns.jsonl`, `observations.jsonl`, `queries.jsonl`, as in
//! `../shared/data/locomo-dev`), following the protocol of that data's README.
//!
//! Everything goes through the public API, as an agent's memory would: per conversation, a
//! fresh MEMORY.md written by hand (one entry per paragraph) under a
//! [`MarkdownProvider`], a [`VectorProvider`] over it with the default [`RecallConfig`], a
//! reindex, then one [`Recall::search`] per question. Recall@k of a question is the share of its
//! evidence (dialog ids) found among the ids of the entries returned in the first k places,
//! averaged over questions per category and over all of them.
//!
//! The parsing, the entry texts, the text-to-ids map (`data.rs`) and the metric (`metric.rs`)
//! are pure functions, tested there on tiny inline data: the data itself is CC BY-NC and stays
//! out of the repository.

// LoCoMo's JSON Lines parsed, the entries made from them, and the map back to dialog ids.
mod data;
// Recall@k, its cutoffs, and the table per category.
mod metric;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memory_core::{MemoryContext, PersonalityId, Recall, Recalled, RecalledEntry, Store, UserId};
use memory_markdown::MarkdownProvider;
use memory_vector::{Embedder, ModelConfig, ModelName, Ranking, RecallConfig, VectorProvider};

use crate::backends::BoxError;
use crate::stats::{Samples, ms};

use data::{
    Entry, ObservationLine, QueryLine, TurnLine, ids_by_text, read_jsonl, select_conversations,
};
use metric::{Scored, cutoffs, recall_at, table};

/// Flags of `memory-bench recall-eval`.
#[derive(clap::Args, Debug, Clone)]
pub struct EvalArgs {
    /// Directory holding turns.jsonl, observations.jsonl and queries.jsonl (e.g.
    /// ../shared/data/locomo-dev).
    #[arg(long)]
    pub data: PathBuf,
    /// What one entry of MEMORY.md is: a dialog turn (turns.jsonl) or an observation
    /// (observations.jsonl).
    #[arg(long, value_enum, default_value_t = Unit::Turn)]
    pub unit: Unit,
    /// Entries retrieved per question; recall is reported at 1, 5, 10 and 25 up to k, and at k.
    #[arg(long, default_value_t = 25)]
    pub k: usize,
    /// Only these conversations (conv_id), comma-separated; default: every conversation that
    /// has entries, in file order.
    #[arg(long, value_delimiter = ',')]
    pub conversations: Vec<String>,
    /// Which ranking is measured: `hybrid` is what agents get (`Recall::search`); `vector` and
    /// `full-text` (LanceDB's BM25, stemmed, stop words dropped) are its two halves alone, as
    /// baselines.
    #[arg(long, value_enum, default_value_t = Measured::Hybrid)]
    pub ranking: Measured,
    /// The hybrid ranking's `vector_weight` (see memory-vector's `RecallConfig`); default: the
    /// model's own. For tuning: sweep it here, on these conversations, not on the rest.
    #[arg(long)]
    pub vector_weight: Option<f32>,
    /// The embedding model: `all-MiniLM-L6-v2` or `multilingual-e5-small`.
    #[arg(long, default_value_t = ModelName::default())]
    pub model: ModelName,
}

/// A ranking `recall-eval` can measure.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measured {
    /// The fused ranking, through `Recall::search` as an agent's `memory_search` calls it.
    Hybrid,
    /// Nearest embeddings alone.
    Vector,
    /// The full-text index's BM25 alone.
    FullText,
}

impl Measured {
    /// The flag's value.
    fn name(self) -> &'static str {
        match self {
            Measured::Hybrid => "hybrid",
            Measured::Vector => "vector",
            Measured::FullText => "full-text",
        }
    }
}

/// What one entry of the indexed MEMORY.md is.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// One dialog turn: `<speaker> said, "<text>"`, plus ` and shared <caption>` for an image.
    Turn,
    /// One observation (a third-person fact drawn from some turns), counting for those turns.
    Observation,
}

impl Unit {
    /// The file of the data directory the entries come from.
    fn file(self) -> &'static str {
        match self {
            Unit::Turn => "turns.jsonl",
            Unit::Observation => "observations.jsonl",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Unit::Turn => "turn",
            Unit::Observation => "observation",
        }
    }
}

/// Runs the evaluation and prints the table, with the figures around it, to stdout.
pub async fn run(args: EvalArgs) -> Result<(), BoxError> {
    let evaluated = evaluate(&args, None).await?;
    println!("{}\n", evaluated.summary);
    print!("{}", evaluated.table);
    println!("\n{}", evaluated.timing);
    Ok(())
}

/// What one evaluation found, as printed.
pub struct Evaluated {
    /// One line: the data, unit, ranking, conversations, entries and questions.
    pub summary: String,
    /// The markdown table of recall per category.
    pub table: String,
    /// One line: search latency and indexing time.
    pub timing: String,
}

/// Runs the protocol of `args`, with `embedder` if given (else the model is loaded once the
/// data has parsed).
pub async fn evaluate(
    args: &EvalArgs,
    embedder: Option<Arc<Embedder>>,
) -> Result<Evaluated, BoxError> {
    if args.k == 0 {
        return Err("--k must be at least 1".into());
    }
    // Parse everything before loading the model: bad data fails in a second, not after it.
    let entries: Vec<Entry> = match args.unit {
        Unit::Turn => read_jsonl::<TurnLine>(&args.data.join(Unit::Turn.file()))?
            .into_iter()
            .map(Entry::from)
            .collect(),
        Unit::Observation => {
            read_jsonl::<ObservationLine>(&args.data.join(Unit::Observation.file()))?
                .into_iter()
                .map(Entry::from)
                .collect()
        }
    };
    let queries: Vec<QueryLine> = read_jsonl(&args.data.join("queries.jsonl"))?;
    let conversations = select_conversations(&entries, &args.conversations)
        .map_err(|err| format!("{}: {err}", args.data.join(args.unit.file()).display()))?;
    // Unfiltered, every question must be answerable: one whose conversation has no entries
    // would otherwise vanish from the figures unnoticed.
    if let Some(orphan) = queries
        .iter()
        .find(|q| args.conversations.is_empty() && !conversations.contains(&q.conv_id))
    {
        return Err(format!(
            "queries.jsonl: question {} is about conversation {:?}, which has no entries in {}",
            orphan.qid,
            orphan.conv_id,
            args.unit.file()
        )
        .into());
    }
    let blank = entries.iter().filter(|e| e.text.is_empty()).count();
    if blank > 0 {
        // A blank paragraph is no entry of MEMORY.md: it can never be found, so say so.
        eprintln!("!!! {blank} blank entries in {} left out", args.unit.file());
    }

    let embedder = match embedder {
        Some(embedder) => embedder,
        None => Arc::new(Embedder::load(&ModelConfig::of(args.model))?),
    };
    let ctx = MemoryContext::new(PersonalityId::new("eval")?, UserId::new("eval")?);
    let document = ctx.document(Store::Memory);
    let at = cutoffs(args.k);
    let recall = RecallConfig {
        vector_weight: args.vector_weight,
        ..RecallConfig::default()
    };

    let mut scored = Vec::new();
    let mut latency = Samples::default();
    let mut indexing = Duration::ZERO;
    let (mut entry_count, mut distinct, mut skipped) = (0, 0, 0);
    for conv in &conversations {
        let mine: Vec<&Entry> = entries
            .iter()
            .filter(|e| &e.conv_id == conv && !e.text.is_empty())
            .collect();
        let questions: Vec<&QueryLine> = queries.iter().filter(|q| &q.conv_id == conv).collect();
        let ids = ids_by_text(mine.iter().copied());
        entry_count += mine.len();
        distinct += ids.len();

        // A hand edit, as a person or another tool would make: the index must find it.
        let dir = tempfile::tempdir()?;
        let root = dir.path().join("memory");
        let file = root.join(document.relative_path());
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let texts: Vec<&str> = mine.iter().map(|e| e.text.as_str()).collect();
        std::fs::write(&file, texts.join("\n\n") + "\n")?;
        let source = Arc::new(MarkdownProvider::new(root));
        let provider =
            VectorProvider::open(source, &dir.path().join("index"), embedder.clone(), recall)
                .await?;
        let started = Instant::now();
        provider.reindex().await?;
        let took = started.elapsed();
        indexing += took;
        // The halves alone return entry hashes, not texts.
        let text_of_hash: HashMap<String, String> =
            memory_vector::entries(&std::fs::read_to_string(&file)?)
                .into_iter()
                .map(|entry| (entry.hash, entry.text))
                .collect();
        eprintln!(
            "== {conv}: {} entries ({} distinct) indexed in {took:.1?}; {} questions",
            mine.len(),
            ids.len(),
            questions.len()
        );

        for q in questions {
            let evidence: BTreeSet<String> = q.evidence.iter().cloned().collect();
            if evidence.is_empty() {
                skipped += 1;
                continue;
            }
            let recalled = match args.ranking {
                Measured::Hybrid => {
                    latency
                        .time(provider.search(&document, &q.question, args.k))
                        .await?
                }
                Measured::Vector | Measured::FullText => {
                    let ranking = if args.ranking == Measured::Vector {
                        Ranking::Vector
                    } else {
                        Ranking::FullText
                    };
                    let hashes = latency
                        .time(provider.recall(&document, &q.question, ranking, args.k))
                        .await?;
                    Recalled {
                        ranked: hashes
                            .iter()
                            .filter_map(|hash| text_of_hash.get(hash.as_str()).cloned())
                            .map(RecalledEntry::of_document)
                            .collect(),
                        ..Recalled::default()
                    }
                }
            };
            // Unranked entries or a lagging index would measure the catch-up, not the ranking.
            if let Some(behind) = &recalled.behind {
                return Err(format!("{}: the index is behind: {behind}", q.qid).into());
            }
            if !recalled.unranked.is_empty() {
                return Err(format!(
                    "{}: {} entries came back unranked; the index does not cover the document",
                    q.qid,
                    recalled.unranked.len()
                )
                .into());
            }
            let ranked = recalled
                .ranked
                .iter()
                .map(|RecalledEntry { text, .. }| {
                    ids.get(text).ok_or_else(|| {
                        format!(
                            "{}: the index returned a text that is no entry: {text:?}",
                            q.qid
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let recall = at
                .iter()
                .map(|&k| recall_at(&evidence, &ranked, k).unwrap_or_default())
                .collect();
            scored.push(Scored {
                category: q.category,
                category_name: q.category_name.clone(),
                recall,
            });
        }
        for warning in provider.settle().await {
            eprintln!("!!! {conv}: {warning}");
        }
    }

    let summary = format!(
        "recall-eval: data {}, unit {}, ranking {}{}, conversations {}, {entry_count} entries \
         ({distinct} distinct texts), {} questions, k {}{}",
        args.data.display(),
        args.unit.name(),
        args.ranking.name(),
        match args.ranking {
            Measured::Hybrid => format!(
                " (vector weight {})",
                recall.vector_weight_for(embedder.model())
            ),
            Measured::Vector | Measured::FullText => String::new(),
        },
        conversations.join(", "),
        scored.len(),
        args.k,
        if skipped > 0 {
            format!(" (questions without evidence skipped: {skipped})")
        } else {
            String::new()
        },
    );
    let timing = format!(
        "search latency ({} build, {} ranking, k {}): p50 {} ms, p95 {} ms over {} \
         searches; indexing (reindex: embedding and LanceDB writes): {:.1?} for {entry_count} \
         entries",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        args.ranking.name(),
        args.k,
        ms(latency.quantile_ms(0.5)),
        ms(latency.quantile_ms(0.95)),
        latency.samples().len(),
        indexing,
    );
    Ok(Evaluated {
        summary,
        table: table(&scored, &at),
        timing,
    })
}
