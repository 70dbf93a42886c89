//! `memory migrate`: copy every document and identity link between two providers, verified
//! by hash; or move Ethos's first-layout root `USER.md` into a user's profile.

use std::collections::HashSet;
use std::path::Path;

use memory_core::raw::{apply_batch, sha256_hex};
use memory_core::{
    Caps, Document, DocumentId, IdentityMap, IfMatch, MemoryContext, MemoryError, MemoryProvider,
    MemoryUpdate, Surface, UserId, Version,
};
use memory_markdown::LayoutName;
use memory_wiring::{Memory, ProviderConfig};

use super::settle;
use crate::failure::Failure;
use crate::output::{count, progress_bar};

/// Copy every document and identity link from one provider to another, verified by hash.
///
/// Documents already identical are skipped, so a second run copies nothing. A target
/// document holding lines its source lacks is left alone (exit 3) unless --force: content
/// decides, never the clocks of two machines. Identity links already in the target are
/// kept; one linked to another user there is reported (exit 3), never overwritten.
///
/// With --root-user, moves the USER.md of Ethos's first layout (~/.ethos/USER.md, at the
/// root, which this layout never reads) into users/<USER>/USER.md instead.
///
/// Example: memory migrate --from files --to shared
///
/// Example: memory migrate --root-user grace
#[derive(clap::Args)]
pub struct MigrateArgs {
    /// The provider to copy from.
    #[arg(long, required_unless_present = "root_user", requires = "to")]
    from: Option<String>,
    /// The provider to copy to.
    #[arg(long, requires = "from")]
    to: Option<String>,
    /// Move the USER.md at the root (Ethos's first layout, ~/.ethos/USER.md, which is
    /// never read) into users/<USER>/USER.md, verified by hash, and remove it.
    #[arg(long, value_name = "USER", conflicts_with_all = ["from", "to"])]
    root_user: Option<String>,
    /// Overwrite target documents that hold lines their source lacks.
    #[arg(long)]
    force: bool,
}

/// What happened to one document.
enum Outcome {
    /// Written and verified; `normalized` when the source was not in the form every write
    /// leaves (trimmed, ending in one newline), so the copy has that form instead.
    Copied {
        normalized: bool,
    },
    Identical,
    /// The target holds lines the source does not: copying would lose them.
    TargetHasMore,
}

/// What happened to the identity links.
#[derive(Default)]
struct Links {
    copied: usize,
    present: usize,
    /// `identity → user in the source, user in the target`.
    conflicts: Vec<String>,
}

/// `memory migrate`: [`root_user`] with `--root-user`, [`copy_between`] the two providers
/// otherwise; either way a recall index is left caught up with what was written.
pub async fn run(memory: &Memory, args: MigrateArgs) -> Result<(), Failure> {
    let MigrateArgs {
        from,
        to,
        root_user: user,
        force,
    } = args;
    let migrated = match (user, from, to) {
        (Some(user), ..) => root_user(memory, &user, force).await,
        (None, Some(from), Some(to)) => copy_between(memory, &from, &to, force).await,
        _ => unreachable!("clap requires --root-user, or --from with --to"),
    };
    settle(memory).await;
    migrated
}

