//! The fault suite (issue 19): writers killed mid-call, and what an idempotency key buys.
//!
//! - `memory sync` processes killed with SIGKILL at random moments while eight writers share
//!   one markdown root, each killed call re-run with the same key until it is acknowledged;
//!   and, for comparison, the same without keys.
//! - In-process PostgreSQL and Redis providers whose server connections a killer keeps
//!   terminating while eight writers make keyed `sync_exactly_once` calls.
//! - A Redis server of the test's own, with an fsync'd append-only file, killed with SIGKILL
//!   and restarted several times mid-run.
//! - A PostgreSQL primary of the test's own killed mid-run and its streaming standby promoted,
//!   with and without synchronous commit.
//!
//! Every test asserts that each acknowledged update is present exactly once, that nothing else
//! is there, and that every document reads whole. (A keyed call resent after 64 other writes
//! to its document, past the receipts a document keeps, may rightly apply again: such a copy
//! is named on stderr, not counted; see `check_document`.) The in-process tests also account
//! for every call the writers gave up on: at most a tenth of the calls may give up (a provider
//! that failed every write would give up on all of them), and once the fault stops each one
//! has landed whole (in every document it was sent to) or not at all, and one that has not is
//! sent again with its key and must be applied, so that every call, not only the acknowledged
//! ones, ends up present exactly once. Each test prints its figures on stderr:
//! `cargo nextest run --workspace -E 'binary(faults)' --no-capture`.
//!
//! The random choices (which calls are killed, when, which also write USER.md) come from a
//! seeded generator whose seed each test prints; `MEMORY_FAULT_SEED=<seed>` replays them (the
//! scheduling of processes and servers still varies from run to run).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use memory_conformance::cases::ctx;
use memory_conformance::proxy::StallingProxy;
use memory_conformance::sentinel::{MASTER_NAME, RedisSentinelSet};
use memory_conformance::services::{SchemaGuard, Service, execute_now, skip_or_fail, unique_name};
use memory_conformance::standby::{PgBouncer, PostgresPair};
use memory_core::raw::{RECEIPTS_KEPT, Receipts};
use memory_core::{
    Document, DocumentId, ErrorKind, IdempotencyKey, IfMatch, MemoryContext, MemoryError,
    MemoryProvider, MemoryUpdate, Prefetch, Store, Subscription, SyncReport, sync_exactly_once,
};
use memory_postgres::{PoolMode, PostgresConfig, PostgresProvider};
use memory_redis::{RedisConfig, RedisProvider, SentinelConfig};
use sqlx::Connection;

/// Concurrent writers in every test.
const WRITERS: usize = 8;
/// Percent of the calls that also add their entry to USER.md (both documents in one call).
const BOTH_DOCUMENTS_PERCENT: u64 = 33;

// ---------------------------------------------------------------------------------------------
// Seeded randomness, figures and the checks every test shares.

/// SplitMix64: a seeded generator good enough to pick calls and delays, with no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn millis(&mut self, range: std::ops::RangeInclusive<u64>) -> Duration {
        Duration::from_millis(range.start() + self.below(range.end() - range.start() + 1))
    }

    /// An independent generator for one writer (or killer), derived from this one.
    fn fork(&mut self) -> Rng {
        Rng(self.next())
    }
}

/// The test's seed: `MEMORY_FAULT_SEED`, else the clock; printed so a failure can be replayed.
fn seeded(test: &str) -> (u64, Rng) {
    let seed = std::env::var("MEMORY_FAULT_SEED")
        .ok()
        .and_then(|seed| seed.trim().parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(1, |since| since.as_nanos() as u64)
        });
    eprintln!("faults/{test}: seed {seed} (MEMORY_FAULT_SEED={seed} replays its choices)");
    (seed, Rng(seed))
}

/// The one-line figures of a test, on stderr.
fn print_figures(test: &str, seed: u64, figures: &[(&str, u64)]) {
    let shown: Vec<String> = figures
        .iter()
        .map(|(name, value)| format!("{name} {value}"))
        .collect();
    eprintln!("FIGURES {test}: {} (seed {seed})", shown.join(", "));
}

/// One logical call: its key, which is also the entry it adds, and whether it adds it to
/// USER.md as well as MEMORY.md.
#[derive(Debug, Clone)]
struct Call {
    key: String,
    both: bool,
}

impl Call {
    fn new(writer: usize, i: usize, rng: &mut Rng) -> Call {
        Call {
            key: format!("w{writer}-{i}"),
            both: rng.chance(BOTH_DOCUMENTS_PERCENT),
        }
    }

    fn updates(&self) -> Vec<MemoryUpdate> {
        let mut updates = vec![MemoryUpdate::add(Store::Memory, &self.key)];
        if self.both {
            updates.push(MemoryUpdate::add(Store::User, &self.key));
        }
        updates
    }

    fn json(&self) -> String {
        serde_json::to_string(&self.updates()).expect("updates serialize")
    }
}

/// What became of one logical call.
#[derive(Debug)]
struct Outcome {
    call: Call,
    acknowledged: bool,
}

/// Where each entry of `text` (a document written only by adds of one-line entries) appears:
/// the positions of its copies, in entries from the top, every entry being one write. Asserts
/// the document reads whole: every entry is a complete line of its own, separated by one blank
/// line, the text ends with one newline, and every entry is one a call sent (`is_sent`), never
/// a fragment or a mix of two.
fn tally(
    location: &str,
    text: &str,
    is_sent: impl Fn(&str) -> bool,
) -> BTreeMap<String, Vec<usize>> {
    let mut copies: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    if text.is_empty() {
        return copies;
    }
    assert!(
        text.ends_with('\n') && !text.ends_with("\n\n"),
        "{location} does not end with one newline: {:?}",
        &text[text.len().saturating_sub(40)..]
    );
    for (position, entry) in text.trim_end_matches('\n').split("\n\n").enumerate() {
        assert!(
            is_sent(entry),
            "{location} holds {entry:?}, which no call sent: a torn or mixed document"
        );
        copies.entry(entry.to_owned()).or_default().push(position);
    }
    copies
}

