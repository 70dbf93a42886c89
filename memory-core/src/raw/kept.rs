//! What a store keeps of a document's history and what a reader sees of it: the revisions a
//! store may drop, those it keeps rebuilt from the changes it stored, and the view that heads
//! them with a hand edit not yet recorded.

use std::time::SystemTime;

use crate::document::Document;
use crate::error::MemoryError;
use crate::history::retention::Retention;
use crate::history::revision::{Revision, RevisionTip};
use crate::raw::apply::apply_batch;
use crate::sha256::sha256_hex;
use crate::update::Caps;

/// A document's kept revisions as a reader should see them: newest first, at most `limit`,
/// headed by an external revision for a change made since the newest one was recorded
/// (numbered as the next write will record it), so the log has no silent gap. That one counts
/// as the newest for `retention`: the view shows what the next write will keep, never more
/// than `keep`.
///
/// `recorded` is newest first; `current` is the document read in the same step.
pub fn history_view(
    mut recorded: Vec<Revision>,
    tip: &RevisionTip,
    current: &Document,
    limit: usize,
    now: SystemTime,
    retention: &Retention,
) -> Vec<Revision> {
    if let Some(external) = tip.unrecorded(current, now) {
        recorded.retain(|revision| {
            !retention.prunes(revision.number, revision.time, external.number, now)
        });
        recorded.insert(0, external);
    }
    recorded.truncate(limit);
    recorded
}

/// How many of a document's oldest stored revisions a store may drop once `tip` is the
/// newest, at `now`: those below the newest base ([`Revision::is_base`], or the first) at or
/// below the oldest revision `retention` keeps, so that every kept revision can still be
/// rebuilt. `stored` gives each revision's number, time and whether it is a base, oldest
/// first.
pub fn droppable(
    stored: impl IntoIterator<Item = (u64, SystemTime, bool)>,
    tip: u64,
    now: SystemTime,
    retention: &Retention,
) -> usize {
    let mut from = 0;
    for (index, (number, time, base)) in stored.into_iter().enumerate() {
        if base || number == 1 {
            from = index;
        }
        if !retention.prunes(number, time, tip, now) {
            break;
        }
    }
    from
}

/// The revisions of `recorded` (newest first, as a store reads them, back at least to the
/// base of the oldest one kept) that `retention` keeps once `tip` is the newest, at `now`,
/// each with its text: a revision stored as its change alone is rebuilt (see
/// `rebuild_texts`). A store reads back to a base when the oldest it read does not
/// [`Revision::stands_alone`].
///
/// # Errors
/// [`MemoryError::Corrupt`] at `<location>#<number>` for a kept revision that cannot be
/// rebuilt: a damaged chain, or one whose base is missing.
pub fn kept_revisions(
    recorded: Vec<Revision>,
    tip: u64,
    now: SystemTime,
    retention: &Retention,
    location: &str,
) -> Result<Vec<Revision>, MemoryError> {
    let (rebuilt, unreachable) = rebuild_texts(recorded, location)?;
    // A change past the retention may have lost its base with it; a kept one not.
    if let Some(lost) = unreachable
        && !retention.prunes(lost.number, lost.time, tip, now)
    {
        return Err(MemoryError::Corrupt {
            location: format!("{location}#{}", lost.number),
            reason: "it is stored as a change, and no revision before it is kept to rebuild \
                     it from"
                .to_owned(),
        });
    }
    Ok(rebuilt
        .into_iter()
        .filter(|revision| !retention.prunes(revision.number, revision.time, tip, now))
        .collect())
}

/// `revisions` (newest first, as a store reads them) with the text of every revision stored
/// as its change alone ([`Revision::is_change_only`]) rebuilt: its updates replayed on the
/// text of the revision before it (the empty document before revision 1, after a purge's
/// tombstone, or before a batch that starts with `replace`), each checked against the size
/// and SHA-256 recorded with it.
///
/// The oldest revisions may be changes whose base is older than what was read: they are
/// left out, and the second value is the newest of them. Anything else that cannot be
/// rebuilt is a damaged chain.
///
/// # Errors
/// [`MemoryError::Corrupt`] at `<location>#<number>` for a revision whose text is not the one
/// recorded, or whose revision before it is missing while older ones are there.
fn rebuild_texts(
    revisions: Vec<Revision>,
    location: &str,
) -> Result<(Vec<Revision>, Option<Revision>), MemoryError> {
    let corrupt = |number: u64, reason: String| MemoryError::Corrupt {
        location: format!("{location}#{number}"),
        reason,
    };
    let mut rebuilt: Vec<Revision> = Vec::with_capacity(revisions.len());
    let mut unreachable = None;
    // The number and text of the revision just rebuilt or read (`None`: it was redacted).
    let mut previous: Option<(u64, Option<String>)> = None;
    for mut revision in revisions.into_iter().rev() {
        if !revision.is_change_only() {
            let text = match revision.is_redacted() {
                true => None,
                false => Some(revision.text.clone().unwrap_or_default()),
            };
            previous = Some((revision.number, text));
            rebuilt.push(revision);
            continue;
        }
        let base = match &previous {
            _ if revision.stands_alone() => "",
            Some((number, Some(text))) if number + 1 == revision.number => text.as_str(),
            Some((number, None)) if number + 1 == revision.number => {
                return Err(corrupt(
                    revision.number,
                    format!(
                        "it is stored as a change, and the revision before it ({number}) was \
                         redacted without it being stored whole"
                    ),
                ));
            }
            None => {
                unreachable = Some(revision);
                continue;
            }
            Some((number, _)) => {
                return Err(corrupt(
                    revision.number,
                    format!(
                        "it is stored as a change, and the revision before it is missing (the one \
                         kept before it is {number})"
                    ),
                ));
            }
        };
        let applied = apply_batch(
            &revision.document,
            base,
            revision.updates.iter().enumerate(),
            Caps::default(),
        )
        .map_err(|err| corrupt(revision.number, format!("its updates do not apply: {err}")))?;
        if applied.text.len() != revision.bytes_after
            || sha256_hex(&applied.text) != revision.sha256_after
        {
            return Err(corrupt(
                revision.number,
                "rebuilt from the revision before it, its text is not the one its sha256_after \
                 and bytes_after describe"
                    .to_owned(),
            ));
        }
        previous = Some((revision.number, Some(applied.text.clone())));
        revision.text = Some(applied.text);
        rebuilt.push(revision);
    }
    rebuilt.reverse();
    Ok((rebuilt, unreachable))
}

#[cfg(test)]
mod tests;
