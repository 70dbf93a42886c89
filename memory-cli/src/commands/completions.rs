//! `memory completions`: a shell's completion script, from the same definitions as --help.

use crate::failure::Failure;

/// Print a shell's completion script for memory.
///
/// Example: mkdir -p ~/.local/share/bash-completion/completions &&
/// memory completions bash > ~/.local/share/bash-completion/completions/memory
#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// The shell: bash, elvish, fish, powershell or zsh.
    shell: clap_complete::Shell,
}

/// `memory completions`: the script for the shell of `args` completing `command` (the whole
/// command line, as clap defines it), on stdout.
pub fn run(args: CompletionsArgs, mut command: clap::Command) -> Result<(), Failure> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut command, "memory", &mut out);
    print!("{}", String::from_utf8_lossy(&out));
    Ok(())
}
