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
//! The parsing, the entry texts, the text-to-ids map and the metric are pure functions, tested
//! here on tiny inline data: the data itself is CC BY-NC and stays out of the repository.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memory_core::{MemoryContext, PersonalityId, Recall, Recalled, Store, UserId};
use memory_markdown::MarkdownProvider;
use memory_vector::{Embedder, ModelConfig, ModelName, Ranking, RecallConfig, VectorProvider};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::backends::BoxError;
use crate::stats::{Samples, ms};

/// The cutoffs reported when k reaches them (the LoCoMo paper's and the data README's).
const CUTOFFS: [usize; 4] = [1, 5, 10, 25];

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

/// A line of turns.jsonl (only the fields used; others are ignored).
#[derive(Debug, Deserialize)]
struct TurnLine {
    conv_id: String,
    dia_id: String,
    speaker: String,
    text: String,
    #[serde(default)]
    blip_caption: Option<String>,
}

/// A line of observations.jsonl.
#[derive(Debug, Deserialize)]
struct ObservationLine {
    conv_id: String,
    text: String,
    dia_ids: Vec<String>,
}

/// A line of queries.jsonl.
#[derive(Debug, Deserialize)]
struct QueryLine {
    conv_id: String,
    qid: String,
    question: String,
    category: u8,
    category_name: String,
    evidence: Vec<String>,
}

/// One entry of a conversation's MEMORY.md, and the dialog ids it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    conv_id: String,
    /// One line, trimmed: exactly the text the index will return for it.
    text: String,
    ids: Vec<String>,
}

/// Makes `text` one line, trimmed. An entry is a paragraph of MEMORY.md, so a line break inside
/// it would be kept in the returned text (and a blank line would split it into two entries);
/// the index also trims paragraphs, so the map from returned texts must use trimmed texts.
fn one_line(text: &str) -> String {
    text.replace(['\r', '\n'], " ").trim().to_owned()
}

/// The entry text of a turn, as the data README words it: `<speaker> said, "<text>"`, followed
/// by ` and shared <caption>` when the turn shared an image (a blank caption counts as none).
fn turn_text(speaker: &str, text: &str, caption: Option<&str>) -> String {
    let mut entry = format!("{speaker} said, \"{text}\"");
    if let Some(caption) = caption.filter(|c| !c.trim().is_empty()) {
        entry.push_str(" and shared ");
        entry.push_str(caption);
    }
    one_line(&entry)
}

impl From<TurnLine> for Entry {
    fn from(turn: TurnLine) -> Self {
        Entry {
            text: turn_text(&turn.speaker, &turn.text, turn.blip_caption.as_deref()),
            conv_id: turn.conv_id,
            ids: vec![turn.dia_id],
        }
    }
}

impl From<ObservationLine> for Entry {
    fn from(observation: ObservationLine) -> Self {
        Entry {
            text: one_line(&observation.text),
            conv_id: observation.conv_id,
            ids: observation.dia_ids,
        }
    }
}

/// Parses JSON Lines (blank lines skipped). An error names `name` and the 1-based line, so a
/// bad line in a file of thousands can be found.
fn parse_jsonl<T: DeserializeOwned>(name: &str, bytes: &[u8]) -> Result<Vec<T>, String> {
    let mut parsed = Vec::new();
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value =
            serde_json::from_slice(line).map_err(|err| format!("{name}:{}: {err}", index + 1))?;
        parsed.push(value);
    }
    Ok(parsed)
}

/// Reads and parses one JSON Lines file; errors name the file (and the line).
fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, BoxError> {
    let bytes = std::fs::read(path).map_err(|err| format!("{}: {err}", path.display()))?;
    Ok(parse_jsonl(&path.display().to_string(), &bytes)?)
}

/// Every dialog id each entry text stands for. The index keeps one row per distinct text, so
/// identical texts come back as one result: it counts for the ids of all of them.
fn ids_by_text<'a>(
    entries: impl IntoIterator<Item = &'a Entry>,
) -> HashMap<String, BTreeSet<String>> {
    let mut map: HashMap<String, BTreeSet<String>> = HashMap::new();
    for entry in entries {
        map.entry(entry.text.clone())
            .or_default()
            .extend(entry.ids.iter().cloned());
    }
    map
}

/// Recall@k of one question: the share of `evidence` among the ids of the first `k` results
/// (`ranked`, best first, each result's ids). `None` for a question without evidence, which
/// has no recall to measure.
fn recall_at(evidence: &BTreeSet<String>, ranked: &[&BTreeSet<String>], k: usize) -> Option<f64> {
    if evidence.is_empty() {
        return None;
    }
    let found = evidence
        .iter()
        .filter(|id| ranked.iter().take(k).any(|ids| ids.contains(*id)))
        .count();
    Some(found as f64 / evidence.len() as f64)
}

