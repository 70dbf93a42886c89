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
// The command line: `Cli`, its `Command`s, the version line, and the dispatch (`Cli::run`).
mod cli;
// One file per command: its arguments, help text and body (the history commands share one).
mod commands;

use std::process::ExitCode;

use clap::Parser;

use cli::Cli;

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
            eprintln!("{} (see memory --help)", cli::one_line(&err));
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
    match runtime.block_on(cli.run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}
