//! Every tool and every error path of the dispatcher, against the reference provider.

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::{
    Budgets, Caps, Document, DocumentId, IfMatch, InMemoryProvider, MemoryContext, MemoryError,
    MemoryProvider, MemoryUpdate, PersonalityId, Prefetch, Recall, Recalled, Store, Subscription,
    SyncReport, UserId,
};
use memory_tools::{MemoryTools, Tool, ToolOutput};
use serde_json::{Value, json};

fn ctx() -> MemoryContext {
    MemoryContext::new(
        PersonalityId::new("coder").unwrap(),
        UserId::new("ada").unwrap(),
    )
}

fn tools_over(provider: &Arc<InMemoryProvider>, ctx: MemoryContext) -> MemoryTools {
    MemoryTools::new(provider.clone(), ctx)
}

async fn text_of(provider: &InMemoryProvider, store: Store) -> String {
    provider.read(&ctx().document(store)).await.unwrap().text
}

#[track_caller]
fn ok(output: &ToolOutput) -> &str {
    assert!(
        !output.is_error,
        "expected success, got error: {}",
        output.text
    );
    &output.text
}

#[track_caller]
fn refused(output: &ToolOutput) -> &str {
    assert!(output.is_error, "expected an error, got: {}", output.text);
    &output.text
}

/// A recall stand-in: ranks entries by how many of the query's words they contain. With
/// `indexed` set, only the first that many entries are "indexed": the rest come back unranked,
/// as from an index behind its document.
struct WordOverlap {
    provider: Arc<InMemoryProvider>,
    indexed: Option<usize>,
}

impl WordOverlap {
    fn new(provider: &Arc<InMemoryProvider>) -> Arc<Self> {
        Arc::new(WordOverlap {
            provider: provider.clone(),
            indexed: None,
        })
    }
}

#[async_trait]
impl Recall for WordOverlap {
    async fn search(
        &self,
        document: &DocumentId,
        query: &str,
        limit: usize,
    ) -> Result<Recalled, MemoryError> {
        let text = self.provider.read(document).await?.text;
        let entries: Vec<String> = text.split("\n\n").map(|e| e.trim().to_owned()).collect();
        let indexed = self.indexed.unwrap_or(entries.len()).min(entries.len());
        let mut found = Recalled {
            ranked: ranked(&entries[..indexed], query, limit),
            ..Recalled::default()
        };
        if self.indexed.is_some() {
            found.unranked = entries[indexed..].to_vec();
            found.behind = Some("the index is 1 entry behind".to_owned());
        }
        Ok(found)
    }
}

fn ranked(entries: &[String], query: &str, limit: usize) -> Vec<String> {
    {
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        let mut scored: Vec<(usize, String)> = entries
            .iter()
            .map(|entry| {
                let lower = entry.to_lowercase();
                (
                    words.iter().filter(|w| lower.contains(*w)).count(),
                    entry.trim().to_owned(),
                )
            })
            .filter(|(score, _)| *score > 0)
            .collect();
        scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
        scored.into_iter().take(limit).map(|(_, e)| e).collect()
    }
}

#[test]
fn definitions_are_strict_json_schemas_and_search_needs_recall() {
    let provider = Arc::new(InMemoryProvider::new());
    let plain = tools_over(&provider, ctx());
    let names: Vec<&str> = plain.definitions().iter().map(|d| d.name).collect();
    assert_eq!(
        names,
        [
            "memory_view",
            "memory_add",
            "memory_replace",
            "memory_remove",
            "memory_consolidate"
        ]
    );
    let recalling = tools_over(&provider, ctx()).with_recall(WordOverlap::new(&provider));
    let definitions = recalling.definitions();
    assert_eq!(definitions.last().unwrap().name, "memory_search");
    for definition in definitions.iter().chain(plain.definitions().iter()) {
        let schema = &definition.input_schema;
        assert_eq!(schema["type"], "object", "{}", definition.name);
        assert_eq!(schema["additionalProperties"], false, "{}", definition.name);
        let properties = schema["properties"].as_object().unwrap();
        for required in schema["required"].as_array().unwrap() {
            assert!(properties.contains_key(required.as_str().unwrap()));
        }
        assert!(!definition.description.is_empty());
    }
    let view = |tools: &MemoryTools| tools.definitions()[0].input_schema["properties"].clone();
    assert_eq!(
        view(&plain),
        json!({}),
        "no query where nothing can recall it"
    );
    assert!(view(&recalling).get("query").is_some());
}

