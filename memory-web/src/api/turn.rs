//! The turn cycle an agent loop calls: prefetch before the turn, sync after it; and search on
//! a personality that recalls.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use memory_core::{
    Budgets, DocumentId, IfMatch, MemoryProvider, MemoryUpdate, PersonalityId, Store, SyncReport,
    UserId, is_blank, sync_exactly_once,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::directory::PersonalityView;
use super::{DocumentView, PairDocument, Session, WriteSurface, origin};
use crate::auth::{Reader, Writer};
use crate::headers::IDEMPOTENT_REPLAYED;
use crate::problem::{Problem, ProblemDocument};
use crate::replay::idempotency_key;
use crate::request::{Body, Headers};
use crate::state::App;

/// What to prefetch: one conversation of a personality with a user.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PrefetchRequest {
    /// The personality speaking.
    #[schema(value_type = PersonalityId)]
    personality: String,
    /// The user spoken to (already resolved through the identity map).
    #[schema(value_type = UserId)]
    user: String,
    /// The user's message, for a personality that recalls: it then gets the entries of its
    /// `MEMORY.md` most relevant to it. Ignored by the others.
    #[serde(default)]
    query: Option<String>,
    /// The most chars the rendered context may have (default and ceiling: the
    /// personality's `max_chars`); past it the tail is kept.
    #[serde(default, deserialize_with = "super::whole::optional")]
    #[schema(value_type = Option<i64>, minimum = 0)]
    max_chars: Option<u64>,
}

/// What the agent sees before its turn, and the documents behind it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PrefetchView {
    /// The personality, with where its memory lives and whether it recalls (then a `query`
    /// picks entries).
    personality: PersonalityView,
    /// The text for the top of the prompt (`## About You` then `## Memory`), or null when
    /// both documents are blank.
    context: Option<String>,
    /// The `MEMORY.md` behind `## Memory`, whole: pass its version as `if_match.memory`.
    memory: PairDocument,
    /// The `USER.md` behind `## About You`, whole.
    user: PairDocument,
    /// What kept the rendering from being what it should be (a recall index catching up);
    /// empty when all went well.
    warnings: Vec<String>,
}

/// Prefetch: the memory context for the top of the agent's prompt.
///
/// Renders the user's `USER.md` and the personality's `MEMORY.md` (its own, or the global one
/// under global scope) as the agent reads them, each document with its text, version,
/// location, modification time and caps. With a `query`, a personality on a recall provider
/// gets the entries most relevant to it.
#[utoipa::path(
    post,
    path = "/v1/prefetch",
    tag = "turn",
    operation_id = "prefetch",
    request_body = PrefetchRequest,
    responses((status = 200, description = "The rendered context and both documents", body = PrefetchView)),
    security(("api_key" = ["read"]))
)]
pub(crate) async fn prefetch(
    State(app): State<App>,
    caller: Reader,
    Body(request): Body<PrefetchRequest>,
) -> Result<Json<PrefetchView>, Problem> {
    let (personality, user) = (
        PersonalityId::new(request.personality)?,
        UserId::new(request.user)?,
    );
    caller.check_pair(&personality, &user)?;
    let mut ctx = app.deployment.context(personality, user);
    if let Some(query) = request.query {
        ctx = ctx.with_query(query);
    }
    if let Some(max_chars) = request.max_chars {
        ctx = ctx.with_max_chars(usize::try_from(max_chars).unwrap_or(usize::MAX));
    }
    let seen = app.memory.prefetch(&ctx).await?;
    let personality = PersonalityView::new(&*app.deployment, ctx.personality.clone());
    let pair = |document, store| PairDocument {
        document: DocumentView::from(document),
        caps: ctx.budgets.for_store(store),
    };
    Ok(Json(PrefetchView {
        personality,
        context: seen.context,
        memory: pair(seen.memory, Store::Memory),
        user: pair(seen.user, Store::User),
        warnings: seen.warnings,
    }))
}

