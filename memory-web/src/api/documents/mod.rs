//! Documents by their layout path (`MEMORY.md`, `personalities/<id>/MEMORY.md`,
//! `users/<id>/USER.md`): read, guarded replace, a batch of updates and purge (`text`);
//! history: revisions, one revision, a diff, revert and redacting a revision (`history`), for
//! the pair and for notes;
//! the notes beside each (`notes`).
//!
//! Each operation has one implementation; the macro here stamps it for the three path
//! templates, so the OpenAPI document names each with its own path parameters.

mod history;
mod notes;
mod text;

use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use axum::response::Response;
use memory_core::{
    DocumentId, DocumentReport, NotePath, PersonalityId, RevisionDiff, RevisionEntry, UserId,
};

use super::DocumentView;
use super::write_params::{Guarded, Keyed, Replacing};
use crate::auth::{Admin, Principal, Reader, Writer};
use crate::problem::{Problem, ProblemDocument};
use crate::request::{Body, Params, path_param};
use crate::state::App;
use history::{
    DiffQuery, RevertRequest, RevisionsPage, RevisionsQuery, diff, redact, revert, revision,
    revisions,
};
use text::{PurgedView, ReplaceRequest, UpdatesRequest, purge, read, replace, update};

/// The document a route's path names, its ids checked: one of the pair, or a note beside one
/// (a `note` parameter).
pub(crate) struct LayoutPath(pub DocumentId);

impl<S: Send + Sync> FromRequestParts<S> for LayoutPath {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Problem> {
        let pair = if let Some(personality) = path_param(parts, "personality").await? {
            DocumentId::PersonalityMemory {
                personality: PersonalityId::new(personality)?,
            }
        } else if let Some(user) = path_param(parts, "user").await? {
            DocumentId::UserProfile {
                user: UserId::new(user)?,
            }
        } else {
            DocumentId::GlobalMemory
        };
        match path_param(parts, "note").await? {
            Some(note) => Ok(LayoutPath(DocumentId::note(&pair, NotePath::new(note)?))),
            None => Ok(LayoutPath(pair)),
        }
    }
}

/// The route of `operation` (`revisions`, `diff`, ...) on `document`'s history:
/// `/v1/documents/<path>/<operation>` for the pair; for a note, whose path ends its routes,
/// the operation comes before it: `/v1/documents/<scope>/<operation>/notes/<path>`, each
/// segment percent-encoded.
pub(crate) fn history_route(document: &DocumentId, operation: &str) -> String {
    let Some(path) = document.note_path() else {
        return format!("/v1/documents/{}/{operation}", document.relative_path());
    };
    let pair = document.scope().document().relative_path();
    let scope = pair.rsplit_once('/').map_or("", |(folder, _)| folder);
    let note: Vec<String> = path.segments().map(crate::api::query_value).collect();
    let scope = if scope.is_empty() {
        String::new()
    } else {
        format!("{scope}/")
    };
    format!("/v1/documents/{scope}{operation}/notes/{}", note.join("/"))
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
    caller.check_document(&document.0, &*app.deployment)?;
    Ok(document.0)
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
                    Replacing),
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
                    Keyed),
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
                    Guarded),
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
                    Guarded),
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

            /// Erase the text and updates of one kept revision, for good: it keeps its number,
            /// time, origin, sizes and hashes, and can no longer be reverted to or compared.
            ///
            /// The document is untouched, so the revision whose text it holds now is refused:
            /// change the document first. A revision redacted already is answered as it is,
            /// nothing written.
            #[utoipa::path(
                post,
                path = concat!($base, "/revisions/{number}/redact"),
                tag = "history",
                operation_id = concat!("redact_", stringify!($name)),
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("number" = i64, Path, minimum = 1, description = "The number of the revision to redact"),
                    Keyed),
                responses(
                    (status = 200, description = "The revision as the history now shows it: no text, `redacted_at` set", body = RevisionEntry),
                    (status = 404, description = "The revision is not kept (never made, pruned, or a purge's tombstone; `code` `revision-not-found`); nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                    (status = 422, description = "The document still holds that revision's text (`code` `revision-in-use`): change it first; or the Idempotency-Key was sent before with another request (`code` `key-reused`); nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                ),
                security(("api_key" = ["admin"]))
            )]
            pub(crate) async fn redact(
                State(app): State<App>,
                caller: Admin,
                document: LayoutPath,
                headers: HeaderMap,
                number: RevisionNumber,
            ) -> Result<Json<RevisionEntry>, Problem> {
                super::redact(app, &caller, document, &headers, number).await
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
                    .routes(utoipa_axum::routes!(redact))
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
        .merge(notes::routes())
}
