//! What the commands print, and how: stdout that a closed pipe ends quietly (the `print!` and
//! `println!` every module below the crate root uses), JSON, warnings, a document's line,
//! counted nouns and progress bars.

use memory_core::DocumentMeta;

use crate::failure::Failure;

/// `print!` and `println!` that end the program quietly when stdout is closed early
/// (`memory show | head`): std's own panic there (exit 101).
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!($($arg)*))
    };
}

macro_rules! println {
    () => {
        $crate::output::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Writes to stdout; a closed stdout ends the program quietly, as a pipe reader that has
/// seen enough (`head`) expects.
pub fn write_stdout(text: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(err) = std::io::stdout().lock().write_fmt(text) {
        if err.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {err}");
        std::process::exit(1);
    }
}

/// Prints `value` as pretty JSON on stdout.
pub fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    let json = serde_json::to_string_pretty(value)
        .map_err(|err| Failure::other(format!("cannot print JSON: {err}")))?;
    println!("{json}");
    Ok(())
}

/// Prints each warning on stderr, one line each.
pub fn warn(warnings: &[String]) {
    for warning in warnings {
        eprintln!("warning: {}", warning.replace('\n', "; "));
    }
}

/// `<document>  <location>  version <v>  modified <time>`.
pub fn describe(meta: &DocumentMeta) -> String {
    let modified = meta.modified.map_or_else(
        || "never written".to_owned(),
        |time| format!("modified {}", memory_core::format_utc(time)),
    );
    format!(
        "{}: {}  version {}  {modified}",
        meta.id, meta.location, meta.version
    )
}

/// `1 document`, `2 documents`: `n` with the noun for one or for many.
pub fn count(n: usize, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

/// A progress bar on stderr; hidden when stderr is not a terminal.
pub fn progress_bar(label: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(0);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} documents")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(label.to_owned());
    bar
}
