//! A scripted agent session on the markdown default: no LLM, just the messages of a
//! conversation and the updates a model would emit after each turn. Prints what the agent sees
//! before each turn, what it writes after, and where the files are.
//!
//! Run: `./scripts/demo` (or `cargo run -p memory-markdown --example agent_session [ROOT]`).
//! The root defaults to `$MEMORY_ROOT`, else a fresh `agent-memory-demo` in the temp dir.

use std::path::PathBuf;

use memory_core::{
    IfMatch, MemoryContext, MemoryError, MemoryProvider, MemoryScope, MemoryUpdate, PersonalityId,
    Prefetch, Store, UserId,
};
use memory_markdown::MarkdownProvider;

struct Turn {
    personality: &'static str,
    message: &'static str,
    updates: &'static str,
}

const SCRIPT: &[Turn] = &[
    Turn {
        personality: "ada",
        message: "Hi, I'm Grace. I prefer metric units, please.",
        updates: r#"[{"action":"add","store":"user","content":"Name: Grace."},
                     {"action":"add","store":"user","content":"Prefers metric units."}]"#,
    },
    Turn {
        personality: "ada",
        message: "I'm planning a trip to Kyoto in April.",
        updates: r#"[{"action":"add","store":"memory","content":"Grace is planning a trip to Kyoto in April."}]"#,
    },
    Turn {
        personality: "ada",
        message: "Actually, make that May: the cherry blossoms will be over, but it's cheaper.",
        updates: r#"[{"action":"edit","store":"memory","old":"in April.","new":"in May (cheaper than April)."},
                     {"action":"add","store":"memory","content":"Grace is price-sensitive about travel."}]"#,
    },
    Turn {
        personality: "coach",
        message: "Can you help me train for a 10 km run before the trip?",
        updates: r#"[{"action":"add","store":"memory","content":"Training Grace for a 10 km run, goal: before her May trip."}]"#,
    },
];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("MEMORY_ROOT").map(PathBuf::from))
        .unwrap_or_else(|| {
            let demo = std::env::temp_dir().join("agent-memory-demo");
            // Only this demo's own scratch directory is ever cleared.
            let _ = std::fs::remove_dir_all(&demo);
            demo
        });
    let memory = MarkdownProvider::new(&root);
    let user = UserId::new("grace")?;
    println!("Memory root: {}\n", memory.root().display());

    for (number, turn) in SCRIPT.iter().enumerate() {
        let ctx = MemoryContext::new(PersonalityId::new(turn.personality)?, user.clone());
        println!(
            "━━ turn {} · personality '{}' · user 'grace'",
            number + 1,
            turn.personality
        );
        println!("user> {}", turn.message);
        let seen = memory.prefetch(&ctx).await?;
        show(&seen);
        let updates: Vec<MemoryUpdate> = serde_json::from_str(turn.updates)?;
        println!("model emits: {}", serde_json::to_string(&updates)?);
        let report = memory.sync(&ctx, &updates, &IfMatch::NONE).await?;
        for doc in &report.documents {
            println!(
                "  wrote {} ({} → {} bytes, version {}…)",
                doc.location,
                doc.bytes_before,
                doc.bytes_after,
                &doc.version_after.as_str()[..12]
            );
        }
        println!();
    }

    println!("━━ a consolidation racing another writer");
    let ctx = MemoryContext::new(PersonalityId::new("ada")?, user.clone());
    let view = memory.prefetch(&ctx).await?;
    memory
        .sync(
            &ctx,
            &[MemoryUpdate::add(
                Store::Memory,
                "Grace booked a ryokan in Kyoto.",
            )],
            &IfMatch::NONE,
        )
        .await?;
    let guard = IfMatch {
        memory: Some(view.memory.version.clone()),
        ..IfMatch::NONE
    };
    let consolidation = [MemoryUpdate::replace(
        Store::Memory,
        "Grace: Kyoto trip in May; price-sensitive.",
    )];
    match memory.sync(&ctx, &consolidation, &guard).await {
        Err(MemoryError::Conflict { .. }) => {
            println!(
                "  the model's rewrite was based on an old view: refused (Conflict), nothing lost"
            );
        }
        other => return Err(format!("expected a Conflict, got {other:?}").into()),
    }
    // The model views again and consolidates what is there now, guarded by the new version.
    let fresh = memory.prefetch(&ctx).await?;
    show(&fresh);
    let guard = IfMatch {
        memory: Some(fresh.memory.version.clone()),
        ..IfMatch::NONE
    };
    let consolidation = [MemoryUpdate::replace(
        Store::Memory,
        "Grace: Kyoto trip in May (cheaper than April), ryokan booked; price-sensitive.",
    )];
    let report = memory.sync(&ctx, &consolidation, &guard).await?;
    let doc = &report.documents[0];
    println!(
        "  consolidated from the fresh view: {} → {} bytes",
        doc.bytes_before, doc.bytes_after
    );
    show(&memory.prefetch(&ctx).await?);
    println!();

    println!("━━ global scope: personalities sharing one MEMORY.md");
    let global =
        MemoryContext::new(PersonalityId::new("concierge")?, user).with_scope(MemoryScope::Global);
    memory
        .sync(
            &global,
            &[MemoryUpdate::add(
                Store::Memory,
                "The office is closed on Fridays.",
            )],
            &IfMatch::NONE,
        )
        .await?;
    show(&memory.prefetch(&global).await?);

    println!();
    println!("━━ files (plain markdown: cat, grep, diff, commit)");
    for id in memory.list().await? {
        let doc = memory.read(&id).await?;
        println!("  {}  ({} bytes)", doc.location, doc.text.len());
    }
    println!(
        "\ntry: cat {}",
        memory.root().join("personalities/ada/MEMORY.md").display()
    );
    Ok(())
}

fn show(seen: &Prefetch) {
    match &seen.context {
        None => println!("agent sees: (no memory yet)"),
        Some(text) => {
            println!("agent sees:");
            for line in text.lines() {
                println!("  │ {line}");
            }
        }
    }
}
