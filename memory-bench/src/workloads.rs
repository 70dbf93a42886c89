//! The workloads, each run the same way on every provider.

use std::sync::Arc;
use std::time::{Duration, Instant};

use memory_core::{
    IfMatch, MemoryContext, MemoryError, MemoryProvider, MemoryUpdate, NotePath, PersonalityId,
    Retention, Store, UserId,
};
use memory_markdown::MarkdownProvider;
use memory_vector::{Embedder, RecallConfig, VectorProvider};

use crate::backends::{Backend, BoxError, Naive};
use crate::stats::Samples;

/// The prefetch budget of every context here: large enough that no document is cut, so the
/// figures measure reading, not truncation.
const MAX_CHARS: usize = 1 << 20;

/// A context of `personality` with user `bench`.
pub fn ctx(personality: &str) -> MemoryContext {
    MemoryContext::new(
        PersonalityId::new(personality).expect("bench personality ids are valid"),
        UserId::new("bench").expect("bench user id is valid"),
    )
    .with_max_chars(MAX_CHARS)
}

/// What the entries are about, so recall queries have something to find.
const TOPICS: [&str; 8] = [
    "flight to Lisbon",
    "database failover",
    "deploy freeze",
    "dentist appointment",
    "quarterly tax filing",
    "piano lessons",
    "car insurance renewal",
    "marathon training",
];

/// Entry `i`: one line of about 75 bytes, distinct, with words recall can find.
pub fn entry(i: usize) -> String {
    format!(
        "Note {i:06}: about the {}, decided on day {} (ref R-{:05}).",
        TOPICS[i % TOPICS.len()],
        i / 7,
        i * 31 % 99_991
    )
}

/// A memory text of at least `bytes` bytes, in entries.
pub fn text_of_size(bytes: usize) -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < bytes {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&entry(i));
        i += 1;
    }
    text
}

/// A query for the vector provider's prefetch (others ignore it).
pub const QUERY: &str = "when is the database failover decided?";

/// Prefetch latency with MEMORY.md of `bytes` bytes and a short USER.md.
pub async fn prefetch(
    provider: &dyn MemoryProvider,
    bytes: usize,
    samples: usize,
) -> Result<Samples, MemoryError> {
    let ctx = ctx(&format!("prefetch-{bytes}")).with_query(QUERY);
    provider
        .sync(
            &ctx,
            &[
                MemoryUpdate::replace(Store::Memory, text_of_size(bytes)),
                MemoryUpdate::replace(Store::User, "Name: Bench. Prefers short answers."),
            ],
            &IfMatch::NONE,
        )
        .await?;
    for _ in 0..samples.min(10) {
        provider.prefetch(&ctx).await?;
    }
    let mut latencies = Samples::default();
    for _ in 0..samples {
        latencies.time(provider.prefetch(&ctx)).await?;
    }
    Ok(latencies)
}

/// Latency of `samples` one-add syncs by a single writer.
pub async fn sync(provider: &dyn MemoryProvider, samples: usize) -> Result<Samples, MemoryError> {
    sync_to(provider, "sync", samples, Samples::default()).await
}

/// [`sync`]'s adds by the naive baseline on the same storage: read the whole text, append,
/// write it back, with no lock, no version check and (on files) no fsync.
pub async fn naive_sync(backend: &Backend, samples: usize) -> Result<Samples, BoxError> {
    let naive = crate::backends::naive(backend, "naive-sync", 1, samples, |_, n| entry(n)).await?;
    Ok(naive.latencies)
}

/// [`sync`] with history off and on (the default retention), in alternating rounds on fresh
/// documents so that drift in the machine's speed lands on both alike: (off, on).
pub async fn history_cost(
    backend: &Backend,
    samples: usize,
) -> Result<(Samples, Samples), MemoryError> {
    const ROUNDS: usize = 4;
    let off = backend.open_storage(Retention::OFF).await?;
    let on = backend.open_storage(Retention::default()).await?;
    let (mut without, mut with) = (Samples::default(), Samples::default());
    let per_round = samples.div_ceil(ROUNDS);
    for round in 0..ROUNDS {
        let off_first = round % 2 == 0;
        for history in [!off_first, off_first] {
            if history {
                let document = format!("history-on-{round}");
                with = sync_to(&*on, &document, per_round, with).await?;
            } else {
                let document = format!("history-off-{round}");
                without = sync_to(&*off, &document, per_round, without).await?;
            }
        }
    }
    Ok((without, with))
}

