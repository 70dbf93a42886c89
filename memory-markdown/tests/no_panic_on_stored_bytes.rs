//! Issue 19: whatever bytes are on disk where a document or the identity map should be; issue
//! 21: whatever bytes a document's history journal holds.
//!
//! Arbitrary bytes are written as `MEMORY.md` (global or a personality's), `USER.md` or
//! `users/identity-map.json` under a fresh root, then read, prefetched, listed, synced and
//! resolved through `MarkdownProvider`. Nothing may panic; bytes that are not UTF-8 (or not an
//! identity map) are `MemoryError::Corrupt` naming the path and are left byte for byte as they
//! were, by every call, including a `sync` whose other document is fine; text that is valid
//! works, by the contract's rules. A journal's real lines are cut, spliced into and added to:
//! `history` and `purge` accept it exactly when its whole lines are this document's revisions
//! in order (a last line without its newline is a torn append, left out); otherwise they, and
//! a `sync` that reads its last line, are `Corrupt` naming the journal and change nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memory_core::raw::render;
use memory_core::{
    DocumentId, Identity, IdentityMap, IfMatch, MemoryContext, MemoryError, MemoryProvider,
    MemoryScope, MemoryUpdate, PersonalityId, Store, UserId,
};
use memory_markdown::MarkdownProvider;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};

/// A fixed seed per test: the same cases on every run, so a failure reproduces.
fn run<S: Strategy>(
    cases: u32,
    seed: u64,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let mut runner = TestRunner::new(Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    });
    if let Err(err) = runner.run(&strategy, test) {
        panic!("{err}");
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

// ---------------------------------------------------------------------------------------------
// Bytes.

const TEXTS: &[&str] = &[
    "",
    " \n\t",
    "\n",
    "Prefers metric units.\n",
    "a\n\nb\n",
    "no newline at the end",
    "日本語 🙂 e\u{301}\n",
    "\u{feff}BOM first\n",
    "a\u{0}b\n",
    "\r\nwindows\r\n",
    "[...truncated 5 chars]\n",
];

/// Not UTF-8: a lone continuation byte, a truncated sequence, an overlong NUL, a surrogate,
/// a byte past the range.
const INVALID: &[&[u8]] = &[
    b"\x80",
    b"\xc3",
    b"\xe6\x97",
    b"\xc0\x80",
    b"\xed\xa0\x80",
    b"\xf5\x80\x80\x80",
    b"\xff\xfe",
];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => select(TEXTS).prop_map(str::to_owned),
        2 => any::<String>(),
        1 => prop::collection::vec(select(TEXTS), 0..5).prop_map(|t| t.concat()),
    ]
}

/// Bytes for a document: valid text, text with invalid bytes spliced in, or anything.
fn document_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => text().prop_map(String::into_bytes),
        3 => (text(), any::<prop::sample::Index>(), select(INVALID)).prop_map(|(t, i, bad)| {
            let at = i.index(t.len() + 1);
            let mut bytes = t.into_bytes();
            bytes.splice(at..at, bad.iter().copied());
            bytes
        }),
        2 => prop::collection::vec(any::<u8>(), 0..300),
    ]
}

/// A map of the older form, `{"<platform>": {"<platform user id>": "<user id>"}}`, with good
/// and bad ids and values of the wrong type.
fn identity_map_json() -> BoxedStrategy<Vec<u8>> {
    let platform = prop_oneof![
        4 => select(&["telegram", "slack", "matrix"][..]).prop_map(str::to_owned),
        1 => select(&["", "a b", "tele:gram", "日本"][..]).prop_map(str::to_owned),
    ];
    let platform_user = prop_oneof![
        4 => select(&["12345", "U024BE7LH", "@a:matrix.org", "grace@example.com"][..])
            .prop_map(str::to_owned),
        1 => select(&["", " padded", "tab\there", "nul\u{0}"][..]).prop_map(str::to_owned),
        1 => Just("x".repeat(300)),
        1 => any::<String>(),
    ];
    let user = prop_oneof![
        4 => select(&["grace", "u1", "ada-l"][..]).prop_map(|u| serde_json::json!(u)),
        1 => select(&["", "../etc", "a b"][..]).prop_map(|u| serde_json::json!(u)),
        1 => Just(serde_json::json!(5)),
        1 => Just(serde_json::json!(null)),
        1 => Just(serde_json::json!(["grace"])),
    ];
    prop::collection::btree_map(
        platform,
        prop::collection::btree_map(platform_user, user, 0..3),
        0..3,
    )
    .prop_map(|m| serde_json::to_vec_pretty(&m).unwrap())
    .boxed()
}

