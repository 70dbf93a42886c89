//! `memory key new`: an API key for `memory serve`, printed once, and the line that configures
//! it by its hash under `[serve.keys]`.

use clap::Subcommand;
use memory_core::{PersonalityId, UserId};

use crate::failure::Failure;

/// API keys for memory serve.
#[derive(Subcommand)]
pub enum KeyCommand {
    /// Mint an API key: prints the key (once: keep it secret) and the line that configures
    /// it, with its SHA-256, under [serve.keys] in memory.toml.
    ///
    /// Scopes: read (documents, prefetch, search, history, directory, resolve identities),
    /// write (sync, replace, updates, revert), admin (everything: purge, identity links),
    /// metrics (/metrics). --user and --personality restrict the key to those.
    ///
    /// Example: memory key new alice-app --scope read --scope write --user alice
    New {
        /// The key's name, as logs show it.
        name: String,
        /// What it may do: read, write, admin, metrics (repeat for several).
        #[arg(long = "scope", required = true, value_name = "SCOPE")]
        scopes: Vec<memory_web::Scope>,
        /// Only this user's USER.md (repeat for several; default: every user).
        #[arg(long = "user", value_name = "USER")]
        users: Vec<String>,
        /// Only this personality's memory (repeat for several; default: every one).
        #[arg(long = "personality", value_name = "PERSONALITY")]
        personalities: Vec<String>,
    },
}

/// Runs a `memory key` command; it needs no config.
pub fn run(command: KeyCommand) -> Result<(), Failure> {
    match command {
        KeyCommand::New {
            name,
            scopes,
            users,
            personalities,
        } => new_key(&name, &scopes, users, personalities),
    }
}

/// `memory key new`: a fresh key, and the line configuring it by its hash.
fn new_key(
    name: &str,
    scopes: &[memory_web::Scope],
    users: Vec<String>,
    personalities: Vec<String>,
) -> Result<(), Failure> {
    memory_web::check_key_name(name).map_err(Failure::invalid)?;
    let users = users
        .into_iter()
        .map(UserId::new)
        .collect::<Result<Vec<_>, _>>()?;
    let personalities = personalities
        .into_iter()
        .map(PersonalityId::new)
        .collect::<Result<Vec<_>, _>>()?;
    let key = memory_web::mint_key()?;
    let quoted = |items: Vec<String>| {
        let items: Vec<String> = items.iter().map(|item| format!("{item:?}")).collect();
        format!("[{}]", items.join(", "))
    };
    let mut scopes: Vec<memory_web::Scope> = scopes.to_vec();
    scopes.sort_unstable();
    scopes.dedup();
    let mut line = format!(
        "{name} = {{ sha256 = \"{}\", scopes = {}",
        memory_web::key_sha256(&key),
        quoted(scopes.iter().map(ToString::to_string).collect())
    );
    if !users.is_empty() {
        line.push_str(&format!(
            ", users = {}",
            quoted(users.iter().map(ToString::to_string).collect())
        ));
    }
    if !personalities.is_empty() {
        line.push_str(&format!(
            ", personalities = {}",
            quoted(personalities.iter().map(ToString::to_string).collect())
        ));
    }
    line.push_str(" }");
    eprintln!(
        "The key is shown once: give it to the client (Authorization: Bearer <key>) and keep it secret."
    );
    eprintln!(
        "memory.toml keeps only its hash: add the line below under [serve.keys], then restart memory serve."
    );
    println!("key: {key}");
    println!("{line}");
    Ok(())
}
