//! The command line: `memory`'s global options and its commands as clap parses them, the
//! version line, and [`Cli::run`], which wires the config for the commands that read it and
//! runs the one given. Each command's arguments and help text are in its file under
//! `commands/`.

use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser, Subcommand};
use memory_wiring::{Config, Memory};

use crate::commands::mcp::McpArgs;
use crate::commands::{
    cat, completions, demo, history, identity, key, man, mcp, migrate, notes, openapi, reindex,
    serve, show, sync,
};
use crate::failure::Failure;

/// Agent memory from the command line, over the providers of memory.toml.
///
/// With no --config and no MEMORY_CONFIG, the memory is plain markdown files under
/// $MEMORY_ROOT, or ~/.agent-memory.
///
/// Exit codes: 0 ok, 1 a failure outside memory, 2 invalid input or configuration, 3 conflict
/// (read again), 4 refused (text to edit not found or found twice, a hard cap, a revision the
/// document still holds), 5 busy or unavailable (retry later), 6 outcome unknown (read before
/// repeating), 7 partially applied, 8 corrupt stored data.
#[derive(Parser)]
#[command(name = "memory", version = VERSION.as_str())]
pub struct Cli {
    /// The wiring file (default: $MEMORY_CONFIG).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

// The commands in the order `memory --help` lists them. No doc comment here: clap would read it
// as `memory`'s own; each command's is on its arguments, in its file.
#[derive(Subcommand)]
enum Command {
    Show(show::ShowArgs),
    Cat(cat::CatArgs),
    Sync(sync::SyncArgs),
    Log(history::LogArgs),
    Diff(history::DiffArgs),
    Revert(history::RevertArgs),
    Redact(history::RedactArgs),
    Purge(history::PurgeArgs),
    #[command(subcommand)]
    Notes(notes::NotesCommand),
    #[command(subcommand)]
    Identity(identity::IdentityCommand),
    Migrate(migrate::MigrateArgs),
    Reindex(reindex::ReindexArgs),
    Mcp(McpArgs),
    Serve(serve::ServeArgs),
    #[command(subcommand)]
    Key(key::KeyCommand),
    Openapi(openapi::OpenapiArgs),
    Completions(completions::CompletionsArgs),
    Man(man::ManArgs),
    Demo(demo::DemoArgs),
}

impl Cli {
    /// Runs the command given. The config is read only by the commands that use it, and by
    /// each of them before it starts.
    pub async fn run(self) -> Result<(), Failure> {
        let config = self.config.as_deref();
        let memory = || wire(config).map(|(memory, _)| memory);
        match self.command {
            Command::Show(args) => show::run(&memory()?, args).await,
            Command::Cat(args) => cat::run(&memory()?, args).await,
            Command::Sync(args) => sync::run(&memory()?, args).await,
            Command::Log(args) => history::log(&memory()?, args).await,
            Command::Diff(args) => history::diff(&memory()?, args).await,
            Command::Revert(args) => history::revert(&memory()?, args).await,
            Command::Redact(args) => history::redact(&memory()?, args).await,
            Command::Purge(args) => history::purge(&memory()?, args).await,
            Command::Notes(command) => notes::run(&memory()?, command).await,
            Command::Identity(command) => identity::run(&memory()?, command).await,
            Command::Migrate(args) => migrate::run(&memory()?, args).await,
            Command::Reindex(args) => reindex::run(&memory()?, args).await,
            Command::Mcp(McpArgs {
                remote: Some(url), ..
            }) => mcp::run_remote(&url).await,
            Command::Mcp(args) => mcp::run(&memory()?, args).await,
            Command::Serve(args) => {
                let (memory, settings) = wire(config)?;
                serve::run(memory, &settings, args).await
            }
            Command::Key(command) => key::run(command),
            Command::Openapi(args) => openapi::run(args),
            Command::Completions(args) => completions::run(args, Cli::command()),
            Command::Man(args) => man::run(args, Cli::command()),
            Command::Demo(args) => demo::run(args).await,
        }
    }
}

/// The memory the config at `path` (or `$MEMORY_CONFIG`, or the markdown default) wires, and
/// the config's `[serve]` settings.
fn wire(path: Option<&Path>) -> Result<(Memory, memory_web::Settings), Failure> {
    let config = Config::load(path)?;
    // Checked by every command, as the rest of the file is: a mistake in it is found before
    // the service is started.
    let settings = config.serve.settings()?;
    Ok((Memory::new(config), settings))
}

/// `memory --version`: the version and which provider kinds this build has, as cargo features
/// (`+` built, `-` not), so a user can tell why a config is refused.
static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let features: Vec<String> = memory_wiring::FEATURES
        .iter()
        .map(|(feature, built)| format!("{}{feature}", if *built { '+' } else { '-' }))
        .collect();
    format!(
        "{} (features: {})",
        env!("CARGO_PKG_VERSION"),
        features.join(" ")
    )
});

/// clap's error as one line that keeps what it names: the first line alone of "the following
/// required arguments were not provided:" would drop the arguments.
pub fn one_line(err: &clap::Error) -> String {
    let rendered = err.to_string();
    let message: Vec<&str> = rendered
        .lines()
        .take_while(|line| !line.trim().is_empty() && !line.starts_with("Usage:"))
        .map(str::trim)
        .collect();
    if message.is_empty() {
        return "error: invalid arguments".to_owned();
    }
    message.join(" ")
}
