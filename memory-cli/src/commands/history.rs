//! `memory log`, `memory diff`, `memory revert`, `memory redact` and `memory purge`: one
//! document's history from the command line, the document named by its layout path as `memory
//! cat` names it.

use memory_core::{
    MemoryProvider, Revision, RevisionDiff, RevisionEntry, Surface, Version, format_utc,
    format_utc_seconds, history_across_renames, redactable, revert_exactly_once,
};
use memory_wiring::Memory;

use super::{parse_document, settle};
use crate::failure::Failure;
use crate::output::{count, print_json};

/// A document's revisions, newest first: number, time (UTC), surface, sizes, what changed
/// and who; a note's go on back through the paths it had before a rename, each marked with
/// its path then.
///
/// Every write is a revision (tool, cli, web, api; external for a hand edit noticed since).
/// --json prints an array of revisions: number, path, version (after it; what --if-match
/// takes), version_before, time (ms since the epoch), time_utc, surface, personality, user,
/// idempotency_key, session, bytes_before, bytes_after, sha256_before, sha256_after,
/// updates, tombstone, redacted_at (ms since the epoch; null unless redacted), and with --text
/// the whole text after it (null for a tombstone or a redacted revision).
///
/// Example: memory log personalities/ada/MEMORY.md --limit 5
#[derive(clap::Args)]
pub struct LogArgs {
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
}

/// A unified diff of a document between two revisions.
///
/// With no revision: the newest against the one before it. With FROM alone: revision FROM
/// against the document as it is now. Revision 0 is the empty document before the first.
/// Prints nothing when the texts are equal.
///
/// Example: memory diff personalities/ada/MEMORY.md 3 5
#[derive(clap::Args)]
pub struct DiffArgs {
    /// The document's layout path.
    document: String,
    /// The revision to compare from.
    #[arg(value_parser = parse_revision)]
    from: Option<u64>,
    /// The revision to compare to (default: the document now).
    #[arg(value_parser = parse_revision)]
    to: Option<u64>,
}

/// Put a document back to the text it had after a revision.
///
/// The revert is a revision of its own (surface cli), so it can be reverted too; a recall
/// index follows it like any write.
///
/// Example: memory revert personalities/ada/MEMORY.md 3
#[derive(clap::Args)]
pub struct RevertArgs {
    /// The document's layout path.
    document: String,
    /// The revision whose text to restore (see memory log).
    #[arg(value_parser = parse_revision)]
    revision: u64,
    /// Refuse (exit 3) unless the document is still at this version.
    #[arg(long, value_name = "VERSION")]
    if_match: Option<String>,
}

/// Erase a document for good: its text, its history, its idempotency receipts and its
/// recall index entries (the right to be forgotten).
///
/// Without --yes it only says what would be erased, and exits 2. Its history keeps one
/// tombstone revision without content, recording when the purge happened.
///
/// Example: memory purge users/grace/USER.md --yes
#[derive(clap::Args)]
pub struct PurgeArgs {
    /// The document's layout path.
    document: String,
    /// Erase it: there is no undo.
    #[arg(long)]
    yes: bool,
}

/// Erase the text and updates of one revision of a document's history, for good.
///
/// The revision keeps its number, time, origin, sizes and hashes, and is shown as redacted;
/// it can no longer be reverted to or compared. The document itself is untouched, so the
/// revision whose text it holds now cannot be redacted (exit 4): change the document first.
/// Without --yes it only says what would be erased, and exits 2.
///
/// Example: memory redact users/grace/USER.md 3 --yes
#[derive(clap::Args)]
pub struct RedactArgs {
    /// The document's layout path (a note's too).
    document: String,
    /// The revision whose text to erase (see memory log).
    #[arg(value_parser = parse_revision)]
    revision: u64,
    /// Erase it: there is no undo.
    #[arg(long)]
    yes: bool,
}

