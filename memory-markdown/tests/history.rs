//! History kept in files: the journal beside each document, what a writer killed between the
//! journal and the document leaves and how the next write reconciles it, bytes in the journal
//! that are not ours, retention pruning on disk, and purge erasing the files.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use memory_core::raw::sha256_hex;
use memory_core::{
    DocumentId, IdempotencyKey, IfMatch, MemoryError, MemoryProvider, MemoryUpdate, Retention,
    Revision, Store, Surface,
};
use memory_markdown::MarkdownProvider;

use common::{ctx, setup};

fn memory() -> DocumentId {
    ctx().document(Store::Memory)
}

async fn add(provider: &MarkdownProvider, text: &str) {
    provider
        .sync(
            &ctx(),
            &[MemoryUpdate::add(Store::Memory, text)],
            &IfMatch::NONE,
        )
        .await
        .unwrap_or_else(|err| panic!("add {text:?}: {err}"));
}

async fn history(provider: &MarkdownProvider) -> Vec<Revision> {
    provider.history(&memory(), usize::MAX).await.unwrap()
}

/// (number, surface, text) of each revision, newest first.
fn summary(log: &[Revision]) -> Vec<(u64, Surface, Option<&str>)> {
    log.iter()
        .map(|r| (r.number, r.surface, r.text.as_deref()))
        .collect()
}