/// `memory migrate --from --to`: every document of `from` copied to `to` unless identical or
/// holding more (unless `force`), then the identity links.
async fn copy_between(memory: &Memory, from: &str, to: &str, force: bool) -> Result<(), Failure> {
    let config = memory.config();
    if config.storage_of(from) == config.storage_of(to) {
        return Err(Failure::invalid(format!(
            "--from {from:?} and --to {to:?} keep their documents in the same place ({:?}); name two providers that store documents apart",
            config.storage_of(from)
        )));
    }
    let (source, target) = (memory.provider(from).await?, memory.provider(to).await?);
    let documents = source.list().await?;
    let bar = progress_bar(&format!("{from} → {to}"));
    bar.set_length(documents.len() as u64);
    let (mut copied, mut identical, mut refused, mut failed) = (0, 0, Vec::new(), Vec::new());
    for id in &documents {
        // One document that cannot be copied stops neither the others nor the links.
        let copied_one = match source.read(id).await {
            Ok(document) => copy(&document, target.as_ref(), force).await,
            Err(err) => Err(err),
        };
        match copied_one {
            Err(err) => failed.push(format!("{} ({err})", id.relative_path())),
            Ok(Outcome::Copied { normalized }) => {
                copied += 1;
                let note = if normalized {
                    " (normalized: surrounding whitespace trimmed, one final newline)"
                } else {
                    ""
                };
                bar.suspend(|| println!("copied {}{note}", id.relative_path()));
            }
            Ok(Outcome::Identical) => identical += 1,
            Ok(Outcome::TargetHasMore) => refused.push(id.relative_path()),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!(
        "{from} → {to}: {copied} copied, {identical} already identical, {} left alone (holding lines the copy would lose), {} failed, of {}",
        refused.len(),
        failed.len(),
        count(documents.len(), "document", "documents")
    );
    let links = copy_links(
        memory.identities_of(from).await?.as_ref(),
        memory.identities_of(to).await?.as_ref(),
    )
    .await?;
    println!(
        "identity links: {} copied, {} already there, {} in conflict",
        links.copied,
        links.present,
        links.conflicts.len()
    );
    let mut problems = Vec::new();
    if !failed.is_empty() {
        problems.push(format!(
            "{} could not be copied: {}",
            count(failed.len(), "document", "documents"),
            failed.join(", ")
        ));
    }
    if !refused.is_empty() {
        problems.push(format!(
            "{} in {to} left alone, holding lines their copy in {from} lacks ({}); merge them by hand, or pass --force to overwrite them",
            count(refused.len(), "document", "documents"),
            refused.join(", ")
        ));
    }
    if !links.conflicts.is_empty() {
        problems.push(format!(
            "{} linked to another user in {to} left as they are ({}); move one with `memory identity link --provider {to} --relink <platform> <platform-user> <user>`",
            count(links.conflicts.len(), "identity", "identities"),
            links.conflicts.join(", ")
        ));
    }
    match (problems.is_empty(), failed.is_empty()) {
        (true, _) => Ok(()),
        // Refusals and conflicts are decisions for a person (exit 3); failures are not.
        (false, true) => Err(Failure::conflict(problems.join("; "))),
        (false, false) => Err(Failure::other(problems.join("; "))),
    }
}

/// `memory migrate --root-user <id>`: Ethos's first layout kept one `USER.md` at the root
/// (`~/.ethos/USER.md`), which the layout never reads. Copies it into `users/<id>/USER.md`
/// through the provider that keeps profiles, as [`copy_between`] copies any document (verified by hash,
/// a profile already there with other lines left alone unless `force`), then removes the root
/// file, unless it changed meanwhile.
async fn root_user(memory: &Memory, user: &str, force: bool) -> Result<(), Failure> {
    let config = memory.config();
    let home = &config.users_provider;
    let Some(ProviderConfig::Markdown(markdown)) = config.providers.get(config.storage_of(home))
    else {
        return Err(Failure::invalid(format!(
            "--root-user moves the USER.md at a markdown root, and the provider that keeps users' profiles ({home}) keeps no markdown files"
        )));
    };
    if markdown.layout != LayoutName::Ethos {
        return Err(Failure::invalid(format!(
            "--root-user moves Ethos's first-layout USER.md, and {} is a Metis workspace, whose .metis/USER.md is read as it is",
            markdown.root.display()
        )));
    }
    let id = DocumentId::user(&UserId::new(user)?);
    let path = markdown.root.join("USER.md");
    let Some(text) = read_text(&path)? else {
        return Err(Failure::invalid(format!(
            "there is no USER.md at the root ({}): nothing to move",
            path.display()
        )));
    };
    let source = Document {
        id: id.clone(),
        version: Version::new(sha256_hex(&text)),
        text,
        location: path.display().to_string(),
        modified: None,
    };
    let target = memory.provider(home).await?;
    let outcome = copy(&source, target.as_ref(), force).await?;
    if let Outcome::TargetHasMore = outcome {
        return Err(Failure::conflict(format!(
            "{} already holds lines {} lacks; nothing was moved: merge them by hand, or pass --force to overwrite it",
            id.relative_path(),
            path.display()
        )));
    }
    // Removed only as it was copied: a hand edit meanwhile stays, to be moved again.
    if read_text(&path)?.map(|now| sha256_hex(&now)) != Some(source.version.as_str().to_owned()) {
        return Err(Failure::other(format!(
            "{} changed while it was moved; it is left in place: run the command again",
            path.display()
        )));
    }
    std::fs::remove_file(&path)
        .map_err(|err| Failure::other(format!("cannot remove {}: {err}", path.display())))?;
    let copied = match outcome {
        Outcome::Identical => "already held the same text",
        _ => "now holds it",
    };
    println!(
        "moved {} to {}: {} {copied} (SHA-256 {}); the root file is removed",
        path.display(),
        id.relative_path(),
        id.relative_path(),
        sha256_hex(&target.read(&id).await?.text)
    );
    Ok(())
}

/// The text of the file at `path`; `None` when there is none.
fn read_text(path: &Path) -> Result<Option<String>, MemoryError> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|err| MemoryError::Corrupt {
                location: path.display().to_string(),
                reason: format!(
                    "not valid UTF-8 (byte offset {}); fix or remove it by hand",
                    err.utf8_error().valid_up_to()
                ),
            }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(MemoryError::unavailable(path.display().to_string(), err)),
    }
}

