//! A document's history: its revisions a page at a time, one revision, a diff between two,
//! revert, and redacting one revision.

use axum::Json;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use memory_core::{MemoryError, MemoryProvider, RevisionDiff, RevisionEntry, revert_exactly_once};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::text::only;
use super::{LayoutPath, RevisionNumber, allowed};
use crate::api::{Session, WriteSurface, origin, report_response, with_next_link};
use crate::auth::Principal;
use crate::conditional;
use crate::problem::Problem;
use crate::replay::idempotency_key;
use crate::state::App;

/// The default and largest number of revisions one page lists.
const DEFAULT_REVISIONS: u32 = 20;
const MAX_REVISIONS: u32 = 100;

/// Which revisions to list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct RevisionsQuery {
    /// The most revisions to list (default 20).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    #[serde(default, deserialize_with = "crate::api::whole::optional")]
    limit: Option<u64>,
    /// List only revisions numbered below this (the `next_before` of the page before).
    #[param(value_type = Option<i64>, minimum = 1)]
    #[serde(default, deserialize_with = "crate::api::whole::optional")]
    before: Option<u64>,
    /// Include each revision's whole text.
    text: Option<bool>,
    /// Include each revision's change as a unified diff against the revision before it.
    diff: Option<bool>,
}

/// One listed revision, with its change when asked for.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RevisionItem {
    #[serde(flatten)]
    entry: RevisionEntry,
    /// With `diff=true`: the change from the revision before (the empty document for the
    /// first, or after a purge). Absent for a tombstone and for the oldest kept revision when
    /// older ones were pruned.
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
    /// This is the oldest revision kept and older ones were pruned: nothing to compare it
    /// with.
    oldest_kept: bool,
}

/// One page of a document's revisions.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RevisionsPage {
    /// The document's path in the layout.
    path: String,
    /// The revisions, newest first.
    revisions: Vec<RevisionItem>,
    /// Pass as `before` for the next page; null on the last.
    next_before: Option<u64>,
}

/// List a document's revisions, newest first: every change is one, and a hand edit not yet
/// recorded heads the list as an `external` one.
pub(super) async fn revisions(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    query: RevisionsQuery,
) -> Result<Response, Problem> {
    let document = allowed(&app, caller, document)?;
    let limit = crate::request::page_size(
        query.limit,
        DEFAULT_REVISIONS as usize,
        MAX_REVISIONS as usize,
    )?;
    let kept = app.memory.history(&document, usize::MAX).await?;
    let from = match query.before {
        Some(0) => return Err(Problem::invalid("before must be at least 1")),
        Some(before) => kept.partition_point(|revision| revision.number >= before),
        None => 0,
    };
    let with_text = query.text.unwrap_or(false);
    let with_diff = query.diff.unwrap_or(false);
    let path = document.relative_path();
    let shown = from..kept.len().min(from.saturating_add(limit));
    let (kept, diffs) = if with_diff {
        let (path, shown) = (path.clone(), shown.clone());
        app.diffing(move || {
            let deadline = memory_core::diff_deadline();
            let diffs = kept[shown]
                .iter()
                .map(|revision| revision.diff_in(&kept, &path, deadline))
                .collect();
            (kept, diffs)
        })
        .await?
    } else {
        let none = vec![None; shown.len()];
        (kept, none)
    };
    let revisions: Vec<RevisionItem> = kept[shown.clone()]
        .iter()
        .zip(diffs)
        .enumerate()
        .map(|(offset, (revision, diff))| {
            let previous = kept.get(from + offset + 1);
            RevisionItem {
                entry: seen_by(RevisionEntry::new(revision, with_text), caller),
                diff,
                oldest_kept: previous.is_none() && revision.number > 1,
            }
        })
        .collect();
    let next_before = (kept.len() > from + limit)
        .then(|| revisions.last().map(|item| item.entry.number))
        .flatten();
    let next = next_before.map(|before| {
        let mut next = format!(
            "{}?limit={limit}&before={before}",
            super::history_route(&document, "revisions")
        );
        for (flag, on) in [("text", with_text), ("diff", with_diff)] {
            if on {
                next.push_str(&format!("&{flag}=true"));
            }
        }
        next
    });
    let page = RevisionsPage {
        path,
        revisions,
        next_before,
    };
    Ok(with_next_link(Json(page).into_response(), next))
}

/// `entry` as `caller` may see it: who wrote a revision in another user's conversation (the
/// user, the session, the idempotency key) is not for a key restricted to other users.
fn seen_by(mut entry: RevisionEntry, caller: &Principal) -> RevisionEntry {
    if entry
        .user
        .as_ref()
        .is_some_and(|user| !caller.may_user(user))
    {
        entry.user = None;
        entry.session = None;
        entry.idempotency_key = None;
    }
    entry
}