fn journal_lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The history files beside MEMORY.md (its journal's segments, `.MEMORY.md.history.jsonl` and
/// `.MEMORY.md.history.<first>.jsonl`, and its checkpoints' texts, `.MEMORY.md.history.<n>.md`)
/// by name, with their bytes.
fn history_files(provider: &MarkdownProvider) -> std::collections::BTreeMap<String, String> {
    let live = provider.history_path(&memory());
    fs::read_dir(live.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter_map(|entry| {
            let name = entry.file_name().into_string().unwrap();
            let ours = name.starts_with(".MEMORY.md.history.") && !name.ends_with(".tmp");
            ours.then(|| (name, fs::read_to_string(entry.path()).unwrap()))
        })
        .collect()
}

/// Every line of the journal's segments, oldest first.
fn all_lines(provider: &MarkdownProvider) -> Vec<Revision> {
    let mut segments: Vec<(u64, Vec<Revision>)> = history_files(provider)
        .into_iter()
        .filter(|(name, _)| name.ends_with(".jsonl"))
        .map(|(_, text)| {
            let lines: Vec<Revision> = text
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect();
            (lines[0].number, lines)
        })
        .collect();
    segments.sort_by_key(|(first, _)| *first);
    segments.into_iter().flat_map(|(_, lines)| lines).collect()
}

/// Puts `file` back as it was: its bytes and its modification time, as if it had never been
/// written since.
fn restore(file: &Path, (bytes, modified): &(Vec<u8>, SystemTime)) {
    fs::write(file, bytes).unwrap();
    fs::File::options()
        .write(true)
        .open(file)
        .unwrap()
        .set_modified(*modified)
        .unwrap();
}

fn snapshot(file: &Path) -> (Vec<u8>, SystemTime) {
    (
        fs::read(file).unwrap(),
        fs::metadata(file).unwrap().modified().unwrap(),
    )
}

/// Each line of the journal is one revision as JSON, oldest first, readable without the
/// library; the file is private, like the document.
#[tokio::test]
async fn the_journal_is_one_json_revision_a_line() {
    let (_dir, provider) = setup();
    let keyed = ctx()
        .with_surface(Surface::Cli)
        .with_idempotency_key(IdempotencyKey::new("k1").unwrap());
    provider
        .sync(
            &keyed,
            &[MemoryUpdate::add(Store::Memory, "Likes tea.\nMultiline.")],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    add(&provider, "Flies Friday.").await;

    let path = provider.history_path(&memory());
    assert_eq!(
        path,
        provider
            .path(&memory())
            .with_file_name(".MEMORY.md.history.jsonl")
    );
    let bytes = fs::read_to_string(&path).unwrap();
    assert!(bytes.ends_with('\n'));
    let lines = journal_lines(&path);
    assert_eq!(lines.len(), 2, "one line per revision: {bytes}");
    let parsed: Vec<serde_json::Value> = lines
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(parsed[0]["number"], 1);
    assert_eq!(parsed[0]["surface"], "cli");
    assert_eq!(parsed[0]["idempotency_key"], "k1");
    // Between checkpoints a line holds its change, the updates, and no text.
    assert_eq!(parsed[0]["text"], serde_json::Value::Null);
    assert_eq!(parsed[0]["updates"][0]["action"], "add");
    assert_eq!(parsed[1]["number"], 2);
    assert_eq!(parsed[1]["surface"], "api");
    assert_eq!(parsed[1]["updates"][0]["content"], "Flies Friday.");
    assert_eq!(parsed[1]["text"], serde_json::Value::Null);
    // History rebuilds the texts from them.
    assert_eq!(
        history(&provider).await[0].text.as_deref(),
        Some(
            fs::read_to_string(provider.path(&memory()))
                .unwrap()
                .as_str()
        )
    );
    let time = parsed[1]["time"]
        .as_u64()
        .expect("milliseconds since the epoch");
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(time <= now && now - time < 60_000, "{time} vs {now}");
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // What the journal says is what `history` gives, newest first, with the texts rebuilt.
    let log = history(&provider).await;
    let from_file: Vec<Revision> = lines
        .iter()
        .rev()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let without_texts: Vec<Revision> = log
        .iter()
        .cloned()
        .map(|mut revision| {
            revision.text = None;
            revision
        })
        .collect();
    assert_eq!(without_texts, from_file);
    assert_eq!(
        log.iter().map(|r| r.text.as_deref()).collect::<Vec<_>>(),
        [
            Some("Likes tea.\nMultiline.\n\nFlies Friday.\n"),
            Some("Likes tea.\nMultiline.\n")
        ]
    );
}

/// Killed after appending to the journal, before renaming the document in: the revision
/// describes a write that never happened. Readers do not show it, and the next write cuts it
/// off and numbers on as if it had never been made.
#[tokio::test]
async fn a_revision_whose_write_never_landed_is_dropped() {
    let (_dir, provider) = setup();
    let file = provider.path(&memory());
    add(&provider, "first").await;
    let before = snapshot(&file);
    add(&provider, "lost").await;
    restore(&file, &before);
    let journal = provider.history_path(&memory());
    assert_eq!(journal_lines(&journal).len(), 2, "the append is on disk");

    assert_eq!(
        summary(&history(&provider).await),
        [(1, Surface::Api, Some("first\n"))],
        "no revision for the write that never landed, no hand edit either"
    );
    add(&provider, "again").await;
    assert_eq!(
        summary(&history(&provider).await),
        [
            (2, Surface::Api, Some("first\n\nagain\n")),
            (1, Surface::Api, Some("first\n")),
        ]
    );
    assert_eq!(journal_lines(&journal).len(), 2, "the stray line is gone");
}

/// An older segment edited by hand (here its first line) makes `history` `Corrupt`, naming the
/// segment, and never fails a write, a checkpoint's included; once the retention has moved
/// past it, a checkpoint's write unlinks it and history reads again. A live segment whose first
/// line is not ours is not split: the write appends.
#[tokio::test]
async fn a_damaged_older_segment_never_fails_a_write() {
    let dir = tempfile::tempdir().unwrap();
    let provider = MarkdownProvider::new(dir.path()).with_retention(Retention::keep(2));
    for i in 1..=3 {
        add(&provider, &format!("entry {i}")).await;
    }
    let segment = provider
        .history_path(&memory())
        .with_file_name(".MEMORY.md.history.1.jsonl");
    let lines = fs::read_to_string(&segment).unwrap();
    fs::write(
        &segment,
        lines.replacen("{\"number\":1,", "{\"numero\":1,", 1),
    )
    .unwrap();
    let err = provider.history(&memory(), 10).await.unwrap_err();
    assert_corrupt(&err, &segment, "line 1");

    for i in 4..=7 {
        add(&provider, &format!("entry {i}")).await;
    }
    assert!(!segment.exists(), "{:?}", history_files(&provider).keys());
    let shown: Vec<u64> = history(&provider).await.iter().map(|r| r.number).collect();
    assert_eq!(shown, [7, 6]);

    let live = provider.history_path(&memory());
    let lines = fs::read_to_string(&live).unwrap();
    fs::write(&live, lines.replacen("\"document\":", "\"doc\":", 1)).unwrap();
    for i in 8..=9 {
        add(&provider, &format!("entry {i}")).await;
    }
    let all: Vec<String> = (1..=9).map(|i| format!("entry {i}\n")).collect();
    assert_eq!(provider.read(&memory()).await.unwrap().text, all.join("\n"));
}

/// A checkpoint's write that never landed leaves a new live segment holding only its
/// revision: the next write finds the tip in the segment before it, which becomes the live one
/// again, and numbers on from there; so does a write whose new segment was never created.
#[tokio::test]
async fn a_new_segment_whose_write_never_landed_gives_way_to_the_one_before() {
    let dir = tempfile::tempdir().unwrap();
    let provider = MarkdownProvider::new(dir.path()).with_retention(Retention::keep(3));
    let file = provider.path(&memory());
    add(&provider, "one").await;
    add(&provider, "two").await;
    let before = snapshot(&file);
    add(&provider, "lost").await;
    restore(&file, &before);
    let names = |provider| history_files(provider).into_keys().collect::<Vec<_>>();
    assert_eq!(
        names(&provider),
        [".MEMORY.md.history.1.jsonl", ".MEMORY.md.history.jsonl"]
    );
    assert_eq!(history(&provider).await[0].number, 2, "3 never landed");

    add(&provider, "three").await;
    let numbers: Vec<u64> = all_lines(&provider).iter().map(|r| r.number).collect();
    assert_eq!(numbers, [1, 2, 3]);
    assert_eq!(
        history(&provider).await[0].text.as_deref(),
        Some("one\n\ntwo\n\nthree\n")
    );

    // Killed between renaming the live segment away and creating the next one.
    let live = provider.history_path(&memory());
    fs::rename(&live, live.with_file_name(".MEMORY.md.history.3.jsonl")).unwrap();
    add(&provider, "four").await;
    let numbers: Vec<u64> = all_lines(&provider).iter().map(|r| r.number).collect();
    assert_eq!(numbers, [1, 2, 3, 4]);
    assert_eq!(history(&provider).await.len(), 3);
}

/// A write that starts a segment (here a checkpoint: the writer keeps 3 revisions, so its
/// revision 3 is stored whole, where the killed writer, keeping 100, appended its revision 3)
/// cuts off a revision whose write never landed before it renames the live segment away, as
/// an append does. Before, the stray line went into the older segment: history showed the write
/// that never happened as revision 3, took the new live segment (which starts at 3 too) for a
/// copy already read, and showed the real write as a hand edit. Found by fuzzing
/// (fuzz/fuzz_targets/journal.rs).
#[tokio::test]
async fn a_new_segment_leaves_a_write_that_never_landed_behind() {
    let dir = tempfile::tempdir().unwrap();
    let killed = MarkdownProvider::new(dir.path()).with_retention(Retention::keep(100));
    let file = killed.path(&memory());
    add(&killed, "one").await;
    add(&killed, "two").await;
    let before = snapshot(&file);
    add(&killed, "lost").await;
    restore(&file, &before);

    let next = MarkdownProvider::new(dir.path()).with_retention(Retention::keep(3));
    add(&next, "three").await;
    let numbers: Vec<u64> = all_lines(&next).iter().map(|r| r.number).collect();
    assert_eq!(numbers, [1, 2, 3], "{:?}", history_files(&next));
    assert_eq!(
        summary(&history(&next).await),
        [
            (3, Surface::Api, Some("one\n\ntwo\n\nthree\n")),
            (2, Surface::Api, Some("one\n\ntwo\n")),
            (1, Surface::Api, Some("one\n")),
        ]
    );
    assert!(
        history_files(&next)
            .values()
            .all(|lines| !lines.contains("lost")),
        "{:?}",
        history_files(&next)
    );
}

/// A hand edit right after a checkpoint replaces the text the next write would have linked:
/// the checkpoint is rebuilt from the revisions before it, which are kept for it, and the hand
/// edit (whole in its line) starts a segment of its own.
#[tokio::test]
async fn a_hand_edit_after_a_checkpoint_keeps_what_rebuilds_it() {
    let dir = tempfile::tempdir().unwrap();
    let provider = MarkdownProvider::new(dir.path()).with_retention(Retention::keep(3));
    let file = provider.path(&memory());
    for entry in ["one", "two", "three"] {
        add(&provider, entry).await;
    }
    std::thread::sleep(Duration::from_millis(5));
    fs::write(&file, "By hand.\n").unwrap();
    add(&provider, "five").await;
    let files = history_files(&provider);
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        [
            ".MEMORY.md.history.1.jsonl",
            ".MEMORY.md.history.3.jsonl",
            ".MEMORY.md.history.jsonl"
        ],
        "no text for 3: the document no longer held it"
    );
    assert_eq!(
        summary(&history(&provider).await),
        [
            (5, Surface::Api, Some("By hand.\n\nfive\n")),
            (4, Surface::External, Some("By hand.\n")),
            (3, Surface::Api, Some("one\n\ntwo\n\nthree\n")),
        ]
    );
    let numbers: Vec<u64> = all_lines(&provider).iter().map(|r| r.number).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5]);
}

