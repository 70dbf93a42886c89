//! One handle routing each personality to its provider: isolation, settings, and the contract.

use std::path::Path;
use std::sync::Arc;

use memory_conformance::Fixture;
use memory_conformance::services::Service;
use memory_core::{
    DocumentId, IfMatch, MemoryError, MemoryProvider, MemoryScope, MemoryUpdate, PersonalityId,
    Store, UserId,
};
use memory_wiring::{Config, Memory};

fn id(name: &str) -> PersonalityId {
    PersonalityId::new(name).unwrap()
}

fn grace() -> UserId {
    UserId::new("grace").unwrap()
}

/// `ada` on the markdown root `a` (the default), `bob` on `second`, described by `second`'s
/// TOML table body; `concierge` on the default with the global scope and a hard cap.
fn wiring(dir: &Path, second: &str) -> Memory {
    let text = format!(
        r#"
        default_provider = "a"
        [providers.a]
        kind = "markdown"
        root = "a"
        [providers.second]
        {second}
        [personalities.bob]
        provider = "second"
        [personalities.concierge]
        memory_scope = "global"
        max_chars = 60
        caps.memory = {{ hard = 100 }}
        "#
    );
    Memory::new(Config::parse(&text, &dir.join("memory.toml")).unwrap())
}

async fn add(memory: &Memory, personality: &str, store: Store, text: &str) {
    let ctx = memory.context(id(personality), grace());
    let update = [MemoryUpdate::add(store, text)];
    memory.sync(&ctx, &update, &IfMatch::NONE).await.unwrap();
}

/// Both personalities write both documents for the same user through one handle; each sees
/// only what was written through its own provider.
async fn personalities_on_different_providers_never_see_each_other(memory: Memory) {
    add(&memory, "ada", Store::Memory, "ada's note").await;
    add(&memory, "ada", Store::User, "told ada: likes tea").await;
    add(&memory, "bob", Store::Memory, "bob's note").await;
    add(&memory, "bob", Store::User, "told bob: likes coffee").await;

    let seen = |p: &'static str| {
        let memory = memory.clone();
        async move {
            let ctx = memory.context(id(p), grace());
            memory.prefetch(&ctx).await.unwrap().context.unwrap()
        }
    };
    let (ada, bob) = (seen("ada").await, seen("bob").await);
    assert!(
        ada.contains("ada's note") && ada.contains("likes tea"),
        "{ada}"
    );
    assert!(!ada.contains("bob") && !ada.contains("coffee"), "{ada}");
    assert!(
        bob.contains("bob's note") && bob.contains("likes coffee"),
        "{bob}"
    );
    assert!(!bob.contains("ada") && !bob.contains("tea"), "{bob}");

    // The providers themselves hold only their own personality's documents.
    let a = memory.provider("a").await.unwrap();
    let second = memory.provider("second").await.unwrap();
    let bob_memory = DocumentId::memory(&id("bob"), MemoryScope::PerPersonality);
    let ada_memory = DocumentId::memory(&id("ada"), MemoryScope::PerPersonality);
    assert_eq!(a.read(&bob_memory).await.unwrap().text, "");
    assert_eq!(second.read(&ada_memory).await.unwrap().text, "");

    // `read` and `list` through the handle follow the same routing.
    assert_eq!(memory.read(&bob_memory).await.unwrap().text, "bob's note\n");
    assert_eq!(memory.read(&ada_memory).await.unwrap().text, "ada's note\n");
    let user = DocumentId::user(&grace());
    assert_eq!(
        memory.read(&user).await.unwrap().text,
        "told ada: likes tea\n"
    );
    assert_eq!(
        memory.list().await.unwrap(),
        vec![ada_memory, bob_memory, user]
    );
}

#[tokio::test]
async fn two_markdown_roots_never_see_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let memory = wiring(dir.path(), "kind = \"markdown\"\nroot = \"b\"");
    personalities_on_different_providers_never_see_each_other(memory).await;
    assert!(dir.path().join("b/personalities/bob/MEMORY.md").is_file());
    assert!(!dir.path().join("a/personalities/bob").exists());
}

#[tokio::test]
async fn markdown_and_redis_never_see_each_other() {
    let Some(url) = Service::Redis.url() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("wiring-test-{}-{}", std::process::id(), nanos());
    let memory = wiring(
        dir.path(),
        &format!("kind = \"redis\"\nurl = \"{url}\"\nprefix = \"{prefix}\""),
    );
    personalities_on_different_providers_never_see_each_other(memory).await;
}

fn nanos() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
}

#[tokio::test]
async fn a_personality_gets_its_configured_scope_caps_and_budget_whatever_the_context_says() {
    let dir = tempfile::tempdir().unwrap();
    let memory = wiring(dir.path(), "kind = \"markdown\"\nroot = \"b\"");
    // A context built by hand, with the default scope and no caps.
    let ctx = memory_core::MemoryContext::new(id("concierge"), grace());
    let update = [MemoryUpdate::add(Store::Memory, "Closed on Fridays.")];
    memory.sync(&ctx, &update, &IfMatch::NONE).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a/MEMORY.md")).unwrap(),
        "Closed on Fridays.\n"
    );
    let too_big = [MemoryUpdate::add(Store::Memory, "x".repeat(200))];
    let err = memory
        .sync(&ctx, &too_big, &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(
        matches!(err, MemoryError::HardCapExceeded { hard_cap: 100, .. }),
        "{err}"
    );

    add(&memory, "concierge", Store::User, &"y".repeat(200)).await;
    let seen = memory.prefetch(&ctx).await.unwrap().context.unwrap();
    assert!(seen.chars().count() <= 60, "{seen}");
    // A smaller budget asked by the caller is kept.
    let small = memory
        .prefetch(&ctx.clone().with_max_chars(30))
        .await
        .unwrap();
    assert!(small.context.unwrap().chars().count() <= 30);
}

#[tokio::test]
async fn an_unknown_provider_name_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let memory = wiring(dir.path(), "kind = \"markdown\"\nroot = \"b\"");
    let Err(err) = memory.provider("nope").await else {
        panic!("an unknown provider was found");
    };
    assert!(
        matches!(&err, MemoryError::Config { message } if message.contains("\"nope\"") && message.contains("a, second")),
        "{err}"
    );
    let err = memory.vector("a").await.unwrap_err();
    assert!(
        matches!(&err, MemoryError::Config { message } if message.contains("markdown provider")),
        "{err}"
    );
}

#[tokio::test]
async fn subscribers_see_the_writes_made_through_the_handle() {
    let dir = tempfile::tempdir().unwrap();
    let memory = wiring(dir.path(), "kind = \"markdown\"\nroot = \"b\"");
    let mut events = memory.subscribe();
    add(&memory, "bob", Store::Memory, "routed").await;
    let event = events.recv().await.unwrap();
    assert_eq!(
        event.report().document,
        DocumentId::memory(&id("bob"), MemoryScope::PerPersonality)
    );
}

/// The handle is a provider like any other: the whole contract holds through it. (The suite's
/// personalities are not configured, so they all route to the default provider; a configured
/// one exists beside them.)
async fn setup() -> Fixture<Memory> {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
        default_provider = "a"
        [providers.a]
        kind = "markdown"
        root = "a"
        [providers.b]
        kind = "markdown"
        root = "b"
        [personalities.elsewhere]
        provider = "b"
    "#;
    let config = Config::parse(text, &dir.path().join("memory.toml")).unwrap();
    Fixture::from_arc(Arc::new(Memory::new(config))).with_guard(dir)
}

memory_conformance::conformance_suite!(setup);