/// A valid call of each tool, to break one field at a time.
fn valid_arguments(tool: Tool) -> Value {
    match tool {
        Tool::View => json!({"query": "rust"}),
        Tool::Add => json!({"file": "MEMORY.md", "entry": "x"}),
        Tool::Replace => json!({"file": "MEMORY.md", "old": "x", "new": "y"}),
        Tool::Remove => json!({"file": "MEMORY.md", "substring": "x"}),
        Tool::Consolidate => json!({"file": "MEMORY.md", "content": "x"}),
        Tool::Search => json!({"query": "x", "k": 2}),
    }
}

#[tokio::test]
async fn arguments_outside_the_schema_are_refused_naming_the_field_and_write_nothing() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx()).with_recall(WordOverlap::new(&provider));
    for definition in tools.definitions() {
        let tool = Tool::named(definition.name).unwrap();
        let schema = &definition.input_schema;
        for required in schema["required"].as_array().unwrap() {
            let field = required.as_str().unwrap();
            let mut arguments = valid_arguments(tool);
            arguments.as_object_mut().unwrap().remove(field);
            let output = tools.call(definition.name, arguments).await;
            let text = refused(&output);
            assert!(
                text.contains(&format!("missing field `{field}`"))
                    && text.contains(definition.name),
                "{text}"
            );
        }
        let mut arguments = valid_arguments(tool);
        arguments["colour"] = json!("blue");
        let text = refused(&tools.call(definition.name, arguments).await).to_owned();
        assert!(text.contains("unknown field `colour`"), "{text}");
        if schema["properties"].get("file").is_some() {
            let mut arguments = valid_arguments(tool);
            arguments["file"] = json!("NOTES.md");
            let text = refused(&tools.call(definition.name, arguments).await).to_owned();
            assert!(text.contains("\"MEMORY.md\" or \"USER.md\""), "{text}");
        }
        let text = refused(&tools.call(definition.name, json!("add this")).await).to_owned();
        assert!(text.contains("Invalid arguments"), "{text}");
    }
    assert_eq!(provider.list().await.unwrap(), Vec::<DocumentId>::new());
}

#[tokio::test]
async fn unknown_tools_are_refused_with_the_list_of_tools() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx());
    let text = refused(&tools.call("memory_delete_all", json!({})).await).to_owned();
    assert!(
        text.contains("memory_delete_all") && text.contains("memory_consolidate"),
        "{text}"
    );
    let text = refused(&tools.call("memory_search", json!({"query": "x"})).await).to_owned();
    assert!(text.contains("no tool named \"memory_search\""), "{text}");
    let text = refused(&tools.call("memory_view", json!({"query": "x"})).await).to_owned();
    assert!(
        text.contains("cannot search; call memory_view without a query"),
        "{text}"
    );
}

#[tokio::test]
async fn view_renders_what_prefetch_renders_with_sizes_and_caps() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx().with_budgets(Budgets::BOUNDED));
    let empty = tools.call("memory_view", Value::Null).await;
    assert!(
        ok(&empty).contains("Your memory is empty"),
        "{}",
        empty.text
    );

    ok(&tools
        .call(
            "memory_add",
            json!({"file": "MEMORY.md", "entry": "Uses nextest."}),
        )
        .await);
    ok(&tools
        .call(
            "memory_add",
            json!({"file": "USER.md", "entry": "Name: Ada"}),
        )
        .await);
    let view = tools.call("memory_view", json!({})).await;
    let prefetch = provider.prefetch(&ctx()).await.unwrap();
    let text = ok(&view);
    assert!(
        text.starts_with(prefetch.context.as_deref().unwrap()),
        "{text}"
    );
    assert!(
        text.contains("MEMORY.md: 14 bytes (soft cap 2048, hard cap 4096)")
            && text.contains("USER.md: 10 bytes (soft cap 1536, hard cap 3072)"),
        "{text}"
    );
}

#[tokio::test]
async fn add_appends_and_refuses_blank_entries() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx());
    let added = tools
        .call(
            "memory_add",
            json!({"file": "MEMORY.md", "entry": "First."}),
        )
        .await;
    assert!(
        ok(&added).starts_with("Added to MEMORY.md."),
        "{}",
        added.text
    );
    ok(&tools
        .call(
            "memory_add",
            json!({"file": "MEMORY.md", "entry": "Second."}),
        )
        .await);
    assert_eq!(
        text_of(&provider, Store::Memory).await,
        "First.\n\nSecond.\n"
    );
    assert_eq!(text_of(&provider, Store::User).await, "");

    let text = refused(
        &tools
            .call("memory_add", json!({"file": "USER.md", "entry": "  "}))
            .await,
    )
    .to_owned();
    assert!(
        text.contains("non-blank") && text.contains("Nothing was written"),
        "{text}"
    );
    assert_eq!(text_of(&provider, Store::User).await, "");
}