/// A hand edit that puts back the text from before the last write (an editor's undo, a
/// `git checkout`) is a change of its own, not a write that never landed: it came after.
#[tokio::test]
async fn a_hand_edit_back_to_the_text_before_is_a_revision() {
    let (_dir, provider) = setup();
    let file = provider.path(&memory());
    add(&provider, "first").await;
    add(&provider, "bad").await;
    // Past the file system's clock granularity: a person is slower than this.
    std::thread::sleep(Duration::from_millis(50));
    fs::write(&file, "first\n").unwrap();

    assert_eq!(
        summary(&history(&provider).await),
        [
            (3, Surface::External, Some("first\n")),
            (2, Surface::Api, Some("first\n\nbad\n")),
            (1, Surface::Api, Some("first\n")),
        ]
    );
    add(&provider, "good").await;
    assert_eq!(
        summary(&history(&provider).await)[..2],
        [
            (4, Surface::Api, Some("first\n\ngood\n")),
            (3, Surface::External, Some("first\n")),
        ]
    );
}

/// A power loss after the document was flushed but before the journal's append reached the
/// disk: the document is ahead of the journal. The difference shows as a hand edit and the next
/// write records it: no text is lost, only who wrote it.
#[tokio::test]
async fn a_lost_journal_append_becomes_an_external_revision() {
    let (_dir, provider) = setup();
    let journal = provider.history_path(&memory());
    add(&provider, "first").await;
    let before = fs::read(&journal).unwrap();
    add(&provider, "second").await;
    fs::write(&journal, &before).unwrap();

    assert_eq!(
        summary(&history(&provider).await),
        [
            (2, Surface::External, Some("first\n\nsecond\n")),
            (1, Surface::Api, Some("first\n")),
        ]
    );
    add(&provider, "third").await;
    assert_eq!(
        summary(&history(&provider).await),
        [
            (3, Surface::Api, Some("first\n\nsecond\n\nthird\n")),
            (2, Surface::External, Some("first\n\nsecond\n")),
            (1, Surface::Api, Some("first\n")),
        ]
    );
}

