//! `memory`: look at, edit, move and rebuild agent memory without writing code.
// The commands' doc comments are their --help text, read in a terminal: `personalities/<id>`
// is written as a user types it, not as HTML.
#![allow(rustdoc::invalid_html_tags)]

// What the commands print, and how: `print!` and `println!` that a closed stdout ends quietly
// (first, so every module below has them), JSON, warnings, the shared wording.
#[macro_use]
mod output;
// `Failure`: a command's one-line error and the exit code it ends with.
mod failure;
// The commands that have a file of their own (the history commands share one).
mod commands;

use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{CommandFactory, Parser, Subcommand};
use memory_core::{
    DocumentId, IdempotencyKey, Identity, IfMatch, MemoryError, MemoryProvider, MemoryUpdate,
    PersonalityId, Surface, UserId, Version, sync_exactly_once,
};
use memory_wiring::{Config, Memory};

use commands::{demo, history, mcp, migrate};
use failure::Failure;
#[cfg(feature = "recall")]
use output::{count, progress_bar};
use output::{describe, print_json, warn};

/// Agent memory from the command line, over the providers of memory.toml.
///
/// With no --config and no MEMORY_CONFIG, the memory is plain markdown files under
/// $MEMORY_ROOT, or ~/.agent-memory.
///
/// Exit codes: 0 ok, 1 a failure outside memory, 2 invalid input or configuration, 3 conflict
/// (read again), 4 refused (text to edit not found or found twice, a hard cap), 5 busy or
/// unavailable (retry later), 6 outcome unknown (read before repeating), 7 partially applied,
/// 8 corrupt stored data.
#[derive(Parser)]
#[command(name = "memory", version = VERSION.as_str())]
struct Cli {
    /// The wiring file (default: $MEMORY_CONFIG).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// What the agent would see for a personality and a user, with the documents' versions.
    ///
    /// Example: memory show --personality ada --user grace --query "trip plans"
    Show {
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
    },
    /// One raw document: its text on stdout, its location and version on stderr.
    ///
    /// DOCUMENT is its path in the layout: MEMORY.md, personalities/<id>/MEMORY.md or
    /// users/<id>/USER.md.
    ///
    /// Example: memory cat personalities/ada/MEMORY.md > ada.md
    Cat {
        /// The document's layout path.
        document: String,
        /// Read it from this provider (default: where the wiring keeps it).
        #[arg(long)]
        provider: Option<String>,
        /// Print the document (text, version, location, modified) as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Apply a JSON array of updates for a personality and a user; prints the report as JSON.
    ///
    /// Example: echo '[{"action":"add","store":"user","content":"Name: Grace."}]' |
    /// memory sync --personality ada --user grace
    Sync {
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
    },
    /// A document's revisions, newest first: number, time (UTC), surface, sizes, what changed
    /// and who.
    ///
    /// Every write is a revision (tool, cli, web, api; external for a hand edit noticed since).
    /// --json prints an array of revisions: number, path, version (after it; what --if-match
    /// takes), version_before, time (ms since the epoch), time_utc, surface, personality, user,
    /// idempotency_key, session, bytes_before, bytes_after, sha256_before, sha256_after,
    /// updates, tombstone, and with --text the whole text after it.
    ///
    /// Example: memory log personalities/ada/MEMORY.md --limit 5
    Log {
        /// The document's layout path.
        document: String,
        /// Show at most this many revisions.
        #[arg(long, default_value_t = 20, value_name = "N",
              value_parser = clap::value_parser!(u64).range(1..))]
        limit: u64,
        /// Print the revisions as JSON.
        #[arg(long)]
        json: bool,
        /// With --json: include each revision's whole text.
        #[arg(long, requires = "json")]
        text: bool,
    },
    /// A unified diff of a document between two revisions.
    ///
    /// With no revision: the newest against the one before it. With FROM alone: revision FROM
    /// against the document as it is now. Revision 0 is the empty document before the first.
    /// Prints nothing when the texts are equal.
    ///
    /// Example: memory diff personalities/ada/MEMORY.md 3 5
    Diff {
        /// The document's layout path.
        document: String,
        /// The revision to compare from.
        #[arg(value_parser = history::parse_revision)]
        from: Option<u64>,
        /// The revision to compare to (default: the document now).
        #[arg(value_parser = history::parse_revision)]
        to: Option<u64>,
    },
    /// Put a document back to the text it had after a revision.
    ///
    /// The revert is a revision of its own (surface cli), so it can be reverted too; a recall
    /// index follows it like any write.
    ///
    /// Example: memory revert personalities/ada/MEMORY.md 3
    Revert {
        /// The document's layout path.
        document: String,
        /// The revision whose text to restore (see memory log).
        #[arg(value_parser = history::parse_revision)]
        revision: u64,
        /// Refuse (exit 3) unless the document is still at this version.
        #[arg(long, value_name = "VERSION")]
        if_match: Option<String>,
    },
    /// Erase a document for good: its text, its history, its idempotency receipts and its
    /// recall index entries (the right to be forgotten).
    ///
    /// Without --yes it only says what would be erased, and exits 2. Its history keeps one
    /// tombstone revision without content, recording when the purge happened.
    ///
    /// Example: memory purge users/grace/USER.md --yes
    Purge {
        /// The document's layout path.
        document: String,
        /// Erase it: there is no undo.
        #[arg(long)]
        yes: bool,
    },
    /// Link platform accounts to users, and look them up.
    #[command(subcommand)]
    Identity(IdentityCommand),
    /// Copy every document and identity link from one provider to another, verified by hash.
    ///
    /// Documents already identical are skipped, so a second run copies nothing. A target
    /// document holding lines its source lacks is left alone (exit 3) unless --force: content
    /// decides, never the clocks of two machines. Identity links already in the target are
    /// kept; one linked to another user there is reported (exit 3), never overwritten.
    ///
    /// With --root-user, moves the USER.md of Ethos's first layout (~/.ethos/USER.md, at the
    /// root, which this layout never reads) into users/<USER>/USER.md instead.
    ///
    /// Example: memory migrate --from files --to shared
    ///
    /// Example: memory migrate --root-user grace
    Migrate {
        /// The provider to copy from.
        #[arg(long, required_unless_present = "root_user", requires = "to")]
        from: Option<String>,
        /// The provider to copy to.
        #[arg(long, requires = "from")]
        to: Option<String>,
        /// Move the USER.md at the root (Ethos's first layout, ~/.ethos/USER.md, which is
        /// never read) into users/<USER>/USER.md, verified by hash, and remove it.
        #[arg(long, value_name = "USER", conflicts_with_all = ["from", "to"])]
        root_user: Option<String>,
        /// Overwrite target documents that hold lines their source lacks.
        #[arg(long)]
        force: bool,
    },
    /// Rebuild a vector provider's index from its source.
    ///
    /// Example: memory reindex --provider recall
    Reindex {
        /// The vector provider (default: every vector provider configured).
        #[arg(long)]
        provider: Option<String>,
    },
    /// Serve the memory tools to an MCP client over stdio, for one personality and user.
    ///
    /// Tools: memory_view, memory_add, memory_replace, memory_remove, memory_consolidate,
    /// memory_history, and memory_search where the personality's provider can recall. Their
    /// writes are revisions with surface tool. Resources: the two documents. Logs go to stderr.
    ///
    /// With --remote, relays stdio to a remote `memory serve`'s /mcp instead (no config
    /// needed): for MCP clients that only start local processes.
    ///
    /// Example: memory mcp --personality ada --user grace
    Mcp {
        /// The personality whose memory is served (default: [mcp] personality in the config).
        #[arg(long, conflicts_with = "remote")]
        personality: Option<String>,
        /// The user whose profile is served (default: [mcp] user in the config).
        #[arg(long, conflicts_with = "remote")]
        user: Option<String>,
        /// The URL of a remote /mcp (`http(s)://HOST/mcp/<personality>/<user>`) to relay to;
        /// its API key comes from the environment variable MEMORY_API_KEY.
        #[arg(long, value_name = "URL")]
        remote: Option<String>,
    },
    /// Serve the memory service: the HTTP API under /v1 (its OpenAPI document at
    /// /v1/openapi.json), /metrics, and the Memory page at /.
    ///
    /// Binds 127.0.0.1 unless told otherwise; without API keys it then serves this machine
    /// only. Any other address refuses to start without keys: configure them under
    /// [serve.keys] in memory.toml (memory key new prints a line), or pass --token for one
    /// admin key. SIGTERM or Ctrl-C stops accepting, lets requests in flight and writes
    /// finish, then exits.
    ///
    /// Example: memory serve --port 8700
    Serve {
        /// The port; 0 picks a free one.
        #[arg(long, default_value_t = 8700)]
        port: u16,
        /// The address to listen on.
        #[arg(long, default_value = "127.0.0.1")]
        bind: IpAddr,
        /// Accepted for older scripts and ignored: keys decide who may call a reachable
        /// address.
        #[arg(long, hide = true)]
        allow_remote: bool,
        /// One admin API key (at least 16 chars), besides those of [serve.keys]; prefer the
        /// environment variable, which other users cannot see in the process list.
        #[arg(long, env = memory_web::TOKEN_ENV, hide_env_values = true)]
        token: Option<String>,
        /// Write one JSON line per request on stderr (time, request id, method, path, route,
        /// status, duration, key name, error kind).
        #[arg(long)]
        access_log: bool,
    },
    /// API keys for memory serve.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Print the OpenAPI document of memory serve's HTTP API.
    ///
    /// Example: memory openapi > openapi.json
    Openapi,
    /// Print a shell's completion script for memory.
    ///
    /// Example: mkdir -p ~/.local/share/bash-completion/completions &&
    /// memory completions bash > ~/.local/share/bash-completion/completions/memory
    Completions {
        /// The shell: bash, elvish, fish, powershell or zsh.
        shell: clap_complete::Shell,
    },
    /// Print memory's man page (roff), from the same definitions as --help; with --dir, write
    /// it and one page per subcommand (memory-show.1, memory-key-new.1, ...), the pages its
    /// SUBCOMMANDS section refers to.
    ///
    /// Example: memory man --dir ~/.local/share/man/man1   (then: man memory-show)
    Man {
        /// Write memory.1 and every subcommand's page into this folder (made when missing),
        /// and print the path of each page written, instead of printing memory.1.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// The main job: a scripted multi-turn agent session on the markdown default.
    ///
    /// Uses semantic recall when the embedding model is provisioned (MEMORY_E5_MODEL_DIR).
    ///
    /// Example: memory demo --root /tmp/demo-memory
    Demo {
        /// The memory root (default: $MEMORY_ROOT, else a fresh agent-memory-demo in the temp
        /// dir).
        #[arg(long)]
        root: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum KeyCommand {
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

#[derive(Subcommand)]
enum IdentityCommand {
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

/// clap's error as one line that keeps what it names: the first line alone of "the following
/// required arguments were not provided:" would drop the arguments.
fn one_line(err: &clap::Error) -> String {
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

fn main() -> ExitCode {
    // First, while the process has one thread: the e5 engine's OpenMP reads it when it loads.
    #[cfg(feature = "recall")]
    memory_vector::spin_briefly_when_idle();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => {
            // --help and --version.
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            eprintln!("{} (see memory --help)", one_line(&err));
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

async fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Demo { root } => return demo::run(root).await,
        Command::Key(KeyCommand::New {
            name,
            scopes,
            users,
            personalities,
        }) => return new_key(&name, &scopes, users, personalities),
        Command::Openapi => {
            println!("{}", memory_web::openapi_json());
            return Ok(());
        }
        Command::Mcp {
            remote: Some(url), ..
        } => {
            let key = std::env::var(mcp::API_KEY_ENV).ok();
            return mcp::relay(&url, key).await.map_err(Failure::other);
        }
        Command::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "memory", &mut out);
            print!("{}", String::from_utf8_lossy(&out));
            return Ok(());
        }
        Command::Man { dir } => {
            match dir {
                Some(dir) => {
                    for page in man_pages(&dir)? {
                        println!("{}", page.display());
                    }
                }
                None => {
                    let mut out = Vec::new();
                    clap_mangen::Man::new(man_command())
                        .render(&mut out)
                        .map_err(|err| Failure::other(err.to_string()))?;
                    print!("{}", String::from_utf8_lossy(&out));
                }
            }
            return Ok(());
        }
        _ => {}
    }
    let config = Config::load(cli.config.as_deref())?;
    // Checked by every command, as the rest of the file is: a mistake in it is found before
    // the service is started.
    let settings = config.serve.settings()?;
    let memory = Memory::new(config);
    match cli.command {
        Command::Show {
            personality,
            user,
            query,
            max_chars,
            json,
        } => {
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
        }
        Command::Cat {
            document,
            provider,
            json,
        } => {
            let id = parse_document(&document)?;
            let document = match provider {
                Some(name) => memory.provider(&name).await?.read(&id).await?,
                None => memory.read(&id).await?,
            };
            if json {
                print_json(&document)?;
            } else {
                eprintln!("{}", describe(&document.meta()));
                print!("{}", document.text);
            }
        }
        Command::Sync {
            personality,
            user,
            file,
            if_match_memory,
            if_match_user,
            idempotency_key,
        } => {
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
            };
            let report = sync_exactly_once(&memory, &ctx, &updates, &if_match).await?;
            print_json(&report)?;
            settle(&memory).await;
        }
        Command::Log {
            document,
            limit,
            json,
            text,
        } => {
            let limit = usize::try_from(limit).unwrap_or(usize::MAX);
            history::log(&memory, &document, limit, json, text).await?
        }
        Command::Diff { document, from, to } => history::diff(&memory, &document, from, to).await?,
        Command::Revert {
            document,
            revision,
            if_match,
        } => history::revert(&memory, &document, revision, if_match).await?,
        Command::Purge { document, yes } => history::purge(&memory, &document, yes).await?,
        Command::Identity(IdentityCommand::Link {
            platform,
            platform_user,
            user,
            relink,
            provider,
        }) => {
            let identity = Identity::new(platform, platform_user)?;
            let user = UserId::new(user)?;
            let previous = identities(&memory, provider)
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
        Command::Identity(IdentityCommand::Resolve {
            platform,
            platform_user,
            provider,
        }) => {
            let identity = Identity::new(platform, platform_user)?;
            match identities(&memory, provider)
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
        Command::Mcp {
            personality, user, ..
        } => {
            let defaults = &memory.config().mcp;
            let missing = |what: &str| {
                Failure::invalid(format!(
                    "memory mcp needs a {what}: pass --{what} or set `{what}` under [mcp] in the config"
                ))
            };
            let personality = match personality {
                Some(id) => PersonalityId::new(id)?,
                None => (defaults.personality.clone()).ok_or_else(|| missing("personality"))?,
            };
            let user = match user {
                Some(id) => UserId::new(id)?,
                None => (defaults.user.clone()).ok_or_else(|| missing("user"))?,
            };
            let tools = memory.tools(personality, user).await?;
            mcp::serve(tools).await.map_err(Failure::other)?;
        }
        Command::Serve {
            port,
            bind,
            allow_remote: _,
            token,
            access_log,
        } => {
            // An empty MEMORY_SERVE_TOKEN is no token, as an unset one.
            let token = token.filter(|token| !token.is_empty());
            let address = SocketAddr::new(bind, port);
            serve(memory, &settings, address, token, access_log).await?
        }
        Command::Migrate {
            from,
            to,
            root_user,
            force,
        } => {
            let migrated = match (root_user, from, to) {
                (Some(user), ..) => migrate::root_user(&memory, &user, force).await,
                (None, Some(from), Some(to)) => migrate::run(&memory, &from, &to, force).await,
                _ => unreachable!("clap requires --root-user, or --from with --to"),
            };
            settle(&memory).await;
            migrated?
        }
        Command::Reindex { provider } => reindex(&memory, provider).await?,
        Command::Demo { .. }
        | Command::Key(_)
        | Command::Openapi
        | Command::Completions { .. }
        | Command::Man { .. } => {
            unreachable!("handled before the config is loaded")
        }
    }
    Ok(())
}

/// The command line as its man pages show it: without clap's `help` subcommand, which has no
/// page of its own (`memory help X` is `memory X --help`), so every `memory-X(1)` a page names
/// is one [`man_pages`] writes.
fn man_command() -> clap::Command {
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    command
}

/// Writes `memory.1` and a page per subcommand, nested ones included (`memory-key-new.1`), into
/// `dir`, made when missing; returns the paths written, `memory.1` first.
fn man_pages(dir: &std::path::Path) -> Result<Vec<PathBuf>, Failure> {
    fn write(
        command: clap::Command,
        dir: &std::path::Path,
        written: &mut Vec<PathBuf>,
    ) -> std::io::Result<()> {
        let subcommands: Vec<clap::Command> = command
            .get_subcommands()
            .filter(|subcommand| !subcommand.is_hide_set())
            .cloned()
            .collect();
        written.push(clap_mangen::Man::new(command).generate_to(dir)?);
        for subcommand in subcommands {
            write(subcommand, dir, written)?;
        }
        Ok(())
    }
    let failed = |err: std::io::Error| {
        Failure::other(format!(
            "cannot write the man pages into {}: {err}",
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(failed)?;
    let mut written = Vec::new();
    write(man_command(), dir, &mut written).map_err(failed)?;
    Ok(written)
}

/// How long a writing command waits for a recall index to catch up with what it wrote.
const SETTLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Lets a recall index catch up with what this process wrote before it ends, so one-shot
/// writers (scripts, hooks) leave it current. Bounded: what is left is caught up by the next
/// query.
async fn settle(memory: &Memory) {
    match tokio::time::timeout(SETTLE_TIMEOUT, memory.settle()).await {
        Ok(warnings) => warn(&warnings),
        Err(_) => {
            warn(&["the recall index is still catching up; the next query finishes it".to_owned()])
        }
    }
}

/// The identity map of `provider`, or the users provider's.
async fn identities(
    memory: &Memory,
    provider: Option<String>,
) -> Result<std::sync::Arc<dyn memory_core::IdentityMap>, MemoryError> {
    match provider {
        Some(name) => memory.identities_of(&name).await,
        None => memory.identities().await,
    }
}

/// A layout path as a document id, with an error that says which part is wrong.
fn parse_document(path: &str) -> Result<DocumentId, Failure> {
    if let Some(id) = DocumentId::from_relative_path(path) {
        return Ok(id);
    }
    match path.split('/').collect::<Vec<_>>().as_slice() {
        ["personalities", personality, "MEMORY.md"] => {
            PersonalityId::new(*personality)?;
        }
        ["users", user, "USER.md"] => {
            UserId::new(*user)?;
        }
        _ => {}
    }
    Err(Failure::invalid(format!(
        "{path:?} is not a document: expected MEMORY.md, personalities/<id>/MEMORY.md or users/<id>/USER.md"
    )))
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

async fn serve(
    memory: Memory,
    settings: &memory_web::Settings,
    address: SocketAddr,
    token: Option<String>,
    access_log: bool,
) -> Result<(), Failure> {
    let access = memory_web::Access::new(address, settings, token.as_deref())?;
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|err| Failure::other(format!("cannot listen on {address}: {err}")))?;
    let local = listener
        .local_addr()
        .map_err(|err| Failure::other(format!("cannot tell the address listened on: {err}")))?;
    // Tests and scripts read this one line to find the port, and may close stdout after it:
    // the rest goes to stderr.
    println!("Memory page: http://{local}/");
    eprintln!("API: http://{local}/v1 (OpenAPI document: http://{local}/v1/openapi.json)");
    if access.has_keys() {
        eprintln!(
            "The API needs a key (Authorization: Bearer <key>); the page asks for it once, or open it with #token=<key> appended."
        );
    }
    let service = memory_web::Service::new(Arc::new(memory.clone()), settings, access, access_log);
    service
        .serve(listener, stop_signal())
        .await
        .map_err(|err| Failure::other(format!("the memory service stopped: {err}")))?;
    settle(&memory).await;
    Ok(())
}

/// Completes on Ctrl-C or SIGTERM (what service managers and containers send to stop).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
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
