//! Issue 19: update JSON as agents and the CLI send it, however wrong it is.
//!
//! Arbitrary and structured-but-wrong JSON is parsed as `Vec<MemoryUpdate>` (what `memory sync`
//! reads) and, when it parses, planned with `plan_sync` and applied to arbitrary document text
//! with `DocumentBatch::apply` and through `InMemoryProvider`. Nothing may panic; every error
//! names where it is (the JSON line, the update's position, the document); what applies follows
//! the update table of `CONTRACT.md`, checked against a model written from that table.

use std::collections::BTreeMap;

use memory_core::raw::{plan_sync, sha256_hex};
use memory_core::{
    Budgets, Caps, Document, DocumentId, IfMatch, InMemoryProvider, MemoryContext, MemoryError,
    MemoryProvider, MemoryScope, MemoryUpdate, PersonalityId, Store, UserId, Version,
};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::{Value, json};

/// A fixed seed per test: the same cases on every run, so a failure reproduces.
fn runner(cases: u32, seed: u64) -> TestRunner {
    TestRunner::new(Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    })
}

fn run<S: Strategy>(
    cases: u32,
    seed: u64,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    if let Err(err) = runner(cases, seed).run(&strategy, test) {
        panic!("{err}");
    }
}

// ---------------------------------------------------------------------------------------------
// Text: short, unicode, blank, NUL, huge.

const PIECES: &[&str] = &[
    "",
    " ",
    "\n",
    "\n\n",
    "\t",
    "\r\n",
    "a",
    "aa",
    "note",
    "Prefers metric units.",
    "- likes tea",
    "## Heading",
    "$& \\1 (a.b)*",
    "日本語",
    "🙂",
    "e\u{301}",
    "\u{0}",
    "\u{feff}",
    "\u{202e}",
    "\u{7f}",
    "\"",
    "\\",
    "}",
    "{\"action\":\"add\"}",
];

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => select(PIECES).prop_map(str::to_owned),
        3 => any::<String>(),
        1 => "[a-z ]{0,12}",
        // Huge: a request body an agent should not send, but may.
        1 => (1usize..4).prop_map(|n| "x".repeat(n * 40_000)),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..6).prop_map(|parts| parts.concat())
}

/// A document's text: lines of pieces, so that lines and needles repeat.
fn document_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => select(PIECES).prop_map(str::to_owned),
            1 => any::<String>(),
        ],
        0..10,
    )
    .prop_map(|lines| lines.join("\n"))
}

/// A substring of `text` at char boundaries, often a real one, sometimes not.
fn needle_of(doc: &str) -> BoxedStrategy<String> {
    let chars: Vec<char> = doc.chars().collect();
    let n = chars.len();
    prop_oneof![
        4 => (0..=n, prop_oneof![1 => Just(0usize), 8 => 1usize..10]).prop_map(
            move |(start, len)| {
                // Mostly a real, non-empty part of the text; empty now and then.
                let start = start.min(n.saturating_sub(1));
                chars[start..(start + len).min(n)].iter().collect::<String>()
            }
        ),
        1 => text(),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------------------------
// JSON: arbitrary strings, token soup, structured updates with wrong parts, mutations.

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        Just(json!(u64::MAX)),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        text().prop_map(Value::String),
    ]
}

fn any_value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z]{0,14}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const ACTIONS: &[&str] = &[
    "add", "replace", "remove", "edit", "Add", "ADD", "delete", "append", "", "add ", "édit",
    "add\u{0}",
];
const STORES: &[&str] = &[
    "memory",
    "user",
    "memory",
    "user",
    "Memory",
    "notes",
    "USER.md",
    "",
    "../user",
    "memory\u{0}",
    "users",
];
const KEYS: &[&str] = &[
    "content",
    "substringMatch",
    "old",
    "new",
    "substring",
    "substring_match",
    "Content",
    "extra",
    "id",
    "action",
    "store",
];