/// A revision number as the commands take it, with an error that names what was given.
fn parse_revision(text: &str) -> Result<u64, String> {
    text.trim().parse().map_err(|_| {
        format!("{text:?} is not a revision number: revisions are numbered 1, 2, 3, ... as `memory log` shows them")
    })
}

/// `memory log`: the newest `limit` revisions, one line each, or as JSON.
pub async fn log(memory: &Memory, args: LogArgs) -> Result<(), Failure> {
    let LogArgs {
        document: path,
        limit,
        json,
        text: with_text,
    } = args;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let id = parse_document(&path)?;
    // A note's history goes on back through the paths it had before a rename.
    let revisions = history_across_renames(memory, &id, limit).await?;
    if json {
        let listed: Vec<RevisionEntry> = revisions
            .iter()
            .map(|revision| RevisionEntry::new(revision, with_text))
            .collect();
        return print_json(&listed);
    }
    if revisions.is_empty() {
        println!("{path} has no revisions: it was never written, or its provider keeps no history");
    }
    for revision in &revisions {
        match revision.document == id {
            true => println!("{}", line(revision)),
            false => println!(
                "{}  [{}]",
                line(revision),
                revision.document.relative_path()
            ),
        }
    }
    Ok(())
}

/// One revision as `memory log` prints it:
/// `   3  2025-06-01 10:00:02  tool      27 → 5 bytes          replace  (personality ada, user grace)`.
pub fn line(revision: &Revision) -> String {
    let who = revision
        .who()
        .map_or_else(String::new, |who| format!("  ({who})"));
    let sizes = format!("{} → {} bytes", revision.bytes_before, revision.bytes_after);
    format!(
        "{:>4}  {}  {:<8}  {sizes:<20}  {}{who}",
        revision.number,
        // A time RFC 3339 cannot show: said as it is.
        format_utc_seconds(revision.time).unwrap_or_else(|| format_utc(revision.time)),
        revision.surface.to_string(),
        revision.what_changed(),
    )
}

/// `memory diff`: a unified diff between two revisions, a revision and the document as it is
/// now, or (with neither) the newest revision and the one before it.
pub async fn diff(memory: &Memory, args: DiffArgs) -> Result<(), Failure> {
    let DiffArgs {
        document: path,
        from,
        to,
    } = args;
    let id = parse_document(&path)?;
    let history = memory.history(&id, usize::MAX).await?;
    let current = match (from, to) {
        (Some(_), None) => memory.read(&id).await?.text,
        _ => String::new(),
    };
    let diff = RevisionDiff::between(
        &id,
        &history,
        &current,
        from,
        to,
        memory_core::diff_deadline(),
    )?;
    print!("{}", diff.diff);
    Ok(())
}

/// `memory revert`: the document back to the text revision `number` left, as a revision of
/// its own with surface `cli`.
pub async fn revert(memory: &Memory, args: RevertArgs) -> Result<(), Failure> {
    let RevertArgs {
        document: path,
        revision: number,
        if_match,
    } = args;
    let id = parse_document(&path)?;
    // The wiring writes where the personality's settings send its memory: a personality
    // configured global writes MEMORY.md, never its own file, so reverting that is refused.
    let (ctx, _) = memory.writing(&id)?;
    let ctx = ctx.with_surface(Surface::Cli);
    let if_match = if_match.map(Version::new);
    // Sent again with one key when the reply is lost: it lands once, and a resend of a revert
    // that landed is replayed, not refused by its own guard.
    let reverted = revert_exactly_once(memory, &ctx, &id, number, if_match.as_ref()).await;
    settle(memory).await;
    let report = reverted?;
    let Some(doc) = report.documents.first() else {
        return Err(Failure::other(format!(
            "the provider reported no write of {path}"
        )));
    };
    if !doc.written {
        println!("{path} already reads as revision {number} left it; nothing written");
        return Ok(());
    }
    // The revert's own revision; a write landing just after it would be the newest instead,
    // so it is named only when it is the revert.
    let newest = memory
        .history(&id, 1)
        .await
        .ok()
        .and_then(|revisions| revisions.into_iter().next())
        .filter(|revision| revision.version_after == doc.version_after);
    let (as_revision, undo) = match newest {
        Some(revision) => (
            format!(" as revision {}", revision.number),
            format!(
                "; undo with: memory revert {path} {}",
                revision.number.saturating_sub(1)
            ),
        ),
        None => (String::new(), String::new()),
    };
    println!(
        "{path}: reverted to revision {number}{as_revision} ({} → {} bytes, version {}){undo}",
        doc.bytes_before, doc.bytes_after, doc.version_after
    );
    Ok(())
}

