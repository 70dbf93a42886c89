//! One handle routing each personality to its provider: isolation, settings, and the contract.

use std::path::Path;
use std::sync::Arc;

use memory_conformance::Fixture;
use memory_conformance::services::{Service, unique_name};
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

/// Markdown providers `a` and `b` (on roots of those names) under `top` (the top-level keys),
/// followed by `rest` (more tables).
fn roots_a_and_b(dir: &Path, top: &str, rest: &str) -> Memory {
    let text = format!(
        "{top}\n[providers.a]\nkind = \"markdown\"\nroot = \"a\"\n\
         [providers.b]\nkind = \"markdown\"\nroot = \"b\"\n{rest}"
    );
    Memory::new(Config::parse(&text, &dir.join("memory.toml")).unwrap())
}

async fn add(memory: &Memory, personality: &str, store: Store, text: &str) {
    let ctx = memory.context(id(personality), grace());
    let update = [MemoryUpdate::add(store, text)];
    memory.sync(&ctx, &update, &IfMatch::NONE).await.unwrap();
}

/// Personalities on different providers keep their own MEMORY.md each, and share the user's
/// USER.md: what grace told bob, ada knows, and `read`, `list` and the files agree.
async fn personalities_on_different_providers_share_the_users_profile(memory: Memory) {
    add(&memory, "ada", Store::Memory, "ada's note").await;
    add(&memory, "bob", Store::Memory, "bob's note").await;
    add(&memory, "bob", Store::User, "Allergic to peanuts.").await;
    add(&memory, "ada", Store::User, "Prefers tea.").await;

    let seen = |p: &'static str| {
        let memory = memory.clone();
        async move {
            let ctx = memory.context(id(p), grace());
            memory.prefetch(&ctx).await.unwrap().context.unwrap()
        }
    };
    let (ada, bob) = (seen("ada").await, seen("bob").await);
    let profile = "## About You\n\nAllergic to peanuts.\n\nPrefers tea.\n\n## Memory\n\n";
    assert_eq!(ada, format!("{profile}ada's note"));
    assert_eq!(bob, format!("{profile}bob's note"));

    // USER.md lives in the users provider (the default, `a`) only; each MEMORY.md in its
    // personality's provider only.
    let a = memory.provider("a").await.unwrap();
    let second = memory.provider("second").await.unwrap();
    let user = DocumentId::user(&grace());
    let bob_memory = DocumentId::memory(&id("bob"), MemoryScope::PerPersonality);
    let ada_memory = DocumentId::memory(&id("ada"), MemoryScope::PerPersonality);
    assert_eq!(
        a.read(&user).await.unwrap().text,
        "Allergic to peanuts.\n\nPrefers tea.\n"
    );
    assert_eq!(second.read(&user).await.unwrap().text, "");
    assert_eq!(a.read(&bob_memory).await.unwrap().text, "");
    assert_eq!(second.read(&ada_memory).await.unwrap().text, "");

    // `read` and `list` through the handle go to each document's home.
    assert_eq!(memory.read(&bob_memory).await.unwrap().text, "bob's note\n");
    assert_eq!(memory.read(&ada_memory).await.unwrap().text, "ada's note\n");
    assert_eq!(
        memory.read(&user).await.unwrap(),
        a.read(&user).await.unwrap()
    );
    assert_eq!(
        memory.list().await.unwrap(),
        vec![ada_memory, bob_memory, user]
    );
}

#[tokio::test]
async fn two_markdown_roots_share_the_users_profile() {
    let dir = tempfile::tempdir().unwrap();
    let memory = wiring(dir.path(), "kind = \"markdown\"\nroot = \"b\"");
    personalities_on_different_providers_share_the_users_profile(memory).await;
    assert!(dir.path().join("b/personalities/bob/MEMORY.md").is_file());
    assert!(dir.path().join("a/users/grace/USER.md").is_file());
    assert!(!dir.path().join("a/personalities/bob").exists());
    assert!(!dir.path().join("b/users").exists());
}