/// One update of the contract's form, to `store`, with strings drawn from `doc` (its text, so
/// that edits and removes match) or made up.
fn well_formed(doc: &str, store: &'static str) -> BoxedStrategy<Value> {
    (
        select(&["add", "replace", "remove", "edit"][..]),
        prop_oneof![4 => Just(store), 1 => select(&["memory", "user"][..])],
        needle_of(doc),
        prop_oneof![
            3 => "[a-zA-Z][a-zA-Z .日🙂]{0,20}",
            2 => needle_of(doc),
            1 => text(),
        ],
    )
        .prop_map(|(action, store, a, b)| match action {
            "add" | "replace" => json!({"action": action, "store": store, "content": b}),
            "remove" => json!({"action": action, "store": store, "substringMatch": a}),
            _ => json!({"action": action, "store": store, "old": a, "new": b}),
        })
        .boxed()
}

/// One update object: well formed, or any keys with values of any type, or any JSON at all.
fn update_value(doc: &str, store: &'static str) -> BoxedStrategy<Value> {
    let field = prop_oneof![6 => text().prop_map(Value::String), 1 => any_value()];
    let messy = (
        prop::option::of(prop_oneof![
            4 => select(ACTIONS).prop_map(|a| json!(a)),
            1 => scalar(),
        ]),
        prop::option::of(prop_oneof![
            4 => select(STORES).prop_map(|s| json!(s)),
            1 => scalar(),
        ]),
        prop::collection::btree_map(select(KEYS), field, 0..4),
    )
        .prop_map(|(action, store, fields)| {
            let mut object = serde_json::Map::new();
            for (key, value) in fields {
                object.insert(key.to_owned(), value);
            }
            if let Some(action) = action {
                object.insert("action".into(), action);
            }
            if let Some(store) = store {
                object.insert("store".into(), store);
            }
            Value::Object(object)
        });
    prop_oneof![4 => well_formed(doc, store), 2 => messy, 1 => any_value()].boxed()
}

/// An array of updates: mostly all well formed (so that most calls parse and reach the
/// documents), else each update of any form.
fn structured(memory: &str, user: &str) -> BoxedStrategy<Value> {
    prop_oneof![
        3 => prop::collection::vec(
            prop_oneof![well_formed(memory, "memory"), well_formed(user, "user")],
            1..5,
        ),
        1 => prop::collection::vec(
            prop_oneof![update_value(memory, "memory"), update_value(user, "user")],
            0..5,
        ),
    ]
    .prop_map(Value::Array)
    .boxed()
}

/// Edits to JSON text at char boundaries: truncation, deletion, insertion of a token.
#[derive(Debug, Clone)]
enum Mutation {
    Truncate(prop::sample::Index),
    Delete(prop::sample::Index, usize),
    Insert(prop::sample::Index, &'static str),
}

const TOKENS: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "\"",
    "\\",
    "\\u0000",
    "\\ud800",
    "\\u",
    "null",
    "1e999",
    "-0",
    "\"action\"",
    "\"add\"",
    "\u{0}",
    "🙂",
    " ",
    "\n",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<prop::sample::Index>().prop_map(Mutation::Truncate),
        (any::<prop::sample::Index>(), 1usize..8).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (any::<prop::sample::Index>(), select(TOKENS)).prop_map(|(i, t)| Mutation::Insert(i, t)),
    ]
}

fn mutate(json: &str, mutation: &Mutation) -> String {
    let boundaries: Vec<usize> = json
        .char_indices()
        .map(|(at, _)| at)
        .chain([json.len()])
        .collect();
    let at = |index: &prop::sample::Index| boundaries[index.index(boundaries.len())];
    match mutation {
        Mutation::Truncate(i) => json[..at(i)].to_owned(),
        Mutation::Delete(i, n) => {
            let start = at(i);
            let end = json[start..]
                .char_indices()
                .nth(*n)
                .map_or(json.len(), |(off, _)| start + off);
            format!("{}{}", &json[..start], &json[end..])
        }
        Mutation::Insert(i, token) => {
            let at = at(i);
            format!("{}{token}{}", &json[..at], &json[at..])
        }
    }
}