/// The lost and duplicated figures of one document, for [`assert_exactly_once`]: acknowledged
/// calls that sent to `store` and are missing, and the extra copies of any call's entry (an
/// acknowledged call must be there once, one never acknowledged at most once).
///
/// `keyed`: the calls carried idempotency keys. Each lost or duplicated call is then named on
/// stderr, and a copy made after [`RECEIPTS_KEPT`] or more other writes to the document is
/// named but not counted: its receipt had been pushed out of the document's log, and the
/// contract applies such a repeat again (CONTRACT.md, "Exactly-once writes"). Eight writers
/// on one document can make that many writes while one call is still being resent.
fn check_document(
    location: &str,
    copies: &BTreeMap<String, Vec<usize>>,
    outcomes: &[Outcome],
    store: Store,
    keyed: bool,
) -> (u64, u64) {
    let (mut lost, mut duplicated) = (0, 0);
    for outcome in outcomes {
        if store == Store::User && !outcome.call.both {
            assert!(
                !copies.contains_key(&outcome.call.key),
                "{location} holds {}, which was sent to MEMORY.md only",
                outcome.call.key
            );
            continue;
        }
        let at = copies.get(&outcome.call.key).map_or(&[][..], Vec::as_slice);
        if outcome.acknowledged && at.is_empty() {
            lost += 1;
            if keyed {
                eprintln!(
                    "LOST: {} was acknowledged but {location} lacks it",
                    outcome.call.key
                );
            }
        }
        for pair in at.windows(2) {
            let writes_between = pair[1] - pair[0] - 1;
            if keyed && writes_between >= RECEIPTS_KEPT {
                eprintln!(
                    "APPLIED AGAIN past the receipts kept: {location} holds {} again after \
                     {writes_between} other writes",
                    outcome.call.key
                );
            } else {
                duplicated += 1;
                if keyed {
                    eprintln!(
                        "DUPLICATED: {location} holds {} again after {writes_between} other \
                         writes",
                        outcome.call.key
                    );
                }
            }
        }
    }
    (lost, duplicated)
}

/// Asserts the figures printed just before: nothing lost, nothing applied twice.
fn assert_exactly_once(test: &str, seed: u64, lost: u64, duplicated: u64) {
    assert_eq!(
        (lost, duplicated),
        (0, 0),
        "{test}: (lost, duplicated) acknowledged updates, seed {seed}"
    );
}

fn is_key(entry: &str) -> bool {
    entry == "final"
        || entry.strip_prefix('w').is_some_and(|rest| {
            rest.split_once('-').is_some_and(|(w, i)| {
                !w.is_empty()
                    && !i.is_empty()
                    && w.bytes().chain(i.bytes()).all(|b| b.is_ascii_digit())
            })
        })
}

// ---------------------------------------------------------------------------------------------
// 1. Markdown: `memory sync` processes killed with SIGKILL.

/// Calls per writer with keys, and without them (the baseline).
const MARKDOWN_CALLS: usize = 40;
const UNKEYED_CALLS: usize = 20;
/// Percent of the runs of `memory sync` killed; of those, the percent killed the moment their
/// MEMORY.md entry shows (the rest at a random moment of the run).
const KILL_PERCENT: u64 = 30;
const ON_LANDING_PERCENT: u64 = 30;
/// The longest wait before a timed kill, at least: a run under load takes longer (about 30 ms
/// alone, 90 ms beside seven others on two cores), and the waits stretch to 1.2 times the
/// writer's last unkilled run, so that kills reach every part of it.
const MAX_KILL_DELAY_MS: u64 = 30;
/// Runs of one call before the test gives up on it.
const MAX_RUNS: u32 = 40;

/// When a run of `memory sync` is killed.
#[derive(Debug, Clone, Copy)]
enum Kill {
    Never,
    /// After this long, if it is still running.
    After(Duration),
    /// As soon as MEMORY.md holds the call's entry, if it is still running then: the write
    /// landed, the reply did not.
    OnLanding,
}

#[derive(Debug, Default)]
struct ProcessFigures {
    runs: u64,
    kills: u64,
    /// Kills made the moment the entry showed in MEMORY.md.
    kills_on_landing: u64,
    /// Killed runs whose MEMORY.md entry had already landed: the retries a key keeps from
    /// applying twice.
    killed_after_landing: u64,
    /// Runs that exited with a retryable error (busy, unavailable, outcome unknown).
    retryable_errors: u64,
}

impl ProcessFigures {
    fn add(&mut self, other: &ProcessFigures) {
        self.runs += other.runs;
        self.kills += other.kills;
        self.kills_on_landing += other.kills_on_landing;
        self.killed_after_landing += other.killed_after_landing;
        self.retryable_errors += other.retryable_errors;
    }
}

fn memory_path(root: &Path) -> PathBuf {
    root.join("personalities").join("ada").join("MEMORY.md")
}

fn user_path(root: &Path) -> PathBuf {
    root.join("users").join("grace").join("USER.md")
}

/// Whether MEMORY.md under `root` holds `key` as an entry now.
fn landed(root: &Path, key: &str) -> bool {
    std::fs::read_to_string(memory_path(root))
        .is_ok_and(|text| text.trim_end_matches('\n').split("\n\n").any(|e| e == key))
}

/// One run of `memory sync` for `call` on `root` (with `--idempotency-key` when `keyed`),
/// killed with SIGKILL as `kill` says. `None`: it was killed; else its exit code and stderr.
fn run_sync(root: &Path, call: &Call, keyed: bool, kill: Kill) -> Option<(i32, String)> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_memory"));
    command
        .env("MEMORY_ROOT", root)
        .env_remove("MEMORY_CONFIG")
        .args(["sync", "--personality", "ada", "--user", "grace"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if keyed {
        command.args(["--idempotency-key", &call.key]);
    }
    let started = Instant::now();
    let mut child = command.spawn().expect("memory runs");
    // A killed child closes its end early: the error is the kill's, seen below.
    let _ = child
        .stdin
        .take()
        .expect("piped")
        .write_all(call.json().as_bytes());
    match kill {
        Kill::Never => {}
        Kill::After(delay) => {
            std::thread::sleep(delay.saturating_sub(started.elapsed()));
            if child.try_wait().expect("waits").is_none() {
                child.kill().expect("SIGKILL is sent");
            }
        }
        Kill::OnLanding => {
            while child.try_wait().expect("waits").is_none() {
                if landed(root, &call.key) {
                    child.kill().expect("SIGKILL is sent");
                    break;
                }
                std::thread::sleep(Duration::from_micros(500));
            }
        }
    }
    let output = child.wait_with_output().expect("waits");
    match output.status.signal() {
        Some(9) => None,
        Some(other) => panic!("{}: memory died of signal {other}", call.key),
        None => Some((
            output.status.code().expect("an exit code"),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )),
    }
}

/// One writer thread: `calls` logical calls, each run until it exits 0, a random share of the
/// runs killed.
fn process_writer(
    root: &Path,
    writer: usize,
    calls: usize,
    keyed: bool,
    mut rng: Rng,
) -> (Vec<Outcome>, ProcessFigures) {
    let mut figures = ProcessFigures::default();
    let mut outcomes = Vec::new();
    let mut last_run = Duration::from_millis(MAX_KILL_DELAY_MS);
    for i in 0..calls {
        let call = Call::new(writer, i, &mut rng);
        let mut runs = 0;
        loop {
            runs += 1;
            assert!(
                runs <= MAX_RUNS,
                "{}: not acknowledged after {MAX_RUNS} runs",
                call.key
            );
            figures.runs += 1;
            let kill = if !rng.chance(KILL_PERCENT) {
                Kill::Never
            } else if rng.chance(ON_LANDING_PERCENT) {
                Kill::OnLanding
            } else {
                let longest = (last_run.as_millis() as u64 * 6 / 5).max(MAX_KILL_DELAY_MS);
                Kill::After(rng.millis(0..=longest))
            };
            let started = Instant::now();
            match run_sync(root, &call, keyed, kill) {
                None => {
                    figures.kills += 1;
                    if matches!(kill, Kill::OnLanding) {
                        figures.kills_on_landing += 1;
                    }
                    if landed(root, &call.key) {
                        figures.killed_after_landing += 1;
                    }
                }
                Some((0, _)) => {
                    if matches!(kill, Kill::Never) {
                        last_run = started.elapsed();
                    }
                    break;
                }
                // Busy or unavailable (5), outcome unknown (6), partially applied (7): a
                // client retries these with the same key.
                Some((5..=7, _)) => figures.retryable_errors += 1,
                Some((code, stderr)) => panic!("{}: memory sync exited {code}: {stderr}", call.key),
            }
        }
        outcomes.push(Outcome {
            call,
            acknowledged: true,
        });
    }
    (outcomes, figures)
}

/// Runs `WRITERS` process writers on `root` at once.
fn process_writers(
    root: &Path,
    calls: usize,
    keyed: bool,
    rng: &mut Rng,
) -> (Vec<Outcome>, ProcessFigures) {
    let handles: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (root, rng) = (root.to_path_buf(), rng.fork());
            std::thread::spawn(move || process_writer(&root, writer, calls, keyed, rng))
        })
        .collect();
    let mut outcomes = Vec::new();
    let mut figures = ProcessFigures::default();
    for handle in handles {
        let (writer_outcomes, writer_figures) = handle.join().expect("a writer panicked");
        outcomes.extend(writer_outcomes);
        figures.add(&writer_figures);
    }
    (outcomes, figures)
}

