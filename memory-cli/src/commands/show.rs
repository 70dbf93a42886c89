//! `memory show`: the prefetch an agent would get for a personality and a user, after the
//! versions of the two documents it comes from.

use memory_core::{MemoryProvider, PersonalityId, UserId};
use memory_wiring::Memory;

use crate::failure::Failure;
use crate::output::{describe, print_json, warn};

/// What the agent would see for a personality and a user, with the documents' versions.
///
/// Example: memory show --personality ada --user grace --query "trip plans"
#[derive(clap::Args)]
pub struct ShowArgs {
    /// The personality speaking.
    #[arg(long)]
    personality: String,
    /// The user spoken to.
    #[arg(long)]
    user: String,
    /// The current user message, for providers that recall.
    #[arg(long)]
    query: Option<String>,
    /// The prefetch budget in chars (default: the personality's).
    #[arg(long)]
    max_chars: Option<usize>,
    /// Print the prefetch as JSON.
    #[arg(long)]
    json: bool,
}

/// `memory show`: the two documents' lines, then the context the agent would get (or the whole
/// prefetch as JSON).
pub async fn run(memory: &Memory, args: ShowArgs) -> Result<(), Failure> {
    let ShowArgs {
        personality,
        user,
        query,
        max_chars,
        json,
    } = args;
    let mut ctx = memory.context(PersonalityId::new(personality)?, UserId::new(user)?);
    if let Some(query) = query {
        ctx = ctx.with_query(query);
    }
    if let Some(max_chars) = max_chars {
        ctx = ctx.with_max_chars(max_chars);
    }
    let seen = memory.prefetch(&ctx).await?;
    warn(&seen.warnings);
    if json {
        print_json(&seen)?;
    } else {
        for meta in [seen.memory.meta(), seen.user.meta()] {
            println!("{}", describe(&meta));
        }
        println!();
        match &seen.context {
            Some(context) => println!("{context}"),
            None => println!("(nothing remembered yet)"),
        }
    }
    Ok(())
}