/// A batch of updates after a turn.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SyncRequest {
    /// The personality speaking.
    #[schema(value_type = PersonalityId)]
    personality: String,
    /// The user spoken to.
    #[schema(value_type = UserId)]
    user: String,
    /// The updates, in order: the same JSON as `memory sync` takes.
    updates: Vec<MemoryUpdate>,
    /// Versions the touched documents must still be at (from a prefetch): a document that
    /// moved on refuses the whole call with 412.
    #[serde(default)]
    if_match: Option<IfMatch>,
    /// Byte caps for this call on top of the personality's: each the smaller of the two
    /// where both set it, so a caller can tighten the personality's caps, never loosen them.
    /// A bounded agent (Metis's 2048/4096 and 1536/3072 bytes) sends its own.
    #[serde(default)]
    caps: Option<Budgets>,
    /// Where the write comes from, as its revisions record it (default `api`).
    #[serde(default)]
    surface: Option<WriteSurface>,
    /// The caller's session (a conversation id), recorded in the revisions.
    #[serde(default)]
    session: Option<Session>,
}

/// Sync: apply the updates an agent emitted after its turn.
///
/// The updates to each document apply in order as one atomic step; a refused update writes
/// nothing and is named by its position. The report is `memory sync`'s: per document, the
/// versions, hashes and sizes before and after. With an `Idempotency-Key`, a repeat of the
/// call (after a lost reply) applies nothing twice and answers the first report, marked as a
/// replay.
#[utoipa::path(
    post,
    path = "/v1/sync",
    tag = "turn",
    operation_id = "sync",
    request_body = SyncRequest,
    params(("Idempotency-Key" = Option<memory_core::IdempotencyKey>, Header, description = "Names this write: a repeat with the same key and body is answered with the first response, marked `Idempotent-Replayed: true`")),
    responses(
        (status = 200, description = "What the call did to each document", body = SyncReport,
            headers(("Idempotent-Replayed" = String, description = "`true` when this is a replay of the first response")),
            links(
                ("MemoryOfThePersonality" = (operation_id = "read_personality_memory", parameters(("personality" = "$request.body#/personality")))),
                ("ProfileOfTheUser" = (operation_id = "read_user_profile", parameters(("user" = "$request.body#/user")))),
                ("RevisionsOfTheProfile" = (operation_id = "revisions_user_profile", parameters(("user" = "$request.body#/user")))),
            )),
        (status = 404, description = "An update needs a note that does not exist (`code` `note-not-found`); nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 409, description = "An update would create a note that exists (`note-exists`) or one that collides with another by case, normalisation or folder (`note-collision`); nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 412, description = "A document is no longer at its `if_match` version; nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
    ),
    security(("api_key" = ["write"]))
)]
pub(crate) async fn sync(
    State(app): State<App>,
    caller: Writer,
    headers: Headers,
    Body(request): Body<SyncRequest>,
) -> Result<Response, Problem> {
    let (personality, user) = (
        PersonalityId::new(request.personality)?,
        UserId::new(request.user)?,
    );
    caller.check_pair(&personality, &user)?;
    let mut ctx = origin(
        app.deployment.context(personality, user),
        request.surface,
        request.session,
    );
    if let Some(key) = idempotency_key(&headers)? {
        ctx = ctx.with_idempotency_key(key);
    }
    if let Some(caps) = request.caps {
        if let Some((store, soft, hard)) = caps.soft_over_hard() {
            return Err(Problem::invalid(format!(
                "caps.{store}: the soft cap ({soft} bytes) is over the hard cap ({hard} bytes); a soft cap warns before the hard cap refuses, so it must not be larger; nothing was written"
            )));
        }
        ctx.budgets = ctx.budgets.tightest(caps);
    }
    let if_match = request.if_match.unwrap_or_default();
    let report = sync_exactly_once(&app.memory, &ctx, &request.updates, &if_match).await?;
    Ok(sync_response(report))
}

/// A sync report as a response, marked as a replay when every document in it is one.
fn sync_response(report: SyncReport) -> Response {
    let replayed =
        !report.documents.is_empty() && report.documents.iter().all(|document| document.replayed);
    let mut response = Json(report).into_response();
    if replayed {
        response.headers_mut().insert(
            IDEMPOTENT_REPLAYED,
            axum::http::HeaderValue::from_static("true"),
        );
    }
    response
}

