//! Documents by their layout path (`MEMORY.md`, `personalities/<id>/MEMORY.md`,
//! `users/<id>/USER.md`): read, guarded replace, a batch of updates, history (revisions, one
//! revision, a diff), revert and purge.
//!
//! Each operation has one implementation here; the macro at the end stamps it for the three
//! path templates, so the OpenAPI document names each with its own path parameters.

use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use memory_core::{
    DocumentId, DocumentReport, IfMatch, MemoryError, MemoryProvider, MemoryUpdate, PersonalityId,
    Purged, RevisionDiff, RevisionEntry, UserId, revert_exactly_once, sync_exactly_once,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{
    DocumentView, Session, WriteSurface, origin, report_response, with_etag, with_next_link,
};
use crate::auth::{Admin, Principal, Reader, Writer};
use crate::conditional;
use crate::problem::{Problem, ProblemDocument};
use crate::replay::idempotency_key;
use crate::request::{Body, Params, path_param};
use crate::state::App;

/// The document a route's path names, its ids checked.
pub(crate) struct LayoutPath(pub DocumentId);

impl<S: Send + Sync> FromRequestParts<S> for LayoutPath {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Problem> {
        if let Some(personality) = path_param(parts, "personality").await? {
            let personality = PersonalityId::new(personality)?;
            return Ok(LayoutPath(DocumentId::PersonalityMemory { personality }));
        }
        if let Some(user) = path_param(parts, "user").await? {
            let user = UserId::new(user)?;
            return Ok(LayoutPath(DocumentId::UserProfile { user }));
        }
        Ok(LayoutPath(DocumentId::GlobalMemory))
    }
}

/// The revision number a route's path names.
pub(crate) struct RevisionNumber(pub u64);

impl<S: Send + Sync> FromRequestParts<S> for RevisionNumber {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Problem> {
        let text = path_param(parts, "number").await?.unwrap_or_default();
        super::whole::parse(&text)
            .map(RevisionNumber)
            .ok_or_else(|| {
                Problem::invalid(format!(
                    "{text:?} is not a revision number: revisions are numbered 1, 2, 3, ..."
                ))
            })
    }
}

/// The document, if `caller` may touch it.
fn allowed(app: &App, caller: &Principal, document: LayoutPath) -> Result<DocumentId, Problem> {
    caller.check_document(&document.0, app.memory.config())?;
    Ok(document.0)
}

/// Read one document: its text, version (also the `ETag`), location and modification time.
async fn read(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    headers: &HeaderMap,
) -> Result<Response, Problem> {
    let document = allowed(&app, caller, document)?;
    let read = app.memory.read(&document).await?;
    let version = read.version.clone();
    if conditional::none_match(headers, &version) {
        return Ok(with_etag(
            StatusCode::NOT_MODIFIED.into_response(),
            &version,
        ));
    }
    Ok(with_etag(
        Json(DocumentView::from(read)).into_response(),
        &version,
    ))
}

/// A whole new text for a document.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReplaceRequest {
    /// The new text (stored trimmed and newline-terminated; blank clears the document); refused
    /// when it holds NUL.
    #[schema(pattern = r"^[^\x00]*$")]
    text: String,
    /// Where the write comes from, as its revision records it (default `api`).
    #[serde(default)]
    surface: Option<WriteSurface>,
    /// The caller's session, recorded in the revision.
    #[serde(default)]
    session: Option<Session>,
}

/// Replace one document's text, guarded by `If-Match` (required: a replace computed from an
/// old read would erase what others wrote since). Through the agent's write path, so the write
/// is a revision; caps are a personality's, so a personality's own `MEMORY.md` is written
/// under its caps, and `USER.md` or the global `MEMORY.md` by path under none (write them
/// through `/v1/sync` to apply a personality's).
async fn replace(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    headers: &HeaderMap,
    request: ReplaceRequest,
) -> Result<Response, Problem> {
    let document = allowed(&app, caller, document)?;
    let guard = conditional::required_if_match(headers)?;
    let (ctx, store) = app.memory.writing(&document)?;
    let mut ctx = origin(ctx, request.surface, request.session);
    if let Some(key) = idempotency_key(headers)? {
        ctx = ctx.with_idempotency_key(key);
    }
    let update = MemoryUpdate::replace(store, request.text);
    let if_match = IfMatch::only(store, guard.version());
    let report = sync_exactly_once(&app.memory, &ctx, &[update], &if_match).await?;
    Ok(report_response(only(report, &document)?))
}