/// Every file under `dir` whose name ends in `.tmp`.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.to_string_lossy().ends_with(".tmp") {
                found.push(path);
            }
        }
    }
    found
}

/// A document's text, asserted to be valid UTF-8.
fn read_utf8(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_else(|err| panic!("{} is not UTF-8: {err}", path.display()))
}

/// Eight writers, each running `memory sync` processes on one shared root (one MEMORY.md,
/// and one USER.md for a third of the calls, both in one call), kill 30% of the runs with
/// SIGKILL (30% of those the moment the call's entry shows in MEMORY.md: written, not yet
/// acknowledged; the others at a random moment of the run), and re-run each killed call with
/// the same key until it exits 0. Every entry is then in MEMORY.md exactly once (and in USER.md exactly once when
/// it was sent there), the files are valid UTF-8 and whole, and a final write leaves no
/// temporary file behind.
///
/// Then the baseline: the same without keys (each run makes its own), whose duplicates are
/// reported, not asserted: what the key buys.
#[test]
fn markdown_writers_killed_mid_call_lose_and_duplicate_nothing() {
    let (seed, mut rng) = seeded("markdown");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let started = Instant::now();
    let (mut outcomes, figures) = process_writers(root, MARKDOWN_CALLS, true, &mut rng);
    let elapsed = started.elapsed();
    let last = Call {
        key: "final".to_owned(),
        both: true,
    };
    let (code, stderr) = run_sync(root, &last, true, Kill::Never).unwrap();
    assert_eq!(code, 0, "the final write: {stderr}");
    outcomes.push(Outcome {
        call: last,
        acknowledged: true,
    });
    let temps = temp_files(root);
    let (lost, duplicated) = check_root(root, &outcomes, true);
    let calls = (WRITERS * MARKDOWN_CALLS) as u64;
    let both = outcomes.iter().filter(|o| o.call.both).count() as u64 - 1;
    print_process_figures(
        "markdown kill -9, keyed",
        seed,
        &[("calls", calls), ("of them to both documents", both)],
        &figures,
        (lost, duplicated),
        elapsed,
    );

    // The baseline, without keys: every run of a call is a new call, which the kills on
    // landing are sure to duplicate.
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (baseline, baseline_figures) = process_writers(dir.path(), UNKEYED_CALLS, false, &mut rng);
    let elapsed = started.elapsed();
    let (baseline_lost, baseline_duplicated) = check_root(dir.path(), &baseline, false);
    print_process_figures(
        "markdown kill -9, no keys (baseline)",
        seed,
        &[("calls", (WRITERS * UNKEYED_CALLS) as u64)],
        &baseline_figures,
        (baseline_lost, baseline_duplicated),
        elapsed,
    );

    assert_exactly_once("markdown kill -9, keyed", seed, lost, duplicated);
    assert!(
        temps.is_empty(),
        "temporary files left after the final write: {temps:?}"
    );
    assert_eq!(baseline_lost, 0, "the baseline lost acknowledged updates");
}

/// Reads both documents under `root` (asserting UTF-8 and whole) and returns the lost and
/// duplicated figures of both together; `keyed` as for [`check_document`].
fn check_root(root: &Path, outcomes: &[Outcome], keyed: bool) -> (u64, u64) {
    let (memory, user) = (memory_path(root), user_path(root));
    let memory_copies = tally(&memory.display().to_string(), &read_utf8(&memory), is_key);
    let user_copies = tally(&user.display().to_string(), &read_utf8(&user), is_key);
    let (lost_memory, duplicated_memory) =
        check_document("MEMORY.md", &memory_copies, outcomes, Store::Memory, keyed);
    let (lost_user, duplicated_user) =
        check_document("USER.md", &user_copies, outcomes, Store::User, keyed);
    (lost_memory + lost_user, duplicated_memory + duplicated_user)
}

/// Prints the figures of a test of `memory sync` processes.
fn print_process_figures(
    test: &str,
    seed: u64,
    calls: &[(&str, u64)],
    figures: &ProcessFigures,
    (lost, duplicated): (u64, u64),
    elapsed: Duration,
) {
    let mut shown = vec![("writers", WRITERS as u64)];
    shown.extend_from_slice(calls);
    shown.extend([
        ("runs", figures.runs),
        ("kills", figures.kills),
        (
            "of them the moment the entry showed",
            figures.kills_on_landing,
        ),
        (
            "kills after the write had landed",
            figures.killed_after_landing,
        ),
        ("retryable exits", figures.retryable_errors),
        ("acknowledged", calls[0].1),
        ("lost", lost),
        ("duplicated", duplicated),
        ("ms", elapsed.as_millis() as u64),
    ]);
    print_figures(test, seed, &shown);
}

// ---------------------------------------------------------------------------------------------
// 2 and 3. In-process writers on PostgreSQL and Redis.

/// Tries of one logical call, each a `sync_exactly_once` (itself up to three sends), before
/// the writer gives up on it, as a client would.
const CLIENT_TRIES: u32 = 10;

#[derive(Debug, Default)]
struct ClientFigures {
    calls: AtomicU64,
    /// Sends of `sync` to the backend (`sync_exactly_once` makes up to three per try).
    sends: AtomicU64,
    /// Sends that failed with nothing written (`Unavailable`, `Busy`).
    sends_unavailable: AtomicU64,
    /// Sends whose reply was lost after the write went out (`OutcomeUnknown`): the ones an
    /// idempotency key keeps from applying twice when they landed.
    sends_outcome_unknown: AtomicU64,
    /// `sync_exactly_once` calls that failed after all their sends.
    failed_tries: AtomicU64,
    acknowledged: AtomicU64,
    given_up: AtomicU64,
    /// Calls given up on whose updates had landed all the same.
    given_up_landed: AtomicU64,
}