#[tokio::test]
async fn replace_needs_exactly_one_match_and_says_how_many_it_found() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx());
    for entry in ["Editor: vim", "Shell: fish", "Shell: fish (again)"] {
        ok(&tools
            .call("memory_add", json!({"file": "USER.md", "entry": entry}))
            .await);
    }
    let before = text_of(&provider, Store::User).await;

    let none = tools
        .call(
            "memory_replace",
            json!({"file": "USER.md", "old": "emacs", "new": "x"}),
        )
        .await;
    assert!(
        refused(&none).contains("occurs 0 times in USER.md"),
        "{}",
        none.text
    );
    let two = tools
        .call(
            "memory_replace",
            json!({"file": "USER.md", "old": "fish", "new": "zsh"}),
        )
        .await;
    assert!(
        refused(&two).contains("occurs 2 times in USER.md"),
        "{}",
        two.text
    );
    let empty = tools
        .call(
            "memory_replace",
            json!({"file": "USER.md", "old": "", "new": "zsh"}),
        )
        .await;
    refused(&empty);
    assert_eq!(
        text_of(&provider, Store::User).await,
        before,
        "refusals write nothing"
    );

    let same = tools
        .call(
            "memory_replace",
            json!({"file": "USER.md", "old": "vim", "new": "vim"}),
        )
        .await;
    assert!(ok(&same).contains("nothing changed"), "{}", same.text);
    let replaced = tools
        .call(
            "memory_replace",
            json!({"file": "USER.md", "old": "vim", "new": "helix"}),
        )
        .await;
    assert!(
        ok(&replaced).starts_with("Replaced in USER.md."),
        "{}",
        replaced.text
    );
    assert_eq!(
        text_of(&provider, Store::User).await,
        "Editor: helix\n\nShell: fish\n\nShell: fish (again)\n"
    );
}

#[tokio::test]
async fn remove_says_how_many_lines_went_including_zero() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx());
    ok(&tools
        .call(
            "memory_add",
            json!({"file": "MEMORY.md", "entry": "- todo: a\n- done: b\n- todo: c"}),
        )
        .await);
    let two = tools
        .call(
            "memory_remove",
            json!({"file": "MEMORY.md", "substring": "todo"}),
        )
        .await;
    assert!(
        ok(&two).starts_with("Removed 2 lines containing \"todo\""),
        "{}",
        two.text
    );
    let one = tools
        .call(
            "memory_remove",
            json!({"file": "MEMORY.md", "substring": "done"}),
        )
        .await;
    assert!(
        ok(&one).starts_with("Removed 1 line containing"),
        "{}",
        one.text
    );
    ok(&tools
        .call("memory_add", json!({"file": "MEMORY.md", "entry": "kept"}))
        .await);
    let zero = tools
        .call(
            "memory_remove",
            json!({"file": "MEMORY.md", "substring": "todo"}),
        )
        .await;
    assert!(
        ok(&zero).contains("0 lines removed, nothing changed"),
        "{}",
        zero.text
    );
    let empty = tools
        .call(
            "memory_remove",
            json!({"file": "MEMORY.md", "substring": ""}),
        )
        .await;
    refused(&empty);
    assert_eq!(text_of(&provider, Store::Memory).await, "kept\n");
}

