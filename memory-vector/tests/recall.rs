//! Recall through the real embedding model: what a query picks, scopes, and the index's life
//! (rebuilt from nothing, re-embedded for another model, following removals, hand edits and
//! writers that are not this provider, failing without failing writes or hiding entries, and
//! kept small by processes that live for one call).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use memory_core::{
    IfMatch, MemoryContext, MemoryError, MemoryProvider, MemoryScope, MemoryUpdate, PersonalityId,
    Store, Surface, UserId,
};
use memory_markdown::MarkdownProvider;
use memory_vector::{
    Embedder, ModelConfig, ModelName, Ranking, RecallConfig, VectorProvider, entries,
};
use tempfile::TempDir;

fn embedder() -> Arc<Embedder> {
    static EMBEDDER: OnceLock<Arc<Embedder>> = OnceLock::new();
    Arc::clone(EMBEDDER.get_or_init(|| {
        Arc::new(Embedder::load(&ModelConfig::from_env()).unwrap_or_else(|err| panic!("{err}")))
    }))
}

fn ctx(personality: &str, user: &str) -> MemoryContext {
    MemoryContext::new(
        PersonalityId::new(personality).unwrap(),
        UserId::new(user).unwrap(),
    )
}

/// A provider ranking `k` entries, with a catch-up budget no loaded machine runs out of: the
/// tests that open it assert what ranking shows, not how long a first catch-up may take
/// (past the budget every entry is shown unranked, which tests with small budgets assert).
async fn open(dir: &Path, embedder: Arc<Embedder>, k: usize) -> VectorProvider {
    let recall = RecallConfig {
        k,
        catch_up_ms: 60_000,
        ..RecallConfig::default()
    };
    open_with(dir, embedder, recall).await
}

async fn open_with(dir: &Path, embedder: Arc<Embedder>, recall: RecallConfig) -> VectorProvider {
    let source = Arc::new(MarkdownProvider::new(dir.join("memory")));
    VectorProvider::open(source, &dir.join("index"), embedder, recall)
        .await
        .unwrap()
}

/// Adds `notes` to MEMORY.md and waits for the index to follow.
async fn add_all(p: &VectorProvider, c: &MemoryContext, notes: &[&str]) {
    add_all_unsettled(p, c, notes).await;
    assert_eq!(p.settle().await, Vec::<String>::new());
}