/// A batch of updates to one document.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdatesRequest {
    /// The updates, in order, each naming this document's store.
    updates: Vec<MemoryUpdate>,
    /// Where the write comes from, as its revision records it (default `api`).
    #[serde(default)]
    surface: Option<WriteSurface>,
    /// The caller's session, recorded in the revision.
    #[serde(default)]
    session: Option<Session>,
}

/// Apply a batch of updates (`add`, `replace`, `remove`, `edit`) to one document, in order, as
/// one atomic step; `If-Match`, when sent, guards it.
async fn update(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    headers: &HeaderMap,
    request: UpdatesRequest,
) -> Result<Response, Problem> {
    let document = allowed(&app, caller, document)?;
    let store = document.store();
    if let Some(index) = request.updates.iter().position(|u| u.store() != store) {
        // Well-formed, but not for this document: the shape of the call, not a rule.
        return Err(Problem::invalid_with(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "update #{index} names store \"{}\", but {} is store \"{store}\"; nothing was written",
                request.updates[index].store(),
                document.relative_path()
            ),
        ));
    }
    let guard = conditional::if_match(headers)?;
    let (ctx, _) = app.memory.writing(&document)?;
    let mut ctx = origin(ctx, request.surface, request.session);
    if let Some(key) = idempotency_key(headers)? {
        ctx = ctx.with_idempotency_key(key);
    }
    let if_match = IfMatch::only(store, guard.and_then(|guard| guard.version()));
    let report = sync_exactly_once(&app.memory, &ctx, &request.updates, &if_match).await?;
    match report.documents.into_iter().next() {
        Some(report) => Ok(report_response(report)),
        // An empty batch touches nothing: the document as it is, if still at If-Match.
        None => read_report(&app, &document, if_match.for_store(store)).await,
    }
}

/// The report of a write to `document`, from a sync report that touched it alone.
fn only(report: memory_core::SyncReport, document: &DocumentId) -> Result<DocumentReport, Problem> {
    report
        .documents
        .into_iter()
        .find(|written| written.document == *document)
        .ok_or_else(|| {
            Problem::from(MemoryError::Unavailable {
                what: document.relative_path(),
                message: "the provider reported no write of it".to_owned(),
                source: None,
            })
        })
}

