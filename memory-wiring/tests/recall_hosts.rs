//! Recall on several hosts: each host has its own index directory over one shared PostgreSQL
//! source, and a query on one host finds what another host wrote, with no write of its own.

use std::path::Path;

use memory_conformance::services::{SchemaGuard, Service, unique_name};
use memory_core::{IfMatch, MemoryProvider, MemoryUpdate, PersonalityId, Store, UserId};
use memory_vector::ModelConfig;
use memory_wiring::{Config, Memory};
use serde_json::json;

/// One host's wiring: `ada` on a recall index in `index_dir` over the shared schema.
fn host(url: &str, schema: &str, index_dir: &Path) -> Memory {
    let text = format!(
        r#"
        default_provider = "shared"
        [providers.shared]
        kind = "postgres"
        url = "{url}"
        schema = "{schema}"
        [providers.recall]
        kind = "vector"
        source = "shared"
        index_dir = {index_dir:?}
        model_dir = {model_dir:?}
        # What one host sees of another's writes, not the machine's speed: under a loaded
        # test run a first catch-up on e5 can pass the 2 s default budget.
        recall = {{ k = 2, catch_up_ms = 60000 }}
        [personalities.ada]
        provider = "recall"
        "#,
        index_dir = index_dir.display().to_string(),
        model_dir = ModelConfig::from_env().model_dir.display().to_string(),
    );
    Memory::new(Config::parse(&text, &index_dir.join("memory.toml")).unwrap())
}

const NOTES: [&str; 6] = [
    "Prefers aisle seats on flights longer than two hours.",
    "Allergic to shellfish: no shrimp, crab or lobster.",
    "Works from home on Mondays and Fridays.",
    "Favourite coffee: flat white with oat milk.",
    "Runs 5 km on Saturday mornings along the canal.",
    "Piano lessons for Maya every Thursday at 17:00.",
];

#[tokio::test(flavor = "multi_thread")]
async fn a_query_on_one_host_finds_what_another_host_wrote() {
    let Some(url) = Service::Postgres.url() else {
        return;
    };
    let schema = unique_name("recall_hosts");
    let _schema = SchemaGuard {
        url: url.clone(),
        schema: schema.clone(),
    };
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (
        host(&url, &schema, dirs.0.path()),
        host(&url, &schema, dirs.1.path()),
    );
    let ada = a.context(
        PersonalityId::new("ada").unwrap(),
        UserId::new("grace").unwrap(),
    );
    let adds: Vec<_> = NOTES
        .iter()
        .map(|note| MemoryUpdate::add(Store::Memory, *note))
        .collect();
    a.sync(&ada, &adds, &IfMatch::NONE).await.unwrap();

    // Host B has never indexed anything, and never writes.
    let asked = ada.clone().with_query("what can't she eat?");
    let seen = b.prefetch(&asked).await.unwrap();
    let context = seen.context.unwrap();
    assert!(context.contains("Allergic to shellfish"), "{context}");
    assert!(seen.warnings.is_empty(), "{:?}", seen.warnings);

    // A later write on host A is found by host B's next `memory_search`.
    let later = [MemoryUpdate::add(
        Store::Memory,
        "The wifi password is in the blue binder.",
    )];
    a.sync(&ada, &later, &IfMatch::NONE).await.unwrap();
    let tools = b
        .tools(ada.personality.clone(), ada.user.clone())
        .await
        .unwrap();
    let found = tools
        .call("memory_search", json!({"query": "wifi password", "k": 1}))
        .await;
    assert!(!found.is_error, "{}", found.text);
    assert!(
        found
            .text
            .contains("[1] The wifi password is in the blue binder."),
        "{}",
        found.text
    );

    assert!(a.settle().await.is_empty());
    assert!(b.settle().await.is_empty());
}