/// The provider under test, counting the sends of `sync` and how they failed.
struct Counted {
    inner: Arc<dyn MemoryProvider>,
    figures: Arc<ClientFigures>,
}

#[async_trait::async_trait]
impl MemoryProvider for Counted {
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        self.inner.prefetch(ctx).await
    }

    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        self.figures.sends.fetch_add(1, Ordering::SeqCst);
        let outcome = self.inner.sync(ctx, updates, if_match).await;
        if let Err(err) = &outcome {
            let counter = match err.kind() {
                ErrorKind::OutcomeUnknown => &self.figures.sends_outcome_unknown,
                kind if kind.retry_can_help() => &self.figures.sends_unavailable,
                _ => return outcome,
            };
            counter.fetch_add(1, Ordering::SeqCst);
        }
        outcome
    }

    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        self.inner.read(document).await
    }

    async fn receipts(&self, document: &DocumentId) -> Result<Receipts, MemoryError> {
        self.inner.receipts(document).await
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        self.inner.list().await
    }

    async fn notes(
        &self,
        scope: &memory_core::NoteScope,
        prefix: &str,
    ) -> Result<Vec<memory_core::NoteMeta>, MemoryError> {
        self.inner.notes(scope, prefix).await
    }

    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<Vec<memory_core::Revision>, MemoryError> {
        self.inner.history(document, limit).await
    }

    async fn purge(
        &self,
        document: &DocumentId,
        surface: memory_core::Surface,
    ) -> Result<memory_core::Purged, MemoryError> {
        self.inner.purge(document, surface).await
    }

    async fn redact(
        &self,
        document: &DocumentId,
        number: u64,
    ) -> Result<memory_core::Revision, MemoryError> {
        self.inner.redact(document, number).await
    }

    fn subscribe(&self) -> Subscription {
        self.inner.subscribe()
    }

    fn deadline(&self) -> Option<Duration> {
        self.inner.deadline()
    }
}

/// Whether a client may repeat a failed keyed call: never for a refusal, which a fault cannot
/// cause.
fn retryable(kind: ErrorKind) -> bool {
    kind.retry_can_help()
        || matches!(
            kind,
            ErrorKind::OutcomeUnknown | ErrorKind::PartiallyApplied
        )
}