/// `samples` one-add syncs to `personality`'s MEMORY.md, timed into `latencies`.
async fn sync_to(
    provider: &dyn MemoryProvider,
    personality: &str,
    samples: usize,
    mut latencies: Samples,
) -> Result<Samples, MemoryError> {
    let ctx = ctx(personality);
    for i in 0..samples {
        let add = [MemoryUpdate::add(Store::Memory, entry(i))];
        latencies
            .time(provider.sync(&ctx, &add, &IfMatch::NONE))
            .await?;
    }
    Ok(latencies)
}

/// What `writers` concurrent writers adding to one document did.
#[derive(Debug, Clone)]
pub struct Contention {
    /// How many writers.
    pub writers: usize,
    /// Acknowledged adds per second, over the whole run.
    pub throughput: f64,
    /// Latency of each add.
    pub latencies: Samples,
    /// Compare-and-swap attempts lost and retried, summed over all adds.
    pub retries: u64,
    /// Adds refused with `Contention` (the caller was told; nothing is lost).
    pub refused: usize,
    /// Acknowledged adds missing from the document at the end: must be 0.
    pub lost: usize,
    /// The naive read-then-write baseline under the same load.
    pub naive: Naive,
}

/// `writers` writers, each its own provider instance (as separate processes would be), adding
/// `total / writers` entries each to one document.
pub async fn contention(
    backend: &Backend,
    shared: &Arc<dyn MemoryProvider>,
    writers: usize,
    total: usize,
) -> Result<Contention, BoxError> {
    let adds = (total / writers).max(1);
    // The baseline first, so its connections are gone before the providers open theirs.
    let naive = crate::backends::naive(
        backend,
        &format!("naive-{writers}"),
        writers,
        adds,
        |w, n| format!("naive writer {w} entry {n}"),
    )
    .await?;
    let ctx = ctx(&format!("contention-{writers}"));
    let mut providers = Vec::new();
    for _ in 0..writers {
        providers.push(if backend.races() {
            backend.open().await?
        } else {
            shared.clone()
        });
    }
    let started = Instant::now();
    let tasks: Vec<_> = providers
        .into_iter()
        .enumerate()
        .map(|(writer, provider)| {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                let mut done = (Samples::default(), 0u64, Vec::new(), 0usize);
                for n in 0..adds {
                    let entry = format!("writer {writer} entry {n}");
                    let add = [MemoryUpdate::add(Store::Memory, entry.clone())];
                    let began = Instant::now();
                    match provider.sync(&ctx, &add, &IfMatch::NONE).await {
                        Ok(report) => {
                            done.0.push(began.elapsed());
                            done.1 += u64::from(report.retries);
                            done.2.push(entry);
                        }
                        Err(MemoryError::Contention { .. }) => done.3 += 1,
                        Err(err) => return Err(err),
                    }
                }
                Ok(done)
            })
        })
        .collect();
    let mut result = Contention {
        writers,
        throughput: 0.0,
        latencies: Samples::default(),
        retries: 0,
        refused: 0,
        lost: 0,
        naive,
    };
    let mut acknowledged = Vec::new();
    for task in tasks {
        let (latencies, retries, entries, refused) = task.await??;
        result.latencies.append(&latencies);
        result.retries += retries;
        acknowledged.extend(entries);
        result.refused += refused;
    }
    let elapsed = started.elapsed();
    result.throughput = acknowledged.len() as f64 / elapsed.as_secs_f64();
    let text = shared.read(&ctx.document(Store::Memory)).await?.text;
    let present: std::collections::HashSet<&str> = text.split("\n\n").map(str::trim).collect();
    result.lost = acknowledged
        .iter()
        .filter(|entry| !present.contains(entry.as_str()))
        .count();
    Ok(result)
}

/// Latency as MEMORY.md grows to `cap` bytes by adds of about 75 bytes: per add, the add's
/// sync and a prefetch after it, as (bytes after, sync, prefetch).
pub async fn growth(
    provider: &dyn MemoryProvider,
    cap: usize,
) -> Result<Vec<(usize, Duration, Duration)>, MemoryError> {
    let ctx = ctx("growth").with_query(QUERY);
    let mut points = Vec::new();
    let mut i = 0;
    loop {
        let add = [MemoryUpdate::add(Store::Memory, entry(i))];
        let started = Instant::now();
        let report = provider.sync(&ctx, &add, &IfMatch::NONE).await?;
        let sync = started.elapsed();
        let started = Instant::now();
        provider.prefetch(&ctx).await?;
        let prefetch = started.elapsed();
        let bytes = report.documents[0].bytes_after;
        points.push((bytes, sync, prefetch));
        if bytes >= cap {
            return Ok(points);
        }
        i += 1;
    }
}