#[tokio::test]
async fn consolidate_needs_a_full_view_and_never_erases_another_writers_add() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx());
    for entry in ["Likes tea.", "Likes tea a lot."] {
        ok(&tools
            .call("memory_add", json!({"file": "MEMORY.md", "entry": entry}))
            .await);
    }
    let consolidate = json!({"file": "MEMORY.md", "content": "Loves tea."});
    let unviewed = tools.call("memory_consolidate", consolidate.clone()).await;
    assert!(
        refused(&unviewed).contains("Call memory_view"),
        "{}",
        unviewed.text
    );

    ok(&tools.call("memory_view", json!({})).await);
    // Another writer (another process, another session) adds after the view.
    provider
        .sync(
            &ctx(),
            &[MemoryUpdate::add(Store::Memory, "Allergic to nuts.")],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    let stale = tools.call("memory_consolidate", consolidate.clone()).await;
    assert!(
        refused(&stale).contains("changed since you last viewed it")
            && stale.text.contains("memory_view again"),
        "{}",
        stale.text
    );
    assert!(
        text_of(&provider, Store::Memory)
            .await
            .contains("Allergic to nuts.")
    );

    ok(&tools.call("memory_view", json!({})).await);
    let done = tools
        .call(
            "memory_consolidate",
            json!({"file": "MEMORY.md", "content": "Loves tea. Allergic to nuts."}),
        )
        .await;
    assert!(
        ok(&done).starts_with("Consolidated MEMORY.md: 48 → 29 bytes."),
        "{}",
        done.text
    );
    assert_eq!(
        text_of(&provider, Store::Memory).await,
        "Loves tea. Allergic to nuts.\n"
    );

    // The model's own writes since its view keep the view valid; it knows what it wrote.
    ok(&tools
        .call(
            "memory_add",
            json!({"file": "MEMORY.md", "entry": "Uses vim."}),
        )
        .await);
    ok(&tools
        .call(
            "memory_consolidate",
            json!({"file": "MEMORY.md", "content": "Tea, vim."}),
        )
        .await);

    let blank = tools
        .call(
            "memory_consolidate",
            json!({"file": "MEMORY.md", "content": " \n"}),
        )
        .await;
    assert!(refused(&blank).contains("blank"), "{}", blank.text);
    // USER.md was viewed (blank) too, and has not changed since.
    ok(&tools
        .call(
            "memory_consolidate",
            json!({"file": "USER.md", "content": "Ada."}),
        )
        .await);
    assert_eq!(text_of(&provider, Store::Memory).await, "Tea, vim.\n");
    assert_eq!(text_of(&provider, Store::User).await, "Ada.\n");
}

#[tokio::test]
async fn a_cut_or_queried_view_does_not_allow_consolidation() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools =
        tools_over(&provider, ctx().with_max_chars(60)).with_recall(WordOverlap::new(&provider));
    for entry in [
        "An entry long enough to be cut.",
        "Another, also long enough.",
    ] {
        ok(&tools
            .call("memory_add", json!({"file": "MEMORY.md", "entry": entry}))
            .await);
    }
    let cut = tools.call("memory_view", json!({})).await;
    assert!(
        ok(&cut).contains("[...truncated") && cut.text.contains("needs a full view"),
        "{}",
        cut.text
    );
    let after_cut = tools
        .call(
            "memory_consolidate",
            json!({"file": "MEMORY.md", "content": "short"}),
        )
        .await;
    refused(&after_cut);

    let tools = tools_over(&provider, ctx()).with_recall(WordOverlap::new(&provider));
    let queried = tools.call("memory_view", json!({"query": "entry"})).await;
    assert!(ok(&queried).contains("not all of it"), "{}", queried.text);
    let after_query = tools
        .call(
            "memory_consolidate",
            json!({"file": "MEMORY.md", "content": "short"}),
        )
        .await;
    refused(&after_query);
    assert!(
        text_of(&provider, Store::Memory)
            .await
            .contains("Another, also long enough.")
    );
}

#[tokio::test]
async fn over_the_soft_cap_asks_to_consolidate_and_over_the_hard_cap_writes_nothing() {
    let provider = Arc::new(InMemoryProvider::new());
    let caps = Caps {
        soft: Some(20),
        hard: Some(40),
    };
    let budgets = Budgets {
        memory: caps,
        user: caps,
    };
    let tools = tools_over(&provider, ctx().with_budgets(budgets));
    let under = tools
        .call(
            "memory_add",
            json!({"file": "MEMORY.md", "entry": "0123456789"}),
        )
        .await;
    assert!(!ok(&under).contains("consolidate"), "{}", under.text);
    let soft = tools
        .call(
            "memory_add",
            json!({"file": "MEMORY.md", "entry": "0123456789"}),
        )
        .await;
    assert!(
        ok(&soft).contains("23 bytes (soft cap 20, hard cap 40)")
            && soft.text.contains("over its soft cap: consolidate it"),
        "{}",
        soft.text
    );
    let hard = tools
        .call(
            "memory_add",
            json!({"file": "MEMORY.md", "entry": "0123456789abcdefghij"}),
        )
        .await;
    assert!(
        refused(&hard).contains("MEMORY.md would be 45 bytes, over its hard cap of 40")
            && hard.text.contains("Nothing was written"),
        "{}",
        hard.text
    );
    assert_eq!(
        text_of(&provider, Store::Memory).await,
        "0123456789\n\n0123456789\n"
    );
}

