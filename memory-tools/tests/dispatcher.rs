//! Every tool and every error path of the dispatcher, against the reference provider.

use std::sync::Arc;

use async_trait::async_trait;
use std::sync::atomic::{AtomicBool, Ordering};

use memory_core::{
    Budgets, Caps, Document, DocumentId, IfMatch, InMemoryProvider, MemoryContext, MemoryError,
    MemoryProvider, MemoryUpdate, PersonalityId, Prefetch, Purged, Recall, Recalled, RecalledEntry,
    Revision, Store, Subscription, Surface, SyncReport, UserId,
};
use memory_tools::{MAX_DIFF_CHARS, MAX_HISTORY_CHARS, MemoryTools, Tool, ToolOutput};
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
            ranked: ranked(&entries[..indexed], query, limit)
                .into_iter()
                .map(RecalledEntry::of_document)
                .collect(),
            ..Recalled::default()
        };
        if self.indexed.is_some() {
            found.unranked = entries[indexed..]
                .iter()
                .map(RecalledEntry::of_document)
                .collect();
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
            "memory_consolidate",
            "memory_history",
            "memory_notes"
        ]
    );
    let recalling = tools_over(&provider, ctx()).with_recall(WordOverlap::new(&provider));
    let definitions = recalling.definitions();
    assert_eq!(definitions.last().unwrap().name, "memory_search");
    let maybe = |recall| tools_over(&provider, ctx()).maybe_with_recall(recall);
    assert_eq!(maybe(None).definitions().len(), names.len());
    let some = maybe(Some(WordOverlap::new(&provider) as Arc<dyn Recall>));
    assert_eq!(some.definitions().last().unwrap().name, "memory_search");
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
        Tool::History => json!({"file": "MEMORY.md", "limit": 2}),
        Tool::Notes => json!({"command": "append", "path": "memory/x.md", "content": "x"}),
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
        refused(&unviewed).contains("needs a full view of it first"),
        "its own writes are no view of the file: {}",
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
        ..Budgets::default()
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
        assert!(
            text.contains(&format!(
                "`k` must be a whole number from 1 to 50, not the number {k}"
            )),
            "{text}"
        );
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
    async fn notes(
        &self,
        _: &memory_core::NoteScope,
        _: &str,
    ) -> Result<Vec<memory_core::NoteMeta>, MemoryError> {
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

    async fn redact(&self, _: &DocumentId, _: u64) -> Result<Revision, MemoryError> {
        Err(down())
    }

    fn subscribe(&self) -> Subscription {
        memory_core::raw::EventBus::new().subscribe()
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

async fn history_of(provider: &InMemoryProvider, store: Store) -> Vec<Revision> {
    provider
        .history(&ctx().document(store), usize::MAX)
        .await
        .unwrap()
}

#[tokio::test]
async fn history_lists_the_latest_changes_with_diffs_and_a_revert_can_be_reverted() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx());
    let empty = tools
        .call("memory_history", json!({"file": "MEMORY.md"}))
        .await;
    assert!(ok(&empty).contains("no revisions"), "{}", empty.text);

    for entry in ["Likes tea.", "Flies Tuesday."] {
        ok(&tools
            .call("memory_add", json!({"file": "MEMORY.md", "entry": entry}))
            .await);
    }
    ok(&tools.call("memory_view", json!({})).await);
    ok(&tools
        .call(
            "memory_consolidate",
            json!({"file": "MEMORY.md", "content": "Tea."}),
        )
        .await);

    let listed = tools
        .call("memory_history", json!({"file": "MEMORY.md"}))
        .await;
    let text = ok(&listed);
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in {text}"))
    };
    assert!(
        at("Revision 3 ·") < at("Revision 2 ·") && at("Revision 2 ·") < at("Revision 1 ·"),
        "newest first: {text}"
    );
    assert!(
        text.contains("from tool (personality coder, user ada)"),
        "{text}"
    );
    assert!(text.contains("27 → 5 bytes · replace"), "{text}");
    assert!(text.contains("0 → 11 bytes · add"), "{text}");
    assert!(
        text.contains("--- MEMORY.md@2\n+++ MEMORY.md@3\n")
            && text.contains("-Likes tea.\n")
            && text.contains("+Tea.\n"),
        "the consolidation's diff against revision 2: {text}"
    );
    assert!(
        text.contains("--- MEMORY.md@0\n+++ MEMORY.md@1\n"),
        "the first diffed against the empty file: {text}"
    );
    assert!(text.contains("revert_to"), "says how to undo: {text}");

    // Undo the consolidation: back to what revision 2 left, as revision 4.
    let reverted = tools
        .call(
            "memory_history",
            json!({"file": "MEMORY.md", "revert_to": 2}),
        )
        .await;
    let text = ok(&reverted);
    assert!(
        text.contains("Reverted MEMORY.md to the text of revision 2: 5 → 27 bytes.")
            && text.contains("This revert is revision 4; to undo it, revert_to 3."),
        "{text}"
    );
    assert_eq!(
        text_of(&provider, Store::Memory).await,
        "Likes tea.\n\nFlies Tuesday.\n"
    );
    let history = history_of(&provider, Store::Memory).await;
    assert_eq!(history.len(), 4);
    assert_eq!(
        (history[0].number, history[0].surface),
        (4, Surface::Tool),
        "a revert is a tool write of its own"
    );

    // A revert is a change like any other: revert it.
    ok(&tools
        .call(
            "memory_history",
            json!({"file": "MEMORY.md", "revert_to": 3}),
        )
        .await);
    assert_eq!(text_of(&provider, Store::Memory).await, "Tea.\n");
    let same = tools
        .call(
            "memory_history",
            json!({"file": "MEMORY.md", "revert_to": 3}),
        )
        .await;
    assert!(ok(&same).contains("nothing changed"), "{}", same.text);
    assert_eq!(history_of(&provider, Store::Memory).await.len(), 5);

    let limited = tools
        .call("memory_history", json!({"file": "MEMORY.md", "limit": 1}))
        .await;
    let text = ok(&limited);
    assert!(
        text.contains("Revision 5 ·") && !text.contains("Revision 4 ·"),
        "{text}"
    );
    assert!(
        text.contains("--- MEMORY.md@4\n"),
        "diffed against 4: {text}"
    );
    assert!(text.contains("larger limit"), "{text}");
    for limit in [0, 21] {
        let bad = tools
            .call(
                "memory_history",
                json!({"file": "MEMORY.md", "limit": limit}),
            )
            .await;
        assert!(
            refused(&bad).contains(&format!(
                "`limit` must be a whole number from 1 to 20, not the number {limit}"
            )),
            "{}",
            bad.text
        );
    }
    let user = tools
        .call("memory_history", json!({"file": "USER.md"}))
        .await;
    assert!(
        ok(&user).contains("USER.md has no revisions"),
        "{}",
        user.text
    );
}

