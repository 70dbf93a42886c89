//! A document's text: read it, replace it guarded by `If-Match`, apply a batch of updates,
//! purge it.

use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use memory_core::{
    DocumentId, DocumentReport, IfMatch, MemoryError, MemoryProvider, MemoryUpdate, Purged,
    sync_exactly_once,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{LayoutPath, allowed};
use crate::api::{DocumentView, Session, WriteSurface, origin, report_response, with_etag};
use crate::auth::Principal;
use crate::conditional;
use crate::problem::Problem;
use crate::replay::idempotency_key;
use crate::state::App;

/// Read one document: its text, version (also the `ETag`), location and modification time.
pub(super) async fn read(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    headers: &HeaderMap,
) -> Result<Response, Problem> {
    let document = allowed(&app, caller, document)?;
    Ok(shown(app.memory.read(&document).await?, headers))
}

/// A document read, as a `GET` answers it: with its `ETag`, or 304 when `If-None-Match` names
/// it.
pub(super) fn shown(read: memory_core::Document, headers: &HeaderMap) -> Response {
    let version = read.version.clone();
    if conditional::none_match(headers, &version) {
        return with_etag(StatusCode::NOT_MODIFIED.into_response(), &version);
    }
    with_etag(Json(DocumentView::from(read)).into_response(), &version)
}

/// A whole new text for a document.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReplaceRequest {
    /// The new text (stored trimmed and newline-terminated; blank clears the document); refused
    /// when it holds NUL.
    #[schema(pattern = r"^[^\x00]*$")]
    pub(super) text: String,
    /// Where the write comes from, as its revision records it (default `api`).
    #[serde(default)]
    pub(super) surface: Option<WriteSurface>,
    /// The caller's session, recorded in the revision.
    #[serde(default)]
    pub(super) session: Option<Session>,
}

/// Replace one document's text, guarded by `If-Match` (required: a replace computed from an
/// old read would erase what others wrote since). Through the agent's write path, so the write
/// is a revision; caps are a personality's, so a personality's own `MEMORY.md` is written
/// under its caps, and `USER.md` or the global `MEMORY.md` by path under none (write them
/// through `/v1/sync` to apply a personality's).
pub(super) async fn replace(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    headers: &HeaderMap,
    request: ReplaceRequest,
) -> Result<Response, Problem> {
    let document = allowed(&app, caller, document)?;
    let guard = conditional::required_if_match(headers)?;
    let (ctx, store) = app.deployment.writing(&document)?;
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
    pub(super) updates: Vec<MemoryUpdate>,
    /// Where the write comes from, as its revision records it (default `api`).
    #[serde(default)]
    pub(super) surface: Option<WriteSurface>,
    /// The caller's session, recorded in the revision.
    #[serde(default)]
    pub(super) session: Option<Session>,
}

/// Apply a batch of updates (`add`, `replace`, `remove`, `edit`) to one document, in order, as
/// one atomic step; `If-Match`, when sent, guards it. Updates of notes are refused here: they
/// go to the note's route or `/v1/sync`.
pub(super) async fn update(
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
    if let Some(index) = request.updates.iter().position(|u| u.note().is_some()) {
        return Err(Problem::invalid_with(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "update #{index} names a note, but this route writes {} alone; send a note's updates to its own route (.../notes/<path>) or /v1/sync; nothing was written",
                document.relative_path()
            ),
        ));
    }
    let guard = conditional::if_match(headers)?;
    let (ctx, _) = app.deployment.writing(&document)?;
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
pub(super) fn only(
    report: memory_core::SyncReport,
    document: &DocumentId,
) -> Result<DocumentReport, Problem> {
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
pub(super) async fn read_report(
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
        scope: None,
    }))
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
pub(super) async fn purge(
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
