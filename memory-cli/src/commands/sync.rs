//! `memory sync`: a JSON array of updates, from a file or stdin, applied for a personality and
//! a user exactly once.

use std::io::Read;
use std::path::PathBuf;

use memory_core::{
    IdempotencyKey, IfMatch, MemoryUpdate, PersonalityId, Surface, UserId, Version,
    sync_exactly_once,
};
use memory_wiring::Memory;

use super::settle;
use crate::failure::Failure;
use crate::output::print_json;

/// Apply a JSON array of updates for a personality and a user; prints the report as JSON.
///
/// Example: echo '[{"action":"add","store":"user","content":"Name: Grace."}]' |
/// memory sync --personality ada --user grace
#[derive(clap::Args)]
pub struct SyncArgs {
    /// The personality speaking.
    #[arg(long)]
    personality: String,
    /// The user spoken to.
    #[arg(long)]
    user: String,
    /// Read the updates from this file instead of stdin.
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
    /// Refuse (exit 3) unless MEMORY.md is still at this version.
    #[arg(long, value_name = "VERSION")]
    if_match_memory: Option<String>,
    /// Refuse (exit 3) unless USER.md is still at this version.
    #[arg(long, value_name = "VERSION")]
    if_match_user: Option<String>,
    /// Name this call: repeating it with the same key (after a crash or a lost reply)
    /// never applies it twice. Without it the command makes one key for its own retries.
    #[arg(long, value_name = "KEY")]
    idempotency_key: Option<String>,
}

/// `memory sync`: the updates applied with surface `cli`, the report printed as JSON, and a
/// recall index left caught up.
pub async fn run(memory: &Memory, args: SyncArgs) -> Result<(), Failure> {
    let SyncArgs {
        personality,
        user,
        file,
        if_match_memory,
        if_match_user,
        idempotency_key,
    } = args;
    let mut ctx = memory
        .context(PersonalityId::new(personality)?, UserId::new(user)?)
        .with_surface(Surface::Cli);
    if let Some(key) = idempotency_key {
        ctx = ctx.with_idempotency_key(IdempotencyKey::new(key)?);
    }
    let updates = read_updates(file)?;
    let if_match = IfMatch {
        memory: if_match_memory.map(Version::new),
        user: if_match_user.map(Version::new),
        ..IfMatch::NONE
    };
    let report = sync_exactly_once(memory, &ctx, &updates, &if_match).await?;
    print_json(&report)?;
    settle(memory).await;
    Ok(())
}

/// The JSON array of updates in `file`, or on stdin.
fn read_updates(file: Option<PathBuf>) -> Result<Vec<MemoryUpdate>, Failure> {
    let (text, origin) = match file {
        Some(path) => {
            let text = std::fs::read_to_string(&path).map_err(|err| {
                Failure::invalid(format!("cannot read {}: {err}", path.display()))
            })?;
            (text, path.display().to_string())
        }
        None => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|err| Failure::invalid(format!("cannot read stdin: {err}")))?;
            (text, "stdin".to_owned())
        }
    };
    serde_json::from_str(&text).map_err(|err| {
        Failure::invalid(format!(
            "the updates on {origin} are not a JSON array of updates ({err}); each is {{\"action\":\"add\"|\"replace\"|\"remove\"|\"edit\",\"store\":\"memory\"|\"user\",...}}"
        ))
    })
}