async fn add_all_unsettled(p: &VectorProvider, c: &MemoryContext, notes: &[&str]) {
    let updates: Vec<_> = notes
        .iter()
        .map(|note| MemoryUpdate::add(Store::Memory, *note))
        .collect();
    let report = p.sync(c, &updates, &IfMatch::NONE).await.unwrap();
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

/// The `## Memory` section of a query's prefetch, and its warnings.
async fn recalled(p: &VectorProvider, c: &MemoryContext, query: &str) -> (String, Vec<String>) {
    let seen = p.prefetch(&c.clone().with_query(query)).await.unwrap();
    let context = seen.context.unwrap_or_default();
    let memory = context.split("## Memory\n\n").nth(1).unwrap_or_default();
    (memory.to_owned(), seen.warnings)
}

const NOTES: [&str; 12] = [
    "Grace's passport expires in March 2027; renew it before the Lisbon trip.",
    "Prefers aisle seats on flights longer than two hours.",
    "Allergic to shellfish: no shrimp, crab or lobster.",
    "Her daughter Maya starts school on 4 September.",
    "Dentist appointment moved to Tuesday 14:30 at Dr. Okafor's.",
    "Works from home on Mondays and Fridays.",
    "Favourite coffee: flat white with oat milk.",
    "The Lisbon trip is 12 to 19 May, hotel booked in Alfama.",
    "Car insurance renews on 1 July with Allianz, policy AZ-77120.",
    "Runs 5 km on Saturday mornings along the canal.",
    "Wants reminders the evening before any early meeting.",
    "Piano lessons for Maya every Thursday at 17:00.",
];

/// A query renders the best-matching entries only, in document order, with USER.md in full.
#[tokio::test(flavor = "multi_thread")]
async fn a_query_renders_the_matching_entries_in_document_order() {
    let dir = TempDir::new().unwrap();
    let p = open(dir.path(), embedder(), 3).await;
    let c = ctx("ada", "grace");
    add_all(&p, &c, &NOTES).await;
    p.sync(
        &c,
        &[MemoryUpdate::add(Store::User, "Name: Grace.")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();

    let asked = c
        .clone()
        .with_query("what can't I eat at the seafood restaurant?");
    let context = p.prefetch(&asked).await.unwrap().context.unwrap();
    assert!(
        context.starts_with("## About You\n\nName: Grace.\n\n## Memory\n\n"),
        "{context}"
    );
    assert!(context.contains("Allergic to shellfish"), "{context}");
    let memory = context.split("## Memory\n\n").nth(1).unwrap();
    assert_eq!(entries(memory).len(), 3, "k entries: {memory}");
    let positions: Vec<usize> = entries(memory)
        .iter()
        .map(|e| {
            NOTES
                .iter()
                .position(|n| *n == e.text)
                .expect("a whole entry")
        })
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "document order: {positions:?}"
    );

    let whole = p.prefetch(&c).await.unwrap();
    let source = MarkdownProvider::new(dir.path().join("memory"));
    assert_eq!(
        whole,
        source.prefetch(&c).await.unwrap(),
        "no query: exactly the source"
    );
}

/// Recall never crosses personalities or users, even when another's entry is the best match:
/// not another personality's MEMORY.md, not the global one, not another user's USER.md.
#[tokio::test(flavor = "multi_thread")]
async fn queries_never_return_another_personalitys_or_users_entries() {
    let dir = TempDir::new().unwrap();
    let p = open(dir.path(), embedder(), 2).await;
    let (ada, bob) = (ctx("ada", "grace"), ctx("bob", "grace"));
    let global = ctx("cyd", "grace").with_scope(MemoryScope::Global);
    let ada_note = "When does my passport expire? In March 2027.";
    let global_note = "When does my passport expire? In April 2028.";
    add_all(&p, &ada, &[ada_note]).await;
    add_all(&p, &global, &[global_note]).await;
    p.sync(
        &ctx("bob", "alan"),
        &[MemoryUpdate::add(
            Store::User,
            "When does my passport expire? In May 2029.",
        )],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    add_all(&p, &bob, &NOTES[1..]).await;
    add_all(&p, &bob, &["Passport photos are in the top desk drawer."]).await;

    let query = "when does my passport expire?";
    let foreign = [ada_note, global_note].map(|note| entries(note)[0].hash.clone());
    for ranking in [Ranking::Vector, Ranking::FullText, Ranking::Hybrid] {
        let found = p
            .recall(&bob.document(Store::Memory), query, ranking, 20)
            .await
            .unwrap();
        assert!(
            !found.is_empty(),
            "{ranking:?} finds bob's own passport entry"
        );
        for hash in &foreign {
            assert!(!found.contains(hash), "{ranking:?} leaked {hash}");
        }
    }
    let context = p
        .prefetch(&bob.clone().with_query(query))
        .await
        .unwrap()
        .context
        .unwrap();
    for leaked in ["2027", "2028", "2029"] {
        assert!(!context.contains(leaked), "{context}");
    }
}

/// Deleting the index loses nothing: `reindex` rebuilds it from the source, with the same
/// results.
#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_index_is_rebuilt_by_reindex_with_the_same_results() {
    let dir = TempDir::new().unwrap();
    let c = ctx("ada", "grace");
    let query = "which seat does she like on a plane?";
    let before = {
        let p = open(dir.path(), embedder(), 3).await;
        add_all(&p, &c, &NOTES).await;
        p.recall(&c.document(Store::Memory), query, Ranking::Hybrid, 5)
            .await
            .unwrap()
    };
    std::fs::remove_dir_all(dir.path().join("index")).unwrap();
    let p = open(dir.path(), embedder(), 3).await;
    assert!(p.index_status().await.unwrap().rows.is_empty());
    let mut progress = Vec::new();
    let indexed = p
        .reindex_with_progress(|done, total| progress.push((done, total)))
        .await
        .unwrap();
    assert_eq!(indexed, 1);
    assert_eq!(progress, [(0, 1), (1, 1)]);
    let after = p
        .recall(&c.document(Store::Memory), query, Ranking::Hybrid, 5)
        .await
        .unwrap();
    assert_eq!(after, before);
    assert_eq!(
        p.index_status().await.unwrap().rows["personalities/ada/MEMORY.md"],
        NOTES.len()
    );
}

/// An index built by another model is detected on open and re-embedded, never mixed.
#[tokio::test(flavor = "multi_thread")]
async fn another_models_index_is_detected_and_reembedded() {
    let dir = TempDir::new().unwrap();
    let c = ctx("ada", "grace");
    let original = embedder();
    {
        let p = open(dir.path(), Arc::clone(&original), 3).await;
        add_all(&p, &c, &NOTES[..4]).await;
        assert_eq!(p.index_status().await.unwrap().models, [original.id()]);
    }
    let renamed = Arc::new(
        Embedder::load(&ModelConfig::from_env())
            .unwrap()
            .with_id("all-MiniLM-L6-v2/grace's fine-tune"),
    );
    let p = open(dir.path(), renamed, 3).await;
    let status = p.index_status().await.unwrap();
    assert_eq!(status.models, ["all-MiniLM-L6-v2/grace's fine-tune"]);
    assert_eq!(status.rows["personalities/ada/MEMORY.md"], 4);
}

/// Entries removed from the file leave the index with the sync that removed them.
#[tokio::test(flavor = "multi_thread")]
async fn removed_entries_disappear_from_recall() {
    let dir = TempDir::new().unwrap();
    let p = open(dir.path(), embedder(), 3).await;
    let c = ctx("ada", "grace");
    add_all(&p, &c, &NOTES).await;
    let doc = c.document(Store::Memory);
    let query = "shellfish allergy";
    let hash = |text: &str| entries(text)[0].hash.clone();
    let found = p.recall(&doc, query, Ranking::Hybrid, 3).await.unwrap();
    assert!(found.contains(&hash(NOTES[2])));
    p.sync(
        &c,
        &[MemoryUpdate::remove(Store::Memory, "shellfish")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    assert!(p.settle().await.is_empty());
    let found = p.recall(&doc, query, Ranking::Hybrid, 20).await.unwrap();
    assert!(!found.contains(&hash(NOTES[2])));
    assert_eq!(
        p.index_status().await.unwrap().rows[&doc.relative_path()],
        NOTES.len() - 1
    );
}

/// A paragraph appended to MEMORY.md in an editor is recalled by the very next query, through
/// `prefetch` and `memory_search` alike, with no write through this provider in between.
#[tokio::test(flavor = "multi_thread")]
async fn a_hand_appended_paragraph_is_recalled_by_the_next_query() {
    use memory_core::Recall;
    let dir = TempDir::new().unwrap();
    let p = open(dir.path(), embedder(), 3).await;
    let c = ctx("ada", "grace");
    add_all(&p, &c, &NOTES).await;
    let doc = c.document(Store::Memory);
    let file = dir.path().join("memory").join(doc.relative_path());
    let append = |extra: &str| {
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, format!("{text}\n{extra}\n")).unwrap();
    };

    append("The wifi password is in the blue binder.");
    let (memory, warnings) = recalled(&p, &c, "where is the wifi password?").await;
    assert!(memory.contains("blue binder"), "{memory}");
    assert_eq!(entries(&memory).len(), 3);
    assert!(warnings.is_empty(), "{warnings:?}");

    append("Plays the cello in a community orchestra.");
    let found = p.search(&doc, "string instrument", 3).await.unwrap();
    assert_eq!(
        found.ranked[0].text,
        "Plays the cello in a community orchestra."
    );
    assert!(
        found.unranked.is_empty() && found.behind.is_none(),
        "{found:?}"
    );

    // A hand edit that removes a paragraph takes it out of recall just as fast.
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace("The wifi password is in the blue binder.\n", ""),
    )
    .unwrap();
    let (memory, _) = recalled(&p, &c, "where is the wifi password?").await;
    assert!(!memory.contains("blue binder"), "{memory}");
}

/// Memory written by anything but this provider (a plain markdown wiring, another process, a
/// `memory migrate`) is recalled: ten entries that the index has never seen.
#[tokio::test(flavor = "multi_thread")]
async fn memory_written_by_a_plain_provider_is_recalled() {
    let dir = TempDir::new().unwrap();
    let c = ctx("bob", "grace");
    let plain = MarkdownProvider::new(dir.path().join("memory"));
    let trains = "Takes the 7:42 train to work; prefers the quiet carriage.";
    let notes: Vec<&str> = NOTES[..9].iter().copied().chain([trains]).collect();
    let updates: Vec<_> = notes
        .iter()
        .map(|note| MemoryUpdate::add(Store::Memory, *note))
        .collect();
    plain.sync(&c, &updates, &IfMatch::NONE).await.unwrap();

    // A budget no loaded machine runs out of: the subject here is what the index has never
    // seen, not how long catching up may take (past the budget every entry is shown).
    let patient = RecallConfig {
        k: 3,
        catch_up_ms: 60_000,
        ..RecallConfig::default()
    };
    let p = open_with(dir.path(), embedder(), patient).await;
    let (memory, warnings) = recalled(&p, &c, "trains").await;
    assert!(memory.contains(trains), "{memory}");
    assert_eq!(entries(&memory).len(), 3);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        p.index_status().await.unwrap().rows[&c.document(Store::Memory).relative_path()],
        10
    );
}

/// A process that ends right after its write was acknowledged (the runtime stops, so the
/// index never catches up: as a crash between the source write and the index update) loses
/// nothing from the next prefetch, nor does a coverage record lost or damaged after it.
#[test]
fn a_crash_between_the_source_write_and_the_index_loses_nothing() {
    let dir = TempDir::new().unwrap();
    let c = ctx("ada", "grace");
    let late = "The spare key is under the third flowerpot.";
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    runtime().block_on(async {
        let p = open(dir.path(), embedder(), 3).await;
        add_all(&p, &c, &NOTES).await;
        add_all_unsettled(&p, &c, &[late]).await;
        // The runtime is dropped here with the catch-up at best half done.
    });
    runtime().block_on(async {
        let p = open(dir.path(), embedder(), 3).await;
        let (memory, warnings) = recalled(&p, &c, "where is the spare key?").await;
        assert!(memory.contains("third flowerpot"), "{memory}");
        assert!(warnings.is_empty(), "{warnings:?}");
    });
    std::fs::write(dir.path().join("index/coverage.json"), "{ damaged").unwrap();
    runtime().block_on(async {
        let p = open(dir.path(), embedder(), 3).await;
        let (memory, _) = recalled(&p, &c, "shellfish allergy").await;
        assert!(memory.contains("Allergic to shellfish"), "{memory}");
        let rows = p.index_status().await.unwrap().rows;
        assert_eq!(
            rows[&c.document(Store::Memory).relative_path()],
            NOTES.len() + 1
        );
    });
}

/// A query that cannot wait for the index (another process holds the index lock here, as a
/// long `memory reindex` would) answers within its budget, shows every entry the index has not
/// covered, and says so; once the index is free, the next query is ranked.
#[tokio::test(flavor = "multi_thread")]
async fn a_query_past_its_budget_shows_what_the_index_has_not_covered() {
    use memory_core::Recall;
    let dir = TempDir::new().unwrap();
    let c = ctx("ada", "grace");
    let plain = MarkdownProvider::new(dir.path().join("memory"));
    let updates: Vec<_> = NOTES
        .iter()
        .map(|note| MemoryUpdate::add(Store::Memory, *note))
        .collect();
    plain.sync(&c, &updates, &IfMatch::NONE).await.unwrap();
    let impatient = RecallConfig {
        k: 3,
        catch_up_ms: 100,
        ..RecallConfig::default()
    };
    let p = open_with(dir.path(), embedder(), impatient).await;
    let other_process = hold_index_lock(dir.path());

    let started = std::time::Instant::now();
    let (memory, warnings) = recalled(&p, &c, "shellfish allergy").await;
    // The lock is held until the end of the test, so answering at all shows the query did not
    // wait for it; the bound leaves room for the query's own work on a loaded machine (a full
    // test run once took over 2 s here with e5).
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(entries(&memory).len(), NOTES.len(), "every entry: {memory}");
    assert!(
        warnings.len() == 1 && warnings[0].contains("still catching up"),
        "{warnings:?}"
    );
    drop(other_process);
    assert!(p.settle().await.is_empty());
    let (memory, warnings) = recalled(&p, &c, "shellfish allergy").await;
    assert_eq!(entries(&memory).len(), 3);
    assert!(memory.contains("Allergic to shellfish") && warnings.is_empty());

    // Behind again by a hand edit: search ranks what is indexed and lists the rest.
    let other_process = hold_index_lock(dir.path());
    let doc = c.document(Store::Memory);
    let file = dir.path().join("memory").join(doc.relative_path());
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        format!("{text}\nThe boiler is serviced every October.\n"),
    )
    .unwrap();
    let found = p.search(&doc, "shellfish allergy", 2).await.unwrap();
    assert_eq!(found.ranked.len(), 2);
    assert_eq!(
        texts(&found.unranked),
        ["The boiler is serviced every October."]
    );
    assert!(found.behind.is_some());
    drop(other_process);
    assert!(p.settle().await.is_empty());
}