#[tokio::test]
async fn markdown_and_redis_share_the_users_profile() {
    let Some(url) = Service::Redis.url() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let prefix = unique_name("wiring-test");
    let memory = wiring(
        dir.path(),
        &format!("kind = \"redis\"\nurl = \"{url}\"\nprefix = \"{prefix}\""),
    );
    personalities_on_different_providers_share_the_users_profile(memory).await;
}

/// `users_provider` moves every USER.md and the global MEMORY.md: a global-scope personality
/// on it and a personality on another provider using the global scope read one MEMORY.md.
#[tokio::test]
async fn the_global_memory_and_profiles_live_in_the_users_provider() {
    let dir = tempfile::tempdir().unwrap();
    let memory = roots_a_and_b(
        dir.path(),
        "default_provider = \"b\"\nusers_provider = \"a\"",
        "[personalities.concierge]\nprovider = \"a\"\nmemory_scope = \"global\"",
    );
    add(&memory, "concierge", Store::Memory, "Closed on Fridays.").await;
    // An unconfigured personality runs on `b`, the default; asked for the global scope, it
    // still reads the one global MEMORY.md, in `a`.
    let eve = memory
        .context(id("eve"), grace())
        .with_scope(MemoryScope::Global);
    let update = [MemoryUpdate::add(
        Store::Memory,
        "Parking is behind the hall.",
    )];
    memory.sync(&eve, &update, &IfMatch::NONE).await.unwrap();
    add(&memory, "eve", Store::Memory, "eve's own note").await;
    add(&memory, "eve", Store::User, "Name: Grace.").await;

    let read = |path: &str| std::fs::read_to_string(dir.path().join(path)).unwrap();
    assert_eq!(
        read("a/MEMORY.md"),
        "Closed on Fridays.\n\nParking is behind the hall.\n"
    );
    assert_eq!(read("b/personalities/eve/MEMORY.md"), "eve's own note\n");
    assert_eq!(read("a/users/grace/USER.md"), "Name: Grace.\n");
    assert!(!dir.path().join("b/MEMORY.md").exists());
    assert!(!dir.path().join("b/users").exists());
    let concierge = memory.context(id("concierge"), grace());
    let seen = memory.prefetch(&concierge).await.unwrap().context.unwrap();
    assert_eq!(
        seen,
        "## About You\n\nName: Grace.\n\n## Memory\n\nClosed on Fridays.\n\nParking is behind the hall."
    );
    assert_eq!(memory.prefetch(&eve).await.unwrap().context.unwrap(), seen);

    // The identity map lives with the profiles.
    let identity: memory_core::Identity = "telegram:1".parse().unwrap();
    memory
        .identities()
        .await
        .unwrap()
        .link(&identity, &grace(), false)
        .await
        .unwrap();
    assert!(dir.path().join("a/users/identity-map.json").is_file());
    assert!(!dir.path().join("b/users").exists());
}

/// A global-scope personality that names a provider storing documents elsewhere than the
/// global MEMORY.md is refused, naming the line: it would read another file than it says.
#[test]
fn a_global_personality_on_another_store_is_a_config_error() {
    let text = r#"default_provider = "a"
[providers.a]
kind = "markdown"
root = "a"
[providers.b]
kind = "markdown"
root = "b"
[personalities.concierge]
memory_scope = "global"
provider = "b"
"#;
    let err = Config::parse(text, Path::new("/etc/memory.toml")).unwrap_err();
    assert!(
        matches!(&err, MemoryError::Config { message }
            if message.starts_with("/etc/memory.toml:10:") && message.contains("users_provider \"a\"")),
        "{err}"
    );
    let err = Config::parse(
        &text.replace(
            "default_provider = \"a\"",
            "default_provider = \"a\"\nusers_provider = \"nope\"",
        ),
        Path::new("/etc/memory.toml"),
    )
    .unwrap_err();
    assert!(
        matches!(&err, MemoryError::Config { message } if message.contains("users_provider names \"nope\"")),
        "{err}"
    );
    // On the users provider, it is fine.
    let fine = text.replace(
        "default_provider = \"a\"",
        "default_provider = \"a\"\nusers_provider = \"b\"",
    );
    let config = Config::parse(&fine, Path::new("/etc/memory.toml")).unwrap();
    assert_eq!(config.home_of(&DocumentId::GlobalMemory), "b");
}