#[tokio::test]
async fn reverting_to_a_revision_not_kept_or_purged_is_refused_and_writes_nothing() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx());
    ok(&tools
        .call(
            "memory_add",
            json!({"file": "MEMORY.md", "entry": "Likes tea."}),
        )
        .await);
    let missing = tools
        .call(
            "memory_history",
            json!({"file": "MEMORY.md", "revert_to": 9}),
        )
        .await;
    let text = refused(&missing);
    assert!(
        text.contains("no revision 9") && text.contains("revisions 1 to 1 are kept"),
        "{text}"
    );
    assert!(text.contains("Nothing was written"), "{text}");

    provider
        .purge(&ctx().document(Store::Memory), Surface::Cli)
        .await
        .unwrap();
    let listed = tools
        .call("memory_history", json!({"file": "MEMORY.md"}))
        .await;
    let text = ok(&listed);
    assert!(
        text.contains("Revision 2 ·") && text.contains("from cli") && text.contains("purged"),
        "{text}"
    );
    let dead = tools
        .call(
            "memory_history",
            json!({"file": "MEMORY.md", "revert_to": 2}),
        )
        .await;
    assert!(refused(&dead).contains("tombstone"), "{}", dead.text);
    let bad = tools
        .call(
            "memory_history",
            json!({"file": "MEMORY.md", "revert_to": "two"}),
        )
        .await;
    assert!(refused(&bad).contains("Invalid arguments"), "{}", bad.text);
    assert_eq!(text_of(&provider, Store::Memory).await, "");
    assert_eq!(history_of(&provider, Store::Memory).await.len(), 1);
}