/// `memory purge`: without `yes`, what would be erased and a refusal; with it, the document,
/// its history, its receipts and its recall index rows erased.
pub async fn purge(memory: &Memory, args: PurgeArgs) -> Result<(), Failure> {
    let PurgeArgs {
        document: path,
        yes,
    } = args;
    let id = parse_document(&path)?;
    if !yes {
        let document = memory.read(&id).await?;
        let revisions = memory.history(&id, usize::MAX).await?;
        return Err(Failure::invalid(format!(
            "memory purge erases {path} for good: {} of text, {} of history, its idempotency receipts and its recall index entries. It cannot be undone. To erase it, run again with --yes",
            count(document.text.len(), "byte", "bytes"),
            count(revisions.len(), "revision", "revisions"),
        )));
    }
    let purged = memory.purge(&id, Surface::Cli).await?;
    settle(memory).await;
    if purged.bytes == 0 && purged.revisions == 0 {
        println!("{path} held nothing to erase: it was never written, or was purged already");
        return Ok(());
    }
    let tombstone = match &purged.tombstone {
        Some(tombstone) => format!(
            "; its history keeps only a tombstone without content, revision {}",
            tombstone.number
        ),
        None => "; no history is kept".to_owned(),
    };
    println!(
        "purged {path} ({}): erased {} of text and {} of history{tombstone}",
        purged.location,
        count(purged.bytes, "byte", "bytes"),
        count(purged.revisions, "revision", "revisions"),
    );
    Ok(())
}

/// `memory redact`: without `yes`, what would be erased and a refusal; with it, the text and
/// updates of revision `number` erased from the document's history.
pub async fn redact(memory: &Memory, args: RedactArgs) -> Result<(), Failure> {
    let RedactArgs {
        document: path,
        revision: number,
        yes,
    } = args;
    let id = parse_document(&path)?;
    if number == 0 {
        return Err(Failure::invalid(format!(
            "revision 0 of {path} is the empty document before the first, which holds no text to redact; revisions are numbered 1, 2, 3, ... as `memory log` shows them"
        )));
    }
    if !yes {
        // The provider's own rules on what its history shows, so the dry run refuses (and
        // exits) as the redaction would.
        let revisions = memory.history(&id, usize::MAX).await?;
        let revision = redactable(&id, &revisions, number)?;
        if let Some(at) = revision.redacted_at {
            println!(
                "{path}: revision {number} was redacted already ({}); nothing to erase",
                format_utc(at)
            );
            return Ok(());
        }
        return Err(Failure::invalid(format!(
            "memory redact erases the text and updates of revision {number} of {path} for good (recorded {} from {}, {} after it); its number, time, sizes and hashes stay in the history. It cannot be undone. To erase it, run again with --yes",
            format_utc(revision.time),
            revision.surface,
            count(revision.bytes_after, "byte", "bytes"),
        )));
    }
    let redacted = memory.redact(&id, number).await?;
    let at = redacted
        .redacted_at
        .map_or_else(String::new, |at| format!(", at {}", format_utc(at)));
    println!(
        "{path}: revision {number} redacted (its text and updates erased; its number, time, sizes and hashes kept{at})"
    );
    Ok(())
}