/// One revision, with its whole text (null for a purge's tombstone).
pub(super) async fn revision(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    number: RevisionNumber,
) -> Result<Json<RevisionEntry>, Problem> {
    let document = allowed(&app, caller, document)?;
    let kept = app.memory.history(&document, usize::MAX).await?;
    kept.iter()
        .find(|revision| revision.number == number.0)
        .map(|revision| Json(seen_by(RevisionEntry::new(revision, true), caller)))
        .ok_or_else(|| {
            // The code a diff or a revert naming that revision carries, so a client matches
            // one code for "not kept" whichever route it asked.
            let code = MemoryError::RevisionNotFound {
                document: document.clone(),
                number: number.0,
                reason: String::new(),
            }
            .code();
            Problem::not_found(format!(
                "{} keeps no revision {}; list its revisions for the ones kept",
                document.relative_path(),
                number.0
            ))
            .with_code(code)
        })
}

/// Which two states of a document to compare.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct DiffQuery {
    /// The revision to compare from (0: the empty document before the first). Without it:
    /// the revision before `to`.
    #[param(value_type = Option<i64>, minimum = 0)]
    #[serde(default, deserialize_with = "crate::api::whole::optional")]
    from: Option<u64>,
    /// The revision to compare to: with `from`, the document as it is now when unset; without
    /// `from`, the newest revision when unset.
    #[param(value_type = Option<i64>, minimum = 0)]
    #[serde(default, deserialize_with = "crate::api::whole::optional")]
    to: Option<u64>,
}

/// A unified diff of a document between two revisions, a revision and now, or a revision (the
/// newest, without `to`) and the one before it.
pub(super) async fn diff(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    query: DiffQuery,
) -> Result<Json<RevisionDiff>, Problem> {
    let document = allowed(&app, caller, document)?;
    let history = app.memory.history(&document, usize::MAX).await?;
    let current = match (query.from, query.to) {
        (Some(_), None) => app.memory.read(&document).await?.text,
        _ => String::new(),
    };
    let diff = app
        .diffing(move || {
            RevisionDiff::between(
                &document,
                &history,
                &current,
                query.from,
                query.to,
                memory_core::diff_deadline(),
            )
        })
        .await??;
    Ok(Json(diff))
}

/// Which revision to put a document back to.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RevertRequest {
    /// The revision whose text the document gets back.
    #[serde(deserialize_with = "crate::api::whole::required")]
    #[schema(value_type = i64, minimum = 1)]
    number: u64,
    /// Where the write comes from, as its revision records it (default `api`).
    #[serde(default)]
    surface: Option<WriteSurface>,
    /// The caller's session, recorded in the revision.
    #[serde(default)]
    session: Option<Session>,
}

/// Put a document back to the text a kept revision left: a replace through the agent's write
/// path, itself a revision (so it can be reverted too); `If-Match`, when sent, guards it.
pub(super) async fn revert(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    headers: &HeaderMap,
    request: RevertRequest,
) -> Result<Response, Problem> {
    let document = allowed(&app, caller, document)?;
    if request.number == 0 {
        return Err(Problem::invalid(
            "number is 0: revisions are numbered from 1 (revision 0 is the empty document before the first); nothing was written",
        ));
    }
    let guard = conditional::if_match(headers)?;
    let (ctx, _) = app.deployment.writing(&document)?;
    let mut ctx = origin(ctx, request.surface, request.session);
    if let Some(key) = idempotency_key(headers)? {
        ctx = ctx.with_idempotency_key(key);
    }
    let if_match = guard.and_then(|guard| guard.version());
    let report = revert_exactly_once(
        &app.memory,
        &ctx,
        &document,
        request.number,
        if_match.as_ref(),
    )
    .await?;
    Ok(report_response(only(report, &document)?))
}

/// Erase the text and updates of one kept revision: it keeps its number, time, origin, sizes
/// and hashes, and is answered as the history now shows it. The document is untouched, so the
/// revision whose text it holds is refused (422 `revision-in-use`); one redacted already is
/// answered as it is, nothing written.
pub(super) async fn redact(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    headers: &HeaderMap,
    number: RevisionNumber,
) -> Result<Json<RevisionEntry>, Problem> {
    let document = allowed(&app, caller, document)?;
    // A redaction is idempotent by itself, so the key names no receipt; a malformed one is
    // still the client's mistake, refused as every write refuses it (a note's route is not
    // one the replay layer sees).
    idempotency_key(headers)?;
    if number.0 == 0 {
        return Err(Problem::invalid(
            "revision 0 is the empty document before the first, which holds no text to redact; revisions are numbered from 1; nothing was written",
        ));
    }
    let redacted = app.memory.redact(&document, number.0).await?;
    Ok(Json(seen_by(RevisionEntry::new(&redacted, true), caller)))
}
