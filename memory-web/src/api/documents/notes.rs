//! Notes by their layout path: list a scope's notes, read one, write its whole text (or create
//! it), apply a batch of updates, delete, rename. Their history goes through the documents'
//! history handlers, which take any document (`super::history`).
//!
//! A note's path holds `/`, so its routes end in it (`.../notes/{note}`, matched to the end of
//! the URL); an operation on a note's history names the operation before it
//! (`.../revisions/notes/{note}`), as [`super::history_route`] builds.

use axum::Json;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use memory_core::{
    DocumentId, IfMatch, MemoryProvider, MemoryUpdate, NotePath, PersonalityId, UserId, Version,
    sync_exactly_once,
};
use serde::{Deserialize, Serialize};
use utoipa::openapi::Components;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

use super::text::{ReplaceRequest, UpdatesRequest, read_report, shown};
use super::{LayoutPath, allowed};
use crate::api::{Session, WriteSurface, origin, report_response};
use crate::auth::Principal;
use crate::conditional;
use crate::problem::Problem;
use crate::replay::idempotency_key;
use crate::state::App;

/// Which notes to list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct NotesQuery {
    /// List only the notes whose path starts with this (`projects/`).
    prefix: Option<String>,
}

/// One note as a listing shows it: enough to choose which to open.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct NoteItem {
    /// Its path within its scope (`projects/kyoto.md`).
    path: String,
    /// Its size in UTF-8 bytes.
    bytes: usize,
    /// Its version: reading it gives this one or a newer one.
    version: Version,
    /// When its text was last written, in milliseconds since the Unix epoch; null when unknown.
    modified: Option<u64>,
    /// Its first heading or first line, shortened.
    description: String,
}

/// A scope's notes.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct NotesPage {
    /// The folder of the scope in the layout (`personalities/<id>/notes`): each note's layout
    /// path is this, `/`, and its path.
    folder: String,
    /// The notes, by path.
    notes: Vec<NoteItem>,
}

/// A note's new path within its scope.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RenameRequest {
    /// The path it moves to: it must not exist.
    to: NotePath,
    /// Where the write comes from, as its revision records it (default `api`).
    #[serde(default)]
    surface: Option<WriteSurface>,
    /// The caller's session, recorded in the revisions.
    #[serde(default)]
    session: Option<Session>,
}

/// The note `document` names, and its path, if `caller` may touch it.
fn allowed_note(
    app: &App,
    caller: &Principal,
    document: LayoutPath,
) -> Result<(DocumentId, NotePath), Problem> {
    let document = allowed(app, caller, document)?;
    let path = document
        .note_path()
        .cloned()
        .ok_or_else(|| Problem::invalid("this route takes a note's path after /notes/"))?;
    Ok((document, path))
}

/// 404 for a note that does not exist.
fn not_found(document: &DocumentId, path: &NotePath) -> Problem {
    Problem::not_found(format!(
        "there is no note {path} beside {}; list the notes to see which exist",
        document.scope().document().relative_path()
    ))
    .with_code("note-not-found")
}

/// List a scope's notes, by path.
pub(super) async fn list(
    app: App,
    caller: &Principal,
    scope: LayoutPath,
    query: NotesQuery,
) -> Result<Json<NotesPage>, Problem> {
    let scope = allowed(&app, caller, scope)?.scope();
    let listed = app
        .memory
        .notes(&scope, query.prefix.as_deref().unwrap_or(""))
        .await?;
    let notes = listed
        .into_iter()
        .map(|note| NoteItem {
            path: note.path.into(),
            bytes: note.bytes,
            version: note.version,
            modified: note.modified.and_then(memory_core::raw::shown_unix_millis),
            description: note.description,
        })
        .collect();
    Ok(Json(NotesPage {
        folder: scope.folder(),
        notes,
    }))
}

