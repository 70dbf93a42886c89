//! A document's history journal (`.MEMORY.md.history.jsonl`, one revision a line), as the
//! markdown provider reads it: whatever a crash, a hand edit or another program left there.
//!
//! Each input is written as the journal of `personalities/ada/MEMORY.md` (which holds `TEXT`,
//! last modified at `MODIFIED`) under a fresh root on tmpfs, then read through the provider's
//! own calls: `history`, a `sync` and a `purge`. Beyond not panicking (the rules of
//! memory-markdown's no_panic_on_stored_bytes test, with a model of what a journal must hold):
//! - `history` answers exactly when the journal's whole lines are this document's revisions,
//!   numbered one after another, whose changes rebuild to the texts their hashes name (a torn
//!   last line and a tip whose write never landed left out); its newest revision is the
//!   document as it is; otherwise it is `Corrupt` naming the journal;
//! - a `sync` either writes the add the contract says, or is `Corrupt` naming the journal and
//!   touches nothing, and never refuses a journal whose lines are all this document's; after a
//!   write over a journal `history` read, `history` still reads it, the write's revision newest;
//! - a `purge` erases a journal that is this document's and refuses, touching nothing, one
//!   that is not.

#![no_main]

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libfuzzer_sys::fuzz_target;
use memory_core::raw::{apply_batch, sha256_hex};
use memory_core::{
    DocumentId, IfMatch, MemoryContext, MemoryError, MemoryProvider, MemoryScope, MemoryUpdate,
    PersonalityId, Revision, Store, Surface, UserId,
};
use memory_markdown::MarkdownProvider;

/// The document's text: what the seed journals (fuzz/examples/seeds.rs) end at.
const TEXT: &str = "one\n\ntwo 🙂\n\nthree\n";

/// When the document was last changed (2026-05-28): the seeds' revisions are later, so they
/// landed; a revision the fuzzer dates earlier than this and whose write the document does
/// not show never did.
const MODIFIED_MS: u64 = 1_780_000_000_000;

/// What a sync adds.
const ENTRY: &str = "Fuzzed entry 🙂";

/// Revisions past this number are not ours (the provider's bound: exact in JavaScript).
const MAX_NUMBER: u64 = 1 << 53;

mod scratch;
use scratch::{root, runtime};

fuzz_target!(|data: &[u8]| {
    let root = root("journal");
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root).expect("a root");
    runtime().block_on(check(root, data));
});

async fn check(root: &Path, bytes: &[u8]) {
    let provider = MarkdownProvider::new(root);
    let ctx = MemoryContext::new(
        PersonalityId::new("ada").expect("an id"),
        UserId::new("u1").expect("an id"),
    )
    .with_scope(MemoryScope::PerPersonality);
    let document = ctx.document(Store::Memory);
    let path = provider.path(&document);
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("a folder");
    std::fs::write(&path, TEXT).expect("the document");
    let modified = UNIX_EPOCH + Duration::from_millis(MODIFIED_MS);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|file| file.set_modified(modified))
        .expect("the document's time");
    let journal = provider.history_path(&document);
    std::fs::write(&journal, bytes).expect("the journal");

    let readable = is_history(bytes, &document, modified);
    match provider.history(&document, usize::MAX).await {
        Ok(log) if readable => {
            let newest = log.first().expect("a document with text has a revision");
            assert_eq!(newest.sha256_after, sha256_hex(TEXT), "{newest:?}");
            for pair in log.windows(2) {
                assert_eq!(pair[0].number, pair[1].number + 1);
            }
            assert!(log.iter().all(|revision| revision.document == document));
        }
        Err(err) if !readable => check_corrupt(&err, &journal),
        result => panic!("history gave {result:?}, the model says readable: {readable}"),
    }

    // A write reads only the journal's end: it may go ahead over a bad line further up, or
    // refuse, but only as Corrupt, and then it writes nothing.
    let ours = is_ours(bytes, &document);
    let add = [MemoryUpdate::add(Store::Memory, ENTRY)];
    match provider.sync(&ctx, &add, &IfMatch::NONE).await {
        Ok(_) => {
            let after = std::fs::read_to_string(&path).expect("the document");
            let expected = format!("{}\n\n{ENTRY}\n", TEXT.trim_end());
            assert_eq!(after, expected);
            if readable {
                let log = provider
                    .history(&document, usize::MAX)
                    .await
                    .unwrap_or_else(|err| panic!("a write left an unreadable journal: {err}"));
                let newest = log.first().expect("the write's revision");
                assert_eq!(newest.updates, add);
                assert_eq!(newest.sha256_after, sha256_hex(&expected));
                for pair in log.windows(2) {
                    assert_eq!(pair[0].number, pair[1].number + 1);
                }
            }
        }
        Err(err) => {
            check_corrupt(&err, &journal);
            assert!(!ours, "a journal that is ours was refused: {err}");
            assert_eq!(on_disk(&path).as_deref(), Some(TEXT.as_bytes()));
            assert_eq!(
                on_disk(&journal).as_deref(),
                Some(bytes),
                "the journal was touched"
            );
        }
    }

    // A purge erases a journal that is ours (as the write left it: it may have cut off a torn
    // line, or moved the lines to an older segment and started a new one) and refuses, as
    // Corrupt and touching nothing, one that is not.
    let files = provider
        .history_files(&document)
        .expect("the journal's files");
    let before: Vec<Option<Vec<u8>>> = std::iter::once(&path)
        .chain(&files)
        .map(|file| on_disk(file))
        .collect();
    let ours = segments_are_ours(&files, &journal, &document);
    match (provider.purge(&document, Surface::Cli).await, ours) {
        (Ok(purged), true) => {
            assert!(purged.tombstone.is_some());
            assert_eq!(on_disk(&path), None);
        }
        (Err(err), false) => {
            assert!(
                matches!(&err, MemoryError::Corrupt { location, .. }
                    if files.iter().any(|file| location.starts_with(&file.display().to_string()))),
                "expected Corrupt at one of {files:?}, got {err:?}"
            );
            let after: Vec<Option<Vec<u8>>> = std::iter::once(&path)
                .chain(&files)
                .map(|file| on_disk(file))
                .collect();
            assert!(after == before, "a refused purge erased");
        }
        (result, _) => panic!("purge gave {result:?}, the model says ours: {ours}"),
    }
}