/// A map of the older form with good ids only, often linking the identities probed.
fn good_identity_map_json() -> BoxedStrategy<Vec<u8>> {
    prop::collection::btree_map(
        select(&["telegram", "slack", "matrix", "irc_2"][..]),
        prop::collection::btree_map(
            select(
                &[
                    "12345",
                    "U024BE7LH",
                    "@a:matrix.org",
                    "Grace Hopper",
                    "日本",
                ][..],
            ),
            select(&["grace", "u1", "ada-l"][..]),
            1..4,
        ),
        1..4,
    )
    .prop_map(|m| serde_json::to_vec_pretty(&m).unwrap())
    .boxed()
}

/// A map in the form Ethos writes, an array of `{platform, platformUserId, userId, displayLabel,
/// firstSeenAt}`, with good and bad ids, values of the wrong type, fields of other names,
/// repeated identities and elements that are not entries at all.
fn ethos_identity_map_json() -> BoxedStrategy<Vec<u8>> {
    use serde_json::{Value, json};
    let text = |good: &'static [&'static str], bad: &'static [&'static str]| {
        prop_oneof![
            5 => select(good).prop_map(|t| json!(t)),
            1 => select(bad).prop_map(|t| json!(t)),
            1 => Just(json!(5)),
            1 => Just(Value::Null),
            1 => Just(json!(["grace"])),
        ]
    };
    let entry = (
        text(&["telegram", "slack", "matrix"], &["", "a b", "tele:gram"]),
        text(
            &["12345", "U024BE7LH", "@a:matrix.org", "grace@example.com"],
            &["", " padded", "tab\there"],
        ),
        text(&["grace", "u1", "3f9c2a7b1d4e"], &["", "../etc", "a b"]),
        prop::option::of(select(&["Grace", "telegram:12345"][..])),
        any::<bool>(),
        prop::collection::vec(prop::bool::weighted(0.85), 5),
    )
        .prop_map(|(platform, platform_user, user, label, extra, keep)| {
            let mut entry = serde_json::Map::new();
            for (keep, name, value) in [
                (keep[0], "platform", platform),
                (keep[1], "platformUserId", platform_user),
                (keep[2], "userId", user),
                (keep[3], "displayLabel", json!(label)),
                (keep[4], "firstSeenAt", json!("2026-09-01T10:00:00.000Z")),
            ] {
                // Each field is there most of the time.
                if keep {
                    entry.insert(name.to_owned(), value);
                }
            }
            if extra {
                entry.insert("avatar".to_owned(), json!({"size": 64, "scale": 1.5}));
            }
            Value::Object(entry)
        });
    let element = prop_oneof![
        8 => entry,
        1 => select(&["a note", ""][..]).prop_map(|t| json!(t)),
        1 => Just(json!({"kind": "group", "platform": "slack"})),
        1 => Just(json!(null)),
    ];
    prop::collection::vec(element, 0..5)
        .prop_map(|entries| serde_json::to_vec_pretty(&entries).unwrap())
        .boxed()
}