/// Read one note; 404 when it does not exist.
pub(super) async fn read(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    headers: &HeaderMap,
) -> Result<Response, Problem> {
    let (document, path) = allowed_note(&app, caller, document)?;
    let read = app.memory.read(&document).await?;
    if read.text.trim().is_empty() {
        return Err(not_found(&document, &path));
    }
    Ok(shown(read, headers))
}

/// Write a note's whole text: `If-None-Match: *` creates it (409 when it exists), `If-Match`
/// replaces it (a version, or `*` for whatever is there, the note existing or not).
pub(super) async fn write(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    headers: &HeaderMap,
    request: ReplaceRequest,
) -> Result<Response, Problem> {
    let (document, path) = allowed_note(&app, caller, document)?;
    let creates = creates(headers)?;
    let (update, if_match) = if creates {
        if conditional::if_match(headers)?.is_some() {
            return Err(Problem::invalid(
                "send If-None-Match: * to create a note, or If-Match to replace one, not both; nothing was written",
            ));
        }
        let update = MemoryUpdate::create(document.store(), path, request.text);
        (update, IfMatch::NONE)
    } else {
        let guard = conditional::if_match(headers)?.ok_or_else(|| {
            Problem::invalid_with(
                StatusCode::PRECONDITION_REQUIRED,
                "a note's write needs If-None-Match: * to create it, or If-Match: the ETag of the version it was made from (* to overwrite whatever is there); nothing was written",
            )
        })?;
        let update = MemoryUpdate::replace(document.store(), request.text).in_note(path);
        (update, IfMatch::only_document(&document, guard.version()))
    };
    let body = UpdatesRequest {
        updates: vec![update],
        surface: request.surface,
        session: request.session,
    };
    written(&app, &document, headers, body, &if_match).await
}

/// Whether `If-None-Match: *` asks that the write create the note.
fn creates(headers: &HeaderMap) -> Result<bool, Problem> {
    let mut values = headers.get_all(header::IF_NONE_MATCH).iter();
    let Some(value) = values.next() else {
        return Ok(false);
    };
    if values.next().is_none() && value.as_bytes().trim_ascii() == b"*" {
        return Ok(true);
    }
    Err(Problem::invalid(
        "a note's write takes If-None-Match: * alone (create it; refused when it exists); nothing was written",
    ))
}

/// Apply a batch of updates (`add`, `replace`, `remove`, `edit`, `create`, `delete`) to one
/// note, in order, as one atomic step; `If-Match`, when sent, guards it.
pub(super) async fn update(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    headers: &HeaderMap,
    mut request: UpdatesRequest,
) -> Result<Response, Problem> {
    let (document, path) = allowed_note(&app, caller, document)?;
    let store = document.store();
    for (index, update) in request.updates.iter_mut().enumerate() {
        let refusal = if update.store() != store {
            format!(
                "names store \"{}\", but the notes beside {} are store \"{store}\"",
                update.store(),
                document.scope().document().relative_path()
            )
        } else if update.note().is_some_and(|named| *named != path) {
            format!("names another note than {path}")
        } else if matches!(update, MemoryUpdate::Rename { .. }) {
            "is a rename: send it to the rename route of the note".to_owned()
        } else {
            *update = update.clone().in_note(path.clone());
            continue;
        };
        // Well-formed, but not for this note: the shape of the call, not a rule.
        return Err(Problem::invalid_with(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("update #{index} {refusal}; nothing was written"),
        ));
    }
    let guard = conditional::if_match(headers)?.and_then(|guard| guard.version());
    let if_match = IfMatch::only_document(&document, guard);
    written(&app, &document, headers, request, &if_match).await
}

