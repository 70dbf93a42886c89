//! `memory identity link` and `memory identity resolve`: which user a platform account is, in
//! the identity map of the users provider or of a named one.

use std::sync::Arc;

use clap::Subcommand;
use memory_core::{Identity, IdentityMap, MemoryError, UserId};
use memory_wiring::Memory;

use crate::failure::Failure;

/// Link platform accounts to users, and look them up.
#[derive(Subcommand)]
pub enum IdentityCommand {
    /// Link a platform account to a user, so every platform reads the same USER.md.
    ///
    /// Example: memory identity link telegram 12345 grace
    Link {
        /// The platform: telegram, slack, ...
        platform: String,
        /// The platform's id for the account.
        platform_user: String,
        /// The user id it is.
        user: String,
        /// Move the account if it is linked to another user (otherwise exit 3).
        #[arg(long)]
        relink: bool,
        /// The provider whose identity map to change (default: the users provider, where
        /// every platform looks accounts up).
        #[arg(long)]
        provider: Option<String>,
    },
    /// Print the user a platform account is linked to (exit 1 when it is not linked).
    ///
    /// Example: memory identity resolve telegram 12345
    Resolve {
        /// The platform.
        platform: String,
        /// The platform's id for the account.
        platform_user: String,
        /// The provider whose identity map to read (default: the users provider).
        #[arg(long)]
        provider: Option<String>,
    },
}

/// `memory identity link`: the link made, and what it replaced; `memory identity resolve`: the
/// user, or a failure when the account is not linked.
pub async fn run(memory: &Memory, command: IdentityCommand) -> Result<(), Failure> {
    match command {
        IdentityCommand::Link {
            platform,
            platform_user,
            user,
            relink,
            provider,
        } => {
            let identity = Identity::new(platform, platform_user)?;
            let user = UserId::new(user)?;
            let previous = identities(memory, provider)
                .await?
                .link(&identity, &user, relink)
                .await?;
            match previous {
                Some(previous) if previous == user => {
                    println!("{identity} was already linked to {user}")
                }
                Some(previous) => println!("{identity} linked to {user} (was {previous})"),
                None => println!("{identity} linked to {user}"),
            }
        }
        IdentityCommand::Resolve {
            platform,
            platform_user,
            provider,
        } => {
            let identity = Identity::new(platform, platform_user)?;
            match identities(memory, provider)
                .await?
                .resolve(&identity)
                .await?
            {
                Some(user) => println!("{user}"),
                None => {
                    return Err(Failure::other(format!(
                        "{identity} is not linked to a user"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The identity map of `provider`, or the users provider's.
async fn identities(
    memory: &Memory,
    provider: Option<String>,
) -> Result<Arc<dyn IdentityMap>, MemoryError> {
    match provider {
        Some(name) => memory.identities_of(&name).await,
        None => memory.identities().await,
    }
}