/// The reference provider, with another writer adding to MEMORY.md at the moment a revert
/// reads the history it restores from: after the tool read the version to guard with.
struct Meddler {
    inner: Arc<InMemoryProvider>,
    armed: AtomicBool,
}

#[async_trait]
impl MemoryProvider for Meddler {
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        self.inner.prefetch(ctx).await
    }
    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        self.inner.sync(ctx, updates, if_match).await
    }
    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        self.inner.read(document).await
    }
    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        self.inner.list().await
    }
    async fn notes(
        &self,
        scope: &memory_core::NoteScope,
        prefix: &str,
    ) -> Result<Vec<memory_core::NoteMeta>, MemoryError> {
        self.inner.notes(scope, prefix).await
    }
    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<Vec<Revision>, MemoryError> {
        if self.armed.swap(false, Ordering::SeqCst) {
            let add = [MemoryUpdate::add(Store::Memory, "Added meanwhile.")];
            self.inner.sync(&ctx(), &add, &IfMatch::NONE).await?;
        }
        self.inner.history(document, limit).await
    }
    async fn purge(&self, document: &DocumentId, surface: Surface) -> Result<Purged, MemoryError> {
        self.inner.purge(document, surface).await
    }
    async fn redact(&self, document: &DocumentId, number: u64) -> Result<Revision, MemoryError> {
        self.inner.redact(document, number).await
    }
    fn subscribe(&self) -> Subscription {
        self.inner.subscribe()
    }
}

#[tokio::test]
async fn a_revert_racing_another_writer_is_a_conflict_not_an_overwrite() {
    let inner = Arc::new(InMemoryProvider::new());
    let meddler = Arc::new(Meddler {
        inner: inner.clone(),
        armed: AtomicBool::new(false),
    });
    let tools = MemoryTools::new(meddler.clone(), ctx());
    for entry in ["Likes tea.", "Flies Tuesday."] {
        ok(&tools
            .call("memory_add", json!({"file": "MEMORY.md", "entry": entry}))
            .await);
    }
    meddler.armed.store(true, Ordering::SeqCst);
    let raced = tools
        .call(
            "memory_history",
            json!({"file": "MEMORY.md", "revert_to": 1}),
        )
        .await;
    let text = refused(&raced);
    assert!(
        text.contains("Not reverted: MEMORY.md changed")
            && text.contains("memory_history again")
            && text.contains("Nothing was written"),
        "{text}"
    );
    assert_eq!(
        text_of(&inner, Store::Memory).await,
        "Likes tea.\n\nFlies Tuesday.\n\nAdded meanwhile.\n",
        "the other writer's entry stays"
    );
    assert_eq!(history_of(&inner, Store::Memory).await.len(), 3);
}