/// Bytes for the identity map: maps of either form with good and bad ids, other JSON, mutated
/// JSON, anything.
fn identity_map_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => good_identity_map_json(),
        3 => identity_map_json(),
        4 => ethos_identity_map_json(),
        2 => (good_identity_map_json(), any::<prop::sample::Index>(), 1usize..4).prop_map(|(mut b, i, n)| {
            // Cut a few bytes out: often a broken map, sometimes broken UTF-8.
            let at = i.index(b.len() + 1);
            b.drain(at..(at + n).min(b.len()));
            b
        }),
        2 => (ethos_identity_map_json(), any::<prop::sample::Index>(), 1usize..4).prop_map(|(mut b, i, n)| {
            let at = i.index(b.len() + 1);
            b.drain(at..(at + n).min(b.len()));
            b
        }),
        1 => select(&[
            "[]", "", " ", "null", "\"grace\"", "5", "{}", "{\"telegram\": []}",
            "{\"telegram\": {\"1\": \"grace\"}, \"telegram\": {\"2\": \"ada\"}}",
            "{\"telegram\": {\"1\": \"grace\"}} trailing",
            "[{\"platform\": \"telegram\", \"platformUserId\": \"12345\", \"userId\": \"grace\"}] trailing",
            "[{\"platform\": \"telegram\", \"platformUserId\": \"12345\", \"userId\": \"u1\", \"userId\": \"grace\"}]",
        ][..])
        .prop_map(|s| s.as_bytes().to_vec()),
        1 => (1usize..3).prop_map(|n| "[{\"a\":".repeat(n * 10_000).into_bytes()),
        1 => (1usize..3).prop_map(|n| "{\"a\":".repeat(n * 10_000).into_bytes()),
        1 => document_bytes(),
    ]
}

// ---------------------------------------------------------------------------------------------
// Where the bytes go.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    GlobalMemory,
    PersonalityMemory,
    UserProfile,
    IdentityMap,
}

fn ctx_for(target: Target) -> MemoryContext {
    let ctx = MemoryContext::new(
        PersonalityId::new("ada").unwrap(),
        UserId::new("u1").unwrap(),
    );
    match target {
        Target::GlobalMemory => ctx.with_scope(MemoryScope::Global),
        _ => ctx,
    }
}

fn document_of(target: Target) -> Option<DocumentId> {
    let ctx = ctx_for(target);
    match target {
        Target::GlobalMemory | Target::PersonalityMemory => Some(ctx.document(Store::Memory)),
        Target::UserProfile => Some(ctx.document(Store::User)),
        Target::IdentityMap => None,
    }
}

