//! `memory demo`: a scripted agent session on the markdown default. No LLM: the messages of a
//! conversation and the updates a model would emit after each turn. Prints what the agent sees
//! before each turn, what it writes after, and where the files are.

use std::path::PathBuf;

use memory_core::{
    Identity, IfMatch, MemoryError, MemoryProvider, MemoryScope, MemoryUpdate, PersonalityId,
    Prefetch, Store, Surface,
};
#[cfg(feature = "recall")]
use memory_vector::{ModelConfig, PROVISION_COMMAND, RecallConfig};
use memory_wiring::{Config, Memory, PersonalityConfig, ROOT_ENV};
#[cfg(feature = "recall")]
use memory_wiring::{DEFAULT_PROVIDER, ProviderConfig};

use crate::failure::Failure;
use crate::output::count;

/// The main job: a scripted multi-turn agent session on the markdown default.
///
/// Uses semantic recall when the embedding model is provisioned (MEMORY_E5_MODEL_DIR).
///
/// Example: memory demo --root /tmp/demo-memory
#[derive(clap::Args)]
pub struct DemoArgs {
    /// The memory root (default: $MEMORY_ROOT, else a fresh agent-memory-demo in the temp
    /// dir).
    #[arg(long)]
    root: Option<PathBuf>,
}

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
        personality: "ada",
        message: "On trains I always want a window seat, and I'm vegetarian.",
        updates: r#"[{"action":"add","store":"memory","content":"Grace wants a window seat on trains."},
                     {"action":"add","store":"memory","content":"Grace is vegetarian."}]"#,
    },
    Turn {
        personality: "ada",
        message: "Which seat should I book on the Shinkansen to Kyoto?",
        updates: "[]",
    },
    Turn {
        personality: "coach",
        message: "Can you help me train for a 10 km run before the trip?",
        updates: r#"[{"action":"add","store":"memory","content":"Training Grace for a 10 km run, goal: before her May trip."}]"#,
    },
];

/// The prefetch budget of the demo's recall: few enough entries that picking shows.
const RECALLED_ENTRIES: usize = 2;

/// `memory demo`: the script played on its own memory, what the agent sees and writes printed
/// turn by turn; it needs no config.
pub async fn run(args: DemoArgs) -> Result<(), Failure> {
    let root = args
        .root
        .or_else(|| std::env::var_os(ROOT_ENV).map(PathBuf::from))
        .unwrap_or_else(|| {
            let demo = std::env::temp_dir().join("agent-memory-demo");
            // Only this demo's own scratch directory is ever cleared.
            let _ = std::fs::remove_dir_all(&demo);
            demo
        });
    let (memory, recall) = wire(&root).await;
    let root = std::path::absolute(&root).unwrap_or(root);
    println!("Memory root: {}", root.display());
    match &recall {
        Ok(model) => println!(
            "Recall: on for 'ada' ({model}): each turn's message picks the {RECALLED_ENTRIES} most relevant entries of her MEMORY.md"
        ),
        Err(why) => println!("Recall: off ({why})"),
    }

    // The agent is reached on Telegram: the identity map says which user that is.
    let identity = Identity::new("telegram", "4242")?;
    let grace = memory_core::UserId::new("grace")?;
    memory
        .identities()
        .await?
        .link(&identity, &grace, false)
        .await?;
    let user = memory.resolve(&identity).await?.unwrap_or(grace);
    println!("Identity: {identity} resolves to user '{user}'\n");

    for (number, turn) in SCRIPT.iter().enumerate() {
        // The agent's writes are tool calls, and their revisions say so.
        let mut ctx = memory
            .context(PersonalityId::new(turn.personality)?, user.clone())
            .with_surface(Surface::Tool);
        if recall.is_ok() {
            ctx = ctx.with_query(turn.message);
        }
        println!(
            "━━ turn {} · personality '{}' · user '{user}'",
            number + 1,
            turn.personality
        );
        println!("user> {}", turn.message);
        show(&memory.prefetch(&ctx).await?);
        let updates: Vec<MemoryUpdate> = serde_json::from_str(turn.updates)
            .map_err(|err| Failure::other(format!("the demo script is broken: {err}")))?;
        if updates.is_empty() {
            println!("model emits: nothing to remember\n");
            continue;
        }
        println!(
            "model emits: {}",
            serde_json::to_string(&updates).unwrap_or_default()
        );
        let report = memory.sync(&ctx, &updates, &IfMatch::NONE).await?;
        for doc in &report.documents {
            println!(
                "  wrote {} ({} → {} bytes, version {})",
                doc.location,
                doc.bytes_before,
                doc.bytes_after,
                short(doc.version_after.as_str())
            );
        }
        println!();
    }

    println!("━━ a consolidation racing another writer");
    let ctx = memory
        .context(PersonalityId::new("ada")?, user.clone())
        .with_surface(Surface::Tool);
    let view = memory.prefetch(&ctx).await?;
    let racing = [MemoryUpdate::add(
        Store::Memory,
        "Grace booked a ryokan in Kyoto.",
    )];
    memory.sync(&ctx, &racing, &IfMatch::NONE).await?;
    let stale_guard = IfMatch {
        memory: Some(view.memory.version.clone()),
        ..IfMatch::NONE
    };
    let consolidation = [MemoryUpdate::replace(
        Store::Memory,
        "Grace: Kyoto trip in May; price-sensitive.",
    )];
    match memory.sync(&ctx, &consolidation, &stale_guard).await {
        Err(MemoryError::Conflict { .. }) => println!(
            "  the model's rewrite was based on an old view: refused (Conflict), nothing lost"
        ),
        other => {
            return Err(Failure::other(format!(
                "expected a Conflict, got {other:?}"
            )));
        }
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
        "Grace: Kyoto trip in May (cheaper than April), ryokan booked; price-sensitive.\n\nWindow seat on trains; vegetarian.",
    )];
    let report = memory.sync(&ctx, &consolidation, &guard).await?;
    let doc = &report.documents[0];
    println!(
        "  consolidated from the fresh view: {} → {} bytes",
        doc.bytes_before, doc.bytes_after
    );
    show(&memory.prefetch(&ctx).await?);
    // Every write is a revision: the consolidation can be seen, compared and undone.
    let ada = ctx.document(Store::Memory);
    let revisions = memory.history(&ada, usize::MAX).await?;
    if let Some(newest) = revisions.first() {
        println!(
            "  history: {} of {}; the newest:",
            count(revisions.len(), "revision", "revisions"),
            ada.relative_path()
        );
        println!("  {}", super::history::line(newest).trim_start());
        println!(
            "  undo it with: memory revert {} {}",
            ada.relative_path(),
            newest.number.saturating_sub(1)
        );
    }
    println!();

    println!("━━ global scope: 'concierge' shares the deployment-wide MEMORY.md");
    let global = memory
        .context(PersonalityId::new("concierge")?, user)
        .with_surface(Surface::Tool);
    let office = [MemoryUpdate::add(
        Store::Memory,
        "The office is closed on Fridays.",
    )];
    memory.sync(&global, &office, &IfMatch::NONE).await?;
    show(&memory.prefetch(&global).await?);

    // Let the recall index catch up with the last writes before the process ends.
    for warning in memory.settle().await {
        eprintln!("warning: {warning}");
    }

    println!();
    println!("━━ files (plain markdown: cat, grep, diff, commit)");
    for id in memory.list().await? {
        let doc = memory.read(&id).await?;
        println!("  {}  ({} bytes)", doc.location, doc.text.len());
    }
    println!(
        "  {}  (the identity map)",
        root.join("users/identity-map.json").display()
    );
    println!(
        "\ntry: cargo run -q -p agent-memory-cli -- cat personalities/ada/MEMORY.md  (with MEMORY_ROOT={})",
        root.display()
    );
    println!("     and log, diff or revert in place of cat: every change is a revision");
    Ok(())
}