/// Killed mid-append: the last line has no newline. Readers leave it out, the next write cuts
/// it off; nothing panics and nothing is refused.
#[tokio::test]
async fn a_torn_last_line_is_cut_off() {
    let (_dir, provider) = setup();
    let journal = provider.history_path(&memory());
    add(&provider, "first").await;
    add(&provider, "second").await;
    let whole = fs::read_to_string(&journal).unwrap();
    let torn = format!("{whole}{}", &journal_lines(&journal)[1][..40]);
    fs::write(&journal, &torn).unwrap();

    assert_eq!(
        history(&provider)
            .await
            .iter()
            .map(|r| r.number)
            .collect::<Vec<_>>(),
        [2, 1]
    );
    add(&provider, "third").await;
    let lines = journal_lines(&journal);
    assert_eq!(lines.len(), 3);
    for line in &lines {
        serde_json::from_str::<Revision>(line).unwrap();
    }
    assert_eq!(history(&provider).await[0].number, 3);

    // Torn before its first newline: an empty history, not an error.
    let (_dir, provider) = setup();
    add(&provider, "first").await;
    let journal = provider.history_path(&memory());
    fs::write(&journal, "{\"number\":1,\"docu").unwrap();
    let log = history(&provider).await;
    assert_eq!(
        summary(&log),
        [(1, Surface::External, Some("first\n"))],
        "the document is there, unrecorded"
    );
    add(&provider, "second").await;
    assert_eq!(journal_lines(&journal).len(), 2);
}

fn assert_corrupt(err: &MemoryError, journal: &Path, says: &str) {
    match err {
        MemoryError::Corrupt { location, reason } => {
            assert_eq!(location, &journal.display().to_string(), "{err}");
            assert!(reason.contains(says), "{reason} should say {says:?}");
        }
        other => panic!(
            "expected Corrupt naming {}, got {other:?}",
            journal.display()
        ),
    }
}

/// Journal bytes made from a real journal's lines and another document's revision line.
type MakeJournal = fn(&[String], &str) -> String;

/// Whole lines that are not revisions of this document are not ours: `Corrupt`, naming the
/// journal and the line, from `history`, `sync` and `purge` alike, which then change nothing.
#[tokio::test]
async fn journal_lines_that_are_not_ours_are_corrupt() {
    let other_document = serde_json::to_string(&{
        let mut revision: Revision = serde_json::from_str(&{
            let (_dir, provider) = setup();
            add(&provider, "x").await;
            journal_lines(&provider.history_path(&memory())).remove(0)
        })
        .unwrap();
        revision.document = DocumentId::GlobalMemory;
        revision
    })
    .unwrap();
    let cases: [(&str, MakeJournal, &str); 6] = [
        (
            "garbage",
            |lines, _| format!("{}\nnot json\n", lines[0]),
            "line 2",
        ),
        (
            "an empty line",
            |lines, _| format!("\n{}\n", lines[0]),
            "line 1",
        ),
        (
            "another document's",
            |_, other| format!("{other}\n"),
            "global MEMORY.md",
        ),
        (
            "numbers that skip",
            |lines, _| format!("{}\n{}\n", lines[1], lines[0]),
            "numbers go up by one",
        ),
        (
            "number zero",
            |lines, _| format!("{}\n", lines[0].replacen("\"number\":1", "\"number\":0", 1)),
            "not between 1 and",
        ),
        (
            "a number too large",
            |lines, _| {
                format!(
                    "{}\n",
                    lines[0].replacen("\"number\":1", &format!("\"number\":{}", u64::MAX), 1)
                )
            },
            "not between 1 and",
        ),
    ];
    for (name, make, says) in cases {
        let (_dir, provider) = setup();
        add(&provider, "first").await;
        add(&provider, "second").await;
        let journal = provider.history_path(&memory());
        let lines = journal_lines(&journal);
        let bytes = make(&lines, &other_document);
        fs::write(&journal, &bytes).unwrap();
        let file = provider.path(&memory());
        let document = fs::read(&file).unwrap();

        let err = provider.history(&memory(), 10).await.unwrap_err();
        assert_corrupt(&err, &journal, says);
        // The write path reads only the last line; it refuses when that is not ours.
        if name != "an empty line" && name != "numbers that skip" {
            let err = provider
                .sync(
                    &ctx(),
                    &[MemoryUpdate::add(Store::Memory, "more")],
                    &IfMatch::NONE,
                )
                .await
                .unwrap_err();
            assert!(matches!(err, MemoryError::Corrupt { .. }), "{name}: {err}");
        }
        let err = provider.purge(&memory(), Surface::Cli).await.unwrap_err();
        assert_corrupt(&err, &journal, says);
        assert_eq!(
            fs::read(&file).unwrap(),
            document,
            "{name}: the document stays"
        );
        assert_eq!(
            fs::read(&journal).unwrap(),
            bytes.as_bytes(),
            "{name}: so does the journal"
        );
    }
}