/// `bob`'s MEMORY.md is in `second`, grace's USER.md in `a`: a call touching both checks
/// every refusal against both before writing either.
#[tokio::test]
async fn a_call_across_two_providers_writes_nothing_when_either_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let memory = wiring(dir.path(), "kind = \"markdown\"\nroot = \"b\"");
    let bob = memory.context(id("bob"), grace());
    add(&memory, "bob", Store::User, "Name: Grace.").await;
    let before = memory.prefetch(&bob).await.unwrap();

    let note = MemoryUpdate::add(Store::Memory, "bob's note");
    let refusals: Vec<(Vec<MemoryUpdate>, IfMatch)> = vec![
        // The user update matches nothing: #2 of the call.
        (
            vec![
                note.clone(),
                MemoryUpdate::add(Store::User, "Likes jazz."),
                MemoryUpdate::edit(Store::User, "Name: Ada.", "Name: Grace Hopper."),
            ],
            IfMatch::NONE,
        ),
        // A malformed update.
        (
            vec![note.clone(), MemoryUpdate::add(Store::User, " ")],
            IfMatch::NONE,
        ),
        // USER.md moved on since the version the caller holds.
        (
            vec![note.clone(), MemoryUpdate::add(Store::User, "Likes jazz.")],
            IfMatch::only(Store::User, Some(memory_core::Version::new("stale"))),
        ),
        // MEMORY.md moved on, so the USER.md update must not land either.
        (
            vec![note.clone(), MemoryUpdate::add(Store::User, "Likes jazz.")],
            IfMatch::only(Store::Memory, Some(memory_core::Version::new("stale"))),
        ),
    ];
    for (updates, if_match) in refusals {
        let err = memory.sync(&bob, &updates, &if_match).await.unwrap_err();
        assert!(
            matches!(
                err,
                MemoryError::NoMatch { index: 2, .. }
                    | MemoryError::InvalidUpdate { index: 1, .. }
                    | MemoryError::Conflict { .. }
            ),
            "{err}"
        );
        assert_eq!(memory.prefetch(&bob).await.unwrap(), before, "after {err}");
    }
    assert!(!dir.path().join("b/personalities/bob/MEMORY.md").exists());

    // Over USER.md's hard cap (concierge's caps are on memory; give bob one through a
    // wiring with caps on the user store).
    let capped = Memory::new(
        Config::parse(
            r#"
            default_provider = "a"
            [providers.a]
            kind = "markdown"
            root = "a"
            [providers.second]
            kind = "markdown"
            root = "b"
            [personalities.bob]
            provider = "second"
            caps.user = { hard = 20 }
            "#,
            &dir.path().join("memory.toml"),
        )
        .unwrap(),
    );
    let updates = [note, MemoryUpdate::add(Store::User, "x".repeat(40))];
    let err = capped
        .sync(&bob, &updates, &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::HardCapExceeded { .. }), "{err}");
    assert_eq!(capped.prefetch(&bob).await.unwrap(), before);

    // Both fine: both written, memory first, in one report and one event each.
    let mut events = memory.subscribe();
    let updates = [
        MemoryUpdate::add(Store::User, "Likes jazz."),
        MemoryUpdate::add(Store::Memory, "bob's note"),
    ];
    let report = memory.sync(&bob, &updates, &IfMatch::NONE).await.unwrap();
    let stores: Vec<Store> = report.documents.iter().map(|d| d.store).collect();
    assert_eq!(stores, [Store::Memory, Store::User]);
    assert!(report.documents.iter().all(|d| d.written));
    for store in [Store::Memory, Store::User] {
        assert_eq!(events.recv().await.unwrap().report().store, store);
    }
}