fn path_of(provider: &MarkdownProvider, target: Target) -> PathBuf {
    match document_of(target) {
        Some(document) => provider.path(&document),
        None => provider.identity_map_path(),
    }
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn on_disk(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

/// `err` is `Corrupt` at `path` (a journal's naming the revision, `<path>#<number>`), saying
/// so in its message.
fn check_corrupt(err: &MemoryError, path: &Path) -> Result<(), TestCaseError> {
    let location = path.display().to_string();
    let at = |l: &str| l == location || l.starts_with(&format!("{location}#"));
    prop_assert!(
        matches!(err, MemoryError::Corrupt { location: l, reason } if at(l) && !reason.trim().is_empty()),
        "expected Corrupt at {location}, got {err:?}"
    );
    prop_assert!(err.to_string().contains(&location), "{err}");
    Ok(())
}

/// The contract's `add`.
fn added(text: &str, entry: &str) -> String {
    if text.trim().is_empty() {
        format!("{}\n", entry.trim())
    } else {
        format!("{}\n\n{}\n", text.trim_end(), entry.trim())
    }
}

const ENTRY: &str = "Fuzzed entry 🙂";

// ---------------------------------------------------------------------------------------------
// The documents.

async fn check_document(target: Target, bytes: Vec<u8>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let provider = MarkdownProvider::new(dir.path());
    let ctx = ctx_for(target);
    let document = document_of(target).unwrap();
    let path = path_of(&provider, target);
    write(&path, &bytes);
    let other = if document.store() == Store::Memory {
        ctx.document(Store::User)
    } else {
        ctx.document(Store::Memory)
    };
    let other_path = provider.path(&other);
    let valid = String::from_utf8(bytes.clone()).ok();

    // read
    match (provider.read(&document).await, &valid) {
        (Ok(read), Some(text)) => {
            prop_assert_eq!(&read.text, text);
            prop_assert_eq!(&read.location, &path.display().to_string());
            prop_assert!(read.modified.is_some());
        }
        (Err(err), None) => check_corrupt(&err, &path)?,
        (result, _) => {
            return Err(TestCaseError::fail(format!(
                "read of {bytes:?} gave {result:?}"
            )));
        }
    }

    // prefetch
    match (provider.prefetch(&ctx).await, &valid) {
        (Ok(prefetch), Some(text)) => {
            let (memory, user) = if document.store() == Store::Memory {
                (text.as_str(), "")
            } else {
                ("", text.as_str())
            };
            prop_assert_eq!(prefetch.context, render(user, memory, ctx.max_chars));
        }
        (Err(err), None) => check_corrupt(&err, &path)?,
        (result, _) => {
            return Err(TestCaseError::fail(format!(
                "prefetch of {bytes:?} gave {result:?}"
            )));
        }
    }

    // list: the file is a document, whatever its bytes.
    let listed = provider.list().await;
    prop_assert!(
        matches!(&listed, Ok(ids) if *ids == vec![document.clone()]),
        "{listed:?}"
    );

    // sync, to both documents: all or nothing.
    let updates = [
        MemoryUpdate::add(Store::Memory, ENTRY),
        MemoryUpdate::add(Store::User, ENTRY),
    ];
    match (provider.sync(&ctx, &updates, &IfMatch::NONE).await, &valid) {
        (Ok(report), Some(text)) => {
            prop_assert_eq!(report.documents.len(), 2);
            let after = on_disk(&path).unwrap();
            let after = String::from_utf8(after);
            prop_assert!(after.is_ok(), "the written document is not UTF-8");
            prop_assert_eq!(after.unwrap(), added(text, ENTRY));
            prop_assert_eq!(on_disk(&other_path), Some(added("", ENTRY).into_bytes()));
        }
        (Err(err), None) => {
            check_corrupt(&err, &path)?;
            prop_assert_eq!(on_disk(&other_path), None, "the other document was written");
        }
        (result, _) => {
            return Err(TestCaseError::fail(format!(
                "sync over {bytes:?} gave {result:?}"
            )));
        }
    }
    if valid.is_none() {
        prop_assert_eq!(
            on_disk(&path),
            Some(bytes),
            "a corrupt document was touched"
        );
    }

    // No identity map: nothing resolves, nothing is corrupt.
    let telegram = Identity::new("telegram", "12345").unwrap();
    prop_assert!(matches!(provider.resolve(&telegram).await, Ok(None)));
    Ok(())
}

#[test]
fn any_bytes_in_a_document_are_read_or_corrupt_and_never_touched() {
    let runtime = runtime();
    let target = select(
        &[
            Target::GlobalMemory,
            Target::PersonalityMemory,
            Target::UserProfile,
        ][..],
    );
    run(240, 19, (target, document_bytes()), |(target, bytes)| {
        runtime.block_on(check_document(target, bytes))
    });
}

// ---------------------------------------------------------------------------------------------
// The identity map.

/// What the map holds, read the way the contract describes it, or `None` when it is not a map.
///
/// Ethos's array: an empty file is empty; an element whose `platform` and `platformUserId` are
/// strings making a valid identity is a link (the first of an identity counts), whose `userId`
/// must then be a valid user id; any other element is kept and means nothing. The older object:
/// every key and value a valid id.
fn expected_links(bytes: &[u8]) -> Option<BTreeMap<Identity, UserId>> {
    use serde_json::Value;
    if bytes.is_empty() {
        return Some(BTreeMap::new());
    }
    if let Ok(entries) = serde_json::from_slice::<Vec<Value>>(bytes) {
        let mut links = BTreeMap::new();
        for entry in entries {
            let text = |name: &str| entry.get(name).and_then(Value::as_str);
            let (Some(platform), Some(platform_user)) = (text("platform"), text("platformUserId"))
            else {
                continue;
            };
            let Ok(identity) = Identity::new(platform, platform_user) else {
                continue;
            };
            let user = UserId::new(text("userId")?).ok()?;
            links.entry(identity).or_insert(user);
        }
        return Some(links);
    }
    let platforms: BTreeMap<String, BTreeMap<String, String>> =
        serde_json::from_slice(bytes).ok()?;
    let mut links = BTreeMap::new();
    for (platform, users) in platforms {
        for (platform_user, user) in users {
            let identity = Identity::new(platform.clone(), platform_user).ok()?;
            links.insert(identity, UserId::new(user).ok()?);
        }
    }
    Some(links)
}

async fn check_identity_map(bytes: Vec<u8>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let provider = MarkdownProvider::new(dir.path());
    let path = provider.identity_map_path();
    write(&path, &bytes);
    let expected = expected_links(&bytes);
    let probes = [
        Identity::new("telegram", "12345").unwrap(),
        Identity::new("matrix", "@a:matrix.org").unwrap(),
        Identity::new("slack", "U024BE7LH").unwrap(),
    ];

    for probe in &probes {
        match (provider.resolve(probe).await, &expected) {
            (Ok(user), Some(links)) => prop_assert_eq!(user.as_ref(), links.get(probe)),
            (Err(err), None) => check_corrupt(&err, &path)?,
            (result, _) => {
                return Err(TestCaseError::fail(format!(
                    "resolve over {:?} gave {result:?}, expected {expected:?}",
                    String::from_utf8_lossy(&bytes)
                )));
            }
        }
    }
    match (provider.identities().await, &expected) {
        (Ok(all), Some(links)) => {
            let all: BTreeMap<Identity, UserId> = all.into_iter().collect();
            prop_assert_eq!(&all, links);
        }
        (Err(err), None) => check_corrupt(&err, &path)?,
        (result, _) => {
            return Err(TestCaseError::fail(format!(
                "identities over {:?} gave {result:?}",
                String::from_utf8_lossy(&bytes)
            )));
        }
    }

    // The documents do not depend on the map.
    let ctx = ctx_for(Target::IdentityMap);
    prop_assert!(provider.prefetch(&ctx).await.is_ok());
    prop_assert!(matches!(provider.list().await, Ok(ids) if ids.is_empty()));

    // A link over a corrupt map is refused and leaves it as it was.
    let grace = UserId::new("grace").unwrap();
    match (provider.link(&probes[0], &grace, true).await, &expected) {
        (Ok(previous), Some(links)) => {
            prop_assert_eq!(previous.as_ref(), links.get(&probes[0]));
            let mut links = links.clone();
            links.insert(probes[0].clone(), grace.clone());
            let now = on_disk(&path).unwrap();
            prop_assert_eq!(expected_links(&now), Some(links));
        }
        (Err(err), None) => {
            check_corrupt(&err, &path)?;
            prop_assert_eq!(
                on_disk(&path),
                Some(bytes.clone()),
                "a corrupt map was touched"
            );
        }
        (result, _) => {
            return Err(TestCaseError::fail(format!(
                "link over {:?} gave {result:?}",
                String::from_utf8_lossy(&bytes)
            )));
        }
    }

    // An unlink too; over a good map it removes its link alone.
    match (provider.unlink(&probes[1]).await, &expected) {
        (Ok(previous), Some(links)) => {
            prop_assert_eq!(previous.as_ref(), links.get(&probes[1]));
            let mut links = links.clone();
            links.insert(probes[0].clone(), grace);
            links.remove(&probes[1]);
            let now = on_disk(&path).unwrap();
            prop_assert_eq!(expected_links(&now), Some(links));
        }
        (Err(err), None) => {
            check_corrupt(&err, &path)?;
            prop_assert_eq!(on_disk(&path), Some(bytes), "a corrupt map was touched");
        }
        (result, _) => {
            return Err(TestCaseError::fail(format!(
                "unlink over {:?} gave {result:?}",
                String::from_utf8_lossy(&bytes)
            )));
        }
    }
    Ok(())
}

#[test]
fn any_bytes_in_the_identity_map_resolve_or_are_corrupt_and_never_touched() {
    let runtime = runtime();
    run(240, 1919, identity_map_bytes(), |bytes| {
        runtime.block_on(check_identity_map(bytes))
    });
}

// ---------------------------------------------------------------------------------------------
// The history journal.

/// Revisions past this number are not ours (the provider's bound: exact in JavaScript).
const MAX_NUMBER: u64 = 1 << 53;

/// A change to a real journal: none, cut bytes out, splice bytes in, add a line, or replace it all.
#[derive(Debug, Clone)]
enum Mutation {
    Keep,
    Cut(prop::sample::Index, usize),
    Splice(prop::sample::Index, Vec<u8>),
    AddLine(String),
    Replace(Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let snippet = prop_oneof![
        select(INVALID).prop_map(<[u8]>::to_vec),
        select(
            &[
                "\n",
                "\n\n",
                "}",
                "{",
                "\"",
                "0",
                "9",
                ",\"number\":7",
                "null"
            ][..]
        )
        .prop_map(|s| s.as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 0..8),
    ];
    let line = prop_oneof![
        select(
            &[
                "",
                "{}",
                "[]",
                "null",
                "{\"number\":3}",
                "not json",
                "{\"number\":3,\"document\":\"global\"}",
            ][..]
        )
        .prop_map(str::to_owned),
        any::<String>().prop_map(|s| s.replace('\n', " ")),
    ];
    prop_oneof![
        1 => Just(Mutation::Keep),
        3 => (any::<prop::sample::Index>(), 1usize..40).prop_map(|(i, n)| Mutation::Cut(i, n)),
        3 => (any::<prop::sample::Index>(), snippet).prop_map(|(i, b)| Mutation::Splice(i, b)),
        2 => line.prop_map(Mutation::AddLine),
        1 => document_bytes().prop_map(Mutation::Replace),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutation: &Mutation) -> Vec<u8> {
    match mutation {
        Mutation::Keep => {}
        Mutation::Cut(at, n) => {
            let at = at.index(bytes.len() + 1);
            bytes.drain(at..(at + n).min(bytes.len()));
        }
        Mutation::Splice(at, insert) => {
            let at = at.index(bytes.len() + 1);
            bytes.splice(at..at, insert.iter().copied());
        }
        Mutation::AddLine(line) => bytes.extend(format!("{line}\n").into_bytes()),
        Mutation::Replace(all) => bytes = all.clone(),
    }
    bytes
}

/// Whether the whole lines of `bytes` (up to its last newline: what follows is a torn append)
/// are revisions of `document` that agree with themselves, numbered one after another: the
/// journal a purge accepts (and erases, whether its changes can be rebuilt or not).
fn is_ours(bytes: &[u8], document: &DocumentId) -> bool {
    is_history(bytes, document, false)
}

/// Whether what a line records of its text holds: a text it gives has the size and hash it
/// records, and a line with neither text nor updates (a purge's tombstone) records the empty
/// document.
fn agrees_with_itself(revision: &memory_core::Revision) -> bool {
    let (bytes, sha256) = match &revision.text {
        Some(text) => (text.len(), memory_core::raw::sha256_hex(text)),
        None if revision.updates.is_empty() => (0, memory_core::raw::sha256_hex("")),
        None => return true,
    };
    revision.bytes_after == bytes && revision.sha256_after == sha256
}

/// [`is_ours`], and with `rebuilt` each line without a text (a change between checkpoints)
/// making the text its size and hash say from the line before it: the journal `history`
/// accepts.
fn is_history(bytes: &[u8], document: &DocumentId, rebuilt: bool) -> bool {
    let Some(end) = bytes.iter().rposition(|b| *b == b'\n') else {
        return true;
    };
    let mut previous: Option<(u64, String)> = None;
    for line in bytes[..end].split(|b| *b == b'\n') {
        let Ok(revision) = serde_json::from_slice::<memory_core::Revision>(line) else {
            return false;
        };
        let in_order = previous
            .as_ref()
            .is_none_or(|(number, _)| revision.number == number + 1);
        if revision.document != *document
            || !(1..=MAX_NUMBER).contains(&revision.number)
            || !in_order
            || !agrees_with_itself(&revision)
        {
            return false;
        }
        let text = match &revision.text {
            Some(text) => text.clone(),
            None if revision.updates.is_empty() || !rebuilt => String::new(),
            None => {
                let before = match (&previous, revision.updates.first()) {
                    (_, Some(MemoryUpdate::Replace { .. })) => String::new(),
                    _ if revision.number == 1 => String::new(),
                    (Some((_, text)), _) => text.clone(),
                    // No line before to rebuild from: only an older base would do.
                    (None, _) => return false,
                };
                let updates = revision.updates.iter().enumerate();
                let Ok(applied) =
                    memory_core::raw::apply_batch(document, &before, updates, Default::default())
                else {
                    return false;
                };
                if applied.text.len() != revision.bytes_after
                    || memory_core::raw::sha256_hex(&applied.text) != revision.sha256_after
                {
                    return false;
                }
                applied.text
            }
        };
        previous = Some((revision.number, text));
    }
    true
}

async fn check_journal(mutation: Mutation) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let provider = MarkdownProvider::new(dir.path());
    let ctx = ctx_for(Target::PersonalityMemory);
    let document = ctx.document(Store::Memory);
    for entry in ["one", "two 🙂", "three"] {
        let add = [MemoryUpdate::add(Store::Memory, entry)];
        provider.sync(&ctx, &add, &IfMatch::NONE).await.unwrap();
    }
    let journal = provider.history_path(&document);
    let bytes = mutate(std::fs::read(&journal).unwrap(), &mutation);
    std::fs::write(&journal, &bytes).unwrap();
    let path = provider.path(&document);
    let text = std::fs::read(&path).unwrap();
    let ours = is_ours(&bytes, &document);

    match (
        provider.history(&document, usize::MAX).await,
        is_history(&bytes, &document, true),
    ) {
        (Ok(log), true) => {
            for pair in log.windows(2) {
                prop_assert_eq!(pair[0].number, pair[1].number + 1);
            }
        }
        (Err(err), false) => check_corrupt(&err, &journal)?,
        (result, _) => {
            return Err(TestCaseError::fail(format!(
                "history over {:?} gave {result:?}",
                String::from_utf8_lossy(&bytes)
            )));
        }
    }

    // A write reads only the journal's end: it may go ahead over a bad line further up, or
    // refuse, but only as Corrupt, and then it writes nothing.
    let add = [MemoryUpdate::add(Store::Memory, ENTRY)];
    match provider.sync(&ctx, &add, &IfMatch::NONE).await {
        Ok(_) => {
            let after = std::fs::read(&path).unwrap();
            prop_assert_eq!(
                after,
                added(std::str::from_utf8(&text).unwrap(), ENTRY).into_bytes()
            );
        }
        Err(err) => {
            check_corrupt(&err, &journal)?;
            prop_assert!(!ours, "a journal that is ours was refused: {err}");
            prop_assert_eq!(
                on_disk(&path),
                Some(text.clone()),
                "the document was touched"
            );
            prop_assert_eq!(
                on_disk(&journal),
                Some(bytes.clone()),
                "the journal was touched"
            );
        }
    }

    // A purge erases a journal that is ours (as the write left it: it may have cut off a torn
    // line) and refuses, as Corrupt and touching nothing, one that is not.
    let before = (on_disk(&path), on_disk(&journal));
    let ours = is_ours(before.1.as_deref().unwrap_or_default(), &document);
    match (
        provider.purge(&document, memory_core::Surface::Cli).await,
        ours,
    ) {
        (Ok(purged), true) => {
            prop_assert!(purged.tombstone.is_some());
            prop_assert_eq!(on_disk(&path), None);
        }
        (Err(err), false) => {
            check_corrupt(&err, &journal)?;
            prop_assert_eq!(
                (on_disk(&path), on_disk(&journal)),
                before,
                "a purge refused erased"
            );
        }
        (result, _) => {
            return Err(TestCaseError::fail(format!(
                "purge over {:?} gave {result:?}",
                String::from_utf8_lossy(before.1.as_deref().unwrap_or_default())
            )));
        }
    }
    Ok(())
}

#[test]
fn any_bytes_in_a_journal_are_history_or_corrupt_and_never_touched_when_refused() {
    let runtime = runtime();
    // Fewer cases than the others: each writes three revisions first.
    run(160, 21, mutation(), |mutation| {
        runtime.block_on(check_journal(mutation))
    });
}

/// Keeping 2, three writes leave an older segment (revision 1), the checkpoint text of
/// revision 2 and the live segment (2 and 3). Any bytes in the older segment or the text:
/// `history` gives the kept revisions with the very texts the document held (never another),
/// or `Corrupt` naming a history file; writes never fail, across the next checkpoint too.
async fn check_older_history(in_text: bool, mutation: Mutation) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let provider =
        MarkdownProvider::new(dir.path()).with_retention(memory_core::Retention::keep(2));
    let ctx = ctx_for(Target::PersonalityMemory);
    let document = ctx.document(Store::Memory);
    let path = provider.path(&document);
    let mut texts = vec![String::new()];
    for entry in ["one", "two 🙂", "three"] {
        let add = [MemoryUpdate::add(Store::Memory, entry)];
        provider.sync(&ctx, &add, &IfMatch::NONE).await.unwrap();
        texts.push(std::fs::read_to_string(&path).unwrap());
    }
    let name = if in_text {
        ".MEMORY.md.history.2.md"
    } else {
        ".MEMORY.md.history.1.jsonl"
    };
    let file = path.with_file_name(name);
    let bytes = mutate(std::fs::read(&file).unwrap(), &mutation);
    // A hard link shares the file: replace it rather than write through it.
    std::fs::remove_file(&file).unwrap();
    std::fs::write(&file, &bytes).unwrap();

    let history_file = |location: &str| {
        let location = location.split('#').next().unwrap_or_default();
        location == file.display().to_string()
            || location == provider.history_path(&document).display().to_string()
    };
    match provider.history(&document, usize::MAX).await {
        Ok(log) => {
            prop_assert_eq!(log.len(), 2);
            for revision in &log {
                prop_assert_eq!(
                    revision.text.as_deref(),
                    Some(texts[revision.number as usize].as_str())
                );
            }
        }
        Err(MemoryError::Corrupt { location, .. }) if history_file(&location) => {}
        Err(err) => return Err(TestCaseError::fail(format!("history gave {err:?}"))),
    }
    for entry in ["four", "five"] {
        let add = [MemoryUpdate::add(Store::Memory, entry)];
        let written = provider.sync(&ctx, &add, &IfMatch::NONE).await;
        prop_assert!(written.is_ok(), "{written:?}");
        let text = texts.last().cloned().unwrap_or_default();
        texts.push(added(&text, entry));
        prop_assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            texts.last().cloned().unwrap()
        );
    }
    Ok(())
}

#[test]
fn any_bytes_in_an_older_segment_or_a_checkpoint_text_never_fail_a_write_or_show_a_wrong_text() {
    let runtime = runtime();
    run(
        160,
        22,
        (any::<bool>(), mutation()),
        |(in_text, mutation)| runtime.block_on(check_older_history(in_text, mutation)),
    );
}