/// Whether the journal's segments (`files`, older first, the live one `live` among them) each
/// hold only `document`'s revisions in order, and each segment goes on from the one before it
/// (a live segment that does not is one read both as live and, renamed since, as older).
fn segments_are_ours(files: &[PathBuf], live: &Path, document: &DocumentId) -> bool {
    let mut last: Option<u64> = None;
    for file in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "jsonl"))
    {
        let Some(segment) = revisions(&on_disk(file).unwrap_or_default(), document) else {
            return false;
        };
        let (Some(first), Some(previous)) = (segment.first(), last) else {
            last = segment.last().map(|r| r.number).or(last);
            continue;
        };
        if file == live && first.number <= previous {
            continue;
        }
        if first.number != previous + 1 {
            return false;
        }
        last = segment.last().map(|r| r.number);
    }
    true
}

fn on_disk(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

/// `err` is `Corrupt` at the journal (`<path>` or `<path>#<number>`), saying so.
fn check_corrupt(err: &MemoryError, journal: &Path) {
    let location = journal.display().to_string();
    let at = |l: &str| l == location || l.starts_with(&format!("{location}#"));
    assert!(
        matches!(err, MemoryError::Corrupt { location: l, reason } if at(l) && !reason.trim().is_empty()),
        "expected Corrupt at {location}, got {err:?}"
    );
    assert!(err.to_string().contains(&location), "{err}");
}

/// The revisions in the whole lines of `bytes` (up to its last newline: what follows is a torn
/// append), when each is one of `document`'s, agrees with itself, and they are numbered one
/// after another: the journal a purge accepts, and a write must not refuse.
fn revisions(bytes: &[u8], document: &DocumentId) -> Option<Vec<Revision>> {
    let Some(end) = bytes.iter().rposition(|b| *b == b'\n') else {
        return Some(Vec::new());
    };
    let mut revisions: Vec<Revision> = Vec::new();
    for line in bytes[..end].split(|b| *b == b'\n') {
        let revision: Revision = serde_json::from_slice(line).ok()?;
        let in_order = revisions
            .last()
            .is_none_or(|previous| revision.number == previous.number + 1);
        if revision.document != *document
            || !(1..=MAX_NUMBER).contains(&revision.number)
            || !in_order
            || !agrees_with_itself(&revision)
        {
            return None;
        }
        revisions.push(revision);
    }
    Some(revisions)
}

/// Whether what a line records of its text holds: a text it gives has the size and hash it
/// records, and a line with neither text nor updates (a purge's tombstone) records the empty
/// document.
fn agrees_with_itself(revision: &Revision) -> bool {
    let (bytes, sha256) = match &revision.text {
        Some(text) => (text.len(), sha256_hex(text)),
        None if revision.updates.is_empty() => (0, sha256_hex("")),
        None => return true,
    };
    revision.bytes_after == bytes && revision.sha256_after == sha256
}

fn is_ours(bytes: &[u8], document: &DocumentId) -> bool {
    revisions(bytes, document).is_some()
}

/// [`is_ours`], without the tips whose write never landed (the document, changed last at
/// `modified`, before the tip was recorded, still holds the text from before it), and with each
/// line stored as a change rebuilding, from the line before it, to the text its size and hash
/// say: the journal `history` reads.
fn is_history(bytes: &[u8], document: &DocumentId, modified: SystemTime) -> bool {
    let Some(mut revisions) = revisions(bytes, document) else {
        return false;
    };
    let current = sha256_hex(TEXT);
    while revisions.last().is_some_and(|tip| {
        tip.sha256_before == current
            && tip.sha256_after != current
            && tip
                .time
                .checked_add(Duration::from_millis(1))
                .is_none_or(|after| modified < after)
    }) {
        revisions.pop();
    }
    let mut previous: Option<String> = None;
    for revision in &revisions {
        let text = match &revision.text {
            Some(text) => text.clone(),
            None if revision.updates.is_empty() => String::new(),
            None => {
                let stands_alone = revision.number == 1
                    || matches!(revision.updates.first(), Some(MemoryUpdate::Replace { .. }));
                let base = match &previous {
                    _ if stands_alone => "",
                    Some(text) => text.as_str(),
                    // No line before to rebuild from: only an older base would do.
                    None => return false,
                };
                let updates = revision.updates.iter().enumerate();
                let Ok(applied) = apply_batch(document, base, updates, Default::default()) else {
                    return false;
                };
                if applied.text.len() != revision.bytes_after
                    || sha256_hex(&applied.text) != revision.sha256_after
                {
                    return false;
                }
                applied.text
            }
        };
        previous = Some(text);
    }
    true
}