/// The demo's wiring: markdown at `root`, 'concierge' on the global memory, and 'ada' on a
/// recall index over the markdown when the model loads. The second value says which model, or
/// why recall is off and how to turn it on.
async fn wire(root: &std::path::Path) -> (Memory, Result<String, String>) {
    let mut config = Config::markdown(root);
    config.personalities.insert(
        PersonalityId::new("concierge").expect("a valid id"),
        PersonalityConfig {
            memory_scope: MemoryScope::Global,
            ..PersonalityConfig::default()
        },
    );
    with_recall(config, root).await
}

#[cfg(not(feature = "recall"))]
async fn with_recall(config: Config, _root: &std::path::Path) -> (Memory, Result<String, String>) {
    let why = format!(
        "this build of memory has no recall; {}",
        memory_wiring::rebuild_with("recall")
    );
    (Memory::new(config), Err(why))
}

/// `config` with 'ada' on a recall index over its markdown, when the model loads.
#[cfg(feature = "recall")]
async fn with_recall(
    mut config: Config,
    root: &std::path::Path,
) -> (Memory, Result<String, String>) {
    let model = ModelConfig::from_env();
    if !model.is_provisioned() {
        let why = format!(
            "no model in {}; to enable it run {PROVISION_COMMAND} and set {} to the directory it prints last",
            model.model_dir.display(),
            model.name.dir_env()
        );
        return (Memory::new(config), Err(why));
    }
    let plain = Memory::new(config.clone());
    config.providers.insert(
        "recall".to_owned(),
        ProviderConfig::Vector {
            source: DEFAULT_PROVIDER.to_owned(),
            index_dir: root.join(".recall-index"),
            model: model.clone(),
            recall: RecallConfig {
                k: RECALLED_ENTRIES,
                ..RecallConfig::default()
            },
        },
    );
    config.personalities.insert(
        PersonalityId::new("ada").expect("a valid id"),
        PersonalityConfig {
            provider: Some("recall".to_owned()),
            ..PersonalityConfig::default()
        },
    );
    let with_recall = Memory::new(config);
    match with_recall.vector("recall").await {
        Ok(_) => (
            with_recall,
            Ok(format!("{} from {}", model.name, model.model_dir.display())),
        ),
        Err(err) => (plain, Err(format!("the model did not load: {err}"))),
    }
}

fn short(version: &str) -> &str {
    version.get(..12).unwrap_or(version)
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
