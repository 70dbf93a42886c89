//! `memory reindex`: a vector provider's index rebuilt from the documents it indexes, with a
//! progress bar; a build without recall says how to get one.

use memory_wiring::Memory;

use crate::failure::Failure;
#[cfg(feature = "recall")]
use crate::output::{count, progress_bar};

/// Rebuild a vector provider's index from its source.
///
/// Example: memory reindex --provider recall
#[derive(clap::Args)]
pub struct ReindexArgs {
    /// The vector provider (default: every vector provider configured).
    #[arg(long)]
    provider: Option<String>,
}

/// `memory reindex`: the provider named, or every vector provider configured, reindexed and
/// optimized, one line each.
pub async fn run(memory: &Memory, args: ReindexArgs) -> Result<(), Failure> {
    reindex(memory, args.provider).await
}

/// In a build without the vector provider: a refusal that names the build with it.
#[cfg(not(feature = "recall"))]
async fn reindex(_memory: &Memory, _provider: Option<String>) -> Result<(), Failure> {
    Err(Failure::invalid(format!(
        "this build of memory has no vector provider, so there is no index to rebuild; {}",
        memory_wiring::rebuild_with("recall")
    )))
}

#[cfg(feature = "recall")]
async fn reindex(memory: &Memory, provider: Option<String>) -> Result<(), Failure> {
    let names: Vec<String> = match provider {
        Some(name) => vec![name],
        None => memory
            .config()
            .providers
            .iter()
            .filter(|(_, p)| p.recalls())
            .map(|(name, _)| name.clone())
            .collect(),
    };
    if names.is_empty() {
        return Err(Failure::invalid(
            "no vector provider is configured, so there is no index to rebuild",
        ));
    }
    for name in names {
        let vector = memory.vector(&name).await?;
        let bar = progress_bar(&format!("reindexing {name}"));
        let indexed = vector
            .reindex_with_progress(|done, total| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            })
            .await?;
        vector.optimize().await?;
        bar.finish_and_clear();
        println!(
            "{name}: reindexed {}",
            count(indexed, "memory document", "memory documents")
        );
    }
    Ok(())
}