/// One writer task: keyed calls until `min_calls` are done and `keep_going` is false, each
/// tried up to [`CLIENT_TRIES`] times with the same key, with `pause` between calls.
async fn keyed_writer(
    provider: Arc<dyn MemoryProvider>,
    writer: usize,
    min_calls: usize,
    keep_going: Arc<AtomicBool>,
    figures: Arc<ClientFigures>,
    pause: std::ops::RangeInclusive<u64>,
    mut rng: Rng,
) -> Vec<Outcome> {
    let base = ctx("ada", "grace");
    let mut outcomes = Vec::new();
    let mut i = 0;
    while i < min_calls || keep_going.load(Ordering::SeqCst) {
        let call = Call::new(writer, i, &mut rng);
        i += 1;
        figures.calls.fetch_add(1, Ordering::SeqCst);
        let key = IdempotencyKey::new(call.key.clone()).unwrap();
        let c = base.clone().with_idempotency_key(key);
        let updates = call.updates();
        let mut acknowledged = false;
        for _ in 0..CLIENT_TRIES {
            match sync_exactly_once(&*provider, &c, &updates, &IfMatch::NONE).await {
                Ok(_) => {
                    acknowledged = true;
                    break;
                }
                Err(err) if retryable(err.kind()) => {
                    figures.failed_tries.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(err) => panic!("{}: a fault caused a refusal: {err:?}", call.key),
            }
        }
        let counter = match acknowledged {
            true => &figures.acknowledged,
            false => &figures.given_up,
        };
        counter.fetch_add(1, Ordering::SeqCst);
        outcomes.push(Outcome { call, acknowledged });
        let pause = rng.millis(pause.clone());
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
    outcomes
}

/// `WRITERS` keyed writers on `provider` at once; `keep_going` as for [`keyed_writer`].
async fn keyed_writers(
    provider: Arc<dyn MemoryProvider>,
    min_calls: usize,
    keep_going: Arc<AtomicBool>,
    figures: Arc<ClientFigures>,
    pause: std::ops::RangeInclusive<u64>,
    rng: &mut Rng,
) -> Vec<Outcome> {
    let provider: Arc<dyn MemoryProvider> = Arc::new(Counted {
        inner: provider,
        figures: Arc::clone(&figures),
    });
    let tasks: Vec<_> = (0..WRITERS)
        .map(|writer| {
            tokio::spawn(keyed_writer(
                Arc::clone(&provider),
                writer,
                min_calls,
                Arc::clone(&keep_going),
                Arc::clone(&figures),
                pause.clone(),
                rng.fork(),
            ))
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.extend(task.await.expect("a writer panicked"));
    }
    outcomes
}

/// Reads both documents (retrying while the server comes back), checks them as the markdown
/// test does, and checks that each one's version counts its writes: every entry is one write.
/// Returns (lost, duplicated).
async fn check_provider(provider: &dyn MemoryProvider, outcomes: &[Outcome]) -> (u64, u64) {
    let c = ctx("ada", "grace");
    let (mut lost, mut duplicated) = (0, 0);
    for store in [Store::Memory, Store::User] {
        let read = read_retrying(provider, &c.document(store)).await;
        let copies = tally(&read.location, &read.text, is_key);
        let entries: usize = copies.values().map(Vec::len).sum();
        assert_eq!(
            read.version.as_str(),
            entries.to_string(),
            "{}: one version per write, one entry per write",
            read.location
        );
        let (l, d) = check_document(&read.location, &copies, outcomes, store, true);
        lost += l;
        duplicated += d;
        assert!(
            outcomes.iter().all(|o| o.acknowledged),
            "every call given up on was sent again and acknowledged before this check"
        );
    }
    (lost, duplicated)
}

/// `document` read, retrying while the server comes back (up to 5 s).
async fn read_retrying(provider: &dyn MemoryProvider, document: &DocumentId) -> Document {
    let mut tries = 0;
    loop {
        match provider.read(document).await {
            Ok(read) => return read,
            Err(err) if tries < 50 && err.kind().retry_can_help() => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(err) => panic!("reading {document:?}: {err:?}"),
        }
    }
}

/// After the fault has stopped: at most a tenth of the calls gave up (most must get through
/// the injected faults: a provider that failed every write would give up on all of them).
/// Every call given up on has landed in all the documents it was sent to (a two-document call
/// is one transaction or script on these backends) or in none; one that landed nowhere is
/// sent again with its key and must be applied, not replayed (no receipt counts for a write
/// that did not land). (One that landed is not sent again: its receipt may be past the 64 a
/// document keeps, and a resend would then rightly apply it again.) Each such call then
/// counts as acknowledged, so the check that follows, exactly once, covers every call.
async fn resend_given_up(
    test: &str,
    seed: u64,
    provider: &dyn MemoryProvider,
    outcomes: &mut [Outcome],
    figures: &ClientFigures,
) {
    let calls = outcomes.len() as u64;
    let given_up = outcomes.iter().filter(|o| !o.acknowledged).count() as u64;
    assert_eq!(given_up, figures.given_up.load(Ordering::SeqCst));
    assert!(
        given_up * 10 <= calls,
        "{test}: {given_up} of {calls} calls gave up after {CLIENT_TRIES} tries, seed {seed}"
    );
    let base = ctx("ada", "grace");
    for outcome in outcomes.iter_mut().filter(|o| !o.acknowledged) {
        let call = &outcome.call;
        let stores: &[Store] = if call.both {
            &[Store::Memory, Store::User]
        } else {
            &[Store::Memory]
        };
        let mut present = Vec::new();
        for store in stores {
            let read = read_retrying(provider, &base.document(*store)).await;
            let copies = tally(&read.location, &read.text, is_key);
            present.push(copies.contains_key(&call.key));
        }
        if present.iter().all(|p| *p) {
            figures.given_up_landed.fetch_add(1, Ordering::SeqCst);
            outcome.acknowledged = true;
            continue;
        }
        assert!(
            !present.iter().any(|p| *p),
            "{test}: {} landed in one of its documents only, seed {seed}",
            call.key
        );
        let c = base
            .clone()
            .with_idempotency_key(IdempotencyKey::new(call.key.clone()).unwrap());
        // One send at a time, so that a report that replays is known to replay a send of this
        // loop whose reply was lost, not anything from before.
        let (mut sent_unseen, mut tries) = (false, 0);
        let report = loop {
            tries += 1;
            match provider.sync(&c, &call.updates(), &IfMatch::NONE).await {
                Ok(report) => break report,
                Err(err) if tries < 50 && retryable(err.kind()) => {
                    sent_unseen |= !matches!(err.kind(), ErrorKind::Unavailable | ErrorKind::Busy);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(err) => panic!(
                    "{test}: {} sent again after the fault stopped: {err:?}, seed {seed}",
                    call.key
                ),
            }
        };
        assert_eq!(report.documents.len(), stores.len(), "{}", call.key);
        if !sent_unseen {
            assert!(
                report.documents.iter().all(|d| d.written && !d.replayed),
                "{test}: {} had not landed: sent again, it is applied: {report:?}, seed {seed}",
                call.key
            );
        }
        outcome.acknowledged = true;
    }
}

/// `url` with `param=value` added to its query.
fn with_query(url: &str, param: &str, value: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{param}={value}")
}

/// Calls per writer on PostgreSQL and Redis while connections are killed.
const CONNECTION_CALLS: usize = 40;

/// Eight writer tasks make keyed `sync_exactly_once` adds (a third of them to both documents)
/// through one PostgreSQL provider, while a killer terminates the provider's server
/// connections (those with the test's own `application_name`) every 20-80 ms. At most a
/// tenth of the calls give up; once the killer stops, each of those is sent again with its
/// key (replayed where it had landed, applied where not), and then every call's add is
/// present exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_connections_killed_mid_call_lose_and_duplicate_nothing() {
    if let Some(url) = Service::Postgres.url() {
        postgres_connections_killed("postgres connections killed", &url, None).await;
    }
}

/// The same through PgBouncer in transaction mode: the killer terminates the server
/// connections PgBouncer holds for the test's own database (so no other test's pool is
/// touched), and PgBouncer hands them, dead or failing, to the provider's calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_connections_killed_behind_pgbouncer_lose_and_duplicate_nothing() {
    let (Some(url), Some(pooler)) = (Service::Postgres.url(), Service::PgBouncer.url()) else {
        return;
    };
    let test = "postgres connections killed, through PgBouncer";
    postgres_connections_killed(test, &url, Some(&pooler)).await;
}

/// Keyed writers on PostgreSQL at `url`, directly or through the PgBouncer at `pooler` (in
/// a database of the test's own, made on the server and dropped after), while their server
/// connections are killed; asserts nothing lost and nothing applied twice.
async fn postgres_connections_killed(test: &str, url: &str, pooler: Option<&str>) {
    let (seed, mut rng) = seeded(test);
    let schema = unique_name("faults");
    // Only this test's connections carry this name: the killer spares every other test's.
    let application = schema.clone();
    // Without TLS unless the URL asks for it: every kill costs a new connection, and a TLS
    // handshake in a debug build takes long enough that the killer, every 20-80 ms, starves
    // the writers (over five minutes instead of seconds). What is tested is the killed
    // connection.
    let plain = |url: &str| match url.contains("sslmode=") {
        true => url.to_owned(),
        false => with_query(url, "sslmode", "disable"),
    };
    let mut admin = sqlx::PgConnection::connect(url).await.unwrap();
    let (provider_url, database, _database, _guard) = match pooler {
        // A pool of its own behind PgBouncer: its pools are per database.
        Some(pooler) => {
            let database = OwnDatabase::create(&mut admin, url, &schema).await;
            let name = database.name.clone();
            (
                with_database(&plain(pooler), &name),
                name,
                Some(database),
                None,
            )
        }
        None => {
            let guard = SchemaGuard {
                url: url.to_owned(),
                schema: schema.clone(),
            };
            let database: String = sqlx::query_scalar("SELECT current_database()")
                .fetch_one(&mut admin)
                .await
                .unwrap();
            (plain(url), database, None, Some(guard))
        }
    };
    let config = PostgresConfig {
        max_connections: 4,
        pool_mode: match pooler {
            Some(_) => PoolMode::Transaction,
            None => PoolMode::Session,
        },
        ..PostgresConfig::new(with_query(&provider_url, "application_name", &application))
            .with_schema(&schema)
    };
    let provider: Arc<dyn MemoryProvider> =
        Arc::new(PostgresProvider::connect(&config).await.unwrap());

    let done = Arc::new(AtomicBool::new(false));
    let kills = Arc::new(AtomicU64::new(0));
    let killer = tokio::spawn({
        let (done, kills, mut rng) = (Arc::clone(&done), Arc::clone(&kills), rng.fork());
        async move {
            while !done.load(Ordering::SeqCst) {
                // Two statements: in one, the server may evaluate pg_terminate_backend
                // before the filter, on anyone's connection.
                let pids: Vec<i32> = sqlx::query_scalar(
                    "SELECT pid FROM pg_stat_activity \
                     WHERE datname = $2 AND application_name = $1 \
                       AND pid <> pg_backend_pid()",
                )
                .bind(&application)
                .bind(&database)
                .fetch_all(&mut admin)
                .await
                .unwrap();
                let killed: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM unnest($1::int4[]) AS pid WHERE pg_terminate_backend(pid)",
                )
                .bind(&pids)
                .fetch_one(&mut admin)
                .await
                .unwrap();
                kills.fetch_add(killed as u64, Ordering::SeqCst);
                tokio::time::sleep(rng.millis(20..=80)).await;
            }
        }
    });
    let figures = Arc::new(ClientFigures::default());
    let started = Instant::now();
    let mut outcomes = keyed_writers(
        Arc::clone(&provider),
        CONNECTION_CALLS,
        Arc::new(AtomicBool::new(false)),
        Arc::clone(&figures),
        0..=0,
        &mut rng,
    )
    .await;
    let elapsed = started.elapsed();
    done.store(true, Ordering::SeqCst);
    killer.await.unwrap();

    resend_given_up(test, seed, &*provider, &mut outcomes, &figures).await;
    let (lost, duplicated) = check_provider(&*provider, &outcomes).await;
    let kills = kills.load(Ordering::SeqCst);
    assert!(kills > 0, "{test}: the killer found connections to kill");
    print_client_figures(test, seed, &figures, kills, lost, duplicated, elapsed);
    assert_exactly_once(test, seed, lost, duplicated);
}

/// A database of a test's own on the server, dropped (with whatever connections it still
/// has) when dropped.
struct OwnDatabase {
    url: String,
    name: String,
}

impl OwnDatabase {
    async fn create(admin: &mut sqlx::PgConnection, url: &str, name: &str) -> OwnDatabase {
        // The name is a test's own, from `unique_name`.
        sqlx::query(format!("CREATE DATABASE \"{name}\"").as_str())
            .execute(admin)
            .await
            .unwrap();
        OwnDatabase {
            url: url.to_owned(),
            name: name.to_owned(),
        }
    }
}

impl Drop for OwnDatabase {
    fn drop(&mut self) {
        let statement = format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name);
        if let Err(err) = execute_now(&self.url, statement) {
            eprintln!("could not drop test database {}: {err}", self.name);
        }
    }
}

