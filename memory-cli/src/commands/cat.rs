//! `memory cat`: one raw document, from where the wiring keeps it or from a named provider.

use memory_core::MemoryProvider;
use memory_wiring::Memory;

use super::parse_document;
use crate::failure::Failure;
use crate::output::{describe, print_json};

/// One raw document: its text on stdout, its location and version on stderr.
///
/// DOCUMENT is its path in the layout: MEMORY.md, personalities/<id>/MEMORY.md or
/// users/<id>/USER.md.
///
/// Example: memory cat personalities/ada/MEMORY.md > ada.md
#[derive(clap::Args)]
pub struct CatArgs {
    /// The document's layout path.
    document: String,
    /// Read it from this provider (default: where the wiring keeps it).
    #[arg(long)]
    provider: Option<String>,
    /// Print the document (text, version, location, modified) as JSON.
    #[arg(long)]
    json: bool,
}

/// `memory cat`: the document's text on stdout and its line on stderr, so the text can be
/// redirected to a file as it is (or the whole document as JSON).
pub async fn run(memory: &Memory, args: CatArgs) -> Result<(), Failure> {
    let CatArgs {
        document,
        provider,
        json,
    } = args;
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
    Ok(())
}