#[tokio::test]
async fn search_lists_the_best_entries_and_checks_k_and_the_query() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx()).with_recall(WordOverlap::new(&provider));
    for entry in [
        "Deploys go through CI.",
        "The CI runs nextest.",
        "Lunch is at noon.",
    ] {
        ok(&tools
            .call("memory_add", json!({"file": "MEMORY.md", "entry": entry}))
            .await);
    }
    let found = tools
        .call("memory_search", json!({"query": "CI nextest", "k": 2}))
        .await;
    assert_eq!(
        ok(&found),
        "2 entries of MEMORY.md for \"CI nextest\", best first:\n\n[1] The CI runs nextest.\n\n[2] Deploys go through CI."
    );
    let nothing = tools
        .call("memory_search", json!({"query": "dinosaurs"}))
        .await;
    assert_eq!(ok(&nothing), "No entry of MEMORY.md matches \"dinosaurs\".");
    for k in [0, 51] {
        let text = refused(
            &tools
                .call("memory_search", json!({"query": "CI", "k": k}))
                .await,
        )
        .to_owned();
        assert!(text.contains(&format!("k is {k}")), "{text}");
    }
    refused(&tools.call("memory_search", json!({"query": " "})).await);
    refused(
        &tools
            .call("memory_search", json!({"query": "CI", "k": -1}))
            .await,
    );
}

/// An index behind its document: the entries it has not covered reach the model anyway,
/// with the reason, even when nothing ranked matches.
#[tokio::test]
async fn search_shows_what_the_index_has_not_covered() {
    let provider = Arc::new(InMemoryProvider::new());
    let behind = Arc::new(WordOverlap {
        provider: provider.clone(),
        indexed: Some(2),
    });
    let tools = tools_over(&provider, ctx()).with_recall(behind);
    for entry in [
        "Deploys go through CI.",
        "Lunch is at noon.",
        "The wifi password is in the blue binder.",
    ] {
        ok(&tools
            .call("memory_add", json!({"file": "MEMORY.md", "entry": entry}))
            .await);
    }
    let found = tools
        .call("memory_search", json!({"query": "wifi password"}))
        .await;
    assert_eq!(
        ok(&found),
        "No indexed entry of MEMORY.md matches \"wifi password\".\n\n(The search index \
         is behind MEMORY.md: the index is 1 entry behind. 1 entry it has not indexed yet, \
         unranked, in file order:)\n\n[-] The wifi password is in the blue binder."
    );
}

/// A backend that is down: every call fails as a real one would.
struct Down;

fn down() -> MemoryError {
    MemoryError::Unavailable {
        what: "the test backend".into(),
        message: "connection refused".into(),
        source: None,
    }
}

#[async_trait]
impl MemoryProvider for Down {
    async fn prefetch(&self, _: &MemoryContext) -> Result<Prefetch, MemoryError> {
        Err(down())
    }
    async fn sync(
        &self,
        _: &MemoryContext,
        _: &[MemoryUpdate],
        _: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        Err(down())
    }
    async fn read(&self, _: &DocumentId) -> Result<Document, MemoryError> {
        Err(down())
    }
    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        Err(down())
    }
    async fn history(
        &self,
        _: &DocumentId,
        _: usize,
    ) -> Result<Vec<memory_core::Revision>, MemoryError> {
        Err(down())
    }
    async fn purge(
        &self,
        _: &DocumentId,
        _: memory_core::Surface,
    ) -> Result<memory_core::Purged, MemoryError> {
        Err(down())
    }

    fn subscribe(&self) -> Subscription {
        memory_core::EventBus::new().subscribe()
    }
}

#[tokio::test]
async fn a_backend_that_is_down_is_an_error_for_every_tool_never_a_success() {
    let tools = MemoryTools::new(Arc::new(Down), ctx());
    for tool in tools.tools() {
        // No recall here, so memory_view takes no query.
        let arguments = match tool {
            Tool::View => json!({}),
            _ => valid_arguments(tool),
        };
        let output = tools.call(tool.name(), arguments).await;
        let text = refused(&output);
        assert!(
            text.contains("connection refused") || text.contains("memory_view"),
            "{}: {text}",
            tool.name()
        );
    }
}