/// The cutoffs reported for a search of `k`: the standard ones up to k, and k itself.
fn cutoffs(k: usize) -> Vec<usize> {
    let mut at: Vec<usize> = CUTOFFS.into_iter().filter(|&c| c <= k).collect();
    if !at.contains(&k) {
        at.push(k);
    }
    at
}

/// One question's recall at each cutoff.
#[derive(Debug, Clone, PartialEq)]
struct Scored {
    category: u8,
    category_name: String,
    /// Recall at each of the run's cutoffs, in order.
    recall: Vec<f64>,
}

/// The markdown table: one row per category (in category order, named as the data names it),
/// then "all"; mean recall at each cutoff, 3 decimals.
fn table(scored: &[Scored], cutoffs: &[usize]) -> String {
    let mut rows: BTreeMap<u8, (&str, Vec<&Scored>)> = BTreeMap::new();
    for s in scored {
        rows.entry(s.category)
            .or_insert_with(|| (&s.category_name, Vec::new()))
            .1
            .push(s);
    }
    let mut md = String::new();
    let headers: Vec<String> = cutoffs.iter().map(|c| format!("R@{c}")).collect();
    let _ = writeln!(md, "| category | questions | {} |", headers.join(" | "));
    let _ = writeln!(md, "| --- | --- |{}", " --- |".repeat(cutoffs.len()));
    let mut row = |label: String, of: &[&Scored]| {
        let means: Vec<String> = (0..cutoffs.len())
            .map(|i| {
                let sum: f64 = of.iter().map(|s| s.recall[i]).sum();
                format!("{:.3}", sum / of.len().max(1) as f64)
            })
            .collect();
        let _ = writeln!(md, "| {label} | {} | {} |", of.len(), means.join(" | "));
    };
    for (category, (name, of)) in &rows {
        row(format!("{category} {name}"), of);
    }
    row("all".to_owned(), &scored.iter().collect::<Vec<_>>());
    md
}

