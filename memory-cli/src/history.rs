//! `memory log`, `memory diff`, `memory revert` and `memory purge`: one document's history
//! from the command line, the document named by its layout path as `memory cat` names it.

use std::time::SystemTime;

use memory_core::{
    DocumentId, MemoryContext, MemoryProvider, Revision, Surface, Version, revert_exactly_once,
    unified_diff,
};
use memory_wiring::Memory;
use serde_json::{Map, Value};

use crate::{Failure, count, format_time, parse_document, print_json, settle};

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
        let listed: Vec<Value> = revisions
            .iter()
            .map(|revision| revision_json(revision, with_text))
            .collect::<Result<_, _>>()?;
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
    let mut who = Vec::new();
    if let Some(personality) = &revision.personality {
        who.push(format!("personality {personality}"));
    }
    if let Some(user) = &revision.user {
        who.push(format!("user {user}"));
    }
    if let Some(session) = &revision.session {
        who.push(format!("session {session}"));
    }
    let who = if who.is_empty() {
        String::new()
    } else {
        format!("  ({})", who.join(", "))
    };
    let sizes = format!("{} → {} bytes", revision.bytes_before, revision.bytes_after);
    format!(
        "{:>4}  {}  {:<8}  {sizes:<20}  {}{who}",
        revision.number,
        utc(revision.time),
        revision.surface.to_string(),
        revision.what_changed(),
    )
}

/// `2025-06-01 10:00:02` (UTC).
fn utc(time: SystemTime) -> String {
    let rfc3339 = format_time(time);
    match rfc3339.strip_suffix('Z') {
        Some(seconds) => seconds.replacen('T', " ", 1),
        // A time RFC 3339 cannot show: said as it is.
        None => rfc3339,
    }
}

/// A revision for `memory log --json`: its wire form, plus `path` (the document's layout path),
/// `version` (the version after, what `--if-match` takes), `time_utc` (RFC 3339 beside `time`
/// in milliseconds) and `tombstone`,
/// with every optional field present (null when unknown) so scripts need not test for keys.
/// The text after is left out unless `with_text`: a hundred revisions of a long document are
/// a lot to print for a log.
fn revision_json(revision: &Revision, with_text: bool) -> Result<Value, Failure> {
    let value = serde_json::to_value(revision)
        .map_err(|err| Failure::other(format!("cannot print JSON: {err}")))?;
    let Value::Object(mut fields) = value else {
        return Err(Failure::other(
            "a revision did not serialize as a JSON object",
        ));
    };
    let mut out = Map::new();
    out.insert("number".into(), revision.number.into());
    out.insert("path".into(), revision.document.relative_path().into());
    out.insert("version".into(), revision.version_after.as_str().into());
    out.insert("time_utc".into(), format_time(revision.time).into());
    out.insert("tombstone".into(), revision.is_tombstone().into());
    for key in ["personality", "user", "idempotency_key", "session"] {
        fields.entry(key).or_insert(Value::Null);
    }
    fields.entry("updates").or_insert(Value::Array(Vec::new()));
    if with_text {
        fields.entry("text").or_insert(Value::Null);
    } else {
        fields.remove("text");
    }
    out.extend(fields);
    Ok(Value::Object(out))
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
    let label = |number: u64| format!("{path}@{number}");
    let (old, old_label, new, new_label) = match (from, to) {
        (Some(from), Some(to)) => (
            text_after(&id, &history, from)?,
            label(from),
            text_after(&id, &history, to)?,
            label(to),
        ),
        (Some(from), None) => (
            text_after(&id, &history, from)?,
            label(from),
            memory.read(&id).await?.text,
            format!("{path}@current"),
        ),
        (None, _) => {
            let Some(newest) = history.first() else {
                return Err(Failure::invalid(format!(
                    "{path} has no revisions to compare: it was never written, or its provider keeps no history"
                )));
            };
            let new = text_after(&id, &history, newest.number)?;
            let before = newest.number - 1;
            // A purge's tombstone left the empty document: what the write after it started from.
            let old = match history.iter().find(|revision| revision.number == before) {
                Some(tombstone) if tombstone.is_tombstone() => String::new(),
                _ => text_after(&id, &history, before)?,
            };
            (old, label(before), new, label(newest.number))
        }
    };
    print!("{}", unified_diff(&old, &new, &old_label, &new_label));
    Ok(())
}

/// The text `id` had after revision `number`; 0 is the empty document before the first.
fn text_after(id: &DocumentId, history: &[Revision], number: u64) -> Result<String, Failure> {
    if number == 0 {
        return Ok(String::new());
    }
    let Some(revision) = history.iter().find(|revision| revision.number == number) else {
        let kept = match (history.last(), history.first()) {
            (Some(only), Some(newest)) if only.number == newest.number => {
                format!("only revision {} is kept", only.number)
            }
            (Some(oldest), Some(newest)) => {
                format!("revisions {} to {} are kept", oldest.number, newest.number)
            }
            _ => "it has no revisions".to_owned(),
        };
        return Err(Failure::invalid(format!(
            "{} has no revision {number}: {kept} (see memory log {})",
            id.relative_path(),
            id.relative_path()
        )));
    };
    revision.text.clone().ok_or_else(|| {
        Failure::invalid(format!(
            "revision {number} of {} is the tombstone of a purge, which keeps no content",
            id.relative_path()
        ))
    })
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
    let (ctx, store) = MemoryContext::writing(&id);
    let ctx = ctx.with_surface(Surface::Cli);
    // The wiring writes where the personality's settings send its memory: a personality
    // configured global writes MEMORY.md, never its own file, which it would revert instead.
    let routed = memory
        .context(ctx.personality.clone(), ctx.user.clone())
        .document(store);
    if routed != id {
        return Err(Failure::invalid(format!(
            "{path} is not where {} keeps its memory: the config gives it global scope, so its writes go to {}; revert that instead, or change its scope to revert this file",
            ctx.personality,
            routed.relative_path()
        )));
    }
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
