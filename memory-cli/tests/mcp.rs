//! `memory mcp` end to end: the server as a child process, driven by the MCP SDK's client.

use std::path::Path;
use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ReadResourceRequestParams};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::process::{ChildStderr, Command};

type Client = RunningService<RoleClient, ()>;

/// `memory mcp` with `args`, on the markdown default at `root`; its stderr is kept for the test.
async fn connect(root: &Path, args: &[&str]) -> (Client, ChildStderr) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_memory"));
    command
        .arg("mcp")
        .args(args)
        .env("MEMORY_ROOT", root)
        .env_remove("MEMORY_CONFIG");
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    (client, stderr.unwrap())
}

async fn coder_and_ada(root: &Path) -> (Client, ChildStderr) {
    connect(root, &["--personality", "coder", "--user", "ada"]).await
}

async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    client.call_tool(request).await.unwrap()
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[track_caller]
fn ok(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(false), "{}", text(result));
    text(result)
}

#[track_caller]
fn refused(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{}", text(result));
    text(result)
}

/// MEMORY.md's text as `memory_view` shows it, when USER.md is blank.
fn viewed_memory(view: &str) -> String {
    let body = view
        .strip_prefix("## Memory\n\n")
        .unwrap_or_else(|| panic!("{view}"));
    let end = body
        .rfind("\n\nMEMORY.md: ")
        .unwrap_or_else(|| panic!("{view}"));
    body[..end].to_owned()
}

/// `memory_add` of "Name: Ada" to USER.md writes the file at `path`.
async fn add_lands_in(client: &Client, path: &Path) {
    let entry = json!({"file": "USER.md", "entry": "Name: Ada"});
    ok(&call(client, "memory_add", entry).await);
    assert_eq!(std::fs::read_to_string(path).unwrap(), "Name: Ada\n");
}