#[tokio::test]
async fn every_tool_write_records_the_tool_surface_and_who_made_it() {
    let provider = Arc::new(InMemoryProvider::new());
    // Whatever the context says, a tool call is a tool write.
    let tools = tools_over(
        &provider,
        ctx()
            .with_surface(Surface::Cli)
            .with_session("conversation-7"),
    );
    ok(&tools
        .call("memory_add", json!({"file": "USER.md", "entry": "Ada."}))
        .await);
    ok(&tools
        .call(
            "memory_replace",
            json!({"file": "USER.md", "old": "Ada.", "new": "Ada L."}),
        )
        .await);
    ok(&tools
        .call(
            "memory_remove",
            json!({"file": "USER.md", "substring": "Ada"}),
        )
        .await);
    ok(&tools.call("memory_view", json!({})).await);
    ok(&tools
        .call(
            "memory_consolidate",
            json!({"file": "USER.md", "content": "Grace."}),
        )
        .await);
    ok(&tools
        .call("memory_history", json!({"file": "USER.md", "revert_to": 1}))
        .await);
    let history = history_of(&provider, Store::User).await;
    assert_eq!(history.len(), 5);
    for revision in &history {
        assert_eq!(
            revision.surface,
            Surface::Tool,
            "revision {}",
            revision.number
        );
        assert_eq!(revision.personality.as_ref().unwrap().as_str(), "coder");
        assert_eq!(revision.user.as_ref().unwrap().as_str(), "ada");
        assert_eq!(revision.session.as_deref(), Some("conversation-7"));
        assert!(
            revision.idempotency_key.is_some(),
            "sent with a key, so a lost reply is not applied twice"
        );
    }
    let listed = tools
        .call("memory_history", json!({"file": "USER.md"}))
        .await;
    assert!(
        ok(&listed).contains("(personality coder, user ada, session conversation-7)"),
        "{}",
        listed.text
    );
}

#[tokio::test]
async fn long_histories_are_cut_and_say_so() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx());
    for round in 0..8 {
        let long: String = (0..400)
            .map(|line| format!("round {round} line {line}\n"))
            .collect();
        provider
            .sync(
                &ctx(),
                &[MemoryUpdate::replace(Store::Memory, long)],
                &IfMatch::NONE,
            )
            .await
            .unwrap();
    }
    let listed = tools
        .call("memory_history", json!({"file": "MEMORY.md", "limit": 8}))
        .await;
    let text = ok(&listed);
    assert!(text.contains("(diff cut: "), "{text}");
    assert!(text.contains("older revisions not shown"), "{text}");
    assert!(
        text.len() <= MAX_HISTORY_CHARS + 1_000,
        "{} chars: the cap holds, give or take the closing notes",
        text.len()
    );
    // Each revision: a header line, its diff within the cap, and (the last) the closing notes.
    for diff in text.split("Revision ").skip(1) {
        assert!(diff.len() <= MAX_DIFF_CHARS + 600, "{diff}");
    }
}

/// Exactly at a cap is not over it: the notes start one byte past each (the provider refuses
/// a write past the hard cap, so a file over it was written before the cap was lowered).
#[tokio::test]
async fn the_cap_notes_start_one_byte_past_each_cap() {
    let provider = Arc::new(InMemoryProvider::new());
    let caps = |soft, hard| {
        let caps = Caps {
            soft: Some(soft),
            hard: Some(hard),
        };
        ctx().with_budgets(Budgets {
            memory: caps,
            user: caps,
            ..Budgets::default()
        })
    };
    // "0123456789\n" is 11 bytes.
    let add = json!({"file": "MEMORY.md", "entry": "0123456789"});
    let at_soft = tools_over(&provider, caps(11, 40))
        .call("memory_add", add.clone())
        .await;
    assert!(
        ok(&at_soft).ends_with("MEMORY.md is now 11 bytes (soft cap 11, hard cap 40)."),
        "{}",
        at_soft.text
    );
    // 23 bytes now: exactly at the hard cap, over the soft one.
    let at_hard = tools_over(&provider, caps(22, 23))
        .call("memory_add", add.clone())
        .await;
    assert!(
        ok(&at_hard).contains("23 bytes (soft cap 22, hard cap 23). It is over its soft cap")
            && !at_hard
                .text
                .contains("hard cap, so additions will be refused"),
        "{}",
        at_hard.text
    );
    // Over the hard cap (lowered since): a removal that leaves it over says so.
    let over = tools_over(&provider, caps(5, 10))
        .call(
            "memory_remove",
            json!({"file": "MEMORY.md", "substring": "nothing"}),
        )
        .await;
    assert!(ok(&over).contains("0 lines removed"), "{}", over.text);
    let replaced = tools_over(&provider, caps(5, 10))
        .call(
            "memory_replace",
            json!({"file": "MEMORY.md", "old": "0123456789\n\n", "new": ""}),
        )
        .await;
    assert!(
        ok(&replaced).contains(
            "11 bytes (soft cap 5, hard cap 10). It is over its hard cap, so additions will be \
             refused: consolidate it now (memory_view, then memory_consolidate with a version \
             under 10 bytes)."
        ),
        "{}",
        replaced.text
    );
}