/// `url` naming the database `name` instead of its own.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let server = base.rsplit_once('/').map_or(base, |(server, _)| server);
    match query {
        Some(query) => format!("{server}/{name}?{query}"),
        None => format!("{server}/{name}"),
    }
}

/// Prints the figures of a test of in-process writers.
fn print_client_figures(
    test: &str,
    seed: u64,
    figures: &ClientFigures,
    faults: u64,
    lost: u64,
    duplicated: u64,
    elapsed: Duration,
) {
    let load = |counter: &AtomicU64| counter.load(Ordering::SeqCst);
    let fault_name = if test.contains("restart") {
        "restarts"
    } else if test.contains("failover") {
        "failovers"
    } else {
        "connection kills"
    };
    print_figures(
        test,
        seed,
        &[
            ("writers", WRITERS as u64),
            ("calls", load(&figures.calls)),
            (fault_name, faults),
            ("sends", load(&figures.sends)),
            (
                "sends failed, nothing written",
                load(&figures.sends_unavailable),
            ),
            (
                "sends with the outcome unknown",
                load(&figures.sends_outcome_unknown),
            ),
            ("tries failed after all sends", load(&figures.failed_tries)),
            ("acknowledged", load(&figures.acknowledged)),
            ("given up", load(&figures.given_up)),
            (
                "of them had landed (the others were sent again)",
                load(&figures.given_up_landed),
            ),
            ("lost", lost),
            ("duplicated", duplicated),
            ("ms", elapsed.as_millis() as u64),
        ],
    );
}

/// Deletes every key under a Redis prefix, and a user of the test's own, on each of `nodes`
/// (one server, or every master of a cluster) when dropped: also when the test fails.
struct RedisCleanup {
    nodes: Vec<String>,
    prefix: String,
    user: String,
}

impl Drop for RedisCleanup {
    fn drop(&mut self) {
        memory_conformance::services::delete_redis_keys(&self.nodes, &self.prefix);
        for node in &self.nodes {
            let deleted = redis::Client::open(node.as_str())
                .and_then(|client| client.get_connection())
                .and_then(|mut connection| {
                    redis::cmd("ACL")
                        .arg("DELUSER")
                        .arg(&self.user)
                        .exec(&mut connection)
                });
            if let Err(err) = deleted {
                eprintln!("could not delete user {} on {node}: {err}", self.user);
            }
        }
    }
}

/// The same on Redis: the provider connects as a user of the test's own, and the killer runs
/// `CLIENT KILL TYPE normal USER <it> SKIPME yes` every 2-20 ms, so no other test's client is
/// touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_connections_killed_mid_call_lose_and_duplicate_nothing() {
    if let Some(url) = Service::Redis.url() {
        redis_connections_killed("redis connections killed", vec![url]).await;
    }
}

/// The same on a Redis Cluster of three masters: the killer kills the user's connections on
/// every master in turn, the cluster client's to the master that owns the slot among them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_cluster_connections_killed_mid_call_lose_and_duplicate_nothing() {
    if let Some(urls) = Service::RedisCluster.url() {
        let nodes = urls.split(',').map(str::to_owned).collect();
        redis_connections_killed("redis cluster connections killed", nodes).await;
    }
}

/// Keyed writers through `nodes` (one server's URL, or a cluster's seed nodes) while the
/// provider's connections are killed; asserts nothing lost and nothing applied twice.
async fn redis_connections_killed(test: &str, nodes: Vec<String>) {
    let (seed, mut rng) = seeded(test);
    let prefix = unique_name("faults");
    let user = format!("writer-{prefix}");
    let _cleanup = RedisCleanup {
        nodes: nodes.clone(),
        prefix: prefix.clone(),
        user: user.clone(),
    };
    let mut admins = Vec::new();
    let mut as_user = Vec::new();
    for node in &nodes {
        let mut admin = redis::Client::open(node.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let () = redis::cmd("ACL")
            .arg(&["SETUSER", &user, "on", ">secret", "~*", "&*", "+@all"])
            .query_async(&mut admin)
            .await
            .unwrap();
        admins.push(admin);
        let host = node.split_once("://").unwrap().1;
        let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
        as_user.push(format!("redis://{user}:secret@{host}"));
    }
    let config = match as_user.as_slice() {
        [server] => RedisConfig::new(server),
        _ => RedisConfig::cluster(as_user),
    };
    let provider: Arc<dyn MemoryProvider> = Arc::new(
        RedisProvider::connect(&config.with_prefix(&prefix))
            .await
            .unwrap(),
    );

    let done = Arc::new(AtomicBool::new(false));
    let kills = Arc::new(AtomicU64::new(0));
    let killer = tokio::spawn({
        let (done, kills, mut rng, user) = (
            Arc::clone(&done),
            Arc::clone(&kills),
            rng.fork(),
            user.clone(),
        );
        async move {
            while !done.load(Ordering::SeqCst) {
                for admin in &mut admins {
                    let killed: u64 = redis::cmd("CLIENT")
                        .arg(&["KILL", "TYPE", "normal", "USER", &user, "SKIPME", "yes"])
                        .query_async(admin)
                        .await
                        .unwrap();
                    kills.fetch_add(killed, Ordering::SeqCst);
                    tokio::time::sleep(rng.millis(2..=20)).await;
                }
            }
        }
    });
    let figures = Arc::new(ClientFigures::default());
    let started = Instant::now();
    let mut outcomes = keyed_writers(
        Arc::clone(&provider),
        CONNECTION_CALLS,
        Arc::new(AtomicBool::new(false)),
        Arc::clone(&figures),
        0..=0,
        &mut rng,
    )
    .await;
    let elapsed = started.elapsed();
    done.store(true, Ordering::SeqCst);
    killer.await.unwrap();

    resend_given_up(test, seed, &*provider, &mut outcomes, &figures).await;
    let (lost, duplicated) = check_provider(&*provider, &outcomes).await;
    let kills = kills.load(Ordering::SeqCst);
    assert!(kills > 0, "{test}: the killer found connections to kill");
    print_client_figures(test, seed, &figures, kills, lost, duplicated, elapsed);
    assert_exactly_once(test, seed, lost, duplicated);
}

/// Calls per writer through a failover at least; writers go on until it is over.
const FAILOVER_CALLS: usize = 20;

/// What the writers of a failover reach the primary through, which the failover repoints.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Repointed {
    /// A TCP proxy, standing for a DNS name or a virtual IP.
    Proxy,
    /// PgBouncer in transaction mode, its configuration changed and reloaded.
    PgBouncer,
}

