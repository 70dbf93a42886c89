//! The JSON API behind the page.

use std::collections::BTreeSet;
use std::time::SystemTime;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use memory_core::{
    Caps, Document, DocumentId, IfMatch, MemoryContext, MemoryError, MemoryProvider, MemoryScope,
    MemoryUpdate, PersonalityId, Revision, Store, Surface, UserId, Version, revert_exactly_once,
    sync_exactly_once, unified_diff,
};
use memory_wiring::{Memory, ProviderConfig};
use serde::{Deserialize, Serialize};

pub(crate) fn routes(memory: Memory) -> Router {
    Router::new()
        .route("/directory", get(directory))
        .route("/pair", get(pair))
        .route("/document", put(save))
        .route("/history", get(history))
        .route("/revert", post(revert))
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "not-found", "no such endpoint")
        })
        .with_state(memory)
        .layer(axum::middleware::map_response(never_cached))
}

/// Memory changes under the page: a cached answer would be a stale copy.
async fn never_cached(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Who the memory knows: what the page's two dropdowns offer.
#[derive(Debug, Serialize)]
struct Directory {
    personalities: Vec<PersonalityEntry>,
    users: Vec<UserId>,
    /// The `[mcp]` defaults, preselected by the page.
    default_personality: Option<PersonalityId>,
    default_user: Option<UserId>,
}

#[derive(Debug, Serialize)]
struct PersonalityEntry {
    id: PersonalityId,
    provider: String,
    kind: &'static str,
    scope: MemoryScope,
}

/// Configured personalities, the `[mcp]` ones, and everyone with a document.
async fn directory(State(memory): State<Memory>) -> Result<Json<Directory>, ApiError> {
    let config = memory.config();
    let mut personalities: BTreeSet<PersonalityId> = config.personalities.keys().cloned().collect();
    let mut users = BTreeSet::new();
    personalities.extend(config.mcp.personality.clone());
    users.extend(config.mcp.user.clone());
    for document in memory.list().await? {
        match document {
            DocumentId::PersonalityMemory { personality } => {
                personalities.insert(personality);
            }
            DocumentId::UserProfile { user } => {
                users.insert(user);
            }
            DocumentId::GlobalMemory => {}
        }
    }
    let personalities = personalities
        .into_iter()
        .map(|id| {
            let provider = config.provider_of(&id).to_owned();
            PersonalityEntry {
                kind: config.providers[&provider].kind(),
                scope: config.personality(&id).memory_scope,
                provider,
                id,
            }
        })
        .collect();
    Ok(Json(Directory {
        personalities,
        users: users.into_iter().collect(),
        default_personality: config.mcp.personality.clone(),
        default_user: config.mcp.user.clone(),
    }))
}

#[derive(Debug, Deserialize)]
struct PairQuery {
    personality: String,
    user: String,
    #[serde(default)]
    query: Option<String>,
}

/// One conversation as the agent sees it.
#[derive(Debug, Serialize)]
struct Pair {
    memory: DocumentView,
    user: DocumentView,
    /// What prefetch renders for the pair (and the query, if any): the top of the prompt.
    prefetch: Option<String>,
    /// What kept the prefetch from being what it should be (a recall index catching up).
    warnings: Vec<String>,
    /// The personality's provider, by name.
    provider: String,
    /// Whether its `MEMORY.md` is read through a provider that picks entries by a query.
    recall: bool,
}

/// One document as the editor needs it.
#[derive(Debug, Serialize)]
struct DocumentView {
    store: Store,
    /// `MEMORY.md of personality 'ada'`, for headings.
    title: String,
    /// Its path in the layout, as `memory cat` takes it.
    path: String,
    #[serde(flatten)]
    document: Document,
    caps: Caps,
}

impl DocumentView {
    fn new(document: Document, ctx: &MemoryContext) -> DocumentView {
        let store = document.id.store();
        DocumentView {
            store,
            title: document.id.to_string(),
            path: document.id.relative_path(),
            caps: ctx.budgets.for_store(store),
            document,
        }
    }
}

async fn pair(
    State(memory): State<Memory>,
    query: Result<Query<PairQuery>, QueryRejection>,
) -> Result<Json<Pair>, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::invalid(rejection.body_text()))?;
    let ctx = context(&memory, &query.personality, &query.user)?;
    let (memory_id, user_id) = (ctx.document(Store::Memory), ctx.document(Store::User));
    // Each document from its home, as the agent of any personality reads it.
    let (memory_doc, user_doc) = tokio::try_join!(memory.read(&memory_id), memory.read(&user_id))?;
    let mut prefetch_ctx = ctx.clone();
    if let Some(text) = query.query.filter(|text| !text.trim().is_empty()) {
        prefetch_ctx = prefetch_ctx.with_query(text);
    }
    let prefetch = memory.prefetch(&prefetch_ctx).await?;
    let config = memory.config();
    let through = config.provider_for(&ctx.personality, &memory_id);
    Ok(Json(Pair {
        memory: DocumentView::new(memory_doc, &ctx),
        user: DocumentView::new(user_doc, &ctx),
        prefetch: prefetch.context,
        warnings: prefetch.warnings,
        recall: matches!(config.providers[through], ProviderConfig::Vector { .. }),
        provider: config.provider_of(&ctx.personality).to_owned(),
    }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Save {
    personality: String,
    user: String,
    store: Store,
    /// The whole new text.
    text: String,
    /// The version the editor loaded; the save is refused if the document moved on.
    version: Version,
}

#[derive(Debug, Serialize)]
struct Saved {
    /// The document as it is now.
    document: DocumentView,
    /// False when the text was already that.
    written: bool,
    /// Over its soft cap: time to consolidate.
    over_soft_cap: bool,
}

/// Saves one document through the agent's write path: a `replace` guarded by `version`.
async fn save(
    State(memory): State<Memory>,
    body: Result<Json<Save>, JsonRejection>,
) -> Result<Json<Saved>, ApiError> {
    let Json(save) = body.map_err(ApiError::from_json)?;
    let ctx = context(&memory, &save.personality, &save.user)?;
    let if_match = IfMatch::only(save.store, Some(save.version));
    let update = MemoryUpdate::replace(save.store, save.text);
    let report = sync_exactly_once(&memory, &ctx, &[update], &if_match).await?;
    let written = report.get(save.store);
    let document = memory.read(&ctx.document(save.store)).await?;
    Ok(Json(Saved {
        document: DocumentView::new(document, &ctx),
        written: written.is_some_and(|report| report.written),
        over_soft_cap: written.is_some_and(|report| report.over_soft_cap),
    }))
}

/// Revisions listed when the page names no limit.
const DEFAULT_HISTORY: usize = 20;

/// The most revisions one history request lists: enough to page through a busy document's
/// recent past, few enough that the diffs stay a small answer.
const MAX_HISTORY: usize = 100;

#[derive(Debug, Deserialize)]
struct HistoryQuery {
    /// The document's path in the layout, as `DocumentView::path` gives it.
    path: String,
    #[serde(default)]
    limit: Option<usize>,
}

/// One document's history as the page lists it.
#[derive(Debug, Serialize)]
struct HistoryView {
    /// The document's path in the layout.
    path: String,
    /// `MEMORY.md of personality 'ada'`, for headings.
    title: String,
    /// The kept revisions, newest first, at most the limit asked for.
    revisions: Vec<RevisionView>,
    /// Whether older revisions are kept than the limit let through.
    more: bool,
}

/// One revision without its full text, with the change it made as a unified diff.
#[derive(Debug, Serialize)]
struct RevisionView {
    number: u64,
    /// The version it left the document at.
    version: Version,
    /// When it was recorded, in milliseconds since the Unix epoch.
    time: u64,
    surface: Surface,
    personality: Option<PersonalityId>,
    user: Option<UserId>,
    session: Option<String>,
    bytes_before: usize,
    bytes_after: usize,
    /// The actions of the updates it applied (`add`, `replace`, ...), in order.
    actions: Vec<&'static str>,
    /// A purge's tombstone: no content, nothing to revert to.
    tombstone: bool,
    /// The change from the previous kept revision's text to this one's (from the empty
    /// document for revision 1). Absent for a tombstone (the erased text is gone) and for the
    /// oldest kept revision when earlier ones were pruned (its "before" is not kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
    /// This is the oldest revision kept and earlier ones were pruned: there is nothing to
    /// compare it with.
    oldest_kept: bool,
}

/// Lists a document's kept revisions, newest first, each with its diff.
async fn history(
    State(memory): State<Memory>,
    query: Result<Query<HistoryQuery>, QueryRejection>,
) -> Result<Json<HistoryView>, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::invalid(rejection.body_text()))?;
    let document = DocumentId::from_relative_path(&query.path).ok_or_else(|| {
        ApiError::invalid(format!(
            "{:?} is not a document's path: use MEMORY.md, personalities/<id>/MEMORY.md or users/<id>/USER.md",
            query.path
        ))
    })?;
    let limit = query.limit.unwrap_or(DEFAULT_HISTORY).min(MAX_HISTORY);
    // One more than listed, so the oldest listed revision has the text it changed.
    let kept = memory.history(&document, limit + 1).await?;
    let revisions = kept
        .iter()
        .take(limit)
        .enumerate()
        .map(|(index, revision)| RevisionView::new(revision, kept.get(index + 1)))
        .collect();
    Ok(Json(HistoryView {
        path: document.relative_path(),
        title: document.to_string(),
        revisions,
        more: kept.len() > limit,
    }))
}

