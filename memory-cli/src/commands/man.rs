//! `memory man`: memory's man pages (roff), from the same definitions as --help: `memory.1` on
//! stdout, or it and one page per subcommand written into a folder.

use std::path::{Path, PathBuf};

use crate::failure::Failure;

/// Print memory's man page (roff), from the same definitions as --help; with --dir, write
/// it and one page per subcommand (memory-show.1, memory-key-new.1, ...), the pages its
/// SUBCOMMANDS section refers to.
///
/// Example: memory man --dir ~/.local/share/man/man1   (then: man memory-show)
#[derive(clap::Args)]
pub struct ManArgs {
    /// Write memory.1 and every subcommand's page into this folder (made when missing),
    /// and print the path of each page written, instead of printing memory.1.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// `memory man`: the pages of `command` (the whole command line, as clap defines it): with
/// `--dir`, written and their paths printed; without, `memory.1` printed.
pub fn run(args: ManArgs, command: clap::Command) -> Result<(), Failure> {
    let command = man_command(command);
    match args.dir {
        Some(dir) => {
            for page in man_pages(command, &dir)? {
                println!("{}", page.display());
            }
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(command)
                .render(&mut out)
                .map_err(|err| Failure::other(err.to_string()))?;
            print!("{}", String::from_utf8_lossy(&out));
        }
    }
    Ok(())
}

/// The command line as its man pages show it: without clap's `help` subcommand, which has no
/// page of its own (`memory help X` is `memory X --help`), so every `memory-X(1)` a page names
/// is one [`man_pages`] writes.
fn man_command(command: clap::Command) -> clap::Command {
    let mut command = command.disable_help_subcommand(true);
    command.build();
    command
}

/// Writes `memory.1` and a page per subcommand, nested ones included (`memory-key-new.1`), into
/// `dir`, made when missing; returns the paths written, `memory.1` first.
fn man_pages(command: clap::Command, dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    fn write(
        command: clap::Command,
        dir: &Path,
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
    write(command, dir, &mut written).map_err(failed)?;
    Ok(written)
}