/// Recall at one size: how fast the entries went in, and how fast a query comes back.
#[derive(Debug, Clone)]
pub struct RecallRound {
    /// Entries in the document.
    pub entries: usize,
    /// Entries embedded and indexed per second, for the entries added since the last round
    /// (index optimisation included).
    pub ingest_per_second: f64,
    /// `memory_search` latency: the index query, then the entries' text from the source.
    pub queries: Samples,
    /// The index query alone (embedding the query, hybrid search, fusion; the source document
    /// is read to weigh the query's words): what `memory_search` adds on top of it is the
    /// catch-up check and mapping the ranked entries back to their text.
    pub index_queries: Samples,
}

/// Grows one document to each of `sizes` entries in turn (only the new entries are embedded
/// each time), and measures ingest and `queries` hybrid queries at each size.
pub async fn recall(
    root: &std::path::Path,
    embedder: Arc<Embedder>,
    sizes: &[usize],
    queries: usize,
) -> Result<Vec<RecallRound>, BoxError> {
    use memory_core::Recall;
    use memory_vector::Ranking;
    let source = Arc::new(MarkdownProvider::new(root.join("memory")));
    let provider = VectorProvider::open(
        source,
        &root.join("index"),
        embedder,
        RecallConfig::default(),
    )
    .await?;
    let ctx = ctx("recall");
    let document = ctx.document(Store::Memory);
    let file = root.join("memory").join(document.relative_path());
    std::fs::create_dir_all(file.parent().ok_or("the document has a directory")?)?;
    let mut rounds = Vec::new();
    let mut indexed = 0;
    for &size in sizes {
        // Written to the source directly, as a bulk import would be, then indexed.
        let text: Vec<String> = (0..size).map(entry).collect();
        std::fs::write(&file, text.join("\n\n") + "\n")?;
        let started = Instant::now();
        provider.reindex().await?;
        provider.optimize().await?;
        let ingest = started.elapsed();
        let mut latencies = Samples::default();
        let mut index_latencies = Samples::default();
        for q in 0..queries {
            let query = format!(
                "what was decided about the {} (R-{:05})?",
                TOPICS[q % TOPICS.len()],
                q * 97
            );
            latencies
                .time(provider.search(&document, &query, 8))
                .await?;
            index_latencies
                .time(provider.recall(&document, &query, Ranking::Hybrid, 8))
                .await?;
        }
        rounds.push(RecallRound {
            entries: size,
            ingest_per_second: size.saturating_sub(indexed) as f64 / ingest.as_secs_f64(),
            queries: latencies,
            index_queries: index_latencies,
        });
        indexed = size;
    }
    Ok(rounds)
}

/// One document written with history off and on, side by side: [`large_document`]'s figures.
#[derive(Debug, Clone)]
pub struct LargeDocument {
    /// The text the document starts with, in bytes (0: grown from empty).
    pub seeded: usize,
    /// Its size after the adds.
    pub bytes: usize,
    /// Each add's sync with history off, then on.
    pub adds: (Samples, Samples),
    /// Prefetch + add cycles per second with history off, then on.
    pub cycles_per_second: (f64, f64),
    /// What the history of the document written with history on holds in storage (the
    /// journal's bytes, the table's rows, the stream's memory).
    pub history_bytes: u64,
}

impl LargeDocument {
    /// Which document, as the report's rows name it.
    pub fn describe(&self) -> String {
        let adds = self.adds.0.samples().len();
        if self.seeded == 0 {
            format!("empty + {adds} adds")
        } else {
            format!("{:.2} MB + {adds} adds", self.seeded as f64 / 1e6)
        }
    }
}

/// A MEMORY.md of `seeded` bytes (0: empty), then `adds` cycles of a prefetch and one add,
/// once with history off and once with the default retention (keep 100), the two documents
/// written in alternating cycles so that drift in the machine's speed lands on both alike.
pub async fn large_document(
    backend: &Backend,
    seeded: usize,
    adds: usize,
) -> Result<LargeDocument, BoxError> {
    let off = backend.open_storage(Retention::OFF).await?;
    let on = backend.open_storage(Retention::default()).await?;
    let name = |history: &str| format!("large-{seeded}-{history}");
    let contexts = [ctx(&name("off")), ctx(&name("on"))];
    if seeded > 0 {
        let seed = [MemoryUpdate::replace(Store::Memory, text_of_size(seeded))];
        for (provider, ctx) in [&off, &on].into_iter().zip(&contexts) {
            provider.sync(ctx, &seed, &IfMatch::NONE).await?;
        }
    }
    let mut latencies = [Samples::default(), Samples::default()];
    let mut busy = [Duration::ZERO; 2];
    for i in 0..adds {
        for (at, provider) in [&off, &on].into_iter().enumerate() {
            let ctx = &contexts[at];
            let cycle = Instant::now();
            provider.prefetch(ctx).await?;
            let add = [MemoryUpdate::add(Store::Memory, entry(i))];
            latencies[at]
                .time(provider.sync(ctx, &add, &IfMatch::NONE))
                .await?;
            busy[at] += cycle.elapsed();
        }
    }
    let document = contexts[1].document(Store::Memory);
    let bytes = on.read(&document).await?.text.len();
    let history_bytes = crate::backends::history_bytes(backend, &document).await?;
    let [off_adds, on_adds] = latencies;
    let rate = |busy: Duration| adds as f64 / busy.as_secs_f64();
    Ok(LargeDocument {
        seeded,
        bytes,
        adds: (off_adds, on_adds),
        cycles_per_second: (rate(busy[0]), rate(busy[1])),
        history_bytes,
    })
}