/// When the second write fails after the first landed (here: USER.md's lock file cannot be
/// opened), the error is `PartiallyApplied` naming what landed, and the landed write stays.
#[tokio::test]
async fn a_second_write_that_fails_after_the_first_landed_is_partially_applied() {
    let dir = tempfile::tempdir().unwrap();
    let memory = wiring(dir.path(), "kind = \"markdown\"\nroot = \"b\"");
    let bob = memory.context(id("bob"), grace());
    // Reads take no lock, so the check passes; the write needs the lock and fails.
    std::fs::create_dir_all(dir.path().join("a/users/grace/.USER.md.lock")).unwrap();
    let mut events = memory.subscribe();
    let updates = [
        MemoryUpdate::add(Store::User, "Likes jazz."),
        MemoryUpdate::add(Store::Memory, "bob's note"),
    ];
    let err = memory
        .sync(&bob, &updates, &IfMatch::NONE)
        .await
        .unwrap_err();
    let MemoryError::PartiallyApplied { landed, source } = &err else {
        panic!("expected PartiallyApplied, got {err}");
    };
    assert_eq!(landed.len(), 1);
    assert_eq!(landed[0].document, bob.document(Store::Memory));
    assert!(matches!(**source, MemoryError::Corrupt { .. }), "{source}");
    assert!(
        err.to_string().contains("MEMORY.md of personality 'bob'"),
        "{err}"
    );
    assert_eq!(
        memory
            .read(&bob.document(Store::Memory))
            .await
            .unwrap()
            .text,
        "bob's note\n"
    );
    assert_eq!(
        memory.read(&bob.document(Store::User)).await.unwrap().text,
        ""
    );
    // What landed is announced like any write.
    let event = events.try_recv().expect("the landed write was announced");
    assert_eq!(event.report().document, bob.document(Store::Memory));
}

/// A keyed call that ended `PartiallyApplied` is completed by repeating it with its key once
/// the fault is gone: the part that landed is replayed, not written twice, and only the rest
/// is applied.
#[tokio::test]
async fn a_partially_applied_call_repeated_with_its_key_completes_once() {
    let dir = tempfile::tempdir().unwrap();
    let memory = wiring(dir.path(), "kind = \"markdown\"\nroot = \"b\"");
    let bob = memory
        .context(id("bob"), grace())
        .with_idempotency_key(memory_core::IdempotencyKey::new("turn-9").unwrap());
    let blocker = dir.path().join("a/users/grace/.USER.md.lock");
    std::fs::create_dir_all(&blocker).unwrap();
    let updates = [
        MemoryUpdate::add(Store::User, "Likes jazz."),
        MemoryUpdate::add(Store::Memory, "bob's note"),
    ];
    let err = memory
        .sync(&bob, &updates, &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::PartiallyApplied { .. }), "{err}");

    std::fs::remove_dir(&blocker).unwrap();
    let report = memory.sync(&bob, &updates, &IfMatch::NONE).await.unwrap();
    let replayed: Vec<(Store, bool)> = report
        .documents
        .iter()
        .map(|d| (d.store, d.replayed))
        .collect();
    assert_eq!(replayed, [(Store::Memory, true), (Store::User, false)]);
    for (store, expected) in [
        (Store::Memory, "bob's note\n"),
        (Store::User, "Likes jazz.\n"),
    ] {
        let document = memory.read(&bob.document(store)).await.unwrap();
        assert_eq!(document.text, expected, "each part once");
    }
}

/// A USER.md left in a personality's own provider (written there before profiles had one
/// home) is not read, but never hidden silently: the prefetch says where it is and how to
/// merge it.
#[tokio::test]
async fn a_profile_left_in_a_personalitys_own_provider_is_pointed_out() {
    let dir = tempfile::tempdir().unwrap();
    let memory = wiring(dir.path(), "kind = \"markdown\"\nroot = \"b\"");
    let bob = memory.context(id("bob"), grace());
    let left_behind = [MemoryUpdate::add(Store::User, "Allergic to peanuts.")];
    let second = memory.provider("second").await.unwrap();
    second
        .sync(&bob, &left_behind, &IfMatch::NONE)
        .await
        .unwrap();
    add(&memory, "bob", Store::Memory, "bob's note").await;

    let seen = memory.prefetch(&bob).await.unwrap();
    assert!(!seen.context.unwrap().contains("peanuts"));
    assert_eq!(seen.warnings.len(), 1, "{:?}", seen.warnings);
    let warning = &seen.warnings[0];
    assert!(
        warning.contains("USER.md of user 'grace' also has a copy in provider \"second\"")
            && warning.contains("memory migrate --from second --to a"),
        "{warning}"
    );
    // Once merged (the home holds the same text), nothing to say.
    memory
        .sync(&bob, &left_behind, &IfMatch::NONE)
        .await
        .unwrap();
    assert!(memory.prefetch(&bob).await.unwrap().warnings.is_empty());
}

