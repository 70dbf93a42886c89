//! Writes the seeds of the `journal` and `identity_map` targets that the provider itself makes:
//! journals of `personalities/ada/MEMORY.md` ending at the `journal` target's text, through
//! adds, a replace, an edit, a remove, a hand edit and a purge; and an identity map as links
//! write it. (The other seeds are examples from the README, CONTRACT.md and the tests.)
//!
//! `cargo run --manifest-path fuzz/Cargo.toml --example seeds -- fuzz/corpus`

use std::path::PathBuf;
use std::time::Duration;

use memory_core::{
    IdempotencyKey, Identity, IdentityMap, IfMatch, MemoryContext, MemoryProvider, MemoryScope,
    MemoryUpdate, PersonalityId, Store, Surface, UserId,
};
use memory_markdown::MarkdownProvider;

/// The `journal` target's document text.
const TEXT: &str = "one\n\ntwo 🙂\n\nthree\n";

/// One step of a seed's history.
enum Step {
    Sync(&'static [(&'static str, &'static str, &'static str)]),
    HandEdit(&'static str),
    Purge,
}

use Step::*;

const SEEDS: &[(&str, &[Step])] = &[
    (
        "adds",
        &[
            Sync(&[("add", "one", "")]),
            Sync(&[("add", "two 🙂", "")]),
            Sync(&[("add", "three", "")]),
        ],
    ),
    (
        "replace-edit",
        &[
            Sync(&[("replace", "draft", ""), ("edit", "draft", "one")]),
            Sync(&[("add", "two 🙂", ""), ("add", "three", "")]),
        ],
    ),
    (
        "remove",
        &[
            Sync(&[("add", "one", ""), ("add", "two 🙂", "")]),
            Sync(&[("add", "obsolete", "")]),
            Sync(&[("remove", "obsolete", ""), ("add", "three", "")]),
        ],
    ),
    (
        "hand-edit",
        &[
            Sync(&[("add", "one", "")]),
            HandEdit("one\n\ntwo 🙂\n"),
            Sync(&[("add", "three", "")]),
        ],
    ),
    (
        "purge",
        &[
            Sync(&[("add", "gone", "")]),
            Purge,
            Sync(&[("add", "one", ""), ("add", "two 🙂", "")]),
            Sync(&[("add", "three", "")]),
        ],
    ),
];

fn update(action: &str, a: &str, b: &str) -> MemoryUpdate {
    let store = Store::Memory;
    match action {
        "add" => MemoryUpdate::add(store, a),
        "replace" => MemoryUpdate::replace(store, a),
        "remove" => MemoryUpdate::remove(store, a),
        _ => MemoryUpdate::edit(store, a, b),
    }
}

fn main() {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(write_seeds());
}

async fn write_seeds() {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fuzz/corpus".into()),
    );
    let ctx = MemoryContext::new(
        PersonalityId::new("ada").unwrap(),
        UserId::new("u1").unwrap(),
    )
    .with_scope(MemoryScope::PerPersonality);
    let document = ctx.document(Store::Memory);
    std::fs::create_dir_all(out.join("journal")).unwrap();
    for (name, steps) in SEEDS {
        let root = scratch(name);
        let provider = MarkdownProvider::new(&root);
        for (n, step) in steps.iter().enumerate() {
            match step {
                Sync(updates) => {
                    let updates: Vec<MemoryUpdate> =
                        updates.iter().map(|(a, x, y)| update(a, x, y)).collect();
                    // Who wrote it varies, so the lines' optional fields do too.
                    let ctx = match n % 3 {
                        0 => ctx.clone(),
                        1 => ctx.clone().with_session("s-1").with_surface(Surface::Tool),
                        _ => ctx
                            .clone()
                            .with_idempotency_key(IdempotencyKey::new(format!("k-{n}")).unwrap())
                            .with_surface(Surface::Cli),
                    };
                    provider.sync(&ctx, &updates, &IfMatch::NONE).await.unwrap();
                }
                HandEdit(text) => {
                    // Later than the last revision, as an editor's save would be.
                    std::thread::sleep(Duration::from_millis(20));
                    std::fs::write(provider.path(&document), text).unwrap();
                }
                Purge => {
                    provider.purge(&document, Surface::Cli).await.unwrap();
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            std::fs::read_to_string(provider.path(&document)).unwrap(),
            TEXT
        );
        // The whole journal, its older segments first: one file the target reads as the live one.
        let mut journal = Vec::new();
        for file in provider.history_files(&document).unwrap() {
            if file.extension().is_some_and(|ext| ext == "jsonl") {
                journal.extend(std::fs::read(file).unwrap());
            }
        }
        std::fs::write(out.join("journal").join(format!("{name}.jsonl")), journal).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
    }

    // The identity map as this provider writes it: Ethos's array.
    let root = scratch("identities");
    let provider = MarkdownProvider::new(&root);
    for (platform, who, user) in [
        ("telegram", "12345", "grace"),
        ("slack", "U024BE7LH", "ada"),
    ] {
        let identity = Identity::new(platform, who).unwrap();
        provider
            .link(&identity, &UserId::new(user).unwrap(), false)
            .await
            .unwrap();
    }
    std::fs::create_dir_all(out.join("identity_map")).unwrap();
    std::fs::copy(
        provider.identity_map_path(),
        out.join("identity_map").join("linked.json"),
    )
    .unwrap();
    std::fs::remove_dir_all(&root).unwrap();
}

fn scratch(name: &str) -> PathBuf {
    let root =
        std::env::temp_dir().join(format!("agent-memory-seeds-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    root
}