/// The note about older revisions: only when more are kept than shown, and never past the
/// largest limit, which cannot show more.
#[tokio::test]
async fn history_says_when_older_revisions_are_kept() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx());
    for entry in ["one", "two", "three"] {
        ok(&tools
            .call("memory_add", json!({"file": "MEMORY.md", "entry": entry}))
            .await);
    }
    let older = "Older revisions are kept too";
    let listed = |limit: usize| {
        let tools = &tools;
        async move {
            let out = tools
                .call(
                    "memory_history",
                    json!({"file": "MEMORY.md", "limit": limit}),
                )
                .await;
            ok(&out).to_owned()
        }
    };
    let two = listed(2).await;
    assert!(two.contains(older), "{two}");
    assert!(
        two.contains("Revision 2 ·") && !two.contains("Revision 1 ·"),
        "{two}"
    );
    // Every revision shown: no note.
    let three = listed(3).await;
    assert!(!three.contains(older), "{three}");
    assert!(three.contains("Revision 1 ·"), "{three}");
    // The time, in UTC to the second.
    let header = three
        .lines()
        .find(|line| line.starts_with("Revision 3 · "))
        .unwrap();
    let time = header.split(" · ").nth(1).unwrap();
    assert!(
        time.len() == 23
            && time.ends_with(" UTC")
            && time.as_bytes()[4] == b'-'
            && time.as_bytes()[10] == b' '
            && time.as_bytes()[13] == b':',
        "{header}"
    );

    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx());
    let most = memory_tools::MAX_HISTORY_RESULTS;
    for entry in 0..=most {
        provider
            .sync(
                &ctx(),
                &[MemoryUpdate::add(Store::Memory, format!("entry {entry}"))],
                &IfMatch::NONE,
            )
            .await
            .unwrap();
    }
    let out = tools
        .call(
            "memory_history",
            json!({"file": "MEMORY.md", "limit": most}),
        )
        .await;
    assert!(!ok(&out).contains(older), "{}", out.text);
}

/// A revision listed alone is shown even when its entry is longer than the listing's cap (a
/// batch of many updates names every action).
#[tokio::test]
async fn a_revision_longer_than_the_cap_is_still_shown() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx());
    let adds: Vec<MemoryUpdate> = (0..3_000)
        .map(|n| MemoryUpdate::add(Store::Memory, format!("{n}")))
        .collect();
    provider.sync(&ctx(), &adds, &IfMatch::NONE).await.unwrap();
    let out = tools
        .call("memory_history", json!({"file": "MEMORY.md", "limit": 1}))
        .await;
    let text = ok(&out);
    assert!(text.len() > MAX_HISTORY_CHARS, "{}", text.len());
    assert!(text.contains("Revision 1 · "), "{text}");
}

#[test]
fn the_tools_debug_form_names_the_conversation() {
    let provider = Arc::new(InMemoryProvider::new());
    let shown = format!("{:?}", tools_over(&provider, ctx()));
    assert!(
        shown.starts_with("MemoryTools {") && shown.contains("can_recall: false"),
        "{shown}"
    );
}