/// Delete a note: a revision, so `revert` restores it. 404 when it does not exist.
pub(super) async fn delete(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    headers: &HeaderMap,
) -> Result<Response, Problem> {
    let (document, path) = allowed_note(&app, caller, document)?;
    let guard = conditional::if_match(headers)?.and_then(|guard| guard.version());
    let body = UpdatesRequest {
        updates: vec![MemoryUpdate::delete(document.store(), path)],
        surface: None,
        session: None,
    };
    let if_match = IfMatch::only_document(&document, guard);
    written(&app, &document, headers, body, &if_match).await
}

/// Move a note to another path of its scope, atomically: the report and `ETag` are the new
/// path's. `If-Match`, when sent, guards the note moved.
pub(super) async fn rename(
    app: App,
    caller: &Principal,
    document: LayoutPath,
    headers: &HeaderMap,
    request: RenameRequest,
) -> Result<Response, Problem> {
    let (document, path) = allowed_note(&app, caller, document)?;
    let guard = conditional::if_match(headers)?.and_then(|guard| guard.version());
    let if_match = IfMatch::only_document(&document, guard);
    let target = DocumentId::note(&document, request.to.clone());
    let body = UpdatesRequest {
        updates: vec![MemoryUpdate::rename(document.store(), path, request.to)],
        surface: request.surface,
        session: request.session,
    };
    // The new path's report: the note moves within its scope, so its context is the same.
    written(&app, &target, headers, body, &if_match).await
}

/// Writes `request`'s updates to `document` through the agent's write path, keyed by the
/// request's `Idempotency-Key`, and answers the note's report.
async fn written(
    app: &App,
    document: &DocumentId,
    headers: &HeaderMap,
    request: UpdatesRequest,
    if_match: &IfMatch,
) -> Result<Response, Problem> {
    let (ctx, _) = app.deployment.writing(document)?;
    let mut ctx = origin(ctx, request.surface, request.session);
    if let Some(key) = idempotency_key(headers)? {
        ctx = ctx.with_idempotency_key(key);
    }
    let report = sync_exactly_once(&app.memory, &ctx, &request.updates, if_match).await?;
    match report
        .documents
        .into_iter()
        .find(|written| written.document == *document)
    {
        Some(report) => Ok(report_response(report)),
        // An empty batch touches nothing: the note as it is, if still at If-Match.
        None => read_report(app, document, if_match.for_document(document)).await,
    }
}

/// Adds `operations`, stamped by `routes!` on a path template ending in `{note}`, so the
/// note's path may hold `/`: the router matches the rest of the URL there (`{*note}`), while
/// the OpenAPI document keeps `{note}` (it has no such parameter).
pub(super) fn at_note_path(
    mut router: OpenApiRouter<App>,
    (schemas, paths, method_router): UtoipaMethodRouter<App>,
) -> OpenApiRouter<App> {
    for template in paths.paths.keys() {
        router = router.route(
            &template.replace("{note}", "{*note}"),
            method_router.clone(),
        );
    }
    let api = router.get_openapi_mut();
    for (template, item) in paths.paths {
        match api.paths.paths.get_mut(&template) {
            Some(operations) => operations.merge_operations(item),
            None => {
                api.paths.paths.insert(template, item);
            }
        }
    }
    api.components
        .get_or_insert_with(Components::new)
        .schemas
        .extend(schemas);
    router
}