/// A line that contradicts itself is not ours: a text other than the one its `sha256_after`
/// and `bytes_after` describe, or neither updates nor a text (a purge's tombstone) with the
/// hash and size of a text that is not empty. `history` and `purge` say so, naming the line,
/// and change nothing. Before, `history` showed the line's revision with a text it does not
/// record (the tombstone's empty one), and the next write, whose change rebuilds from that
/// text, left the whole history unreadable. Found by fuzzing (fuzz/fuzz_targets/journal.rs).
#[tokio::test]
async fn a_line_that_contradicts_itself_is_corrupt() {
    type Change = fn(&mut serde_json::Map<String, serde_json::Value>);
    let cases: [(&str, Change, &str); 3] = [
        (
            "a tombstone that is not empty",
            |line| {
                line.remove("updates");
            },
            "neither updates nor a text",
        ),
        (
            "a text not the one recorded",
            |line| {
                line.insert("text".into(), "other\n".into());
            },
            "its text is not the one",
        ),
        (
            "a text of another size",
            |line| {
                line.insert("text".into(), "first\n".into());
                line.insert("bytes_after".into(), 7.into());
            },
            "its text is not the one",
        ),
    ];
    for (name, change, says) in cases {
        let (_dir, provider) = setup();
        add(&provider, "first").await;
        let journal = provider.history_path(&memory());
        let mut line: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&journal_lines(&journal)[0]).unwrap();
        change(&mut line);
        let bytes = format!("{}\n", serde_json::Value::Object(line));
        fs::write(&journal, &bytes).unwrap();
        let file = provider.path(&memory());
        let document = fs::read(&file).unwrap();

        let err = provider.history(&memory(), 10).await.unwrap_err();
        assert_corrupt(&err, &journal, says);
        assert!(err.to_string().contains("line 1"), "{name}: {err}");
        let err = provider.purge(&memory(), Surface::Cli).await.unwrap_err();
        assert_corrupt(&err, &journal, says);
        assert_eq!(
            fs::read(&file).unwrap(),
            document,
            "{name}: the document stays"
        );
        assert_eq!(
            fs::read(&journal).unwrap(),
            bytes.as_bytes(),
            "{name}: so does the journal"
        );
    }
    // The text the line records, as it records it: history shows it.
    let (_dir, provider) = setup();
    add(&provider, "first").await;
    let journal = provider.history_path(&memory());
    let mut line: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&journal_lines(&journal)[0]).unwrap();
    line.insert("text".into(), "first\n".into());
    fs::write(&journal, format!("{}\n", serde_json::Value::Object(line))).unwrap();
    let log = history(&provider).await;
    assert_eq!(summary(&log), [(1, Surface::Api, Some("first\n"))]);
}

/// A directory where the journal should be is `Corrupt` like any file of the layout.
#[tokio::test]
async fn a_directory_for_a_journal_is_corrupt() {
    let (_dir, provider) = setup();
    add(&provider, "first").await;
    let journal = provider.history_path(&memory());
    fs::remove_file(&journal).unwrap();
    fs::create_dir(&journal).unwrap();
    let write = [MemoryUpdate::add(Store::Memory, "more")];
    let err = provider
        .sync(&ctx(), &write, &IfMatch::NONE)
        .await
        .unwrap_err();
    assert_corrupt(&err, &journal, "directory");
    let err = provider.history(&memory(), 10).await.unwrap_err();
    assert_corrupt(&err, &journal, "directory");
    let err = provider.purge(&memory(), Surface::Cli).await.unwrap_err();
    assert_corrupt(&err, &journal, "directory");
    assert_eq!(
        fs::read_to_string(provider.path(&memory())).unwrap(),
        "first\n"
    );
}