/// A query's embedding does not wait for a catch-up's: while a long one runs, a query is
/// embedded between two of its batches and returns before it ends.
#[test]
fn a_query_is_embedded_ahead_of_a_long_catch_up() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let model = embedder();
    // 20 batches: seconds of embedding on either model, where the query waits for one.
    let texts: Vec<String> = (0..640)
        .map(|i| {
            format!(
                "Entry {i}: the delivery for order {} arrives on day {}.",
                i * 13,
                i % 28
            )
        })
        .collect();
    let done = Arc::new(AtomicBool::new(false));
    let catching_up = {
        let (model, done) = (Arc::clone(&model), Arc::clone(&done));
        std::thread::spawn(move || {
            let vectors = model.embed(&texts).unwrap();
            done.store(true, Ordering::SeqCst);
            vectors.len()
        })
    };
    // Once the catch-up holds the model: the query then arrives while it embeds.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let query = model.embed_query("when does my order arrive?").unwrap();
    assert!(
        !done.load(Ordering::SeqCst),
        "the query waited for the whole catch-up"
    );
    assert_eq!(query.len(), memory_vector::DIMENSIONS);
    assert_eq!(catching_up.join().unwrap(), 640);
}

/// The first queries right after a large sync answer within their catch-up budget plus their
/// own work: the catch-up the sync started goes on embedding in the background, and lets each
/// query's embedding go before its next batch. They rank what is indexed and list the rest, so
/// the entry asked for is there either way.
#[tokio::test(flavor = "multi_thread")]
async fn the_first_query_after_a_large_sync_never_waits_on_the_catch_up() {
    use memory_core::Recall;
    let dir = TempDir::new().unwrap();
    let c = ctx("ada", "grace");
    let budget = RecallConfig {
        k: 5,
        catch_up_ms: 300,
        ..RecallConfig::default()
    };
    let p = open_with(dir.path(), embedder(), budget).await;
    let mut notes: Vec<String> = (0..508)
        .map(|i| {
            format!(
                "Meeting note {i}: the quarterly review of project {} moved to room {}.",
                i * 7,
                i % 40
            )
        })
        .collect();
    notes.push("Allergic to shellfish: no shrimp, crab or lobster.".to_owned());
    let updates: Vec<_> = notes
        .iter()
        .map(|note| MemoryUpdate::add(Store::Memory, note.as_str()))
        .collect();
    p.sync(&c, &updates, &IfMatch::NONE).await.unwrap();

    let doc = c.document(Store::Memory);
    for _ in 0..2 {
        let started = std::time::Instant::now();
        let found = p.search(&doc, "shellfish allergy", 5).await.unwrap();
        let took = started.elapsed();
        // The budget, the query's own embedding and one batch of the catch-up's, and the
        // index's reads: seconds at most, where waiting for the catch-up took 17.
        assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
        let shown: Vec<&String> = found
            .ranked
            .iter()
            .chain(&found.unranked)
            .map(|entry| &entry.text)
            .collect();
        assert!(
            shown
                .iter()
                .any(|entry| entry.contains("Allergic to shellfish")),
            "{found:?}"
        );
    }
    assert!(p.settle().await.is_empty());
    let found = p.search(&doc, "shellfish allergy", 5).await.unwrap();
    assert!(
        found.behind.is_none() && found.unranked.is_empty(),
        "{found:?}"
    );
    assert!(
        found.ranked[0].text.contains("Allergic to shellfish"),
        "{found:?}"
    );
}