/// Token soup: mostly JSON punctuation and the contract's words, in any order.
fn token_soup() -> impl Strategy<Value = String> {
    const SOUP: &[&str] = &[
        "[",
        "]",
        "{",
        "}",
        ",",
        ":",
        "\"action\"",
        "\"add\"",
        "\"edit\"",
        "\"store\"",
        "\"memory\"",
        "\"user\"",
        "\"content\"",
        "\"substringMatch\"",
        "\"old\"",
        "\"new\"",
        "\"x\"",
        "\"\"",
        "null",
        "true",
        "0",
        "-1",
        "1e400",
        "18446744073709551616",
        "\"\\u0000\"",
        "\"\\ud83d\"",
        "\"\\ud83d\\ude42\"",
        "\"\\q\"",
        " ",
        "\n",
        "/*",
        "'",
    ];
    prop::collection::vec(select(SOUP), 0..40).prop_map(|t| t.concat())
}

/// Everything the property tests feed the parser.
fn update_json() -> impl Strategy<Value = (String, String, String)> {
    (document_text(), document_text()).prop_flat_map(|(memory, user)| {
        let json = prop_oneof![
            6 => (structured(&memory, &user), any::<bool>()).prop_map(|(v, pretty)| if pretty {
                serde_json::to_string_pretty(&v).unwrap()
            } else {
                v.to_string()
            }),
            2 => (structured(&memory, &user), prop::collection::vec(mutation(), 1..3)).prop_map(|(v, ms)| {
                ms.iter().fold(v.to_string(), |json, m| mutate(&json, m))
            }),
            1 => any_value().prop_map(|v| v.to_string()),
            1 => token_soup(),
            1 => any::<String>(),
            // Deep nesting: must be a recursion-limit error, not a stack overflow.
            1 => (1usize..3).prop_map(|n| "[".repeat(n * 50_000)),
        ];
        (Just(memory), Just(user), json)
    })
}

// ---------------------------------------------------------------------------------------------
// The model: the update table of CONTRACT.md, written independently of `apply_batch`.

#[path = "support/update_model.rs"]
mod update_model;
use update_model::{Refusal, malformed, model};

// ---------------------------------------------------------------------------------------------
// Who asks, with which caps and preconditions.

#[derive(Debug, Clone)]
struct Setting {
    ctx: MemoryContext,
    if_match: IfMatch,
}

fn caps() -> impl Strategy<Value = Caps> {
    let cap = prop_oneof![
        2 => Just(None),
        1 => (0usize..200).prop_map(Some),
        1 => Just(Some(usize::MAX)),
    ];
    (cap.clone(), cap).prop_map(|(soft, hard)| Caps { soft, hard })
}

fn setting() -> impl Strategy<Value = Setting> {
    (
        select(&["ada", "a", "A-z_09", "concierge"][..]),
        select(&["u1", "U-2", "grace_hopper"][..]),
        any::<bool>(),
        caps(),
        caps(),
        // A precondition: none, the current version, or a stale one.
        (0u8..3, 0u8..3),
    )
        .prop_map(|(p, u, global, memory, user, (mi, ui))| {
            let ctx = MemoryContext::new(PersonalityId::new(p).unwrap(), UserId::new(u).unwrap())
                .with_scope(if global {
                    MemoryScope::Global
                } else {
                    MemoryScope::PerPersonality
                })
                .with_budgets(Budgets {
                    memory,
                    user,
                    ..Budgets::default()
                });
            // Resolved against the texts in `check_parsed`: 1 is "current", 2 is stale.
            let pick = |n: u8| match n {
                0 => None,
                1 => Some(Version::new("current")),
                _ => Some(Version::new("stale")),
            };
            Setting {
                ctx,
                if_match: IfMatch {
                    memory: pick(mi),
                    user: pick(ui),
                    ..IfMatch::NONE
                },
            }
        })
}