async fn read_resource(client: &Client, uri: &str) -> String {
    let read = client
        .read_resource(ReadResourceRequestParams::new(uri.to_owned()))
        .await
        .unwrap();
    let contents = serde_json::to_value(&read.contents[0]).unwrap();
    assert_eq!(contents["mimeType"], "text/markdown");
    contents["text"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_tool_and_both_resources_over_stdio() {
    let root = tempfile::tempdir().unwrap();
    let (client, mut stderr) = coder_and_ada(root.path()).await;
    let server = client.peer_info().unwrap();
    assert_eq!(server.server_info.as_ref().unwrap().name, "agent-memory");

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
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
        ],
        "no memory_search: markdown cannot recall"
    );
    for tool in &tools {
        assert_eq!(
            tool.input_schema["additionalProperties"], false,
            "{}",
            tool.name
        );
        assert!(tool.description.as_deref().is_some_and(|d| !d.is_empty()));
    }
    let add = &tools[1].input_schema;
    assert_eq!(add["required"], json!(["file", "entry"]));

    ok(&call(
        &client,
        "memory_add",
        json!({"file": "MEMORY.md", "entry": "- todo: fix CI\n- todo: ship"}),
    )
    .await);
    ok(&call(
        &client,
        "memory_add",
        json!({"file": "MEMORY.md", "entry": "Uses nextest."}),
    )
    .await);
    ok(&call(
        &client,
        "memory_add",
        json!({"file": "USER.md", "entry": "Name: Ada"}),
    )
    .await);
    let view = ok(&call(&client, "memory_view", json!({})).await);
    assert!(
        view.starts_with("## About You\n\nName: Ada\n\n## Memory\n\n- todo: fix CI"),
        "{view}"
    );
    let replaced = ok(&call(
        &client,
        "memory_replace",
        json!({"file": "MEMORY.md", "old": "nextest", "new": "cargo-nextest"}),
    )
    .await);
    assert!(replaced.starts_with("Replaced in MEMORY.md."), "{replaced}");
    let ambiguous = refused(
        &call(
            &client,
            "memory_replace",
            json!({"file": "MEMORY.md", "old": "todo", "new": "done"}),
        )
        .await,
    );
    assert!(ambiguous.contains("occurs 2 times"), "{ambiguous}");
    let removed = ok(&call(
        &client,
        "memory_remove",
        json!({"file": "MEMORY.md", "substring": "todo"}),
    )
    .await);
    assert!(removed.starts_with("Removed 2 lines"), "{removed}");
    let consolidated = ok(&call(
        &client,
        "memory_consolidate",
        json!({"file": "USER.md", "content": "Ada, who prefers short answers."}),
    )
    .await);
    assert!(
        consolidated.starts_with("Consolidated USER.md"),
        "{consolidated}"
    );
    let bad = refused(
        &call(
            &client,
            "memory_add",
            json!({"file": "NOTES.md", "entry": "x"}),
        )
        .await,
    );
    assert!(bad.contains("\"MEMORY.md\" or \"USER.md\""), "{bad}");
    let unknown = client
        .call_tool(CallToolRequestParams::new("memory_search"))
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("no tool named"), "{unknown}");

    let resources = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "memory://personalities/coder/MEMORY.md",
            "memory://users/ada/USER.md"
        ]
    );
    let on_disk = |path: &str| std::fs::read_to_string(root.path().join(path)).unwrap();
    assert_eq!(
        read_resource(&client, uris[0]).await,
        on_disk("personalities/coder/MEMORY.md")
    );
    assert_eq!(
        on_disk("personalities/coder/MEMORY.md").trim(),
        "Uses cargo-nextest."
    );
    assert_eq!(
        read_resource(&client, uris[1]).await,
        "Ada, who prefers short answers.\n"
    );
    let outside = client
        .read_resource(ReadResourceRequestParams::new("memory://users/bob/USER.md"))
        .await
        .unwrap_err();
    assert!(outside.to_string().contains("not served here"), "{outside}");

    // A note the agent makes is a resource too, named by its layout path; another scope's is
    // not served.
    ok(&call(
        &client,
        "memory_notes",
        json!({"command": "create", "path": "memory/trips/kyoto.md", "content": "# Kyoto\nTemples."}),
    )
    .await);
    let resources = client.list_all_resources().await.unwrap();
    let note = resources
        .iter()
        .find(|r| r.uri == "memory://personalities/coder/notes/trips/kyoto.md")
        .unwrap_or_else(|| panic!("the note is listed: {resources:?}"));
    assert_eq!(note.name, "memory/trips/kyoto.md");
    assert_eq!(note.description.as_deref(), Some("Kyoto"));
    assert_eq!(resources.len(), 3);
    assert_eq!(
        read_resource(&client, "memory://personalities/coder/notes/trips/kyoto.md").await,
        on_disk("personalities/coder/notes/trips/kyoto.md")
    );
    for elsewhere in [
        "memory://personalities/bob/notes/trips/kyoto.md",
        "memory://personalities/coder/notes/missing.md",
        "memory://personalities/coder/notes/../MEMORY.md",
    ] {
        let refused = client
            .read_resource(ReadResourceRequestParams::new(elsewhere))
            .await
            .unwrap_err();
        assert!(
            refused.to_string().contains("not served here"),
            "{elsewhere}: {refused}"
        );
    }

    // Every write above is a revision the agent can see, made by the tools, and undo.
    let history = ok(&call(&client, "memory_history", json!({"file": "USER.md"})).await);
    assert!(
        history.contains("Revision 2 ·")
            && history.contains("from tool (personality coder, user ada)")
            && history.contains("+Ada, who prefers short answers."),
        "{history}"
    );
    let reverted = ok(&call(
        &client,
        "memory_history",
        json!({"file": "USER.md", "revert_to": 1}),
    )
    .await);
    assert!(
        reverted.starts_with("Reverted USER.md to the text of revision 1"),
        "{reverted}"
    );
    assert_eq!(read_resource(&client, uris[1]).await, "Name: Ada\n");
    let missing = refused(
        &call(
            &client,
            "memory_history",
            json!({"file": "USER.md", "revert_to": 7}),
        )
        .await,
    );
    assert!(missing.contains("no revision 7"), "{missing}");

    client.cancel().await.unwrap();
    let mut logs = String::new();
    stderr.read_to_string(&mut logs).await.unwrap();
    assert!(
        logs.contains("memory mcp: serving the memory of personality coder for user ada"),
        "{logs}"
    );
}