/// Pruning writes nothing: a write appends its lines to the live segment, a checkpoint's
/// write (every `keep`th) renames it to `.<NAME>.history.<first>.jsonl` and starts a new
/// one, and unlinks the older segments no kept revision is rebuilt from. No segment is ever
/// rewritten; the journal holds the newest `keep` and the changes back to the checkpoint they
/// are rebuilt from (at most `keep` more), at most two checkpoint texts, and `history`
/// shows exactly the newest `keep`.
#[tokio::test]
async fn pruning_unlinks_whole_segments_and_writes_nothing() {
    const WRITES: u64 = 30;
    for keep in [1, 2, 4, 7] {
        let dir = tempfile::tempdir().unwrap();
        let provider = MarkdownProvider::new(dir.path()).with_retention(Retention::keep(keep));
        let keep = keep as u64;
        let mut seen = std::collections::BTreeMap::new();
        let mut texts = Vec::new();
        for i in 1..=WRITES {
            add(&provider, &format!("entry {i}")).await;
            texts.push(fs::read_to_string(provider.path(&memory())).unwrap());
            let files = history_files(&provider);
            for (name, bytes) in &files {
                let first = seen.entry(name.clone()).or_insert_with(|| bytes.clone());
                if name != ".MEMORY.md.history.jsonl" {
                    assert_eq!(first, bytes, "keep {keep}: {name} never changes");
                }
            }
            seen.retain(|name, _| files.contains_key(name));
            let live: Vec<Revision> = files[".MEMORY.md.history.jsonl"]
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect();
            let live_first = i / keep * keep;
            let live_first = if live_first == 0 { 1 } else { live_first };
            assert_eq!(
                live.iter().map(|r| r.number).collect::<Vec<_>>(),
                (live_first..=i).collect::<Vec<_>>(),
                "keep {keep}: the live segment after write {i} starts at the last checkpoint"
            );
            // At most `keep` from the base of the oldest kept, a checkpoint, to the oldest kept.
            let numbers: Vec<u64> = all_lines(&provider).iter().map(|r| r.number).collect();
            let oldest_kept = (i + 1).saturating_sub(keep).max(1);
            let base = numbers[0];
            assert!(
                base <= oldest_kept && oldest_kept - base <= keep,
                "keep {keep}: after write {i} the journal holds {numbers:?}"
            );
            assert_eq!(numbers, (base..=i).collect::<Vec<_>>());
            for (name, text) in &files {
                let Some(n) = name
                    .strip_prefix(".MEMORY.md.history.")
                    .and_then(|rest| rest.strip_suffix(".md"))
                else {
                    continue;
                };
                let n: u64 = n.parse().unwrap();
                assert!(
                    n.is_multiple_of(keep) && n < i,
                    "keep {keep}: {name} after write {i}"
                );
                assert_eq!(text, &texts[n as usize - 1], "keep {keep}: {name}");
            }
            let checkpoints = files.keys().filter(|name| name.ends_with(".md")).count();
            assert!(
                checkpoints <= 2,
                "keep {keep}: {checkpoints} texts after write {i}"
            );
            let shown: Vec<u64> = history(&provider).await.iter().map(|r| r.number).collect();
            assert_eq!(
                shown,
                (oldest_kept..=i).rev().collect::<Vec<_>>(),
                "keep {keep}: exactly the newest after write {i}"
            );
            for revision in history(&provider).await {
                assert_eq!(
                    revision.text.as_deref(),
                    Some(texts[revision.number as usize - 1].as_str()),
                    "keep {keep}: revision {} rebuilt",
                    revision.number
                );
            }
        }
    }
}

/// A provider remembers where its last write left each journal's last line, so the next write
/// need not read it (a checkpoint's holds a whole text). A journal changed since by anyone else
/// is read again, even when its length is the same: the next number follows what is on disk.
#[tokio::test]
async fn a_journal_changed_behind_the_writer_is_read_again() {
    let (_dir, provider) = setup();
    let journal = provider.history_path(&memory());
    add(&provider, "first").await;
    add(&provider, "second").await;

    // A person renumbers the last revision: the same length, another head.
    let edited = fs::read_to_string(&journal)
        .unwrap()
        .replace("\"number\":2,", "\"number\":7,");
    assert_eq!(edited.len(), fs::metadata(&journal).unwrap().len() as usize);
    fs::write(&journal, &edited).unwrap();
    add(&provider, "third").await;
    let numbers = |lines: Vec<String>| -> Vec<u64> {
        lines
            .iter()
            .map(|line| serde_json::from_str::<Revision>(line).unwrap().number)
            .collect()
    };
    assert_eq!(numbers(journal_lines(&journal)), [1, 7, 8]);

    // Another writer (another process, as far as this one can tell) writes in between, and
    // then this one again: one revision after another, none written twice.
    let (dir, provider) = setup();
    let journal = provider.history_path(&memory());
    let other = MarkdownProvider::new(dir.path());
    for (writer, text) in [
        (&provider, "first"),
        (&other, "second"),
        (&provider, "third"),
    ] {
        add(writer, text).await;
    }
    add(&other, "fourth").await;
    add(&provider, "fifth").await;
    assert_eq!(numbers(journal_lines(&journal)), [1, 2, 3, 4, 5]);
    assert_eq!(
        summary(&history(&provider).await)[0],
        (
            5,
            Surface::Api,
            Some("first\n\nsecond\n\nthird\n\nfourth\n\nfifth\n")
        )
    );
}

/// Keeping one, a write that records a hand edit before its own keeps only its own.
#[tokio::test]
async fn keeping_one_keeps_the_newest_of_a_write_and_the_hand_edit_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let provider = MarkdownProvider::new(dir.path()).with_retention(Retention::keep(1));
    let file = provider.path(&memory());
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, "By hand.\n").unwrap();
    add(&provider, "By the agent.").await;
    assert_eq!(
        summary(&history(&provider).await),
        [(2, Surface::Api, Some("By hand.\n\nBy the agent.\n"))]
    );
    // The hand edit stays as the base of revision 2 until the next write links 2's text.
    let numbers = |provider| {
        all_lines(provider)
            .iter()
            .map(|r| r.number)
            .collect::<Vec<_>>()
    };
    assert_eq!(numbers(&provider), [1, 2]);
    add(&provider, "Again.").await;
    assert_eq!(numbers(&provider), [2, 3]);
    assert_eq!(
        history_files(&provider)[".MEMORY.md.history.2.md"],
        "By hand.\n\nBy the agent.\n"
    );
}