/// Writes `document`'s text to `target`, guarded by the target version it was compared with,
/// then reads it back and checks the hash. A target that already holds text is compared by
/// content, never by modified times (two backends' clocks say nothing about each other): it is
/// overwritten only when every line it holds is in the source, or with `force`.
async fn copy(
    document: &Document,
    target: &dyn MemoryProvider,
    force: bool,
) -> Result<Outcome, MemoryError> {
    // Providers write only through updates, and every write leaves its text trimmed and
    // newline-terminated: a hand-edited source in another form is copied in that form.
    let (ctx, store) = MemoryContext::writing(&document.id);
    let ctx = ctx.with_surface(Surface::Cli);
    let replace = [MemoryUpdate::replace(store, document.text.clone())];
    let text = apply_batch(&document.id, "", [(0, &replace[0])], Caps::default())?.text;
    let existing = target.read(&document.id).await?;
    if sha256_hex(&existing.text) == sha256_hex(&text) {
        return Ok(Outcome::Identical);
    }
    if !force && !holds_every_line(&text, &existing.text) {
        return Ok(Outcome::TargetHasMore);
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

/// Whether every non-blank line of `other` (trimmed) is a line of `text`: copying `text` over
/// `other` then loses nothing.
fn holds_every_line(text: &str, other: &str) -> bool {
    let lines: HashSet<&str> = text.lines().map(str::trim).collect();
    other
        .lines()
        .map(str::trim)
        .all(|line| line.is_empty() || lines.contains(line))
}

/// Links every identity of `source` in `target`, keeping the target's links: one to the same
/// user is already there, one to another user is a conflict to report, never overwritten.
async fn copy_links(
    source: &dyn IdentityMap,
    target: &dyn IdentityMap,
) -> Result<Links, MemoryError> {
    let mut links = Links::default();
    for (identity, user) in source.identities().await? {
        match target.link(&identity, &user, false).await {
            Ok(None) => links.copied += 1,
            Ok(Some(_)) => links.present += 1,
            Err(MemoryError::IdentityTaken { linked_to, .. }) => links
                .conflicts
                .push(format!("{identity} → {user} here, {linked_to} there")),
            Err(err) => return Err(err),
        }
    }
    Ok(links)
}

#[cfg(test)]
mod tests {
    use super::holds_every_line;

    #[test]
    fn a_copy_loses_nothing_only_when_it_holds_every_line() {
        let source = "Likes tea.\n\nFlies to Lisbon.\n";
        assert!(holds_every_line(source, ""));
        assert!(holds_every_line(source, "Likes tea.\n"));
        assert!(holds_every_line(
            source,
            "  Flies to Lisbon.\n\n\nLikes tea."
        ));
        assert!(!holds_every_line(
            source,
            "Likes tea.\n\nAllergic to peanuts.\n"
        ));
    }
}