fn document(ctx: &MemoryContext, store: Store, text: &str) -> Document {
    Document {
        id: ctx.document(store),
        text: text.to_owned(),
        version: Version::new(sha256_hex(text)),
        location: format!("test://{}", ctx.document(store).relative_path()),
        modified: None,
    }
}

/// "current" in the setting becomes the document's real version.
fn resolve_if_match(setting: &Setting, memory: &str, user: &str) -> IfMatch {
    let real = |v: &Option<Version>, text: &str| {
        v.as_ref().map(|v| {
            if v.as_str() == "current" {
                Version::new(sha256_hex(text))
            } else {
                v.clone()
            }
        })
    };
    IfMatch {
        memory: real(&setting.if_match.memory, memory),
        user: real(&setting.if_match.user, user),
        ..IfMatch::NONE
    }
}

// ---------------------------------------------------------------------------------------------
// The checks.

/// A `serde_json` error names where in the text it is; the CLI wraps it whole.
fn check_parse_error(json: &str, err: &serde_json::Error) -> Result<(), TestCaseError> {
    let message = err.to_string();
    prop_assert!(!message.trim().is_empty(), "empty error for {json:?}");
    prop_assert!(
        err.line() >= 1 && message.contains(&format!("line {}", err.line())),
        "the error does not say where: {message:?} for {:?}",
        json.chars().take(200).collect::<String>()
    );
    Ok(())
}

/// The error is about `document`, and about the update at `index` when it names one.
fn check_names(
    err: &MemoryError,
    document: &DocumentId,
    index: Option<usize>,
) -> Result<(), TestCaseError> {
    let message = err.to_string();
    prop_assert!(!message.trim().is_empty());
    prop_assert!(
        message.contains(&document.to_string()),
        "{message:?} does not name {document}"
    );
    if let Some(index) = index {
        prop_assert!(
            message.contains(&format!("update #{index} ")),
            "{message:?} does not name update #{index}"
        );
    }
    Ok(())
}