/// With `max_age`, revisions older than it are not shown, and a journal whose oldest line is
/// well past it is rewritten on the next write without what the kept ones are not rebuilt
/// from; the newest always stays.
#[tokio::test]
async fn revisions_past_the_age_limit_are_pruned() {
    let day = Duration::from_secs(86_400);
    let dir = tempfile::tempdir().unwrap();
    let provider =
        MarkdownProvider::new(dir.path()).with_retention(Retention::default().with_max_age(day));
    for text in ["one", "two", "three"] {
        add(&provider, text).await;
    }
    // Age every revision by ten days, as if written then.
    let journal = provider.history_path(&memory());
    let aged: String = journal_lines(&journal)
        .iter()
        .map(|line| {
            let mut revision: Revision = serde_json::from_str(line).unwrap();
            revision.time -= 10 * day;
            serde_json::to_string(&revision).unwrap() + "\n"
        })
        .collect();
    fs::write(&journal, aged).unwrap();
    // And the document, last written then.
    let file = provider.path(&memory());
    let written = fs::metadata(&file).unwrap().modified().unwrap();
    fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(written - 10 * day)
        .unwrap();

    let numbers = |log: Vec<Revision>| log.iter().map(|r| r.number).collect::<Vec<_>>();
    assert_eq!(numbers(history(&provider).await), [3], "the tip stays");
    add(&provider, "four").await;
    assert_eq!(
        numbers(history(&provider).await),
        [4],
        "3 is old and no longer the tip"
    );
    // Revision 4 is a checkpoint (the first write of a new half of the age limit), so it is
    // rebuilt from nothing older: the old lines are gone.
    assert_eq!(journal_lines(&journal).len(), 1, "the old lines are gone");
}

/// With history off, writes record nothing and keep no journal, not even one an earlier
/// configuration left; `history` shows only the document as an unrecorded change.
#[tokio::test]
async fn history_off_keeps_no_journal() {
    let dir = tempfile::tempdir().unwrap();
    let on = MarkdownProvider::new(dir.path());
    add(&on, "recorded").await;
    let journal = on.history_path(&memory());
    assert!(journal.exists());

    let off = MarkdownProvider::new(dir.path()).with_retention(Retention::OFF);
    add(&off, "not recorded").await;
    assert!(!journal.exists(), "removed by the write");
    add(&off, "still not").await;
    assert!(!journal.exists());
    let log = off.history(&memory(), 10).await.unwrap();
    assert_eq!(
        summary(&log),
        [(
            1,
            Surface::External,
            Some("recorded\n\nnot recorded\n\nstill not\n")
        )]
    );
    let purged = off.purge(&memory(), Surface::Cli).await.unwrap();
    assert_eq!((purged.revisions, purged.tombstone), (0, None));
    assert!(!on.path(&memory()).exists() && !journal.exists());
}

/// The names in `dir`, hidden ones included.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// A purge erases the document's files: the document, its receipts, its journal (then holding
/// only the tombstone) and temporary files left by killed writers; the lock file stays. Other
/// documents are untouched.
#[tokio::test]
async fn purge_erases_the_files() {
    let (dir, provider) = setup();
    let keyed = ctx().with_idempotency_key(IdempotencyKey::new("k").unwrap());
    let both = [
        MemoryUpdate::add(Store::Memory, "A secret."),
        MemoryUpdate::add(Store::User, "Kept."),
    ];
    provider.sync(&keyed, &both, &IfMatch::NONE).await.unwrap();
    add(&provider, "Another secret.").await;
    let folder = dir.path().join("personalities/ada");
    fs::write(folder.join(".MEMORY.md.1.2.3.tmp"), "A secret.\n").unwrap();
    fs::write(
        folder.join("..MEMORY.md.history.jsonl.1.2.3.tmp"),
        "A secret.\n",
    )
    .unwrap();
    assert_eq!(
        names(&folder),
        [
            "..MEMORY.md.history.jsonl.1.2.3.tmp",
            ".MEMORY.md.1.2.3.tmp",
            ".MEMORY.md.history.jsonl",
            ".MEMORY.md.lock",
            ".MEMORY.md.receipts.json",
            "MEMORY.md",
        ]
    );

    let purged = provider.purge(&memory(), Surface::Cli).await.unwrap();
    assert_eq!(
        purged.location,
        provider.path(&memory()).display().to_string()
    );
    assert_eq!(
        (purged.bytes, purged.revisions),
        ("A secret.\n\nAnother secret.\n".len(), 2)
    );
    assert_eq!(
        names(&folder),
        [".MEMORY.md.history.jsonl", ".MEMORY.md.lock"]
    );
    let journal = fs::read_to_string(provider.history_path(&memory())).unwrap();
    assert!(!journal.contains("secret"), "{journal}");
    let line: Revision = serde_json::from_str(journal.trim_end()).unwrap();
    assert_eq!(Some(line), purged.tombstone);
    assert_eq!(
        provider.list().await.unwrap(),
        [ctx().document(Store::User)]
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("users/u1/USER.md")).unwrap(),
        "Kept.\n"
    );
    assert!(dir.path().join("users/u1/.USER.md.receipts.json").exists());

    // The key's receipt went with the document: the same call is a new write now.
    let again = provider.sync(&keyed, &both, &IfMatch::NONE).await.unwrap();
    assert!(!again.documents[0].replayed && again.documents[0].written);
    assert_eq!(history(&provider).await[0].number, 4);
}

