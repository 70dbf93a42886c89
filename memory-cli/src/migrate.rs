//! `memory migrate`: copy every document between two providers, verified by hash.

use memory_core::{
    Caps, Document, DocumentId, IfMatch, MemoryContext, MemoryError, MemoryProvider, MemoryScope,
    MemoryUpdate, PersonalityId, Store, UserId, apply_batch, sha256_hex,
};
use memory_wiring::Memory;

use crate::{Failure, progress_bar};

/// What happened to one document.
enum Outcome {
    /// Written and verified; `normalized` when the source was not in the form every write
    /// leaves (trimmed, ending in one newline), so the copy has that form instead.
    Copied {
        normalized: bool,
    },
    Identical,
    /// The target was written more recently than the source and differs from it.
    TargetNewer,
}

pub async fn run(memory: &Memory, from: &str, to: &str, force: bool) -> Result<(), Failure> {
    if from == to {
        return Err(Failure::invalid(format!(
            "--from and --to are both {from:?}; name two different providers"
        )));
    }
    let (source, target) = (memory.provider(from).await?, memory.provider(to).await?);
    let documents = source.list().await?;
    let bar = progress_bar(&format!("{from} → {to}"));
    bar.set_length(documents.len() as u64);
    let (mut copied, mut identical, mut refused) = (0, 0, Vec::new());
    for id in &documents {
        let document = source.read(id).await?;
        match copy(&document, target.as_ref(), force).await? {
            Outcome::Copied { normalized } => {
                copied += 1;
                let note = if normalized {
                    " (normalized: surrounding whitespace trimmed, one final newline)"
                } else {
                    ""
                };
                bar.suspend(|| println!("copied {}{note}", id.relative_path()));
            }
            Outcome::Identical => identical += 1,
            Outcome::TargetNewer => refused.push(id.relative_path()),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!(
        "{from} → {to}: {copied} copied, {identical} already identical, {} left alone (newer in {to}), of {} documents",
        refused.len(),
        documents.len()
    );
    if refused.is_empty() {
        Ok(())
    } else {
        Err(Failure {
            code: 3,
            message: format!(
                "{} documents in {to} changed after their copy in {from} and were left alone ({}); pass --force to overwrite them",
                refused.len(),
                refused.join(", ")
            ),
        })
    }
}

/// Writes `document`'s text to `target`, guarded by the target version it was compared with,
/// then reads it back and checks the hash.
async fn copy(
    document: &Document,
    target: &dyn MemoryProvider,
    force: bool,
) -> Result<Outcome, MemoryError> {
    // Providers write only through updates, and every write leaves its text trimmed and
    // newline-terminated: a hand-edited source in another form is copied in that form.
    let (ctx, store) = writer_of(&document.id);
    let replace = [MemoryUpdate::replace(store, document.text.clone())];
    let text = apply_batch(&document.id, "", [(0, &replace[0])], Caps::default())?.text;
    let existing = target.read(&document.id).await?;
    if sha256_hex(&existing.text) == sha256_hex(&text) {
        return Ok(Outcome::Identical);
    }
    let target_newer = match (existing.modified, document.modified) {
        (None, _) => false,
        (Some(target), Some(source)) => target > source,
        // A written target and a source that cannot say when it was written: keep the target.
        (Some(_), None) => true,
    };
    if target_newer && !force {
        return Ok(Outcome::TargetNewer);
    }
    let if_match = IfMatch::only(store, Some(existing.version));
    target.sync(&ctx, &replace, &if_match).await?;
    let copied = target.read(&document.id).await?;
    if sha256_hex(&copied.text) != sha256_hex(&text) {
        return Err(MemoryError::Corrupt {
            location: copied.location,
            reason: format!(
                "the copy of {} reads back with SHA-256 {}, not the source's {}",
                document.id,
                sha256_hex(&copied.text),
                sha256_hex(&text)
            ),
        });
    }
    Ok(Outcome::Copied {
        normalized: text != document.text,
    })
}

/// A context whose `store` document is `id`. The ids it does not need are placeholders: the
/// update touches only `store`.
fn writer_of(id: &DocumentId) -> (MemoryContext, Store) {
    let placeholder_personality = || PersonalityId::new("migrate").expect("a valid id");
    let placeholder_user = || UserId::new("migrate").expect("a valid id");
    let ctx = match id {
        DocumentId::GlobalMemory => {
            MemoryContext::new(placeholder_personality(), placeholder_user())
                .with_scope(MemoryScope::Global)
        }
        DocumentId::PersonalityMemory { personality } => {
            MemoryContext::new(personality.clone(), placeholder_user())
        }
        DocumentId::UserProfile { user } => {
            MemoryContext::new(placeholder_personality(), user.clone())
        }
    };
    (ctx, id.store())
}