/// Plans and applies parsed updates to `memory` and `user` as the documents' texts, checking
/// every refusal and every outcome against the model.
fn check_parsed(
    updates: &[MemoryUpdate],
    memory: &str,
    user: &str,
    setting: &Setting,
) -> Result<(), TestCaseError> {
    // What parses serializes back to the same updates.
    let again: Vec<MemoryUpdate> =
        serde_json::from_str(&serde_json::to_string(updates).unwrap()).unwrap();
    prop_assert_eq!(&again, updates);

    let ctx = &setting.ctx;
    let if_match = resolve_if_match(setting, memory, user);
    let first_malformed = updates.iter().position(malformed);
    let batches = match plan_sync(ctx, updates, &if_match) {
        Err(err) => {
            let Some(index) = first_malformed else {
                return Err(TestCaseError::fail(format!(
                    "plan_sync refused well-formed updates: {err}"
                )));
            };
            let document = ctx.document(updates[index].store());
            prop_assert!(
                matches!(&err, MemoryError::InvalidUpdate { index: i, document: d, reason }
                    if *i == index && *d == document && !reason.trim().is_empty()),
                "{err:?}"
            );
            check_names(&err, &document, Some(index))?;
            return Ok(());
        }
        Ok(batches) => batches,
    };
    prop_assert_eq!(first_malformed, None, "a malformed update was planned");
    let touched: Vec<DocumentId> = [Store::Memory, Store::User]
        .into_iter()
        .filter(|s| updates.iter().any(|u| u.store() == *s))
        .map(|s| ctx.document(s))
        .collect();
    let planned: Vec<DocumentId> = batches.iter().map(|b| b.document().clone()).collect();
    prop_assert_eq!(
        planned,
        touched,
        "one batch per touched document, memory first"
    );

    for batch in &batches {
        let store = batch.document().store();
        let before = document(
            ctx,
            store,
            if store == Store::Memory { memory } else { user },
        );
        let mine: Vec<(usize, &MemoryUpdate)> = updates
            .iter()
            .enumerate()
            .filter(|(_, u)| u.store() == store)
            .collect();
        let required = if_match.for_store(store);
        let stale = required.is_some_and(|v| *v != before.version);
        let expected = model(&before.text, &mine, ctx.budgets.for_store(store));
        match batch.apply(before.clone(), &[]) {
            Err(err) => {
                match (&err, &expected) {
                    (
                        MemoryError::Conflict {
                            expected: wanted,
                            current,
                            ..
                        },
                        _,
                    ) => {
                        prop_assert!(stale, "conflict without a stale precondition: {err}");
                        prop_assert_eq!(Some(wanted), required);
                        prop_assert_eq!(current, &before.version);
                    }
                    _ if stale => {
                        return Err(TestCaseError::fail(format!("a stale version gave {err:?}")));
                    }
                    (MemoryError::NoMatch { index, old, .. }, Err(Refusal::NoMatch(i))) => {
                        prop_assert_eq!(index, i);
                        let edited = matches!(
                            &updates[*index], MemoryUpdate::Edit { old: o, .. } if o == old
                        );
                        prop_assert!(edited, "NoMatch names update #{index}, not that edit");
                    }
                    (
                        MemoryError::AmbiguousMatch { index, count, .. },
                        Err(Refusal::Ambiguous(i, c)),
                    ) => {
                        prop_assert_eq!((index, count), (i, c));
                    }
                    (
                        MemoryError::HardCapExceeded {
                            bytes, hard_cap, ..
                        },
                        Err(Refusal::HardCap(b)),
                    ) => {
                        prop_assert_eq!(bytes, b);
                        prop_assert!(*bytes > *hard_cap && *bytes > before.text.len());
                    }
                    _ => {
                        return Err(TestCaseError::fail(format!(
                            "got {err:?}, the model says {expected:?}"
                        )));
                    }
                }
                let index = match &err {
                    MemoryError::NoMatch { index, .. }
                    | MemoryError::AmbiguousMatch { index, .. } => Some(*index),
                    _ => None,
                };
                check_names(&err, batch.document(), index)?;
            }
            Ok(write) => {
                prop_assert!(!stale, "applied over a stale precondition");
                let Ok(outcome) = expected else {
                    return Err(TestCaseError::fail(format!(
                        "applied, the model says {expected:?}"
                    )));
                };
                let after = write.new_text().unwrap_or(&before.text);
                prop_assert_eq!(after, outcome.text.as_str());
                prop_assert_eq!(write.new_text().is_some(), outcome.text != before.text);
                let report = write.report(Version::new("after"));
                prop_assert_eq!(report.bytes_after, after.len());
                prop_assert_eq!(report.sha256_after, sha256_hex(after));
                prop_assert_eq!(report.lines_removed, outcome.lines_removed);
                prop_assert_eq!(
                    report.over_soft_cap,
                    ctx.budgets
                        .for_store(store)
                        .soft
                        .is_some_and(|s| after.len() > s)
                );
                // The documented outcome of a lone update, stated directly.
                if let [(_, update)] = mine.as_slice() {
                    check_single(&before.text, update, after)?;
                }
            }
        }
    }
    Ok(())
}