/// The view token a `memory_notes` read shows.
fn token_of(read: &str) -> String {
    let heading = read
        .split_once(":\n\n")
        .map_or(read, |(heading, _)| heading);
    heading
        .trim_end_matches(')')
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// `memory_notes`: each command on the notes the prompt's index names, through the same write
/// path as the files, and the refusals a model meets, each writing nothing.
#[tokio::test]
async fn notes_are_listed_read_and_written_by_the_names_the_prompt_shows() {
    let provider = Arc::new(InMemoryProvider::new());
    let tools = tools_over(&provider, ctx());
    let notes = |arguments: Value| tools.call("memory_notes", arguments);
    assert!(ok(&notes(json!({"command": "list"})).await).contains("no notes yet"));
    let created = notes(json!({"command": "create", "path": "memory/trips/kyoto.md",
                               "content": "# Kyoto\nTemples first."}))
    .await;
    assert_eq!(
        ok(&created),
        "Created memory/trips/kyoto.md (23 bytes). Its scope holds 1 note now (23 bytes)."
    );
    ok(
        &notes(json!({"command": "create", "path": "user/diet.md", "content": "Vegetarian."}))
            .await,
    );
    let kyoto = DocumentId::note(
        &ctx().document(Store::Memory),
        memory_core::NotePath::new("trips/kyoto.md").unwrap(),
    );
    assert_eq!(
        provider.read(&kyoto).await.unwrap().text,
        "# Kyoto\nTemples first.\n"
    );

    // The view shows the index the prompt shows, and the list names them the same way.
    let view = ok(&tools.call("memory_view", json!({})).await).to_owned();
    assert!(view.contains("## Notes\n\n"), "{view}");
    assert!(
        view.contains("- memory/trips/kyoto.md (23 bytes): Kyoto"),
        "{view}"
    );
    assert!(
        view.contains("- user/diet.md (12 bytes): Vegetarian."),
        "{view}"
    );
    let listed = ok(&notes(json!({"command": "list", "path": "memory/"})).await).to_owned();
    assert!(
        listed.starts_with("1 note:\n- memory/trips/kyoto.md (23 bytes, updated "),
        "{listed}"
    );

    ok(
        &notes(json!({"command": "append", "path": "memory/trips/kyoto.md", "content": "Ryokan."}))
            .await,
    );
    ok(&notes(
        json!({"command": "replace", "path": "memory/trips/kyoto.md",
                     "old": "Temples", "new": "Shrines"}),
    )
    .await);
    let read =
        ok(&notes(json!({"command": "read", "path": "memory/trips/kyoto.md"})).await).to_owned();
    let (heading, text) = read.split_once(":\n\n").unwrap();
    assert!(
        heading.starts_with("memory/trips/kyoto.md (32 bytes; view token, for write's viewed: "),
        "{read}"
    );
    assert_eq!(text, "# Kyoto\nShrines first.\n\nRyokan.\n");
    let token = token_of(&read);

    // A whole rewrite is guarded by the read: another writer's change in between refuses it.
    provider
        .sync(
            &ctx(),
            &[MemoryUpdate::add(Store::Memory, "Another writer.")
                .in_note(kyoto.note_path().unwrap().clone())],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    let stale =
        notes(json!({"command": "write", "path": "memory/trips/kyoto.md", "content": "Short."}))
            .await;
    assert!(
        refused(&stale).contains("memory/trips/kyoto.md changed since you last read it"),
        "{}",
        stale.text
    );
    assert!(
        provider
            .read(&kyoto)
            .await
            .unwrap()
            .text
            .contains("Another writer.")
    );
    ok(&notes(json!({"command": "read", "path": "memory/trips/kyoto.md"})).await);
    ok(
        &notes(json!({"command": "write", "path": "memory/trips/kyoto.md", "content": "Short."}))
            .await,
    );
    assert_eq!(provider.read(&kyoto).await.unwrap().text, "Short.\n");
    // A note never read here that exists is not rewritten blind; a stateless server's caller
    // passes the token its read showed, and a stale token is refused.
    let fresh = tools_over(&provider, ctx());
    let write = |path: &str, token: Option<&str>| {
        let mut arguments = json!({"command": "write", "path": path, "content": "Vegan."});
        if let Some(token) = token {
            arguments["viewed"] = json!(token);
        }
        arguments
    };
    let blind = fresh
        .call("memory_notes", write("user/diet.md", None))
        .await;
    assert!(refused(&blind).contains("have not read"), "{}", blind.text);
    let stale = fresh
        .call("memory_notes", write("memory/trips/kyoto.md", Some(&token)))
        .await;
    assert!(
        refused(&stale).contains("changed since the read whose token"),
        "{}",
        stale.text
    );
    let read = fresh
        .call(
            "memory_notes",
            json!({"command": "read", "path": "user/diet.md"}),
        )
        .await;
    let stateless = tools_over(&provider, ctx());
    let token = token_of(ok(&read));
    ok(&stateless
        .call("memory_notes", write("user/diet.md", Some(&token)))
        .await);

    let renamed = notes(json!({"command": "rename", "path": "memory/trips/kyoto.md",
                               "to": "memory/japan/kyoto.md"}))
    .await;
    assert_eq!(
        ok(&renamed),
        "Renamed memory/trips/kyoto.md to memory/japan/kyoto.md. Its scope holds 1 note now (7 bytes)."
    );
    let deleted = notes(json!({"command": "delete", "path": "memory/japan/kyoto.md"})).await;
    assert!(
        ok(&deleted).starts_with("Deleted memory/japan/kyoto.md (7 bytes)"),
        "{}",
        deleted.text
    );

    let before = provider.list().await.unwrap();
    for (arguments, says) in [
        (
            json!({"command": "read", "path": "memory/japan/kyoto.md"}),
            "There is no note memory/japan/kyoto.md",
        ),
        (
            json!({"command": "append", "path": "memory/nope.md", "content": "x"}),
            "There is no note memory/nope.md",
        ),
        (
            json!({"command": "create", "path": "user/diet.md", "content": "x"}),
            "user/diet.md exists already",
        ),
        (
            json!({"command": "create", "path": "user/DIET.md", "content": "x"}),
            "differs from the note user/diet.md",
        ),
        (
            json!({"command": "create", "path": "memory/../USER.md", "content": "x"}),
            "invalid note path",
        ),
        (
            json!({"command": "create", "path": "notes/x.md", "content": "x"}),
            "names no note",
        ),
        (
            json!({"command": "create", "path": "memory/x.md"}),
            "needs `content`",
        ),
        (
            json!({"command": "rename", "path": "user/diet.md", "to": "memory/diet.md"}),
            "different scopes",
        ),
        (
            json!({"command": "replace", "path": "user/diet.md", "old": "Meat", "new": "x"}),
            "occurs 0 times in user/diet.md",
        ),
        (
            json!({"command": "shout", "path": "user/diet.md"}),
            "`command` must be one of",
        ),
    ] {
        let output = notes(arguments.clone()).await;
        assert!(
            refused(&output).contains(says),
            "{arguments}: {}",
            output.text
        );
    }
    assert_eq!(
        provider.list().await.unwrap(),
        before,
        "a refused call writes nothing"
    );

    // Each command as the caller's access allows.
    let reader = tools_over(&provider, ctx()).with_access(true, false);
    assert!(reader.tools().contains(&Tool::Notes));
    ok(&reader
        .call("memory_notes", json!({"command": "list"}))
        .await);
    let denied = reader
        .call(
            "memory_notes",
            json!({"command": "delete", "path": "user/diet.md"}),
        )
        .await;
    assert!(refused(&denied).contains("not allowed"), "{}", denied.text);
}