/// Reading needs no recall model: with a vector provider whose model is missing, `read`,
/// `list`, a prefetch without a query and the identity map work; a query says what is missing.
#[tokio::test]
async fn reads_without_a_query_need_no_model() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
        default_provider = "files"
        [providers.files]
        kind = "markdown"
        root = "files"
        [providers.recall]
        kind = "vector"
        source = "files"
        model_dir = "no-model-here"
        [personalities.ada]
        provider = "recall"
    "#;
    let memory = Memory::new(Config::parse(text, &dir.path().join("memory.toml")).unwrap());
    let ada = memory.context(id("ada"), grace());
    let files = memory.provider("files").await.unwrap();
    let note = [
        MemoryUpdate::add(Store::Memory, "ada's note"),
        MemoryUpdate::add(Store::User, "Name: Grace."),
    ];
    files.sync(&ada, &note, &IfMatch::NONE).await.unwrap();

    let document = ada.document(Store::Memory);
    assert_eq!(memory.read(&document).await.unwrap().text, "ada's note\n");
    assert_eq!(memory.list().await.unwrap().len(), 2);
    let seen = memory.prefetch(&ada).await.unwrap().context.unwrap();
    assert_eq!(
        seen,
        "## About You\n\nName: Grace.\n\n## Memory\n\nada's note"
    );
    let identity: memory_core::Identity = "telegram:7".parse().unwrap();
    let identities = memory.identities_of("recall").await.unwrap();
    identities.link(&identity, &grace(), false).await.unwrap();

    let err = memory
        .prefetch(&ada.clone().with_query("notes"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::Config { message } if message.contains("provision-model")),
        "{err}"
    );
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
    let memory = roots_a_and_b(
        dir.path(),
        "default_provider = \"a\"",
        "[personalities.elsewhere]\nprovider = \"b\"",
    );
    Fixture::from_arc(Arc::new(memory)).with_guard(dir)
}

memory_conformance::conformance_suite!(setup);
memory_conformance::notes_suite!(setup);

/// The whole contract through a wiring where every call's two documents live apart: each
/// personality's MEMORY.md in `b` (the default provider), every USER.md in `a`.
mod documents_apart {
    use super::*;

    async fn setup() -> Fixture<Memory> {
        let dir = tempfile::tempdir().unwrap();
        let top = "default_provider = \"b\"\nusers_provider = \"a\"";
        let memory = roots_a_and_b(dir.path(), top, "");
        Fixture::from_arc(Arc::new(memory)).with_guard(dir)
    }

    memory_conformance::conformance_suite!(setup);
    memory_conformance::notes_suite!(setup);
}

/// A revert goes where the personality's settings route its writes: a personality configured
/// with the global scope reverts the global MEMORY.md, whose history is in the users provider.
#[tokio::test]
async fn a_revert_follows_the_personality_s_routing() {
    let dir = tempfile::tempdir().unwrap();
    let memory = wiring(dir.path(), "kind = \"markdown\"\nroot = \"b\"");
    add(&memory, "concierge", Store::Memory, "Lobby opens at 7.").await;
    add(&memory, "concierge", Store::Memory, "Wrong note.").await;
    let ctx = memory.context(id("concierge"), grace());
    let history = memory.history(&DocumentId::GlobalMemory, 10).await.unwrap();
    assert_eq!(history.len(), 2);
    memory.revert(&ctx, Store::Memory, 1, None).await.unwrap();
    let global = memory.read(&DocumentId::GlobalMemory).await.unwrap();
    assert_eq!(global.text, "Lobby opens at 7.\n");
    let own = memory
        .history(
            &DocumentId::memory(&id("concierge"), MemoryScope::PerPersonality),
            10,
        )
        .await
        .unwrap();
    assert!(own.is_empty(), "its own MEMORY.md was never touched");
}