/// Two MCP sessions on one personality, as two agent processes would hold: one adds while the
/// other consolidates, and no acknowledged add is lost.
#[tokio::test(flavor = "multi_thread")]
async fn a_consolidation_never_erases_what_a_second_client_adds_meanwhile() {
    let root = tempfile::tempdir().unwrap();
    // Keep their stderr pipes open: a server must never find its log closed.
    let (consolidator, _consolidator_log) = coder_and_ada(root.path()).await;
    let (writer, _writer_log) = coder_and_ada(root.path()).await;
    ok(&call(
        &consolidator,
        "memory_add",
        json!({"file": "MEMORY.md", "entry": "seed"}),
    )
    .await);

    // Deterministically first: an add between a view and the consolidation refuses it.
    ok(&call(&consolidator, "memory_view", json!({})).await);
    ok(&call(
        &writer,
        "memory_add",
        json!({"file": "MEMORY.md", "entry": "added between"}),
    )
    .await);
    let stale = refused(
        &call(
            &consolidator,
            "memory_consolidate",
            json!({"file": "MEMORY.md", "content": "seed"}),
        )
        .await,
    );
    assert!(stale.contains("memory_view again"), "{stale}");

    // Then truly concurrently: adds race a loop of view-and-consolidate.
    const ADDS: usize = 30;
    let adding = tokio::spawn(async move {
        let mut acknowledged = Vec::new();
        for n in 0..ADDS {
            let entry = format!("note {n}");
            let result = call(
                &writer,
                "memory_add",
                json!({"file": "MEMORY.md", "entry": entry}),
            )
            .await;
            if result.is_error == Some(false) {
                acknowledged.push(entry);
            }
        }
        acknowledged
    });
    let (mut rounds, mut refusals) = (0, 0);
    while !adding.is_finished() || rounds == 0 {
        let view = ok(&call(&consolidator, "memory_view", json!({})).await);
        // A real consolidation: the same entries, rewritten (one round marker at the top).
        let memory = viewed_memory(&view);
        let kept: Vec<&str> = memory
            .split("\n\n")
            .filter(|entry| !entry.starts_with("round "))
            .collect();
        let content = format!("round {rounds}\n\n{}", kept.join("\n\n"));
        let result = call(
            &consolidator,
            "memory_consolidate",
            json!({"file": "MEMORY.md", "content": content}),
        )
        .await;
        match result.is_error {
            Some(false) => rounds += 1,
            _ => {
                assert!(
                    text(&result).contains("memory_view again"),
                    "{}",
                    text(&result)
                );
                refusals += 1;
            }
        }
    }
    let acknowledged = adding.await.unwrap();
    assert_eq!(acknowledged.len(), ADDS, "the adds themselves never fail");
    let memory = read_resource(&consolidator, "memory://personalities/coder/MEMORY.md").await;
    for entry in acknowledged
        .iter()
        .map(String::as_str)
        .chain(["seed", "added between"])
    {
        assert!(
            memory.split("\n\n").any(|e| e.trim() == entry),
            "{entry:?} was lost ({rounds} consolidations, {refusals} refused):\n{memory}"
        );
    }
    println!("{rounds} consolidations landed, {refusals} were refused as stale");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_config_names_who_is_served_and_without_one_mcp_says_what_is_missing() {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("memory.toml");
    std::fs::write(
        &config,
        "[providers.files]\nkind = \"markdown\"\nroot = \"files\"\n\n[mcp]\npersonality = \"coder\"\nuser = \"ada\"\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let (client, _log) = connect(root.path(), &["--config", config]).await;
    add_lands_in(&client, &root.path().join("files/users/ada/USER.md")).await;
    client.cancel().await.unwrap();

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memory"))
        .args(["mcp", "--user", "ada"])
        .env("MEMORY_ROOT", root.path())
        .env_remove("MEMORY_CONFIG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "stdout is the protocol's alone");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("memory mcp needs a personality: pass --personality"),
        "{stderr}"
    );
}

/// On a Metis workspace the tools write the files Metis reads, and Metis's writes are what
/// the next view shows.
#[tokio::test(flavor = "multi_thread")]
async fn the_tools_on_a_metis_workspace_write_its_dot_metis_files() {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("memory.toml");
    std::fs::write(
        &config,
        "[providers.workspace]\nkind = \"markdown\"\nroot = \"app\"\nlayout = \"metis\"\npersonality = \"coder\"\nuser = \"ada\"\n\n[mcp]\npersonality = \"coder\"\nuser = \"ada\"\n",
    )
    .unwrap();
    let (client, _log) = connect(root.path(), &["--config", config.to_str().unwrap()]).await;
    let metis = root.path().join("app/.metis");
    add_lands_in(&client, &metis.join("USER.md")).await;
    std::fs::write(metis.join("MEMORY.md"), "Run tests with cargo nextest.\n").unwrap();
    let view = ok(&call(&client, "memory_view", json!({})).await);
    assert!(view.contains("Run tests with cargo nextest."), "{view}");
    client.cancel().await.unwrap();
}

/// On a recall provider the server adds `memory_search` and `memory_view`'s query; search
/// finds what an editor added to the file; USER.md is the users provider's, as everywhere.
#[tokio::test(flavor = "multi_thread")]
async fn a_recall_provider_adds_search_and_a_queried_view() {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("memory.toml");
    std::fs::write(
        &config,
        "default_provider = \"files\"\nusers_provider = \"people\"\n\
         [providers.files]\nkind = \"markdown\"\nroot = \"m\"\n\
         [providers.people]\nkind = \"markdown\"\nroot = \"people\"\n\
         [providers.recall]\nkind = \"vector\"\nsource = \"files\"\nrecall = { k = 1 }\n\
         [personalities.coder]\nprovider = \"recall\"\n",
    )
    .unwrap();
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--personality",
        "coder",
        "--user",
        "ada",
    ];
    let (client, _log) = connect(root.path(), &args).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.last().unwrap().name, "memory_search");
    assert!(tools[0].input_schema["properties"].get("query").is_some());

    for entry in [
        "The staging database is PostgreSQL 17 on db-staging.",
        "Ada prefers answers without emoji.",
        "Release builds take 51 minutes cold; keep the target dir warm.",
    ] {
        ok(&call(
            &client,
            "memory_add",
            json!({"file": "MEMORY.md", "entry": entry}),
        )
        .await);
    }
    let found = ok(&call(
        &client,
        "memory_search",
        json!({"query": "which database does staging use?", "k": 1}),
    )
    .await);
    assert_eq!(
        found,
        "1 entry of MEMORY.md for \"which database does staging use?\", best first:\n\n\
         [1] The staging database is PostgreSQL 17 on db-staging."
    );
    let view = ok(&call(
        &client,
        "memory_view",
        json!({"query": "how long is a release build?"}),
    )
    .await);
    assert!(view.contains("Release builds take 51 minutes"), "{view}");
    assert!(
        !view.contains("emoji") && view.contains("not all of it"),
        "{view}"
    );

    // A paragraph added in an editor, never written through this server, is found at once.
    let file = root.path().join("m/personalities/coder/MEMORY.md");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        format!("{text}\nThe wifi password is in the blue binder.\n"),
    )
    .unwrap();
    let found = ok(&call(
        &client,
        "memory_search",
        json!({"query": "where is the wifi password?", "k": 1}),
    )
    .await);
    assert!(
        found.ends_with("[1] The wifi password is in the blue binder."),
        "{found}"
    );

    // Reverting the hand edit away takes it out of recall too: the index follows reverts.
    let reverted = ok(&call(
        &client,
        "memory_history",
        json!({"file": "MEMORY.md", "revert_to": 3}),
    )
    .await);
    assert!(
        reverted.contains("revision 5"),
        "the hand edit is 4: {reverted}"
    );
    let found = ok(&call(
        &client,
        "memory_search",
        json!({"query": "where is the wifi password?", "k": 3}),
    )
    .await);
    assert!(!found.contains("blue binder"), "{found}");

    // USER.md lives in the users provider, for the tools and the resource alike.
    add_lands_in(&client, &root.path().join("people/users/ada/USER.md")).await;
    assert!(!root.path().join("m/users").exists());
    assert_eq!(
        read_resource(&client, "memory://users/ada/USER.md").await,
        "Name: Ada\n"
    );
    client.cancel().await.unwrap();
}