/// The contract's table for one update, as plain statements about the text after.
fn check_single(before: &str, update: &MemoryUpdate, after: &str) -> Result<(), TestCaseError> {
    match update {
        MemoryUpdate::Add { content, .. } => {
            prop_assert!(
                after.ends_with(&format!("{}\n", content.trim())),
                "add appends"
            );
            prop_assert!(
                after.starts_with(before.trim_end()),
                "add keeps what was there"
            );
        }
        MemoryUpdate::Replace { content, .. } => {
            prop_assert_eq!(after.trim_end_matches('\n'), content.trim());
        }
        MemoryUpdate::Remove {
            substring_match, ..
        } => {
            let contains = |line: &str| line.contains(substring_match.as_str());
            if before.split('\n').any(contains) {
                prop_assert!(
                    !after.split('\n').any(contains),
                    "a line containing {substring_match:?} survived"
                );
            } else {
                prop_assert_eq!(after, before, "nothing matched, yet the text changed");
            }
        }
        MemoryUpdate::Edit { old, new, .. } => {
            prop_assert_eq!(after, before.replacen(old.as_str(), new, 1));
        }
        MemoryUpdate::Create { .. } | MemoryUpdate::Delete { .. } | MemoryUpdate::Rename { .. } => {
            prop_assert!(
                false,
                "a notes-only action applied to one of the pair: {update:?}"
            );
        }
    }
    Ok(())
}

/// Through a provider: a refused call leaves both documents as they were; an accepted one
/// leaves what the batches planned, readable back as the same text.
async fn check_provider(
    updates: &[MemoryUpdate],
    memory: &str,
    user: &str,
    setting: &Setting,
) -> Result<(), TestCaseError> {
    let provider = InMemoryProvider::new();
    let ctx = &setting.ctx;
    // Seed each document with text it can hold (a replace normalises its content), uncapped.
    let seeder = ctx.clone().with_budgets(Budgets::default());
    for (store, text) in [(Store::Memory, memory), (Store::User, user)] {
        if !text.contains('\0') {
            let seed = [MemoryUpdate::replace(store, text)];
            provider.sync(&seeder, &seed, &IfMatch::NONE).await.unwrap();
        }
    }
    let read = |store| {
        let id = ctx.document(store);
        let provider = &provider;
        async move { provider.read(&id).await.unwrap() }
    };
    let (memory_before, user_before) = (read(Store::Memory).await, read(Store::User).await);
    // Plan on the seeded texts: the expected outcome, or the refusal.
    let planned: Result<Vec<(DocumentId, Option<String>)>, MemoryError> =
        plan_sync(ctx, updates, &IfMatch::NONE).and_then(|batches| {
            batches
                .iter()
                .map(|b| {
                    let before = if b.document().store() == Store::Memory {
                        memory_before.clone()
                    } else {
                        user_before.clone()
                    };
                    b.apply(before, &[])
                        .map(|w| (b.document().clone(), w.new_text().map(str::to_owned)))
                })
                .collect()
        });
    let result = provider.sync(ctx, updates, &IfMatch::NONE).await;
    let (memory_after, user_after) = (read(Store::Memory).await, read(Store::User).await);
    match (result, planned) {
        (Err(err), Err(_)) => {
            prop_assert!(!err.to_string().trim().is_empty());
            prop_assert_eq!(
                &memory_after.text,
                &memory_before.text,
                "refused, yet written"
            );
            prop_assert_eq!(&user_after.text, &user_before.text, "refused, yet written");
            prop_assert_eq!(memory_after.version, memory_before.version);
            prop_assert_eq!(user_after.version, user_before.version);
        }
        (Ok(report), Ok(planned)) => {
            let mut expected: BTreeMap<DocumentId, String> = BTreeMap::new();
            expected.insert(memory_before.id.clone(), memory_before.text.clone());
            expected.insert(user_before.id.clone(), user_before.text.clone());
            for (id, text) in &planned {
                if let Some(text) = text {
                    expected.insert(id.clone(), text.clone());
                }
            }
            prop_assert_eq!(&memory_after.text, &expected[&memory_after.id]);
            prop_assert_eq!(&user_after.text, &expected[&user_after.id]);
            prop_assert_eq!(report.documents.len(), planned.len());
            for (doc, read_back) in [(&memory_after, &memory_before), (&user_after, &user_before)] {
                // What was read back is what the report said it wrote.
                if let Some(r) = report.documents.iter().find(|r| r.document == doc.id) {
                    prop_assert_eq!(&r.sha256_after, &sha256_hex(&doc.text));
                    prop_assert_eq!(r.written, doc.text != read_back.text);
                }
            }
        }
        (result, planned) => {
            return Err(TestCaseError::fail(format!(
                "the provider says {result:?}, the planned batches {planned:?}"
            )));
        }
    }
    Ok(())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime")
}