/// What an empty batch reports: nothing written, the document as it is; `expected` is its
/// If-Match, which an empty batch must meet like any other (RFC 9110).
async fn read_report(
    app: &App,
    document: &DocumentId,
    expected: Option<&memory_core::Version>,
) -> Result<Response, Problem> {
    let read = app.memory.read(document).await?;
    if let Some(expected) = expected
        && *expected != read.version
    {
        return Err(MemoryError::Conflict {
            document: document.clone(),
            expected: expected.clone(),
            current: read.version,
        }
        .into());
    }
    let sha256 = memory_core::raw::sha256_hex(&read.text);
    Ok(report_response(DocumentReport {
        store: document.store(),
        document: document.clone(),
        location: read.location,
        written: false,
        version_before: read.version.clone(),
        version_after: read.version,
        sha256_before: sha256.clone(),
        sha256_after: sha256,
        bytes_before: read.text.len(),
        bytes_after: read.text.len(),
        lines_removed: 0,
        over_soft_cap: false,
        replayed: false,
    }))
}

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
    #[serde(default, deserialize_with = "super::whole::optional")]
    limit: Option<u64>,
    /// List only revisions numbered below this (the `next_before` of the page before).
    #[param(value_type = Option<i64>, minimum = 1)]
    #[serde(default, deserialize_with = "super::whole::optional")]
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
async fn revisions(
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
        let mut next = format!("/v1/documents/{path}/revisions?limit={limit}&before={before}");
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
async fn revision(
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
    #[serde(default, deserialize_with = "super::whole::optional")]
    from: Option<u64>,
    /// The revision to compare to: with `from`, the document as it is now when unset; without
    /// `from`, the newest revision when unset.
    #[param(value_type = Option<i64>, minimum = 0)]
    #[serde(default, deserialize_with = "super::whole::optional")]
    to: Option<u64>,
}

/// A unified diff of a document between two revisions, a revision and now, or a revision (the
/// newest, without `to`) and the one before it.
async fn diff(
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
    #[serde(deserialize_with = "super::whole::required")]
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
async fn revert(
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
    let (ctx, store) = app.memory.writing(&document)?;
    let mut ctx = origin(ctx, request.surface, request.session);
    if let Some(key) = idempotency_key(headers)? {
        ctx = ctx.with_idempotency_key(key);
    }
    let if_match = guard.and_then(|guard| guard.version());
    let report =
        revert_exactly_once(&app.memory, &ctx, store, request.number, if_match.as_ref()).await?;
    Ok(report_response(only(report, &document)?))
}

/// What a purge erased.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PurgedView {
    /// The document's path in the layout.
    path: String,
    /// Where the provider kept it.
    location: String,
    /// The size of the text erased.
    bytes: usize,
    /// How many revisions were erased with it.
    revisions: usize,
    /// The number of the tombstone revision left in its history; null when history is off
    /// or there was nothing to erase.
    tombstone: Option<u64>,
}

impl From<Purged> for PurgedView {
    fn from(purged: Purged) -> PurgedView {
        PurgedView {
            path: purged.document.relative_path(),
            location: purged.location,
            bytes: purged.bytes,
            revisions: purged.revisions,
            tombstone: purged.tombstone.map(|tombstone| tombstone.number),
        }
    }
}

/// Erase a document for good: its text, history, idempotency receipts and recall index rows
/// (the right to be forgotten). Its history keeps one tombstone without content.
async fn purge(
    app: App,
    caller: &Principal,
    document: LayoutPath,
) -> Result<Json<PurgedView>, Problem> {
    let document = allowed(&app, caller, document)?;
    let purged = app
        .memory
        .purge(&document, memory_core::Surface::Api)
        .await?;
    Ok(Json(purged.into()))
}

/// Stamps the document operations for one path template: `$base` is the document's path
/// under `/v1/documents`, `$name` names the operations (`read_<name>`, ...), `$param` its
/// path parameters.
macro_rules! document_routes {
    ($name:ident, $base:literal, [$(($pname:tt, $ptype:ty, $pdesc:tt)),*]) => {
        pub(crate) mod $name {
            use super::*;

            /// Read the document: its text, version (also the `ETag`), location and
            /// modification time. A never written document reads as empty, with a version a
            /// first write can be guarded by.
            #[utoipa::path(
                get,
                path = $base,
                tag = "documents",
                operation_id = concat!("read_", stringify!($name)),
                params($(($pname = $ptype, Path, description = $pdesc),)* ("If-None-Match" = Option<String>, Header, description = "An ETag: answered 304 if the document is still at it")),
                responses(
                    (status = 200, description = "The document", body = DocumentView,
                        headers(("ETag" = String, description = "The document's version, quoted")),
                        links(
                            ("ItsRevisions" = (operation_id = concat!("revisions_", stringify!($name)), parameters($(($pname = concat!("$request.path.", $pname))),*))),
                        )),
                    (status = 304, description = "Still at the version If-None-Match named"),
                ),
                security(("api_key" = ["read"]))
            )]
            pub(crate) async fn read(
                State(app): State<App>,
                caller: Reader,
                document: LayoutPath,
                headers: HeaderMap,
            ) -> Result<Response, Problem> {
                super::read(app, &caller, document, &headers).await
            }

            /// Replace the document's text, guarded by `If-Match` (required).
            ///
            /// Through the agent's write path, so the write is a revision. Caps are a
            /// personality's: its own `MEMORY.md` is written under its caps, `USER.md` and the
            /// global `MEMORY.md` by path under none (`/v1/sync` applies a personality's). A
            /// stale `If-Match` is answered 412 with the current `ETag`; `*` overwrites
            /// whatever is there (a document always exists: one never written is empty).
            #[utoipa::path(
                put,
                path = $base,
                tag = "documents",
                operation_id = concat!("replace_", stringify!($name)),
                request_body = ReplaceRequest,
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("If-Match" = String, Header, description = "The ETag of the version the new text was made from, or *", pattern = r#"^(\*|"[!#-~]+"|[!#-~]+)$"#),
                    ("Idempotency-Key" = Option<memory_core::IdempotencyKey>, Header, description = "Names this write: a repeat is answered with the first response")),
                responses(
                    (status = 200, description = "What the write did", body = DocumentReport,
                        headers(("ETag" = String, description = "The version after the write"))),
                    (status = 412, description = "The document moved on from If-Match; nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                    (status = 428, description = "No If-Match was sent", body = ProblemDocument, content_type = "application/problem+json"),
                ),
                security(("api_key" = ["write"]))
            )]
            pub(crate) async fn replace(
                State(app): State<App>,
                caller: Writer,
                document: LayoutPath,
                headers: HeaderMap,
                Body(request): Body<ReplaceRequest>,
            ) -> Result<Response, Problem> {
                super::replace(app, &caller, document, &headers, request).await
            }

            /// Erase the document for good: text, history, idempotency receipts and recall
            /// index rows. Its history keeps one tombstone without content.
            #[utoipa::path(
                delete,
                path = $base,
                tag = "documents",
                operation_id = concat!("purge_", stringify!($name)),
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("Idempotency-Key" = Option<memory_core::IdempotencyKey>, Header, description = "Names this write: a repeat is answered with the first response")),
                responses((status = 200, description = "What was erased", body = PurgedView)),
                security(("api_key" = ["admin"]))
            )]
            pub(crate) async fn purge(
                State(app): State<App>,
                caller: Admin,
                document: LayoutPath,
            ) -> Result<Json<PurgedView>, Problem> {
                super::purge(app, &caller, document).await
            }

            /// Apply a batch of updates to the document, in order, as one atomic step.
            ///
            /// Each update names the document's store. `If-Match`, when sent, guards the
            /// batch (412 when stale). A refused update writes nothing and is named by its
            /// position.
            #[utoipa::path(
                post,
                path = concat!($base, "/updates"),
                tag = "documents",
                operation_id = concat!("update_", stringify!($name)),
                request_body = UpdatesRequest,
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("If-Match" = Option<String>, Header, description = "The ETag the document must still be at, or *", pattern = r#"^(\*|"[!#-~]+"|[!#-~]+)$"#),
                    ("Idempotency-Key" = Option<memory_core::IdempotencyKey>, Header, description = "Names this write: a repeat is answered with the first response")),
                responses(
                    (status = 200, description = "What the batch did", body = DocumentReport,
                        headers(("ETag" = String, description = "The version after the batch"))),
                    (status = 412, description = "The document moved on from If-Match; nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                ),
                security(("api_key" = ["write"]))
            )]
            pub(crate) async fn update(
                State(app): State<App>,
                caller: Writer,
                document: LayoutPath,
                headers: HeaderMap,
                Body(request): Body<UpdatesRequest>,
            ) -> Result<Response, Problem> {
                super::update(app, &caller, document, &headers, request).await
            }

            /// List the document's revisions, newest first (paginated with `before`, and a
            /// `Link` header to the next page).
            #[utoipa::path(
                get,
                path = concat!($base, "/revisions"),
                tag = "history",
                operation_id = concat!("revisions_", stringify!($name)),
                params($(($pname = $ptype, Path, description = $pdesc),)* RevisionsQuery),
                responses(
                    (status = 200, description = "One page of revisions", body = RevisionsPage,
                        headers(("Link" = String, description = "`<...>; rel=\"next\"` when there are older revisions")),
                        links(
                            ("TheNewestRevision" = (operation_id = concat!("revision_", stringify!($name)), parameters($(($pname = concat!("$request.path.", $pname)),)* ("number" = "$response.body#/revisions/0/number")))),
                        )),
                ),
                security(("api_key" = ["read"]))
            )]
            pub(crate) async fn revisions(
                State(app): State<App>,
                caller: Reader,
                document: LayoutPath,
                Params(query): Params<RevisionsQuery>,
            ) -> Result<Response, Problem> {
                super::revisions(app, &caller, document, query).await
            }

            /// One revision of the document, with its whole text.
            #[utoipa::path(
                get,
                path = concat!($base, "/revisions/{number}"),
                tag = "history",
                operation_id = concat!("revision_", stringify!($name)),
                params($(($pname = $ptype, Path, description = $pdesc),)* ("number" = i64, Path, minimum = 0, description = "The revision's number")),
                responses(
                    (status = 200, description = "The revision", body = RevisionEntry),
                    (status = 404, description = "No such revision is kept (`code` `revision-not-found`)", body = ProblemDocument, content_type = "application/problem+json"),
                ),
                security(("api_key" = ["read"]))
            )]
            pub(crate) async fn revision(
                State(app): State<App>,
                caller: Reader,
                document: LayoutPath,
                number: RevisionNumber,
            ) -> Result<Json<RevisionEntry>, Problem> {
                super::revision(app, &caller, document, number).await
            }

            /// A unified diff of the document between two revisions, a revision and now, or
            /// its newest change.
            #[utoipa::path(
                get,
                path = concat!($base, "/diff"),
                tag = "history",
                operation_id = concat!("diff_", stringify!($name)),
                params($(($pname = $ptype, Path, description = $pdesc),)* DiffQuery),
                responses(
                    (status = 200, description = "The diff", body = RevisionDiff),
                    (status = 404, description = "A revision to compare is not kept (`code` `revision-not-found`)", body = ProblemDocument, content_type = "application/problem+json"),
                ),
                security(("api_key" = ["read"]))
            )]
            pub(crate) async fn diff(
                State(app): State<App>,
                caller: Reader,
                document: LayoutPath,
                Params(query): Params<DiffQuery>,
            ) -> Result<Json<RevisionDiff>, Problem> {
                super::diff(app, &caller, document, query).await
            }

            /// Put the document back to a kept revision's text: itself a revision.
            #[utoipa::path(
                post,
                path = concat!($base, "/revert"),
                tag = "history",
                operation_id = concat!("revert_", stringify!($name)),
                request_body = RevertRequest,
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("If-Match" = Option<String>, Header, description = "The ETag the document must still be at, or *", pattern = r#"^(\*|"[!#-~]+"|[!#-~]+)$"#),
                    ("Idempotency-Key" = Option<memory_core::IdempotencyKey>, Header, description = "Names this write: a repeat is answered with the first response")),
                responses(
                    (status = 200, description = "What the revert did", body = DocumentReport,
                        headers(("ETag" = String, description = "The version after the revert"))),
                    (status = 404, description = "The revision is not kept (never made, pruned, or a purge's tombstone; `code` `revision-not-found`); nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                    (status = 412, description = "The document moved on from If-Match; nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                ),
                security(("api_key" = ["write"]))
            )]
            pub(crate) async fn revert(
                State(app): State<App>,
                caller: Writer,
                document: LayoutPath,
                headers: HeaderMap,
                Body(request): Body<RevertRequest>,
            ) -> Result<Response, Problem> {
                super::revert(app, &caller, document, &headers, request).await
            }

            /// The routes of this template.
            pub(crate) fn routes() -> utoipa_axum::router::OpenApiRouter<App> {
                utoipa_axum::router::OpenApiRouter::new()
                    .routes(utoipa_axum::routes!(read, replace, purge))
                    .routes(utoipa_axum::routes!(update))
                    .routes(utoipa_axum::routes!(revisions))
                    .routes(utoipa_axum::routes!(revision))
                    .routes(utoipa_axum::routes!(diff))
                    .routes(utoipa_axum::routes!(revert))
            }
        }
    };
}

document_routes!(global_memory, "/v1/documents/MEMORY.md", []);
document_routes!(
    personality_memory,
    "/v1/documents/personalities/{personality}/MEMORY.md",
    [(
        "personality",
        PersonalityId,
        "The personality whose MEMORY.md it is"
    )]
);
document_routes!(
    user_profile,
    "/v1/documents/users/{user}/USER.md",
    [("user", UserId, "The user whose USER.md it is")]
);

/// The routes of every document operation, for the three path templates.
pub(crate) fn routes() -> utoipa_axum::router::OpenApiRouter<App> {
    global_memory::routes()
        .merge(personality_memory::routes())
        .merge(user_profile::routes())
}
