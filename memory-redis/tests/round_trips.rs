//! How many commands a write sends, as the server sees them (`MONITOR`): a writer alone writes
//! a document or a note from its last view in one script run and reads nothing; a writer with
//! no view reads a note and its scope's index in one transaction, not the read script too.

mod common;

use std::time::Duration;

use futures::StreamExt;
use memory_conformance::cases::ctx;
use memory_core::{IfMatch, MemoryProvider, MemoryUpdate, NotePath, Store};
use redis::AsyncCommands;

/// The commands clients (not scripts) sent with a key under `prefix`, from `MONITOR` lines
/// (`<time> [<db> <client>] "<command>" "<arg>" ...`), each as its command's name.
fn client_commands(lines: &[String], prefix: &str) -> Vec<String> {
    lines
        .iter()
        .filter(|line| line.contains(prefix) && !line.contains(" lua]"))
        .filter_map(|line| line.split('"').nth(1).map(str::to_uppercase))
        .collect()
}

/// What the server was sent while `calls` ran: every `MONITOR` line up to an `ECHO` of a
/// marker sent after them.
async fn monitored<F: Future<Output = ()>>(keys: &common::PrefixGuard, calls: F) -> Vec<String> {
    let client = redis::Client::open(keys.url.as_str()).unwrap();
    let mut lines = client
        .get_async_monitor()
        .await
        .unwrap()
        .into_on_message::<String>();
    calls.await;
    let marker = format!("{}-monitored", keys.prefix);
    let mut admin = common::admin(keys).await;
    let _: String = redis::cmd("ECHO")
        .arg(&marker)
        .query_async(&mut admin)
        .await
        .unwrap();
    let mut seen = Vec::new();
    let collect = async {
        while let Some(line) = lines.next().await {
            if line.contains(&marker) {
                break;
            }
            seen.push(line);
        }
    };
    tokio::time::timeout(Duration::from_secs(30), collect)
        .await
        .expect("MONITOR shows the marker");
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_alone_writes_documents_and_notes_in_one_script_run_each() {
    let Some((provider, keys)) = common::provider().await else {
        return;
    };
    let c = ctx("ada", "grace");
    let note = NotePath::new("topics/kyoto.md").unwrap();
    let first = [
        MemoryUpdate::add(Store::Memory, "Prefers trains."),
        MemoryUpdate::create(Store::Memory, note.clone(), "# Kyoto\nTemples first."),
    ];
    provider.sync(&c, &first, &IfMatch::NONE).await.unwrap();

    let adds = 3;
    let lines = monitored(&keys, async {
        for i in 0..adds {
            let to_document = [MemoryUpdate::add(Store::Memory, format!("Fact {i}."))];
            let to_note =
                [MemoryUpdate::add(Store::Memory, format!("Sight {i}.")).in_note(note.clone())];
            provider
                .sync(&c, &to_document, &IfMatch::NONE)
                .await
                .unwrap();
            provider.sync(&c, &to_note, &IfMatch::NONE).await.unwrap();
        }
    })
    .await;
    let sent = client_commands(&lines, &keys.prefix);
    assert_eq!(
        sent,
        vec!["EVALSHA"; 2 * adds],
        "one write script per add and no read:\n{}",
        lines.join("\n")
    );

    // Another writer (no view) reads the note and the index in one transaction, then writes.
    let fresh = common::host(&keys, memory_conformance::Host::default()).await;
    let lines = monitored(&keys, async {
        let to_note = [MemoryUpdate::add(Store::Memory, "Sight 9.").in_note(note.clone())];
        fresh.sync(&c, &to_note, &IfMatch::NONE).await.unwrap();
    })
    .await;
    let sent = client_commands(&lines, &keys.prefix);
    let scripts = sent.iter().filter(|command| *command == "EVALSHA").count();
    assert!(
        scripts == 1 && sent.iter().any(|command| command == "HMGET"),
        "one transaction of reads, then the write script alone:\n{}",
        lines.join("\n")
    );

    // What was written is all there.
    let mut admin = common::admin(&keys).await;
    let key = format!(
        "{{{}}}:personalities/ada/notes/topics/kyoto.md",
        keys.prefix
    );
    let content: String = admin.hget(&key, "content").await.unwrap();
    assert!(
        content.contains("Sight 2.") && content.contains("Sight 9."),
        "{content}"
    );
}