impl RevisionView {
    /// `revision` as listed, `previous` being the next older kept revision, if any.
    fn new(revision: &Revision, previous: Option<&Revision>) -> RevisionView {
        let oldest_kept = previous.is_none() && revision.number > 1;
        let diff = match (&revision.text, previous) {
            (None, _) => None,
            // A tombstone leaves the empty document behind it.
            (Some(text), Some(previous)) => Some(unified_diff(
                previous.text.as_deref().unwrap_or_default(),
                text,
                &format!("#{}", previous.number),
                &format!("#{}", revision.number),
            )),
            (Some(text), None) if revision.number == 1 => Some(unified_diff(
                "",
                text,
                "empty",
                &format!("#{}", revision.number),
            )),
            (Some(_), None) => None,
        };
        RevisionView {
            number: revision.number,
            version: revision.version_after.clone(),
            time: unix_millis(revision.time),
            surface: revision.surface,
            personality: revision.personality.clone(),
            user: revision.user.clone(),
            session: revision.session.clone(),
            bytes_before: revision.bytes_before,
            bytes_after: revision.bytes_after,
            actions: revision.updates.iter().map(MemoryUpdate::action).collect(),
            tombstone: revision.is_tombstone(),
            diff,
            oldest_kept,
        }
    }
}

/// Milliseconds since the Unix epoch; 0 for a time before it (a clock set far back).
fn unix_millis(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Revert {
    personality: String,
    user: String,
    store: Store,
    /// The revision whose text the document gets back.
    number: u64,
    /// The version the page showed; the revert is refused if the document moved on.
    version: Version,
}

/// Puts one document back to a kept revision's text: a `replace` through the agent's write
/// path, guarded by `version`, recorded as a revision of its own from the web.
async fn revert(
    State(memory): State<Memory>,
    body: Result<Json<Revert>, JsonRejection>,
) -> Result<Json<Saved>, ApiError> {
    let Json(revert) = body.map_err(ApiError::from_json)?;
    let ctx = context(&memory, &revert.personality, &revert.user)?;
    let report = revert_exactly_once(
        &memory,
        &ctx,
        revert.store,
        revert.number,
        Some(&revert.version),
    )
    .await?;
    let written = report.get(revert.store);
    let document = memory.read(&ctx.document(revert.store)).await?;
    Ok(Json(Saved {
        document: DocumentView::new(document, &ctx),
        written: written.is_some_and(|report| report.written),
        over_soft_cap: written.is_some_and(|report| report.over_soft_cap),
    }))
}

/// The wiring's context for the pair, ids validated; its writes are recorded as the page's.
fn context(memory: &Memory, personality: &str, user: &str) -> Result<MemoryContext, ApiError> {
    Ok(memory
        .context(PersonalityId::new(personality)?, UserId::new(user)?)
        .with_surface(Surface::Web))
}

/// An error response: `{"error": <what went wrong and what to do>, "kind": <for code>}`.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            message: message.into(),
        }
    }

    fn invalid(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid-input", message)
    }

    /// A body that is not the JSON asked for, with the status axum chose (415 for another
    /// content type, 422 for a wrong field, ...).
    fn from_json(rejection: JsonRejection) -> Self {
        ApiError {
            status: rejection.status(),
            kind: "invalid-input",
            message: rejection.body_text(),
        }
    }
}

impl From<MemoryError> for ApiError {
    fn from(err: MemoryError) -> Self {
        let kind = err.kind();
        let status =
            StatusCode::from_u16(kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError::new(status, kind.name(), err.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.message, "kind": self.kind });
        (self.status, Json(body)).into_response()
    }
}