/// What the notes section measured on one provider.
#[derive(Debug, Clone)]
pub struct NotesMeasured {
    /// One add to MEMORY.md, alternating with [`NotesMeasured::note_add`] so that drift in the
    /// machine's speed lands on both alike.
    pub document_add: Samples,
    /// One add to a note of the same scope.
    pub note_add: Samples,
    /// How many notes the listed scope holds.
    pub listed: usize,
    /// Listing that scope (every note: path, bytes, version, last write, description).
    pub listing: Samples,
    /// Prefetch of a context whose scope holds no note, alternating with
    /// [`NotesMeasured::prefetch_with`]; the same MEMORY.md and USER.md in both.
    pub prefetch_without: Samples,
    /// Prefetch of a context whose scope holds `listed` notes.
    pub prefetch_with: Samples,
}

/// The notes section: a note's add against a document's, listing a scope of `count` notes,
/// and prefetch with those notes against prefetch without.
pub async fn notes(
    provider: &dyn MemoryProvider,
    samples: usize,
    count: usize,
) -> Result<NotesMeasured, MemoryError> {
    let path = |name: &str| NotePath::new(name).expect("bench note paths are valid");
    let adds = ctx("notes-add");
    let note = path("topics/adds.md");
    provider
        .sync(
            &adds,
            &[MemoryUpdate::create(Store::Memory, note.clone(), entry(0))],
            &IfMatch::NONE,
        )
        .await?;
    let (mut document_add, mut note_add) = (Samples::default(), Samples::default());
    for i in 0..samples {
        let to_document = [MemoryUpdate::add(Store::Memory, entry(i))];
        let to_note = [MemoryUpdate::add(Store::Memory, entry(i)).in_note(note.clone())];
        document_add
            .time(provider.sync(&adds, &to_document, &IfMatch::NONE))
            .await?;
        note_add
            .time(provider.sync(&adds, &to_note, &IfMatch::NONE))
            .await?;
    }

    // Two contexts with the same pair, one whose scope holds `count` notes.
    let (without, with) = (
        ctx("notes-none").with_query(QUERY),
        ctx("notes-many").with_query(QUERY),
    );
    for ctx in [&without, &with] {
        let pair = [
            MemoryUpdate::replace(Store::Memory, text_of_size(4 * 1024)),
            MemoryUpdate::replace(Store::User, "Name: Bench. Prefers short answers."),
        ];
        provider.sync(ctx, &pair, &IfMatch::NONE).await?;
    }
    const CREATES_PER_CALL: usize = 100;
    for first in (0..count).step_by(CREATES_PER_CALL) {
        let creates: Vec<MemoryUpdate> = (first..count.min(first + CREATES_PER_CALL))
            .map(|i| {
                let name = format!("topic-{:02}/note-{i:05}.md", i % 50);
                MemoryUpdate::create(
                    Store::Memory,
                    path(&name),
                    format!("# Note {i}\n{}", entry(i)),
                )
            })
            .collect();
        provider.sync(&with, &creates, &IfMatch::NONE).await?;
    }
    let scope = with.document(Store::Memory).scope();
    let mut listing = Samples::default();
    let listed = provider.notes(&scope, "").await?.len();
    for _ in 0..samples {
        listing.time(provider.notes(&scope, "")).await?;
    }
    for _ in 0..samples.min(10) {
        provider.prefetch(&without).await?;
        provider.prefetch(&with).await?;
    }
    let (mut prefetch_without, mut prefetch_with) = (Samples::default(), Samples::default());
    for _ in 0..samples {
        prefetch_without.time(provider.prefetch(&without)).await?;
        prefetch_with.time(provider.prefetch(&with)).await?;
    }
    Ok(NotesMeasured {
        document_add,
        note_add,
        listed,
        listing,
        prefetch_without,
        prefetch_with,
    })
}