/// The entries one search returns unless told, and the most it returns.
const DEFAULT_SEARCH: usize = 8;
const MAX_SEARCH: usize = 100;

/// A search of one personality's memory.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchRequest {
    /// The personality whose `MEMORY.md` to search (its own, or the global one under global
    /// scope).
    #[schema(value_type = PersonalityId)]
    personality: String,
    /// What to look for: a question or a few words.
    #[schema(min_length = 1, pattern = "\\S")]
    query: String,
    /// The most entries to return, best first (default 8).
    #[serde(default, deserialize_with = "super::whole::optional")]
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 100)]
    limit: Option<u64>,
}

/// The entries a search found.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SearchView {
    /// The path of the document searched.
    path: String,
    /// The best entries' current text, best first: MEMORY.md's and its notes', ranked together.
    ranked: Vec<String>,
    /// For each entry of `ranked`, in the same order, the path of the document it is in:
    /// `path` for MEMORY.md's own, the note's for a note's.
    ranked_from: Vec<String>,
    /// Entries the index has not covered yet, in document order (MEMORY.md's first): shown
    /// rather than hidden.
    unranked: Vec<String>,
    /// For each entry of `unranked`, in the same order, the path of the document it is in.
    unranked_from: Vec<String>,
    /// Why the ranking does not cover the whole document, when it does not.
    behind: Option<String>,
}

/// Search: the entries of a recall personality's memory most relevant to a query.
///
/// Only for a personality whose `MEMORY.md` is read through a recall (vector) provider; any
/// other is refused with 422. The notes beside MEMORY.md are searched with it, each entry
/// naming the document it is in. The index catches up with the document and its notes first,
/// so hand edits and other hosts' writes are found; what it cannot cover in time is returned
/// unranked.
#[utoipa::path(
    post,
    path = "/v1/search",
    tag = "turn",
    operation_id = "search",
    request_body = SearchRequest,
    responses(
        (status = 200, description = "The entries found", body = SearchView),
        (status = 422, description = "The personality's memory is not read through a vector provider, so it cannot be searched (kind `refused`); or the body is not the JSON this operation takes (a missing, unknown or mistyped field)", body = ProblemDocument, content_type = "application/problem+json"),
    ),
    security(("api_key" = ["read"]))
)]
pub(crate) async fn search(
    State(app): State<App>,
    caller: Reader,
    Body(request): Body<SearchRequest>,
) -> Result<Json<SearchView>, Problem> {
    let personality = PersonalityId::new(request.personality)?;
    caller.check_personality(&personality)?;
    if is_blank(&request.query) {
        return Err(Problem::invalid(
            "query is blank: give a question or a few words",
        ));
    }
    let limit = crate::request::page_size(request.limit, DEFAULT_SEARCH, MAX_SEARCH)?;
    let placement = app.deployment.placement(&personality);
    let document = DocumentId::memory(&personality, placement.scope);
    // Connected only when it can recall: a refusal names the caller's mistake, not a server
    // that is down.
    let Some(recall) = app.deployment.recall(&personality).await? else {
        let through = placement.memory_through;
        return Err(Problem::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            crate::problem::ProblemKind::Memory(memory_core::ErrorKind::Refused),
            format!(
                "personality '{personality}' keeps its memory in provider {:?} ({}), which cannot search: search needs a vector provider (kind = \"vector\") for it",
                through.name, through.kind
            ),
        ));
    };
    let found = recall.search(&document, &request.query, limit).await?;
    let split = |entries: Vec<memory_core::RecalledEntry>| -> (Vec<String>, Vec<String>) {
        entries
            .into_iter()
            .map(|entry| {
                let from = match entry.note {
                    Some(note) => document.scope().note(note).relative_path(),
                    None => document.relative_path(),
                };
                (entry.text, from)
            })
            .unzip()
    };
    let (ranked, ranked_from) = split(found.ranked);
    let (unranked, unranked_from) = split(found.unranked);
    Ok(Json(SearchView {
        path: document.relative_path(),
        ranked,
        ranked_from,
        unranked,
        unranked_from,
        behind: found.behind,
    }))
}
