//! `memory log`, `memory diff`, `memory revert` and `memory purge`: one document's history
//! from the command line, the document named by its layout path as `memory cat` names it.

use memory_core::{
    MemoryProvider, Revision, RevisionDiff, RevisionEntry, Surface, Version, format_utc,
    format_utc_seconds, revert_exactly_once,
};
use memory_wiring::Memory;

use crate::failure::Failure;
use crate::output::{count, print_json};
use crate::{parse_document, settle};

/// A revision number as the commands take it, with an error that names what was given.
pub fn parse_revision(text: &str) -> Result<u64, String> {
    text.trim().parse().map_err(|_| {
        format!("{text:?} is not a revision number: revisions are numbered 1, 2, 3, ... as `memory log` shows them")
    })
}

/// `memory log`: the newest `limit` revisions, one line each, or as JSON.
pub async fn log(
    memory: &Memory,
    path: &str,
    limit: usize,
    json: bool,
    with_text: bool,
) -> Result<(), Failure> {
    let id = parse_document(path)?;
    let revisions = memory.history(&id, limit).await?;
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
        println!("{}", line(revision));
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
pub async fn diff(
    memory: &Memory,
    path: &str,
    from: Option<u64>,
    to: Option<u64>,
) -> Result<(), Failure> {
    let id = parse_document(path)?;
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
pub async fn revert(
    memory: &Memory,
    path: &str,
    number: u64,
    if_match: Option<String>,
) -> Result<(), Failure> {
    let id = parse_document(path)?;
    // The wiring writes where the personality's settings send its memory: a personality
    // configured global writes MEMORY.md, never its own file, so reverting that is refused.
    let (ctx, store) = memory.writing(&id)?;
    let ctx = ctx.with_surface(Surface::Cli);
    let if_match = if_match.map(Version::new);
    // Sent again with one key when the reply is lost: it lands once, and a resend of a revert
    // that landed is replayed, not refused by its own guard.
    let reverted = revert_exactly_once(memory, &ctx, store, number, if_match.as_ref()).await;
    settle(memory).await;
    let report = reverted?;
    let Some(doc) = report.get(store) else {
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
pub async fn purge(memory: &Memory, path: &str, yes: bool) -> Result<(), Failure> {
    let id = parse_document(path)?;
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