/// The index lock as another process would hold it while it writes the index.
fn hold_index_lock(dir: &Path) -> std::fs::File {
    let lock = std::fs::File::options()
        .read(true)
        .write(true)
        .open(dir.join("index/.index.lock"))
        .unwrap();
    lock.lock().unwrap();
    lock
}

/// Queries racing whole rewrites of their document (a consolidation: every paragraph new)
/// never get fewer entries than asked for: a ranking whose rows a catch-up replaced meanwhile
/// is asked again, never answered from the wrong rows.
#[tokio::test(flavor = "multi_thread")]
async fn queries_racing_rewrites_never_show_fewer_entries() {
    let dir = TempDir::new().unwrap();
    let p = Arc::new(open(dir.path(), embedder(), 3).await);
    let c = ctx("ada", "grace");
    let rewrite = |round: usize| {
        let notes: Vec<String> = (0..8)
            .map(|i| {
                format!(
                    "Round {round}, note {i}: the {} plan.",
                    ["travel", "garden", "budget", "music"][i % 4]
                )
            })
            .collect();
        [MemoryUpdate::replace(Store::Memory, notes.join("\n\n"))]
    };
    p.sync(&c, &rewrite(0), &IfMatch::NONE).await.unwrap();
    assert!(p.settle().await.is_empty());
    // The writer rewrites the document until the reader has had its answers.
    let reading = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let writer = {
        let (p, c, reading) = (Arc::clone(&p), c.clone(), Arc::clone(&reading));
        tokio::spawn(async move {
            let mut round = 0;
            while reading.load(std::sync::atomic::Ordering::Relaxed) {
                round += 1;
                p.sync(&c, &rewrite(round), &IfMatch::NONE).await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            round
        })
    };
    // A long query: embedding it is part of the ranking, which widens the window in which a
    // catch-up can replace the rows the ranking trusted.
    let query = "what is the garden plan for this round? ".repeat(30);
    for answer in 0..10 {
        let (memory, _) = recalled(&p, &c, &query).await;
        let shown = entries(&memory).len();
        assert!(
            shown >= 3,
            "answer {answer} shows {shown} entries: {memory:?}"
        );
    }
    reading.store(false, std::sync::atomic::Ordering::Relaxed);
    let rounds = writer.await.unwrap();
    assert!(rounds > 1, "the reads raced {rounds} rewrites");
    assert!(p.settle().await.is_empty());
}

/// Processes that live for one write each (hooks, scripts, `memory sync`) never leave the
/// index to grow a table version per write: housekeeping counts versions on disk, whoever
/// wrote them.
#[tokio::test(flavor = "multi_thread")]
async fn one_shot_writers_keep_the_table_versions_bounded() {
    let dir = TempDir::new().unwrap();
    let c = ctx("ada", "grace");
    for i in 0..60 {
        let p = open(dir.path(), embedder(), 3).await;
        add_all(&p, &c, &[&format!("One-shot note number {i}.")]).await;
    }
    let versions = table_versions_on_disk(&dir.path().join("index"));
    assert!(versions <= 40, "{versions} table versions on disk");
    let p = open(dir.path(), embedder(), 3).await;
    let status = p.index_status().await.unwrap();
    assert_eq!(status.versions_kept, versions);
    assert_eq!(status.rows[&c.document(Store::Memory).relative_path()], 60);
}

fn table_versions_on_disk(index: &Path) -> usize {
    std::fs::read_dir(index.join("entries.lance/_versions"))
        .unwrap()
        .filter(|entry| {
            let name = entry.as_ref().unwrap().file_name();
            name.to_string_lossy().ends_with(".manifest")
        })
        .count()
}

/// An index that cannot be written never fails or undoes the source write, and never hides an
/// entry: the next query shows the whole memory and says why; `settle` reports the failed
/// catch-up; `reindex` repairs it.
#[tokio::test(flavor = "multi_thread")]
async fn a_broken_index_fails_neither_writes_nor_queries() {
    let dir = TempDir::new().unwrap();
    let p = open(dir.path(), embedder(), 1).await;
    let c = ctx("ada", "grace");
    add_all(&p, &c, &NOTES[..2]).await;
    let index = dir.path().join("index");
    std::fs::remove_dir_all(&index).unwrap();
    std::fs::write(&index, "not a directory").unwrap();

    let report = p
        .sync(
            &c,
            &[MemoryUpdate::add(Store::Memory, NOTES[2])],
            &IfMatch::NONE,
        )
        .await
        .expect("the source write succeeds");
    assert!(report.documents[0].written);
    let failures = p.settle().await;
    assert!(
        failures.len() == 1 && failures[0].contains("reindex"),
        "{failures:?}"
    );
    let (memory, warnings) = recalled(&p, &c, "shellfish").await;
    assert_eq!(entries(&memory).len(), 3, "the whole memory: {memory}");
    assert!(!warnings.is_empty());

    std::fs::remove_file(&index).unwrap();
    let p = open(dir.path(), embedder(), 3).await;
    p.reindex().await.unwrap();
    assert_eq!(
        p.index_status().await.unwrap().rows[&c.document(Store::Memory).relative_path()],
        3
    );
}

/// Without the model, either of them: a clear error that names the command fetching it.
#[test]
fn a_missing_model_names_the_command_that_fetches_it() {
    for (name, file) in [
        (ModelName::MiniLm, "model.onnx"),
        (ModelName::E5Small, "e5-small-q4.bin"),
    ] {
        let config = ModelConfig {
            name,
            model_dir: "/nonexistent/model".into(),
            ort_library: None,
        };
        let err = Embedder::load(&config).unwrap_err();
        let missing = format!("/nonexistent/model/{file}");
        assert!(
            matches!(&err, MemoryError::Config { message } if message.contains("./scripts/provision-model") && message.contains(&missing)),
            "{err}"
        );
    }
}

/// The vectors come from the real model: similar sentences are near, unrelated ones far.
#[test]
fn embeddings_come_from_the_real_model() {
    let e = embedder();
    let vectors = e
        .embed(&[
            "the cat sat on the mat".to_owned(),
            "a kitten rests on a rug".to_owned(),
            "quarterly tax filing deadline".to_owned(),
        ])
        .unwrap();
    let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert!(
        vectors
            .iter()
            .all(|v| v.len() == 384 && (cos(v, v) - 1.0).abs() < 1e-3)
    );
    // e5's cosines crowd together (0.87 against 0.76 here; MiniLM's 0.62 against 0.05): the
    // order is what a real model gives.
    let (near, far) = (cos(&vectors[0], &vectors[1]), cos(&vectors[0], &vectors[2]));
    assert!(near > far + 0.05, "near {near}, far {far}");
}

/// Past `ann_index_rows` entries, `optimize` builds the approximate index, and recall still
/// finds what brute force found.
#[tokio::test(flavor = "multi_thread")]
async fn a_large_index_gets_an_ann_index_and_still_recalls() {
    let dir = TempDir::new().unwrap();
    let source = Arc::new(MarkdownProvider::new(dir.path().join("memory")));
    let recall = RecallConfig {
        ann_index_rows: 500,
        ..RecallConfig::default()
    };
    let p = VectorProvider::open(source, &dir.path().join("index"), embedder(), recall)
        .await
        .unwrap();
    let c = ctx("ada", "grace");
    let filler: Vec<String> = (0..520)
        .map(|i| format!("Routine note {i}: checked the calendar and the inbox, nothing new."))
        .collect();
    let mut notes: Vec<&str> = filler.iter().map(String::as_str).collect();
    notes.extend(NOTES);
    add_all(&p, &c, &notes).await;
    let doc = c.document(Store::Memory);
    let query = "what is she allergic to?";
    let exact = p.recall(&doc, query, Ranking::Vector, 3).await.unwrap();
    assert!(!p.index_status().await.unwrap().ann_index);

    p.optimize().await.unwrap();
    assert!(p.index_status().await.unwrap().ann_index);
    let approximate = p.recall(&doc, query, Ranking::Vector, 3).await.unwrap();
    assert_eq!(
        approximate[0], exact[0],
        "the best match survives the approximation"
    );
    assert_eq!(exact[0], entries(NOTES[2])[0].hash);
}

/// The full-text index is built by the first query; entries written after it are found by
/// full text straight away, before any `optimize` folds them into the index.
#[tokio::test(flavor = "multi_thread")]
async fn entries_written_after_the_full_text_index_are_found_by_full_text() {
    let dir = TempDir::new().unwrap();
    let p = open(dir.path(), embedder(), 3).await;
    let c = ctx("ada", "grace");
    add_all(&p, &c, &NOTES).await;
    let doc = c.document(Store::Memory);
    let found = p.recall(&doc, "Allianz policy", Ranking::FullText, 3).await;
    assert_eq!(found.unwrap()[0], entries(NOTES[8])[0].hash);

    let late = "The locker code at the gym is QX-4471.";
    add_all(&p, &c, &[late]).await;
    let found = p
        .recall(&doc, "QX-4471", Ranking::FullText, 3)
        .await
        .unwrap();
    assert_eq!(found.first(), Some(&entries(late)[0].hash), "{found:?}");
}

/// `Recall::search` (what `memory_search` calls) gives the current text of the best entries of
/// the one document asked about, and never an entry the document no longer holds.
#[tokio::test(flavor = "multi_thread")]
async fn search_returns_the_current_text_of_the_best_entries_of_one_document() {
    use memory_core::Recall;
    let dir = TempDir::new().unwrap();
    let p = open(dir.path(), embedder(), 3).await;
    let (ada, bob) = (ctx("ada", "grace"), ctx("bob", "grace"));
    add_all(&p, &ada, &NOTES).await;
    add_all(&p, &bob, &["Prefers window seats on every flight."]).await;
    let query = "which seat does she like on a plane?";

    let found = p
        .search(&ada.document(Store::Memory), query, 2)
        .await
        .unwrap();
    assert_eq!(found.ranked.len(), 2);
    assert_eq!(found.ranked[0].text, NOTES[1]);
    assert!(
        found
            .ranked
            .iter()
            .all(|entry| NOTES.contains(&entry.text.as_str()))
    );
    assert!(found.unranked.is_empty() && found.behind.is_none());

    p.sync(
        &ada,
        &[MemoryUpdate::remove(Store::Memory, "aisle seats")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let after = p
        .search(&ada.document(Store::Memory), query, 12)
        .await
        .unwrap()
        .ranked;
    assert!(
        !after.iter().any(|entry| entry.text.contains("aisle")),
        "{after:?}"
    );
    assert!(
        !after.iter().any(|entry| entry.text.contains("window")),
        "{after:?}"
    );
}

/// `MEMORY.md` as `text`, written at its markdown path as an editor would, never through a
/// provider.
fn write_by_hand(dir: &Path, c: &MemoryContext, text: &str) {
    let file = dir
        .join("memory")
        .join(c.document(Store::Memory).relative_path());
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
}

const BULLETS: &str = "# Memory

## Travel
- Window seat on trains.
- Aisle seat on flights longer than two hours.
- Passport expires in March 2027.
- Hotel in Alfama booked for the Lisbon trip, 12 to 19 May.
- Always packs a plug adapter.

## Health
- Dentist appointment with Dr. Okafor on Tuesday at 14:30.
- Allergic to shellfish: no shrimp, crab or lobster.
- Takes vitamin D through the winter.
- Runs 5 km on Saturday mornings along the canal.
- Physiotherapy for the left knee every other Friday.

## Money
- Files the tax return every April with an accountant.
- Car insurance renews on 1 July with Allianz.
- Pays the rent on the first of the month.
- Saving for a new bicycle.

## Home
* Bakes sourdough bread on Sundays.
* The boiler is serviced every October.
* Waters the ferns on Wednesdays.
* The spare key is under the third flowerpot.
* Recycling goes out on Thursday night.
";

/// A bullet list, as people write MEMORY.md by hand: each bullet is an entry, so a query gets
/// the one bullet it is about (not its whole list), rendered under its heading.
#[tokio::test(flavor = "multi_thread")]
async fn a_query_gets_one_bullet_of_a_list_under_its_heading() {
    use memory_core::Recall;
    let dir = TempDir::new().unwrap();
    let c = ctx("ada", "grace");
    write_by_hand(dir.path(), &c, BULLETS);
    assert_eq!(entries(BULLETS).len(), 19);
    let p = open(dir.path(), embedder(), 3).await;
    let query = "which seat do I want on the train?";

    let found = p
        .search(&c.document(Store::Memory), query, 3)
        .await
        .unwrap();
    assert_eq!(
        found.ranked[0].text, "- Window seat on trains.",
        "{found:?}"
    );
    assert!(
        found.ranked.iter().all(|entry| !entry.text.contains('\n')),
        "one bullet per entry: {found:?}"
    );

    let (memory, warnings) = recalled(&p, &c, query).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    // The first bullet of the first section: in document order it comes first, with its heading.
    assert!(
        memory.starts_with("## Travel\n- Window seat on trains.\n"),
        "{memory}"
    );
    let bullets = memory
        .lines()
        .filter(|line| line.starts_with("- ") || line.starts_with("* "))
        .count();
    assert_eq!(bullets, 3, "k bullets, not the list: {memory}");
    assert_eq!(entries(&memory).len(), 3, "{memory}");
}

/// A Hermes-style file, its entries separated by lines `§`: a query gets the one entry it is
/// about.
#[tokio::test(flavor = "multi_thread")]
async fn a_query_gets_one_entry_of_a_section_sign_file() {
    use memory_core::Recall;
    let dir = TempDir::new().unwrap();
    let c = ctx("ada", "grace");
    let notes = [
        "Prefers a window seat on trains.",
        "Dentist appointment with Dr. Okafor on Tuesday at 14:30.",
        "Files the tax return every April with an accountant.",
        "Bakes sourdough bread on Sundays.",
        "The boiler is serviced every October.",
        "Piano lessons for Maya every Thursday at 17:00.",
        "Car insurance renews on 1 July with Allianz.",
        "Runs 5 km on Saturday mornings along the canal.",
    ];
    write_by_hand(dir.path(), &c, &(notes.join("\n§\n") + "\n"));
    let p = open(dir.path(), embedder(), 2).await;
    let query = "when do I see the dentist?";

    let found = p
        .search(&c.document(Store::Memory), query, 2)
        .await
        .unwrap();
    assert_eq!(found.ranked[0].text, notes[1], "{found:?}");
    assert!(
        found
            .ranked
            .iter()
            .all(|entry| notes.contains(&entry.text.as_str()))
    );

    let (memory, warnings) = recalled(&p, &c, query).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(memory.contains(notes[1]), "{memory}");
    assert!(!memory.contains('§'), "{memory}");
    assert_eq!(entries(&memory).len(), 2, "{memory}");
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if std::fs::read(&path)
                .unwrap()
                .windows(needle.len())
                .any(|window| window == needle.as_bytes())
            {
                found.push(path);
            }
        }
    }
    found
}

/// A purge takes the document's entries out of the index and off the disk, with its source
/// document and history; other documents keep theirs.
#[tokio::test(flavor = "multi_thread")]
async fn a_purge_erases_the_index_rows_too() {
    let dir = TempDir::new().unwrap();
    let p = open(dir.path(), embedder(), 3).await;
    let (ada, bob) = (ctx("ada", "grace"), ctx("bob", "grace"));
    add_all(&p, &ada, &NOTES).await;
    add_all(&p, &bob, &NOTES[..2]).await;
    let index = dir.path().join("index");
    assert!(
        !files_holding(&index, "AZ-77120").is_empty(),
        "indexed first"
    );

    let doc = ada.document(Store::Memory);
    let purged = p.purge(&doc, Surface::Cli).await.unwrap();
    assert_eq!(purged.revisions, 1);
    let rows = p.index_status().await.unwrap().rows;
    assert_eq!(rows.get(&doc.relative_path()).copied().unwrap_or(0), 0);
    assert_eq!(rows[&bob.document(Store::Memory).relative_path()], 2);
    assert_eq!(
        files_holding(&index, "AZ-77120"),
        Vec::<std::path::PathBuf>::new()
    );
    assert!(files_holding(&dir.path().join("memory"), "AZ-77120").is_empty());
    let (memory, _) = recalled(&p, &ada, "car insurance").await;
    assert_eq!(memory, "", "nothing is recalled of a purged memory");
}

/// Recall follows a revert like any write: the entries it brings back are found again.
#[tokio::test(flavor = "multi_thread")]
async fn recall_follows_a_revert() {
    let dir = TempDir::new().unwrap();
    let p = open(dir.path(), embedder(), 3).await;
    let c = ctx("ada", "grace");
    add_all(&p, &c, &NOTES).await;
    p.sync(
        &c,
        &[MemoryUpdate::replace(
            Store::Memory,
            "Consolidated: nothing left.",
        )],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    assert!(p.settle().await.is_empty());
    let (memory, _) = recalled(&p, &c, "shellfish allergy").await;
    assert!(!memory.contains("shellfish"), "{memory}");

    let doc = c.document(Store::Memory);
    let before = p.history(&doc, 2).await.unwrap()[1].number;
    p.revert(&c, Store::Memory, before, None).await.unwrap();
    assert!(p.settle().await.is_empty());
    let (memory, _) = recalled(&p, &c, "shellfish allergy").await;
    assert!(memory.contains("Allergic to shellfish"), "{memory}");
}

/// The texts of `entries`, in order.
fn texts(entries: &[memory_core::RecalledEntry]) -> Vec<&str> {
    entries.iter().map(|entry| entry.text.as_str()).collect()
}

/// The notes beside MEMORY.md are ranked with its entries: a query finds an entry of a note
/// (written through the provider, or by hand), names the note in prefetch and in search, and
/// never shows a note's entry once the note is deleted or renamed away.
#[tokio::test(flavor = "multi_thread")]
async fn notes_are_ranked_with_memory_and_named() {
    use memory_core::{NotePath, Recall};
    let dir = TempDir::new().unwrap();
    let c = ctx("ada", "grace");
    let p = open(dir.path(), embedder(), 3).await;
    add_all(&p, &c, &NOTES).await;
    let path = |path: &str| NotePath::new(path).unwrap();
    let kyoto = "Kyoto: stay in a ryokan near Gion and see the temples of Higashiyama.";
    let write = async |update: MemoryUpdate| {
        p.sync(&c, &[update], &IfMatch::NONE).await.unwrap();
    };
    write(MemoryUpdate::create(
        Store::Memory,
        path("trips/kyoto.md"),
        format!("# Kyoto\n\n{kyoto}\n\nBudget: 2,000 euros."),
    ))
    .await;
    assert!(p.settle().await.is_empty());
    let (memory, warnings) = recalled(&p, &c, "ryokan temples in Kyoto").await;
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(
        memory.contains(&format!("From memory/trips/kyoto.md:\n# Kyoto\n{kyoto}")),
        "the note's entry, named, under its heading: {memory}"
    );
    let memory_md = c.document(Store::Memory);
    let found = p
        .search(&memory_md, "ryokan temples in Kyoto", 3)
        .await
        .unwrap();
    assert_eq!(found.ranked[0].text, kyoto, "{found:?}");
    assert_eq!(found.ranked[0].note, Some(path("trips/kyoto.md")));
    assert!(
        found.ranked[1..]
            .iter()
            .all(|entry| entry.note.is_none() || entry.text.contains("2,000")),
        "{found:?}"
    );
    // MEMORY.md's entries still rank where they match best.
    let found = p.search(&memory_md, "shellfish allergy", 1).await.unwrap();
    assert_eq!(found.ranked[0].text, NOTES[2]);
    assert_eq!(found.ranked[0].note, None);

    // A note written by hand: the next query catches up with it (no write told the index).
    let scope = memory_md.scope();
    let by_hand = dir
        .path()
        .join("memory")
        .join(scope.note(path("pets.md")).relative_path());
    std::fs::write(&by_hand, "The cat, Miso, eats wet food twice a day.\n").unwrap();
    let found = p
        .search(&memory_md, "what does the cat eat", 1)
        .await
        .unwrap();
    assert_eq!(
        (found.ranked[0].text.as_str(), found.ranked[0].note.clone()),
        (
            "The cat, Miso, eats wet food twice a day.",
            Some(path("pets.md"))
        ),
        "{found:?}"
    );

    // Renamed: named by its new path. Deleted: gone.
    write(MemoryUpdate::rename(
        Store::Memory,
        path("trips/kyoto.md"),
        path("japan/kyoto.md"),
    ))
    .await;
    let found = p
        .search(&memory_md, "ryokan temples in Kyoto", 1)
        .await
        .unwrap();
    assert_eq!(
        found.ranked[0].note,
        Some(path("japan/kyoto.md")),
        "{found:?}"
    );
    write(MemoryUpdate::delete(Store::Memory, path("japan/kyoto.md"))).await;
    let found = p
        .search(&memory_md, "ryokan temples in Kyoto", 3)
        .await
        .unwrap();
    assert!(
        found
            .ranked
            .iter()
            .all(|entry| !entry.text.contains("ryokan")),
        "{found:?}"
    );
    let (memory, _) = recalled(&p, &c, "ryokan temples in Kyoto").await;
    assert!(!memory.contains("From memory/"), "{memory}");
    assert!(p.settle().await.is_empty());
}

/// A note the index cannot catch up with in time (another process holds the index lock) is
/// shown whole, unranked and named, with a warning: recall never shows less than the notes
/// hold.
#[tokio::test(flavor = "multi_thread")]
async fn a_note_the_index_is_behind_on_is_shown_unranked() {
    use memory_core::{NotePath, Recall};
    let dir = TempDir::new().unwrap();
    let c = ctx("ada", "grace");
    let impatient = RecallConfig {
        k: 3,
        catch_up_ms: 100,
        ..RecallConfig::default()
    };
    let p = open_with(dir.path(), embedder(), impatient).await;
    add_all(&p, &c, &NOTES).await;
    let other_process = hold_index_lock(dir.path());
    let note = NotePath::new("garden.md").unwrap();
    p.sync(
        &c,
        &[MemoryUpdate::create(
            Store::Memory,
            note.clone(),
            "Water the tomatoes every evening.\n\nThe shed key is under the blue pot.",
        )],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let (memory, warnings) = recalled(&p, &c, "shellfish allergy").await;
    assert!(
        memory.contains(
            "From memory/garden.md:\nWater the tomatoes every evening.\n\nThe shed key is under the blue pot."
        ),
        "{memory}"
    );
    assert!(
        warnings.len() == 1 && warnings[0].contains("still catching up with 1 note beside"),
        "{warnings:?}"
    );
    let found = p
        .search(&c.document(Store::Memory), "shellfish allergy", 2)
        .await
        .unwrap();
    assert_eq!(texts(&found.unranked).len(), 2, "{found:?}");
    assert!(
        found
            .unranked
            .iter()
            .all(|entry| entry.note == Some(note.clone()))
    );
    assert!(found.behind.is_some());
    drop(other_process);
    assert!(p.settle().await.is_empty());
    let (memory, warnings) = recalled(&p, &c, "shellfish allergy").await;
    assert!(
        warnings.is_empty() && !memory.contains("From memory/garden.md"),
        "{memory}"
    );
}

/// A markdown source that counts the listings of each scope (`notes` and `newest_notes`).
struct CountsListings {
    inner: MarkdownProvider,
    listings: std::sync::Mutex<Vec<memory_core::NoteScope>>,
}

impl CountsListings {
    fn of(&self, scope: &memory_core::NoteScope) -> usize {
        let listings = self.listings.lock().unwrap();
        listings.iter().filter(|listed| *listed == scope).count()
    }

    fn listed(&self, scope: &memory_core::NoteScope) {
        self.listings.lock().unwrap().push(scope.clone());
    }
}

#[async_trait::async_trait]
impl MemoryProvider for CountsListings {
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<memory_core::Prefetch, MemoryError> {
        self.inner.prefetch(ctx).await
    }

    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<memory_core::SyncReport, MemoryError> {
        self.inner.sync(ctx, updates, if_match).await
    }

    async fn read(
        &self,
        document: &memory_core::DocumentId,
    ) -> Result<memory_core::Document, MemoryError> {
        self.inner.read(document).await
    }

    async fn list(&self) -> Result<Vec<memory_core::DocumentId>, MemoryError> {
        self.inner.list().await
    }

    async fn notes(
        &self,
        scope: &memory_core::NoteScope,
        prefix: &str,
    ) -> Result<Vec<memory_core::NoteMeta>, MemoryError> {
        self.listed(scope);
        self.inner.notes(scope, prefix).await
    }

    async fn newest_notes(
        &self,
        scope: &memory_core::NoteScope,
        store: Store,
    ) -> Result<memory_core::NewestNotes, MemoryError> {
        self.listed(scope);
        self.inner.newest_notes(scope, store).await
    }

    async fn history(
        &self,
        document: &memory_core::DocumentId,
        limit: usize,
    ) -> Result<Vec<memory_core::Revision>, MemoryError> {
        self.inner.history(document, limit).await
    }

    async fn purge(
        &self,
        document: &memory_core::DocumentId,
        surface: Surface,
    ) -> Result<memory_core::Purged, MemoryError> {
        self.inner.purge(document, surface).await
    }

    async fn redact(
        &self,
        document: &memory_core::DocumentId,
        number: u64,
    ) -> Result<memory_core::Revision, MemoryError> {
        self.inner.redact(document, number).await
    }

    fn subscribe(&self) -> memory_core::Subscription {
        self.inner.subscribe()
    }
}

/// A prefetch with a query lists the memory scope's notes once, for the ranking and the
/// prompt's index of notes alike, and the user's profile's once; the index names the notes of
/// both.
#[tokio::test(flavor = "multi_thread")]
async fn a_prefetch_lists_each_scope_once_for_recall_and_the_notes_index() {
    use memory_core::NotePath;
    let dir = TempDir::new().unwrap();
    let source = Arc::new(CountsListings {
        inner: MarkdownProvider::new(dir.path().join("memory")),
        listings: std::sync::Mutex::default(),
    });
    let recall = RecallConfig {
        k: 2,
        catch_up_ms: 60_000,
        ..RecallConfig::default()
    };
    let p = VectorProvider::open(
        source.clone(),
        &dir.path().join("index"),
        embedder(),
        recall,
    )
    .await
    .unwrap();
    let c = ctx("ada", "grace");
    add_all(&p, &c, &NOTES).await;
    let path = |path: &str| NotePath::new(path).unwrap();
    let notes = [
        MemoryUpdate::create(
            Store::Memory,
            path("trips/kyoto.md"),
            "# Kyoto\n\nStay in a ryokan near Gion.",
        ),
        MemoryUpdate::create(Store::Memory, path("work/launch.md"), "Launch on 3 March."),
        MemoryUpdate::create(Store::User, path("diet.md"), "Vegetarian since 2019."),
    ];
    p.sync(&c, &notes, &IfMatch::NONE).await.unwrap();
    assert!(p.settle().await.is_empty());

    let (memory_scope, user_scope) = (
        c.document(Store::Memory).scope(),
        c.document(Store::User).scope(),
    );
    let before = (source.of(&memory_scope), source.of(&user_scope));
    let prefetch = p
        .prefetch(&c.clone().with_query("a ryokan in Kyoto"))
        .await
        .unwrap();
    assert_eq!(
        (
            source.of(&memory_scope) - before.0,
            source.of(&user_scope) - before.1
        ),
        (1, 1),
        "one listing per scope"
    );
    assert!(prefetch.warnings.is_empty(), "{:?}", prefetch.warnings);
    let context = prefetch.context.expect("a prompt");
    for named in ["trips/kyoto.md", "work/launch.md", "diet.md"] {
        assert!(context.contains(named), "{named}: {context}");
    }
    assert!(
        context.contains("From memory/trips/kyoto.md:"),
        "the note recalled: {context}"
    );
}
