//! Several OS processes adding to one MEMORY.md lose nothing, and no reader ever sees a torn
//! file. The writers are this very test binary, re-run with the ignored `child_writer` test.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use memory_core::{
    IfMatch, MemoryContext, MemoryProvider, MemoryUpdate, PersonalityId, Store, UserId,
};
use memory_markdown::MarkdownProvider;

const WRITERS: usize = 8;
const ADDS: usize = 50;
const ROOT_VAR: &str = "MEMORY_MARKDOWN_CHILD_ROOT";
const WRITER_VAR: &str = "MEMORY_MARKDOWN_CHILD_WRITER";
const DEADLINE: Duration = Duration::from_secs(120);

fn context(writer: usize) -> MemoryContext {
    MemoryContext::new(
        PersonalityId::new("shared").unwrap(),
        UserId::new(format!("user-{writer}")).unwrap(),
    )
}

#[test]
#[ignore = "helper process of `processes_adding_concurrently_lose_nothing`, not a test on its own"]
fn child_writer() {
    let (Ok(root), Ok(writer)) = (std::env::var(ROOT_VAR), std::env::var(WRITER_VAR)) else {
        panic!(
            "child_writer is a helper: `processes_adding_concurrently_lose_nothing` runs it with \
             {ROOT_VAR} and {WRITER_VAR} set; it does nothing useful on its own"
        );
    };
    let writer: usize = writer.parse().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let provider = MarkdownProvider::new(root);
        let ctx = context(writer);
        for entry in 0..ADDS {
            let add = [MemoryUpdate::add(
                Store::Memory,
                format!("w{writer}-e{entry}"),
            )];
            provider.sync(&ctx, &add, &IfMatch::NONE).await.unwrap();
        }
    });
}

/// The entries of one snapshot of the file, after checking it is whole and well formed.
fn entries(bytes: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(bytes).expect("the file is valid UTF-8 at every moment");
    if text.is_empty() {
        return Vec::new();
    }
    let body = text
        .strip_suffix('\n')
        .unwrap_or_else(|| panic!("a snapshot does not end with a newline: {text:?}"));
    body.split("\n\n")
        .map(|paragraph| {
            let well_formed = paragraph
                .strip_prefix('w')
                .and_then(|rest| rest.split_once("-e"))
                .is_some_and(|(w, e)| {
                    w.len() == 1
                        && w.bytes().all(|b| b.is_ascii_digit())
                        && !e.is_empty()
                        && e.bytes().all(|b| b.is_ascii_digit())
                });
            assert!(
                well_formed,
                "torn or foreign paragraph {paragraph:?} in {text:?}"
            );
            paragraph.to_owned()
        })
        .collect()
}

/// The writer processes; any still running when the test ends (a failed assertion) are killed,
/// so that they do not outlive it.
struct Writers(Vec<Child>);

impl Drop for Writers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

fn spawn_writer(root: &Path, writer: usize) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["child_writer", "--exact", "--ignored", "--nocapture"])
        .env(ROOT_VAR, root)
        .env(WRITER_VAR, writer.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn processes_adding_concurrently_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("personalities/shared/MEMORY.md");
    let started = Instant::now();
    let mut writers = Writers((0..WRITERS).map(|w| spawn_writer(dir.path(), w)).collect());

    let mut seen: HashSet<String> = HashSet::new();
    let mut snapshots = 0;
    loop {
        // Checked before reading, so the last snapshot is taken after every writer is done.
        let mut running = 0;
        for child in &mut writers.0 {
            if child.try_wait().unwrap().is_none() {
                running += 1;
            }
        }
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(err) => panic!("reading {}: {err}", file.display()),
        };
        let now = entries(&bytes);
        let unique: HashSet<String> = now.iter().cloned().collect();
        assert_eq!(unique.len(), now.len(), "duplicate entries in {now:?}");
        assert!(
            now.len() >= seen.len(),
            "the entry count went down from {} to {}",
            seen.len(),
            now.len()
        );
        let lost: Vec<_> = seen.difference(&unique).collect();
        assert!(lost.is_empty(), "entries disappeared: {lost:?}");
        seen = unique;
        snapshots += 1;
        if running == 0 {
            break;
        }
        if started.elapsed() > DEADLINE {
            panic!(
                "writers still running after {DEADLINE:?}, {} entries so far",
                seen.len()
            );
        }
    }

    for (writer, child) in std::mem::take(&mut writers.0).into_iter().enumerate() {
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "writer {writer} failed ({}):\n{stdout}\n{stderr}",
            output.status
        );
        // A filter that matched nothing would also exit with success.
        assert!(
            stdout.contains("1 passed"),
            "writer {writer} did not run child_writer:\n{stdout}\n{stderr}"
        );
    }

    let last = entries(&std::fs::read(&file).unwrap());
    let expected: HashSet<String> = (0..WRITERS)
        .flat_map(|w| (0..ADDS).map(move |e| format!("w{w}-e{e}")))
        .collect();
    assert_eq!(last.len(), WRITERS * ADDS);
    assert_eq!(last.iter().cloned().collect::<HashSet<_>>(), expected);
    // Each writer's adds were sequential, so they must appear in its order.
    for w in 0..WRITERS {
        let order: Vec<usize> = last
            .iter()
            .filter_map(|entry| entry.strip_prefix(&format!("w{w}-e")))
            .map(|e| e.parse().unwrap())
            .collect();
        assert_eq!(order, (0..ADDS).collect::<Vec<_>>(), "writer {w}");
    }
    // One revision per add, from every process, in one chain: the newest 100 (the default
    // retention) are kept, and the newest holds the file as it is.
    let log = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(
            MarkdownProvider::new(dir.path()).history(&context(0).document(Store::Memory), 1000),
        )
        .unwrap();
    let total = (WRITERS * ADDS) as u64;
    assert_eq!(
        log.iter().map(|r| r.number).collect::<Vec<_>>(),
        (total - 99..=total).rev().collect::<Vec<_>>()
    );
    for pair in log.windows(2) {
        assert_eq!(pair[0].sha256_before, pair[1].sha256_after);
    }
    assert!(log.iter().all(|r| r.surface == memory_core::Surface::Api));
    assert_eq!(
        log[0].text.as_deref().map(str::as_bytes),
        Some(&std::fs::read(&file).unwrap()[..])
    );
    eprintln!(
        "{} adds by {WRITERS} processes in {:?}, {snapshots} snapshots checked",
        WRITERS * ADDS,
        started.elapsed()
    );
}