/// A running [`Repointed`].
enum Front {
    Proxy(StallingProxy),
    PgBouncer(PgBouncer),
}

impl Front {
    /// Points it at `target` (`host:port`).
    fn repoint(&self, target: String) {
        match self {
            Front::Proxy(proxy) => proxy.retarget(target),
            Front::PgBouncer(bouncer) => bouncer.repoint(&target),
        }
    }
}

/// Eight writer tasks make keyed adds through a PostgreSQL primary streaming to a standby,
/// both the test's own ([`PostgresPair`]), reached through what a team repoints (`through`).
/// A third of the way in, the primary is killed; half a second later the standby is promoted
/// and `through` pointed at it. Calls meanwhile fail with retryable kinds only (a refusal
/// fails the writer); afterwards the calls given up on are sent again with their keys, as for
/// the other faults. Returns (seed, lost, duplicated).
async fn postgres_failover(
    test: &str,
    synchronous: bool,
    through: Repointed,
) -> Option<(u64, u64, u64)> {
    let pair = PostgresPair::start(synchronous)?;
    let (seed, rng) = seeded(test);
    let (url, front) = match through {
        Repointed::Proxy => {
            let proxy = StallingProxy::start(pair.primary_address()).await;
            let url = format!(
                "postgres://postgres@{}/postgres?sslmode=disable",
                proxy.addr()
            );
            (url, Front::Proxy(proxy))
        }
        Repointed::PgBouncer => {
            let bouncer = PgBouncer::start(&pair.primary_address())?;
            (bouncer.url(), Front::PgBouncer(bouncer))
        }
    };
    let config = PostgresConfig {
        max_connections: 4,
        connect_timeout_ms: 1_000,
        deadline_ms: 3_000,
        pool_mode: match through {
            Repointed::Proxy => PoolMode::Session,
            Repointed::PgBouncer => PoolMode::Transaction,
        },
        ..PostgresConfig::new(url).with_schema("failover")
    };
    let provider: Arc<dyn MemoryProvider> =
        Arc::new(PostgresProvider::connect(&config).await.unwrap());
    // The servers and the front live until the writers are done, not just the failover.
    let (pair, front) = (Arc::new(pair), Arc::new(front));
    let fail_over = {
        let (pair, front) = (pair.clone(), front.clone());
        move || {
            pair.kill_primary();
            std::thread::sleep(Duration::from_millis(500));
            pair.promote_standby();
            front.repoint(pair.standby_address());
        }
    };
    let (lost, duplicated) = through_a_failover(test, seed, rng, provider, fail_over).await;
    Some((seed, lost, duplicated))
}

/// Eight keyed writers through `provider`; once a third of their calls are acknowledged,
/// `fail_over` runs (on a thread of its own), and they go on until it is over and 300 ms more,
/// however fast they are. Then the calls given up on are sent again with their keys, as for
/// the other faults, and the figures printed. Asserts that calls were acknowledged before the
/// failover began and after (not that any failed: PgBouncer holds a call while it has no
/// server, and sends it on once repointed). Returns (lost, duplicated).
async fn through_a_failover(
    test: &str,
    seed: u64,
    mut rng: Rng,
    provider: Arc<dyn MemoryProvider>,
    fail_over: impl FnOnce() + Send + 'static,
) -> (u64, u64) {
    let figures = Arc::new(ClientFigures::default());
    let keep_going = Arc::new(AtomicBool::new(true));
    let failover = tokio::spawn({
        let (figures, keep_going) = (figures.clone(), keep_going.clone());
        async move {
            let third = (WRITERS * FAILOVER_CALLS / 3) as u64;
            while figures.acknowledged.load(Ordering::SeqCst) < third {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let before = figures.acknowledged.load(Ordering::SeqCst);
            tokio::task::spawn_blocking(fail_over).await.unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            keep_going.store(false, Ordering::SeqCst);
            before
        }
    });
    let started = Instant::now();
    let mut outcomes = keyed_writers(
        Arc::clone(&provider),
        FAILOVER_CALLS,
        keep_going,
        Arc::clone(&figures),
        0..=0,
        &mut rng,
    )
    .await;
    let elapsed = started.elapsed();
    let before = failover.await.unwrap();
    resend_given_up(test, seed, &*provider, &mut outcomes, &figures).await;
    let (lost, duplicated) = check_provider(&*provider, &outcomes).await;
    print_client_figures(test, seed, &figures, 1, lost, duplicated, elapsed);
    let after = figures.acknowledged.load(Ordering::SeqCst) - before;
    println!("{test}: {before} calls acknowledged before the failover began, {after} after");
    assert!(
        before > 0 && after > 0,
        "{test}: the failover happened while the writers wrote"
    );
    (lost, duplicated)
}

/// With the primary committing synchronously to the standby, a failover loses nothing
/// acknowledged, and the keys apply every call once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_failover_to_a_synchronous_standby_loses_and_duplicates_nothing() {
    let test = "postgres failover, synchronous commit";
    if let Some((seed, lost, duplicated)) = postgres_failover(test, true, Repointed::Proxy).await {
        assert_exactly_once(test, seed, lost, duplicated);
    }
}

/// The same through PgBouncer in transaction mode, repointed (its configuration rewritten
/// and reloaded) at the promoted standby: nothing acknowledged lost, nothing applied twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_failover_through_a_repointed_pgbouncer_loses_and_duplicates_nothing() {
    let test = "postgres failover through PgBouncer, synchronous commit";
    if let Some((seed, lost, duplicated)) =
        postgres_failover(test, true, Repointed::PgBouncer).await
    {
        assert_exactly_once(test, seed, lost, duplicated);
    }
}

/// Without synchronous commit, PostgreSQL may lose the last commits the standby had not
/// received (reported, not asserted); the keys still apply nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_failover_to_an_asynchronous_standby_duplicates_nothing() {
    let test = "postgres failover, asynchronous";
    if let Some((seed, _, duplicated)) = postgres_failover(test, false, Repointed::Proxy).await {
        assert_eq!(duplicated, 0, "{test}: applied twice, seed {seed}");
    }
}