/// Stamps the note operations for one scope: `$scope` is the path under which the scope's
/// document lives (`/v1/documents`, `.../personalities/{personality}`, `.../users/{user}`),
/// `$name` names the operations (`list_<name>`, ...), `$param` its path parameters.
macro_rules! note_routes {
    ($name:ident, $scope:literal, [$(($pname:tt, $ptype:ty, $pdesc:tt)),*]) => {
        pub(crate) mod $name {
            use super::*;
            use super::super::history::{
                DiffQuery, RevertRequest, RevisionsPage, RevisionsQuery,
            };
            use super::super::RevisionNumber;
            use axum::extract::State;
            use memory_core::{DocumentReport, RevisionDiff, RevisionEntry};
            use crate::api::DocumentView;
            use crate::api::write_params::{Guarded, Keyed};
            use crate::auth::{Admin, Reader, Writer};
            use crate::problem::ProblemDocument;
            use crate::request::{Body, Params};

            /// List the scope's notes by path, each with its size, version, last write and
            /// description (its first heading or line).
            #[utoipa::path(
                get,
                path = concat!($scope, "/notes"),
                tag = "notes",
                operation_id = concat!("list_", stringify!($name)),
                params($(($pname = $ptype, Path, description = $pdesc),)* NotesQuery),
                responses((status = 200, description = "The scope's notes", body = NotesPage)),
                security(("api_key" = ["read"]))
            )]
            pub(crate) async fn list(
                State(app): State<App>,
                caller: Reader,
                scope: LayoutPath,
                Params(query): Params<NotesQuery>,
            ) -> Result<Json<NotesPage>, Problem> {
                super::list(app, &caller, scope, query).await
            }

            /// Read a note: its text, version (also the `ETag`), location and modification
            /// time.
            #[utoipa::path(
                get,
                path = concat!($scope, "/notes/{note}"),
                tag = "notes",
                operation_id = concat!("read_", stringify!($name)),
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("note" = String, Path, description = "The note's path in its scope, its `/` sent as they are"),
                    ("If-None-Match" = Option<String>, Header, description = "An ETag: answered 304 if the note is still at it")),
                responses(
                    (status = 200, description = "The note", body = DocumentView,
                        headers(("ETag" = String, description = "The note's version, quoted"))),
                    (status = 304, description = "Still at the version If-None-Match named"),
                    (status = 404, description = "No such note (`code` `note-not-found`)", body = ProblemDocument, content_type = "application/problem+json"),
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

            /// Write a note's whole text: with `If-None-Match: *` create it, with `If-Match`
            /// replace it (one of the two is required).
            ///
            /// Through the agent's write path, so the write is a revision, under no
            /// personality's caps but the scope's notes caps. `If-Match: *` writes whatever
            /// is there, the note existing or not; blank text deletes it.
            #[utoipa::path(
                put,
                path = concat!($scope, "/notes/{note}"),
                tag = "notes",
                operation_id = concat!("write_", stringify!($name)),
                request_body = ReplaceRequest,
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("note" = String, Path, description = "The note's path in its scope, its `/` sent as they are"),
                    ("If-None-Match" = Option<String>, Header, pattern = r"^\*$", description = "`*`: create the note, refused (409) when it exists"),
                    Guarded),
                responses(
                    (status = 200, description = "What the write did", body = DocumentReport,
                        headers(("ETag" = String, description = "The version after the write"))),
                    (status = 409, description = "The note exists (`note-exists`) or would collide with another (`note-collision`); nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                    (status = 412, description = "The note moved on from If-Match; nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                    (status = 428, description = "Neither If-None-Match: * nor If-Match was sent", body = ProblemDocument, content_type = "application/problem+json"),
                ),
                security(("api_key" = ["write"]))
            )]
            pub(crate) async fn write(
                State(app): State<App>,
                caller: Writer,
                document: LayoutPath,
                headers: HeaderMap,
                Body(request): Body<ReplaceRequest>,
            ) -> Result<Response, Problem> {
                super::write(app, &caller, document, &headers, request).await
            }

            /// Apply a batch of updates to a note, in order, as one atomic step.
            ///
            /// Each update names the scope's store and this note or none (`add`, `replace`,
            /// `remove`, `edit`, `create`, `delete`; a rename has a route of its own).
            /// `If-Match`, when sent, guards the batch.
            #[utoipa::path(
                post,
                path = concat!($scope, "/notes/{note}"),
                tag = "notes",
                operation_id = concat!("update_", stringify!($name)),
                request_body = UpdatesRequest,
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("note" = String, Path, description = "The note's path in its scope, its `/` sent as they are"),
                    Guarded),
                responses(
                    (status = 200, description = "What the batch did", body = DocumentReport,
                        headers(("ETag" = String, description = "The version after the batch"))),
                    (status = 404, description = "An update needs the note, which does not exist (`note-not-found`); nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                    (status = 409, description = "A create of a note that exists, or a collision; nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                    (status = 412, description = "The note moved on from If-Match; nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
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

            /// Delete a note: a revision of its history, so `revert` restores it.
            #[utoipa::path(
                delete,
                path = concat!($scope, "/notes/{note}"),
                tag = "notes",
                operation_id = concat!("delete_", stringify!($name)),
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("note" = String, Path, description = "The note's path in its scope, its `/` sent as they are"),
                    Guarded),
                responses(
                    (status = 200, description = "What the delete did", body = DocumentReport,
                        headers(("ETag" = String, description = "The version after the delete"))),
                    (status = 404, description = "No such note (`note-not-found`)", body = ProblemDocument, content_type = "application/problem+json"),
                    (status = 412, description = "The note moved on from If-Match; nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                ),
                security(("api_key" = ["write"]))
            )]
            pub(crate) async fn delete(
                State(app): State<App>,
                caller: Writer,
                document: LayoutPath,
                headers: HeaderMap,
            ) -> Result<Response, Problem> {
                super::delete(app, &caller, document, &headers).await
            }

            /// Move a note to another path of its scope, atomically; its history follows it.
            #[utoipa::path(
                post,
                path = concat!($scope, "/rename/notes/{note}"),
                tag = "notes",
                operation_id = concat!("rename_", stringify!($name)),
                request_body = RenameRequest,
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("note" = String, Path, description = "The path of the note to move, its `/` sent as they are"),
                    Guarded),
                responses(
                    (status = 200, description = "What the rename did: the report of the new path", body = DocumentReport,
                        headers(("ETag" = String, description = "The version of the note at its new path"))),
                    (status = 404, description = "No such note (`note-not-found`); nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                    (status = 409, description = "The new path exists (`note-exists`) or would collide (`note-collision`); nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                    (status = 412, description = "The note moved on from If-Match; nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                ),
                security(("api_key" = ["write"]))
            )]
            pub(crate) async fn rename(
                State(app): State<App>,
                caller: Writer,
                document: LayoutPath,
                headers: HeaderMap,
                Body(request): Body<RenameRequest>,
            ) -> Result<Response, Problem> {
                super::rename(app, &caller, document, &headers, request).await
            }

            /// List a note's revisions, newest first (paginated with `before`, and a `Link`
            /// header to the next page); a rename's revision names the other path.
            #[utoipa::path(
                get,
                path = concat!($scope, "/revisions/notes/{note}"),
                tag = "history",
                operation_id = concat!("revisions_", stringify!($name)),
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("note" = String, Path, description = "The note's path in its scope, its `/` sent as they are"),
                    RevisionsQuery),
                responses(
                    (status = 200, description = "One page of revisions", body = RevisionsPage,
                        headers(("Link" = String, description = "`<...>; rel=\"next\"` when there are older revisions"))),
                ),
                security(("api_key" = ["read"]))
            )]
            pub(crate) async fn revisions(
                State(app): State<App>,
                caller: Reader,
                document: LayoutPath,
                Params(query): Params<RevisionsQuery>,
            ) -> Result<Response, Problem> {
                super::super::history::revisions(app, &caller, document, query).await
            }

            /// One revision of a note, with its whole text.
            #[utoipa::path(
                get,
                path = concat!($scope, "/revisions/{number}/notes/{note}"),
                tag = "history",
                operation_id = concat!("revision_", stringify!($name)),
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("number" = i64, Path, minimum = 0, description = "The revision's number"),
                    ("note" = String, Path, description = "The note's path in its scope, its `/` sent as they are")),
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
                super::super::history::revision(app, &caller, document, number).await
            }

            /// A unified diff of a note between two revisions, a revision and now, or its
            /// newest change.
            #[utoipa::path(
                get,
                path = concat!($scope, "/diff/notes/{note}"),
                tag = "history",
                operation_id = concat!("diff_", stringify!($name)),
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("note" = String, Path, description = "The note's path in its scope, its `/` sent as they are"),
                    DiffQuery),
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
                super::super::history::diff(app, &caller, document, query).await
            }

            /// Put a note back to a kept revision's text (a deleted note comes back): itself
            /// a revision.
            #[utoipa::path(
                post,
                path = concat!($scope, "/revert/notes/{note}"),
                tag = "history",
                operation_id = concat!("revert_", stringify!($name)),
                request_body = RevertRequest,
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("note" = String, Path, description = "The note's path in its scope, its `/` sent as they are"),
                    Guarded),
                responses(
                    (status = 200, description = "What the revert did", body = DocumentReport,
                        headers(("ETag" = String, description = "The version after the revert"))),
                    (status = 404, description = "The revision is not kept (`code` `revision-not-found`); nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                    (status = 409, description = "Restoring it would collide with another note (`note-collision`); nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                    (status = 412, description = "The note moved on from If-Match; nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
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
                super::super::history::revert(app, &caller, document, &headers, request).await
            }

            /// Erase the text and updates of one kept revision of a note, for good: it keeps
            /// its number, time, origin, sizes and hashes (a rename's revision its paths), and
            /// can no longer be reverted to or compared.
            ///
            /// The note is untouched, so the revision whose text it holds now is refused:
            /// change it first. A revision redacted already is answered as it is, nothing
            /// written.
            #[utoipa::path(
                post,
                path = concat!($scope, "/revisions/{number}/redact/notes/{note}"),
                tag = "history",
                operation_id = concat!("redact_", stringify!($name)),
                params($(($pname = $ptype, Path, description = $pdesc),)*
                    ("number" = i64, Path, minimum = 1, description = "The number of the revision to redact"),
                    ("note" = String, Path, description = "The note's path in its scope, its `/` sent as they are"),
                    Keyed),
                responses(
                    (status = 200, description = "The revision as the history now shows it: no text, `redacted_at` set", body = RevisionEntry),
                    (status = 404, description = "The revision is not kept (never made, pruned, or a purge's tombstone; `code` `revision-not-found`); nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
                    (status = 422, description = "The note still holds that revision's text (`code` `revision-in-use`): change it first; or the Idempotency-Key was sent before with another request (`code` `key-reused`); nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
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
                super::super::history::redact(app, &caller, document, &headers, number).await
            }

            /// The routes of this scope.
            pub(crate) fn routes() -> OpenApiRouter<App> {
                let router = OpenApiRouter::new().routes(utoipa_axum::routes!(list));
                [
                    utoipa_axum::routes!(read, write, update, delete),
                    utoipa_axum::routes!(rename),
                    utoipa_axum::routes!(revisions),
                    utoipa_axum::routes!(revision),
                    utoipa_axum::routes!(diff),
                    utoipa_axum::routes!(revert),
                    utoipa_axum::routes!(redact),
                ]
                .into_iter()
                .fold(router, at_note_path)
            }
        }
    };
}

note_routes!(global_notes, "/v1/documents", []);
note_routes!(
    personality_notes,
    "/v1/documents/personalities/{personality}",
    [(
        "personality",
        PersonalityId,
        "The personality whose memory the notes sit beside"
    )]
);
note_routes!(
    user_notes,
    "/v1/documents/users/{user}",
    [(
        "user",
        UserId,
        "The user whose profile the notes sit beside"
    )]
);

/// The routes of every note operation, for the three scopes.
pub(super) fn routes() -> OpenApiRouter<App> {
    global_notes::routes()
        .merge(personality_notes::routes())
        .merge(user_notes::routes())
}