/// The conversations to evaluate: those asked for (each must have entries), else every one
/// with entries, in the order they first appear.
fn select_conversations(entries: &[Entry], asked: &[String]) -> Result<Vec<String>, String> {
    let mut present: Vec<&str> = Vec::new();
    for entry in entries {
        if !present.contains(&entry.conv_id.as_str()) {
            present.push(&entry.conv_id);
        }
    }
    if asked.is_empty() {
        return Ok(present.into_iter().map(str::to_owned).collect());
    }
    let mut selected: Vec<String> = Vec::new();
    for conv in asked.iter().map(|c| c.trim()) {
        if !present.contains(&conv) {
            return Err(format!(
                "no entries for conversation {conv:?}; the data has {}",
                present.join(", ")
            ));
        }
        if !selected.iter().any(|s| s == conv) {
            selected.push(conv.to_owned());
        }
    }
    Ok(selected)
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
                .map(|text| {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_turn_reads_as_said_with_its_caption_on_one_line() {
        let turns: Vec<TurnLine> = parse_jsonl(
            "turns.jsonl",
            br#"{"conv_id": "c", "dia_id": "D1:1", "session": 1, "speaker": "Ann", "text": "Look!\nMy dog.", "blip_caption": "a photo of a dog"}
{"conv_id": "c", "dia_id": "D1:2", "speaker": "Bo", "text": " Nice ", "blip_caption": null}
{"conv_id": "c", "dia_id": "D1:3", "speaker": "Bo", "text": "Hi"}"#,
        )
        .unwrap();
        let entries: Vec<Entry> = turns.into_iter().map(Entry::from).collect();
        assert_eq!(
            entries[0].text,
            "Ann said, \"Look! My dog.\" and shared a photo of a dog"
        );
        assert_eq!(entries[0].ids, ["D1:1"]);
        assert_eq!(entries[1].text, "Bo said, \" Nice \"");
        assert_eq!(entries[2].text, "Bo said, \"Hi\"");
        assert_eq!(turn_text("Bo", "Hi", Some(" ")), "Bo said, \"Hi\"");
    }

    #[test]
    fn an_observation_counts_for_its_turns() {
        let observations: Vec<ObservationLine> = parse_jsonl(
            "observations.jsonl",
            br#"{"conv_id": "c", "position": 0, "text": "Ann has a dog.\r\n", "dia_ids": ["D1:1", "D1:2"]}"#,
        )
        .unwrap();
        let entry = Entry::from(observations.into_iter().next().unwrap());
        assert_eq!(entry.text, "Ann has a dog.");
        assert_eq!(entry.ids, ["D1:1", "D1:2"]);
    }

    #[test]
    fn identical_texts_map_to_the_union_of_their_ids() {
        let entry = |text: &str, ids: &[&str]| Entry {
            conv_id: "c".into(),
            text: text.into(),
            ids: ids.iter().map(|s| (*s).to_owned()).collect(),
        };
        let entries = [
            entry("Bo said, \"Hi\"", &["D1:1"]),
            entry("Ann said, \"Hey\"", &["D1:2"]),
            entry("Bo said, \"Hi\"", &["D3:4"]),
        ];
        let map = ids_by_text(&entries);
        assert_eq!(map.len(), 2);
        assert_eq!(map["Bo said, \"Hi\""], set(&["D1:1", "D3:4"]));
        assert_eq!(map["Ann said, \"Hey\""], set(&["D1:2"]));
    }

    #[test]
    fn recall_at_k_is_the_share_of_evidence_in_the_top_k() {
        let evidence = set(&["D1:1", "D2:2", "D3:3", "D4:4"]);
        let (a, b, c) = (set(&["D9:9"]), set(&["D2:2", "D3:3"]), set(&["D1:1"]));
        let ranked = [&a, &b, &c, &b];
        assert_eq!(recall_at(&evidence, &ranked, 1), Some(0.0));
        assert_eq!(recall_at(&evidence, &ranked, 2), Some(0.5));
        assert_eq!(recall_at(&evidence, &ranked, 3), Some(0.75));
        // An id found twice counts once; k beyond the results changes nothing.
        assert_eq!(recall_at(&evidence, &ranked, 25), Some(0.75));
        assert_eq!(recall_at(&evidence, &[], 5), Some(0.0));
        assert_eq!(recall_at(&set(&[]), &ranked, 5), None);
    }

    #[test]
    fn the_table_averages_per_category_then_over_all() {
        let scored = |category: u8, name: &str, recall: [f64; 2]| Scored {
            category,
            category_name: name.into(),
            recall: recall.to_vec(),
        };
        let md = table(
            &[
                scored(4, "single-hop", [1.0, 1.0]),
                scored(1, "multi-hop", [0.0, 0.5]),
                scored(4, "single-hop", [0.0, 1.0]),
            ],
            &[1, 5],
        );
        assert_eq!(
            md,
            "| category | questions | R@1 | R@5 |\n\
             | --- | --- | --- | --- |\n\
             | 1 multi-hop | 1 | 0.000 | 0.500 |\n\
             | 4 single-hop | 2 | 0.500 | 1.000 |\n\
             | all | 3 | 0.333 | 0.833 |\n"
        );
    }

    #[test]
    fn cutoffs_stop_at_k_and_include_it() {
        assert_eq!(cutoffs(25), [1, 5, 10, 25]);
        assert_eq!(cutoffs(8), [1, 5, 8]);
        assert_eq!(cutoffs(50), [1, 5, 10, 25, 50]);
        assert_eq!(cutoffs(1), [1]);
    }

    #[test]
    fn a_bad_line_is_named_by_file_and_line() {
        let err = parse_jsonl::<QueryLine>(
            "data/queries.jsonl",
            b"{\"conv_id\": \"c\", \"qid\": \"c/q0\", \"question\": \"Why?\", \"category\": 1, \
              \"category_name\": \"multi-hop\", \"evidence\": [], \"answer\": \"x\"}\n\n\
              {\"conv_id\": \"c\", \"qid\": \"c/q1\"\n",
        )
        .unwrap_err();
        assert!(err.starts_with("data/queries.jsonl:3: "), "{err}");
        let err = parse_jsonl::<QueryLine>("q.jsonl", b"{\"conv_id\": 5}").unwrap_err();
        assert!(err.starts_with("q.jsonl:1: invalid type"), "{err}");
        let err = parse_jsonl::<QueryLine>("q.jsonl", b"\n\xff\xfe\n").unwrap_err();
        assert!(err.starts_with("q.jsonl:2: "), "{err}");
    }

    #[test]
    fn conversations_are_checked_and_kept_in_order() {
        let entry = |conv: &str| Entry {
            conv_id: conv.into(),
            text: "x".into(),
            ids: Vec::new(),
        };
        let entries = [entry("b"), entry("a"), entry("b")];
        assert_eq!(select_conversations(&entries, &[]).unwrap(), ["b", "a"]);
        let asked = ["a".to_owned(), " b".to_owned(), "a".to_owned()];
        assert_eq!(select_conversations(&entries, &asked).unwrap(), ["a", "b"]);
        let err = select_conversations(&entries, &["z".to_owned()]).unwrap_err();
        assert!(err.contains("\"z\"") && err.contains("b, a"), "{err}");
    }
}