/// Eight writer tasks make keyed adds through Redis Sentinel (a master, a replica and three
/// sentinels of the test's own, [`RedisSentinelSet`]). A third of the way in, the master is
/// killed; the sentinels promote the replica, the provider follows, and the old master comes
/// back as a replica of the new one. Writes wait for `wait_replicas` (0: none) before they are
/// acknowledged. Returns (seed, lost, duplicated).
async fn redis_failover(test: &str, wait_replicas: u32) -> Option<(u64, u64, u64)> {
    let set = tokio::task::spawn_blocking(RedisSentinelSet::start)
        .await
        .unwrap()?;
    let (seed, rng) = seeded(test);
    let config = RedisConfig {
        connect_timeout_ms: 1_000,
        response_timeout_ms: 1_000,
        deadline_ms: 3_000,
        wait_replicas,
        wait_timeout_ms: 1_000,
        ..RedisConfig::sentinel(SentinelConfig::new(set.sentinel_urls(), MASTER_NAME))
            .with_prefix("failover")
    };
    let provider: Arc<dyn MemoryProvider> =
        Arc::new(RedisProvider::connect(&config).await.unwrap());
    // The servers live until the writers are done, not just the failover.
    let set = Arc::new(set);
    let fail_over = {
        let set = set.clone();
        move || {
            set.fail_over();
        }
    };
    let (lost, duplicated) = through_a_failover(test, seed, rng, provider, fail_over).await;
    Some((seed, lost, duplicated))
}

/// With every write waiting for the replica (`wait_replicas = 1`), a failover loses nothing
/// acknowledged, and the keys apply every call once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_sentinel_failover_waiting_for_the_replica_loses_and_duplicates_nothing() {
    let test = "redis sentinel failover, wait_replicas = 1";
    if let Some((seed, lost, duplicated)) = redis_failover(test, 1).await {
        assert_exactly_once(test, seed, lost, duplicated);
    }
}

/// Without waiting, the master may die with writes its replica never received (reported, not
/// asserted); the keys still apply nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_sentinel_failover_without_waiting_duplicates_nothing() {
    let test = "redis sentinel failover, no wait";
    if let Some((seed, _, duplicated)) = redis_failover(test, 0).await {
        assert_eq!(duplicated, 0, "{test}: applied twice, seed {seed}");
    }
}

// ---------------------------------------------------------------------------------------------
// 3. A Redis server of the test's own, killed and restarted.

/// Restarts of the server while the writers run (one more follows them).
const RESTARTS: u64 = 5;
/// Calls per writer at least; writers go on until the restarts are done.
const RESTART_CALLS: usize = 20;

/// `redis-server` on the `PATH`, if installed.
fn redis_server() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("redis-server"))
        .find(|path| path.is_file())
}

/// A redis-server on `port` keeping its append-only file, fsync'd on every write, in `dir`;
/// killed with SIGKILL when dropped.
struct OwnRedis {
    binary: PathBuf,
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
    /// Set when the test ends: no restart after that, even by a restarter still running.
    stopped: bool,
}

impl OwnRedis {
    fn start(binary: PathBuf) -> OwnRedis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .unwrap()
            .port();
        let mut server = OwnRedis {
            binary,
            port,
            dir: tempfile::tempdir().unwrap(),
            child: None,
            stopped: false,
        };
        server.spawn();
        server
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Starts the server and waits until it answers (and has loaded its append-only file).
    fn spawn(&mut self) {
        let child = Command::new(&self.binary)
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let pong = redis::Client::open(self.url())
                .and_then(|client| client.get_connection_with_timeout(Duration::from_millis(200)))
                .and_then(|mut connection| redis::cmd("PING").query::<String>(&mut connection));
            match pong {
                Ok(_) => return,
                Err(err) if Instant::now() > deadline => {
                    panic!("redis-server on port {} never answered: {err}", self.port)
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// Kills the server with SIGKILL and, after `down`, starts it again on the same port and
    /// files.
    fn restart(&mut self, down: Duration) {
        self.kill();
        std::thread::sleep(down);
        if !self.stopped {
            self.spawn();
        }
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Stops the test's server for good when dropped, also when the test fails while the restarter
/// thread still holds it: no redis-server outlives the test.
struct StopOnDrop(Arc<Mutex<OwnRedis>>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let mut server = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        server.stopped = true;
        server.kill();
    }
}

/// Eight writer tasks make keyed adds through a Redis provider while the server under it (one
/// of the test's own, `appendfsync always`) is killed with SIGKILL and restarted five times at
/// random moments (down for 0-300 ms each time), and once more after the writers are done.
/// At most a tenth of the calls give up; after the last restart each of those is sent again
/// with its key (replayed where it had landed, applied where not), and then every call's add
/// is present exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_server_killed_and_restarted_loses_and_duplicates_nothing() {
    let Some(binary) = redis_server() else {
        let why = "redis-server is not installed (Debian: apt-get install redis-server)";
        skip_or_fail(why);
        return;
    };
    let (seed, mut rng) = seeded("redis-restart");
    let server = tokio::task::spawn_blocking(move || OwnRedis::start(binary))
        .await
        .unwrap();
    let config = RedisConfig {
        connect_timeout_ms: 1_000,
        response_timeout_ms: 1_000,
        deadline_ms: 3_000,
        ..RedisConfig::new(server.url()).with_prefix("faults")
    };
    let server = Arc::new(Mutex::new(server));
    let _stop = StopOnDrop(Arc::clone(&server));
    let provider: Arc<dyn MemoryProvider> =
        Arc::new(RedisProvider::connect(&config).await.unwrap());

    let keep_going = Arc::new(AtomicBool::new(true));
    let restarter = std::thread::spawn({
        let (keep_going, mut rng, server) =
            (Arc::clone(&keep_going), rng.fork(), Arc::clone(&server));
        move || {
            for _ in 0..RESTARTS {
                std::thread::sleep(rng.millis(100..=300));
                let down = rng.millis(0..=300);
                server
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .restart(down);
            }
            keep_going.store(false, Ordering::SeqCst);
        }
    });
    let figures = Arc::new(ClientFigures::default());
    let started = Instant::now();
    let mut outcomes = keyed_writers(
        Arc::clone(&provider),
        RESTART_CALLS,
        keep_going,
        Arc::clone(&figures),
        1..=10,
        &mut rng,
    )
    .await;
    let elapsed = started.elapsed();
    tokio::task::spawn_blocking(move || {
        restarter.join().expect("the restarter panicked");
        let mut server = server.lock().unwrap_or_else(PoisonError::into_inner);
        server.restart(Duration::ZERO);
    })
    .await
    .unwrap();

    let test = "redis restarted (kill -9)";
    resend_given_up(test, seed, &*provider, &mut outcomes, &figures).await;
    let (lost, duplicated) = check_provider(&*provider, &outcomes).await;
    print_client_figures(
        test,
        seed,
        &figures,
        RESTARTS + 1,
        lost,
        duplicated,
        elapsed,
    );
    assert_exactly_once(test, seed, lost, duplicated);
}