// ---------------------------------------------------------------------------------------------
// The tests.

/// Any JSON-ish text: parsing never panics and every parse error says where; what parses plans
/// and applies by the contract's table.
#[test]
fn any_update_json_parses_or_says_where_and_applies_by_the_table() {
    run(
        600,
        19,
        (update_json(), setting()),
        |((memory, user, json), setting)| match serde_json::from_str::<Vec<MemoryUpdate>>(&json) {
            Err(err) => check_parse_error(&json, &err),
            Ok(updates) => check_parsed(&updates, &memory, &user, &setting),
        },
    );
}

/// Structured updates that parse, through a provider: a refusal writes nothing, an acceptance
/// writes what was planned, and it reads back as valid text.
#[test]
fn parsed_updates_through_a_provider_write_all_or_nothing() {
    let runtime = runtime();
    let strategy =
        (document_text(), document_text(), setting()).prop_flat_map(|(memory, user, setting)| {
            let updates = structured(&memory, &user);
            (Just(memory), Just(user), Just(setting), updates)
        });
    run(400, 1919, strategy, |(memory, user, setting, values)| {
        let json = values.to_string();
        let Ok(updates) = serde_json::from_str::<Vec<MemoryUpdate>>(&json) else {
            return Ok(());
        };
        runtime.block_on(check_provider(&updates, &memory, &user, &setting))
    });
}