/// A purge of a document kept through a symbolic link (into a dotfiles repository) erases the
/// text the link leads to, and the link: the document then reads as never written.
#[tokio::test]
async fn purge_erases_what_a_link_leads_to() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let (root, dotfiles) = (dir.path().join("memory"), dir.path().join("dotfiles"));
    fs::create_dir_all(root.join("personalities/ada")).unwrap();
    fs::create_dir_all(&dotfiles).unwrap();
    let target = dotfiles.join("ada.md");
    fs::write(&target, "A secret.\n").unwrap();
    let provider = MarkdownProvider::new(&root);
    symlink(&target, provider.path(&memory())).unwrap();
    add(&provider, "Another.").await;

    let purged = provider.purge(&memory(), Surface::Cli).await.unwrap();
    assert_eq!(purged.bytes, "A secret.\n\nAnother.\n".len());
    assert_eq!(purged.revisions, 2, "the hand-made text and the write");
    assert!(!target.exists());
    assert!(fs::symlink_metadata(provider.path(&memory())).is_err());
    assert_eq!(provider.read(&memory()).await.unwrap().text, "");
    assert_eq!(provider.list().await.unwrap(), []);
}

/// A checkpoint's text is a hard link to the file the next write replaced; where there can be
/// none (a document linked in from another file system, here tmpfs) it is a copy, and history
/// reads the same.
#[tokio::test]
async fn a_checkpoint_text_is_copied_where_it_cannot_be_linked() {
    use std::os::unix::fs::{MetadataExt, symlink};
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir_in("/dev/shm").expect("/dev/shm, a tmpfs on Linux");
    assert_ne!(
        fs::metadata(dir.path()).unwrap().dev(),
        fs::metadata(elsewhere.path()).unwrap().dev(),
        "the document must be on another file system than its history"
    );
    let target = elsewhere.path().join("ada.md");
    fs::write(&target, "").unwrap();
    let provider = MarkdownProvider::new(dir.path()).with_retention(Retention::keep(2));
    fs::create_dir_all(provider.path(&memory()).parent().unwrap()).unwrap();
    symlink(&target, provider.path(&memory())).unwrap();
    for entry in ["one", "two", "three"] {
        add(&provider, entry).await;
    }
    assert_eq!(
        history_files(&provider)[".MEMORY.md.history.2.md"],
        "one\n\ntwo\n"
    );
    assert!(
        fs::symlink_metadata(provider.path(&memory()))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        summary(&history(&provider).await),
        [
            (3, Surface::Api, Some("one\n\ntwo\n\nthree\n")),
            (2, Surface::Api, Some("one\n\ntwo\n")),
        ]
    );
}

/// A document never written is purged without creating anything; one made by hand and never
/// recorded is erased, and its tombstone comes after the number `history` showed it under.
#[tokio::test]
async fn purge_of_what_was_never_recorded() {
    let (dir, provider) = setup();
    let nothing = provider.purge(&memory(), Surface::Cli).await.unwrap();
    assert_eq!(
        (nothing.bytes, nothing.revisions, nothing.tombstone),
        (0, 0, None)
    );
    assert_eq!(names(dir.path()), Vec::<String>::new(), "nothing created");

    let file: PathBuf = provider.path(&memory());
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, "By hand.\n").unwrap();
    assert_eq!(history(&provider).await[0].number, 1);
    let purged = provider.purge(&memory(), Surface::Web).await.unwrap();
    let tombstone = purged.tombstone.expect("a tombstone");
    assert_eq!(tombstone.number, 2);
    assert_eq!(tombstone.bytes_before, "By hand.\n".len());
    assert_eq!(
        tombstone.sha256_before,
        sha256_hex(""),
        "no hash of what was erased"
    );
    assert_eq!(history(&provider).await, [tombstone]);
    assert!(!file.exists());
}

/// A reader of the history, taking no lock, never sees a write half done: no hand edit that
/// did not happen, no gap, however the reads fall between writers' journal appends and
/// renames.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn history_read_during_writes_is_consistent() {
    // Keeping 3, a write in three starts a segment and unlinks older ones while `history`
    // reads them.
    for keep in [3, 100] {
        history_read_during_writes_keeping(keep).await;
    }
}

async fn history_read_during_writes_keeping(keep: usize) {
    const WRITES: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let provider = MarkdownProvider::new(dir.path()).with_retention(Retention::keep(keep));
    let provider = Arc::new(provider);
    let writer = {
        let provider = Arc::clone(&provider);
        tokio::spawn(async move {
            for i in 0..WRITES {
                add(&provider, &format!("entry {i}")).await;
            }
        })
    };
    let mut reads = 0;
    while !writer.is_finished() {
        let log = history(&provider).await;
        assert!(
            log.iter().all(|r| r.surface == Surface::Api),
            "a hand edit that never happened: {:?}",
            summary(&log)
        );
        for pair in log.windows(2) {
            assert_eq!(pair[0].number, pair[1].number + 1);
            assert_eq!(pair[0].sha256_before, pair[1].sha256_after);
        }
        reads += 1;
    }
    writer.await.unwrap();
    assert!(reads > 0);
    assert_eq!(history(&provider).await.len(), keep);
}
