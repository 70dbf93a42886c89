//! The README's example `memory.toml`, run as written (servers and root pointed at this
//! machine's): every personality of it reads one USER.md per user and one global MEMORY.md.

use memory_conformance::services::{SchemaGuard, Service, unique_name};
use memory_core::{
    DocumentId, IfMatch, MemoryProvider, MemoryUpdate, PersonalityId, Store, UserId,
};
use memory_wiring::{Config, Memory};

/// The first ```toml block of the README's wiring section.
fn readme_config() -> String {
    let readme = include_str!("../../README.md");
    let section = &readme[readme.find("## Wiring").expect("a wiring section")..];
    let block = &section[section.find("```toml\n").expect("a toml block") + "```toml\n".len()..];
    block[..block.find("```").expect("the block ends")].to_owned()
}

/// Replaces `from` in `text`, which must contain it: an example edited out from under this
/// test fails it instead of silently testing less.
fn set(text: String, from: &str, to: &str) -> String {
    assert!(
        text.contains(from),
        "the README's config no longer has {from:?}"
    );
    text.replace(from, to)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_readme_example_shares_profiles_and_the_global_memory_across_providers() {
    let (Some(postgres), Some(redis)) = (Service::Postgres.url(), Service::Redis.url()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let unique = unique_name("readme");
    let _schema = SchemaGuard {
        url: postgres.clone(),
        schema: unique.clone(),
    };
    let mut text = readme_config();
    text = set(text, "\"~/.agent-memory\"", "\"files\"");
    text = set(text, "${MEMORY_POSTGRES_URL}", &postgres);
    text = set(text, "\"agent_memory\"", &format!("\"{unique}\""));
    // No personality of the example is on Redis, so nothing is written there; pointed at the
    // test server all the same.
    text = set(text, "redis://127.0.0.1:6379", &redis);
    // The model is found where the environment or the provisioning script put it.
    let config = Config::parse(&text, &dir.path().join("memory.toml")).unwrap();
    let memory = Memory::new(config);

    let grace = UserId::new("grace").unwrap();
    let ctx = |p: &str| memory.context(PersonalityId::new(p).unwrap(), grace.clone());
    // grace tells ada (on the recall index over files) about her allergy...
    let told = [MemoryUpdate::add(Store::User, "Allergic to peanuts.")];
    memory
        .sync(&ctx("ada"), &told, &IfMatch::NONE)
        .await
        .unwrap();
    // ...and the concierge (on Postgres) notes something for everyone.
    let note = [MemoryUpdate::add(Store::Memory, "Closed on Fridays.")];
    memory
        .sync(&ctx("concierge"), &note, &IfMatch::NONE)
        .await
        .unwrap();

    // Every personality, whatever its provider, knows about the allergy.
    for personality in ["ada", "concierge", "helper"] {
        let seen = memory.prefetch(&ctx(personality)).await.unwrap();
        let context = seen.context.unwrap_or_default();
        assert!(
            context.contains("Allergic to peanuts."),
            "{personality}: {context}"
        );
    }
    let profile = memory.read(&DocumentId::user(&grace)).await.unwrap();
    assert_eq!(profile.text, "Allergic to peanuts.\n");
    let global = memory.read(&DocumentId::GlobalMemory).await.unwrap();
    assert_eq!(global.text, "Closed on Fridays.\n");
    // ada's own notes stay in the files, under the recall index.
    let own = [MemoryUpdate::add(
        Store::Memory,
        "Planning a trip to Kyoto.",
    )];
    memory
        .sync(&ctx("ada"), &own, &IfMatch::NONE)
        .await
        .unwrap();
    assert!(
        dir.path()
            .join("files/personalities/ada/MEMORY.md")
            .is_file()
    );
    assert!(
        !dir.path().join("files/users").exists(),
        "USER.md is not in the files"
    );
    assert!(memory.settle().await.is_empty());
}