/// The single-update wire forms, with every field wrong in turn: each refusal names what is
/// wrong (the field, the variant, the type), never panics.
#[test]
fn wrong_fields_are_named() {
    let cases: &[(&str, &[&str])] = &[
        (r#"[{"store":"memory","content":"x"}]"#, &["action"]),
        (r#"[{"action":"add","content":"x"}]"#, &["store"]),
        (r#"[{"action":"add","store":"memory"}]"#, &["content"]),
        (
            r#"[{"action":"remove","store":"memory","substring":"x"}]"#,
            &["substring"],
        ),
        (
            r#"[{"action":"edit","store":"memory","old":"x"}]"#,
            &["new"],
        ),
        (
            r#"[{"action":"append","store":"memory","content":"x"}]"#,
            &["append"],
        ),
        (
            r#"[{"action":"delete","store":"memory","note":"a.md","content":"x"}]"#,
            &["content"],
        ),
        (
            r#"[{"action":"create","store":"memory","note":"../USER.md","content":"x"}]"#,
            &["invalid note path", "../USER.md"],
        ),
        (
            r#"[{"action":"rename","store":"memory","note":"a.md"}]"#,
            &["to"],
        ),
        (
            r#"[{"action":"add","store":"notes","content":"x"}]"#,
            &["notes"],
        ),
        (
            r#"[{"action":"add","store":"memory","content":5}]"#,
            &["integer", "string"],
        ),
        (
            r#"[{"action":"add","store":"memory","content":null}]"#,
            &["null", "string"],
        ),
        (
            r#"[{"action":"add","store":["memory"],"content":"x"}]"#,
            &["sequence"],
        ),
        (
            r#"[{"action":"add","store":"memory","content":"x","extra":1}]"#,
            &["extra"],
        ),
        (
            r#"[{"action":7,"store":"memory","content":"x"}]"#,
            &["integer"],
        ),
        (
            r#"{"action":"add","store":"memory","content":"x"}"#,
            &["map", "sequence"],
        ),
        (
            r#"[{"action":"add","store":"memory","content":"\ud800"}]"#,
            &["escape"],
        ),
        (
            r#"[{"action":"add","store":"memory","content":"x"}"#,
            &["EOF"],
        ),
        ("", &["EOF"]),
    ];
    for (json, words) in cases {
        let err = serde_json::from_str::<Vec<MemoryUpdate>>(json).unwrap_err();
        let message = err.to_string();
        for word in *words {
            assert!(message.contains(word), "{json}: {message:?} lacks {word:?}");
        }
        assert!(message.contains("line 1"), "{json}: {message:?}");
    }

    // What parses but is malformed is refused by `plan_sync`, naming the update and why.
    let ctx = MemoryContext::new(
        PersonalityId::new("ada").unwrap(),
        UserId::new("u1").unwrap(),
    );
    let refused: &[(&str, &str)] = &[
        (
            r#"{"action":"add","store":"memory","content":" \n\t"}"#,
            "non-blank",
        ),
        (
            r#"{"action":"add","store":"user","content":"a\u0000b"}"#,
            "NUL",
        ),
        (
            r#"{"action":"replace","store":"memory","content":"\u0000"}"#,
            "NUL",
        ),
        (
            r#"{"action":"remove","store":"memory","substringMatch":""}"#,
            "substringMatch",
        ),
        (
            r#"{"action":"edit","store":"user","old":"","new":"x"}"#,
            "old",
        ),
        (
            r#"{"action":"edit","store":"user","old":"x","new":"\u0000"}"#,
            "NUL",
        ),
    ];
    for (json, word) in refused {
        let ok = r#"{"action":"add","store":"memory","content":"fine"}"#;
        let updates: Vec<MemoryUpdate> = serde_json::from_str(&format!("[{ok},{json}]")).unwrap();
        let err = plan_sync(&ctx, &updates, &IfMatch::NONE).unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(err, MemoryError::InvalidUpdate { index: 1, .. }),
            "{json}: {err:?}"
        );
        assert!(
            message.contains("update #1 ") && message.contains(word),
            "{json}: {message}"
        );
    }
}

/// Ids arrive in JSON too (a context, a document id): an invalid one is refused naming its kind
/// and value, whatever the value.
#[test]
fn invalid_ids_in_json_are_named() {
    let id = prop_oneof![
        3 => "[A-Za-z0-9_-]{1,64}",
        2 => any::<String>(),
        1 => select(&["", "..", "../etc", "a/b", "a b", "é", "a\u{0}b", "a.md"][..])
            .prop_map(str::to_owned),
        1 => (60usize..70).prop_map(|n| "x".repeat(n)),
    ];
    run(400, 190, (id.clone(), id), |(personality, user)| {
        let valid = |s: &str| {
            (1..=64).contains(&s.len())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        let json = json!({"personality": personality, "user": user}).to_string();
        match serde_json::from_str::<MemoryContext>(&json) {
            Ok(ctx) => {
                prop_assert!(valid(&personality) && valid(&user));
                prop_assert_eq!(ctx.personality.as_str(), personality.as_str());
                prop_assert_eq!(ctx.user.as_str(), user.as_str());
            }
            Err(err) => {
                let message = err.to_string();
                let (kind, value) = if valid(&personality) {
                    ("invalid user id", &user)
                } else {
                    ("invalid personality id", &personality)
                };
                prop_assert!(!valid(value));
                prop_assert!(message.contains(kind), "{message:?}");
                prop_assert!(message.contains(&format!("{value:?}")), "{message:?}");
            }
        }
        let path = format!("users/{user}/USER.md");
        let document = json!({"kind": "user-profile", "user": user}).to_string();
        match serde_json::from_str::<DocumentId>(&document) {
            Ok(id) => {
                prop_assert!(valid(&user));
                prop_assert_eq!(DocumentId::from_relative_path(&path), Some(id));
            }
            Err(err) => {
                prop_assert!(!valid(&user));
                prop_assert!(err.to_string().contains("invalid user id"), "{err}");
            }
        }
        Ok(())
    });
}
