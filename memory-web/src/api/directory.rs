//! The directory: the personalities and users the memory knows (configured, or holding a
//! document), one page at a time, filtered to what the caller's key may see.

use std::collections::BTreeSet;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use memory_core::{DocumentId, MemoryProvider, MemoryScope, PersonalityId, UserId};

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{DEFAULT_PAGE, MAX_PAGE, with_next_link};
use crate::auth::Reader;
use crate::deployment::Deployment;
use crate::problem::Problem;
use crate::request::{Params, page_size};
use crate::state::App;

/// Which page of a listing.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct Page {
    /// The most entries to list (default 50, at most 500).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 500)]
    #[serde(default, deserialize_with = "super::whole::optional")]
    pub limit: Option<u64>,
    /// List only entries after this one (the `next_after` of the page before).
    pub after: Option<String>,
}

/// One personality: where its memory lives.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PersonalityView {
    /// Its id.
    id: PersonalityId,
    /// The provider its `MEMORY.md` is read and written through, by name.
    provider: String,
    /// That provider's kind: `markdown`, `postgres`, `redis` or `vector` (or what a program
    /// serving its own provider calls it).
    kind: String,
    /// Its own `MEMORY.md` (`per-personality`) or the global one (`global`).
    scope: MemoryScope,
    /// Whether its `MEMORY.md` is read through a provider that recalls (prefetch with a
    /// query picks entries; search works).
    recall: bool,
}

impl PersonalityView {
    /// `id` as `deployment` places it.
    pub(crate) fn new(deployment: &dyn Deployment, id: PersonalityId) -> PersonalityView {
        let placement = deployment.placement(&id);
        PersonalityView {
            provider: placement.provider.name,
            kind: placement.provider.kind,
            scope: placement.scope,
            recall: placement.memory_through.recalls,
            id,
        }
    }
}

/// One page of personalities.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PersonalitiesPage {
    /// The personalities, sorted by id.
    items: Vec<PersonalityView>,
    /// Pass as `after` for the next page; null on the last.
    next_after: Option<String>,
    /// The personality `memory mcp` and the Memory page pick first (`[mcp]` in the config).
    default: Option<PersonalityId>,
}

/// One user.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct UserView {
    /// Its id.
    id: UserId,
}

/// One page of users.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct UsersPage {
    /// The users, sorted by id.
    items: Vec<UserView>,
    /// Pass as `after` for the next page; null on the last.
    next_after: Option<String>,
    /// The user `memory mcp` and the Memory page pick first (`[mcp]` in the config).
    default: Option<UserId>,
}

/// Every personality and user: configured, `[mcp]`'s, and everyone with a document.
async fn known(app: &App) -> Result<(BTreeSet<PersonalityId>, BTreeSet<UserId>), Problem> {
    let mut personalities: BTreeSet<PersonalityId> =
        app.deployment.personalities().into_iter().collect();
    let (default_personality, default_user) = app.deployment.defaults();
    personalities.extend(default_personality);
    let mut users: BTreeSet<UserId> = default_user.into_iter().collect();
    for document in app.memory.list().await? {
        // A note names its owner by its scope.
        match document.scope().document() {
            DocumentId::PersonalityMemory { personality } => {
                personalities.insert(personality);
            }
            DocumentId::UserProfile { user } => {
                users.insert(user);
            }
            DocumentId::GlobalMemory | DocumentId::Note(_) => {}
        }
    }
    Ok((personalities, users))
}

/// The ids after `after`, at most `limit`, and the cursor of the next page.
fn page_of<T: AsRef<str> + Clone>(
    ids: impl Iterator<Item = T>,
    page: &Page,
) -> Result<(Vec<T>, Option<String>), Problem> {
    let limit = page_size(page.limit, DEFAULT_PAGE, MAX_PAGE)?;
    let mut listed: Vec<T> = ids
        .filter(|id| {
            page.after
                .as_deref()
                .is_none_or(|after| id.as_ref() > after)
        })
        .take(limit + 1)
        .collect();
    let next = (listed.len() > limit).then(|| {
        listed.truncate(limit);
        listed.last().map(|id| id.as_ref().to_owned())
    });
    Ok((listed, next.flatten()))
}

/// The link to the page after `after`.
fn next_link(route: &str, page: &Page, after: &Option<String>) -> Option<String> {
    let limit = page.limit.unwrap_or(DEFAULT_PAGE as u64);
    after
        .as_ref()
        .map(|after| format!("{route}?limit={limit}&after={}", super::query_value(after)))
}

/// The personalities the memory knows, with where each keeps its memory.
#[utoipa::path(
    get,
    path = "/v1/personalities",
    tag = "directory",
    operation_id = "list_personalities",
    params(Page),
    responses((status = 200, description = "One page of personalities", body = PersonalitiesPage,
        headers(("Link" = String, description = "`<...>; rel=\"next\"` when there are more")))),
    security(("api_key" = ["read"]))
)]
pub(crate) async fn personalities(
    State(app): State<App>,
    caller: Reader,
    Params(page): Params<Page>,
) -> Result<Response, Problem> {
    let (personalities, _) = known(&app).await?;
    let visible = personalities
        .into_iter()
        .filter(|personality| caller.may_personality(personality));
    let (listed, next_after) = page_of(visible, &page)?;
    let items = listed
        .into_iter()
        .map(|id| PersonalityView::new(&*app.deployment, id))
        .collect();
    let next = next_link("/v1/personalities", &page, &next_after);
    let listing = PersonalitiesPage {
        items,
        next_after,
        default: (app.deployment.defaults().0).filter(|id| caller.may_personality(id)),
    };
    Ok(with_next_link(Json(listing).into_response(), next))
}

/// The users the memory knows.
#[utoipa::path(
    get,
    path = "/v1/users",
    tag = "directory",
    operation_id = "list_users",
    params(Page),
    responses((status = 200, description = "One page of users", body = UsersPage,
        headers(("Link" = String, description = "`<...>; rel=\"next\"` when there are more")))),
    security(("api_key" = ["read"]))
)]
pub(crate) async fn users(
    State(app): State<App>,
    caller: Reader,
    Params(page): Params<Page>,
) -> Result<Response, Problem> {
    let (_, users) = known(&app).await?;
    let visible = users.into_iter().filter(|user| caller.may_user(user));
    let (listed, next_after) = page_of(visible, &page)?;
    let next = next_link("/v1/users", &page, &next_after);
    let listing = UsersPage {
        items: listed.into_iter().map(|id| UserView { id }).collect(),
        next_after,
        default: (app.deployment.defaults().1).filter(|id| caller.may_user(id)),
    };
    Ok(with_next_link(Json(listing).into_response(), next))
}
