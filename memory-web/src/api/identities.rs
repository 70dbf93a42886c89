//! The identity map: which user a platform's account is. Resolving an account takes `read`
//! (an agent gateway does it for every message); listing, linking and unlinking take `admin`.
//! A key restricted to some users sees only links to them, and may change only those.

use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use memory_core::{ErrorKind, Identity, MemoryError, UserId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::directory::Page;
use super::write_params::Keyed;
use super::{DEFAULT_PAGE, MAX_PAGE, with_next_link};
use crate::auth::{Admin, Principal, Reader};
use crate::problem::{Problem, ProblemDocument, ProblemKind};
use crate::request::{Body, Params, page_size, path_param};
use crate::state::App;

/// The identity a route's path names, checked.
pub(crate) struct IdentityPath(Identity);

impl<S: Send + Sync> FromRequestParts<S> for IdentityPath {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Problem> {
        let platform = path_param(parts, "platform").await?.unwrap_or_default();
        let platform_user = path_param(parts, "platform_user")
            .await?
            .unwrap_or_default();
        Ok(IdentityPath(Identity::new(platform, platform_user)?))
    }
}

/// One link: an account and the user it is.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct IdentityView {
    /// `platform:platform_user`.
    identity: String,
    /// The platform (`telegram`, `slack`, ...).
    platform: String,
    /// The platform's own id for the account.
    platform_user: String,
    /// The user it is linked to.
    user: UserId,
}

impl IdentityView {
    fn new(identity: &Identity, user: UserId) -> IdentityView {
        IdentityView {
            identity: identity.to_string(),
            platform: identity.platform().to_owned(),
            platform_user: identity.platform_user().to_owned(),
            user,
        }
    }
}

/// One page of links.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct IdentitiesPage {
    /// The links, sorted by platform, then platform user id.
    items: Vec<IdentityView>,
    /// Pass as `after` for the next page (an identity, `platform:platform_user`); null on
    /// the last.
    next_after: Option<String>,
}

/// A link to make.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LinkRequest {
    /// The user the account is.
    #[schema(value_type = UserId)]
    user: String,
    /// Move the account when it is linked to another user (otherwise that is a 409).
    #[serde(default)]
    relink: bool,
}

/// What a link or unlink changed.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct LinkChange {
    /// `platform:platform_user`.
    identity: String,
    /// The platform.
    platform: String,
    /// The platform's own id for the account.
    platform_user: String,
    /// The user it is linked to now; null after an unlink.
    user: Option<UserId>,
    /// The user it was linked to before; null when it was not linked.
    previous: Option<UserId>,
}

/// The user `identity` is linked to, as `caller` may see it: a link to a user outside its
/// restriction reads as no link.
async fn visible_link(
    app: &App,
    caller: &Principal,
    identity: &Identity,
) -> Result<Option<UserId>, Problem> {
    let user = app.deployment.identities().await?.resolve(identity).await?;
    Ok(user.filter(|user| caller.may_user(user)))
}

fn not_linked(identity: &Identity) -> Problem {
    Problem::not_found(format!("{identity} is not linked to a user"))
}

/// Resolve an account to the user it is linked to.
#[utoipa::path(
    get,
    path = "/v1/identities/{platform}/{platform_user}",
    tag = "identities",
    operation_id = "resolve_identity",
    params(
        ("platform" = memory_core::PersonalityId, Path, description = "The platform: an id such as telegram or slack"),
        ("platform_user" = String, Path, description = "The platform's id for the account (1 to 256 bytes of UTF-8, no control characters, no surrounding white space), percent-encoded", min_length = 1, max_length = 256, pattern = r"^[^\x00-\x1f\x7f-\x9f\x20\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000](?:[^\x00-\x1f\x7f-\x9f]*[^\x00-\x1f\x7f-\x9f\x20\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000])?$"),
    ),
    responses(
        (status = 200, description = "The link", body = IdentityView),
        (status = 404, description = "The account is not linked", body = ProblemDocument, content_type = "application/problem+json"),
    ),
    security(("api_key" = ["read"]))
)]
pub(crate) async fn resolve(
    State(app): State<App>,
    caller: Reader,
    IdentityPath(identity): IdentityPath,
) -> Result<Json<IdentityView>, Problem> {
    let user = visible_link(&app, &caller, &identity)
        .await?
        .ok_or_else(|| not_linked(&identity))?;
    Ok(Json(IdentityView::new(&identity, user)))
}

/// Link an account to a user, so every platform reaches the same `USER.md`.
///
/// Linking to the user it already has changes nothing. Linked to another user: 409, unless
/// `relink`, which moves it (and takes an admin key for every user).
#[utoipa::path(
    put,
    path = "/v1/identities/{platform}/{platform_user}",
    tag = "identities",
    operation_id = "link_identity",
    params(
        ("platform" = memory_core::PersonalityId, Path, description = "The platform"),
        ("platform_user" = String, Path, description = "The platform's id for the account, percent-encoded", min_length = 1, max_length = 256, pattern = r"^[^\x00-\x1f\x7f-\x9f\x20\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000](?:[^\x00-\x1f\x7f-\x9f]*[^\x00-\x1f\x7f-\x9f\x20\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000])?$"),
        Keyed,
    ),
    request_body = LinkRequest,
    responses(
        (status = 200, description = "The link as it is now", body = LinkChange,
            links(
                ("TheLink" = (operation_id = "resolve_identity", parameters(("platform" = "$request.path.platform"), ("platform_user" = "$request.path.platform_user")))),
                ("Unlink" = (operation_id = "unlink_identity", parameters(("platform" = "$request.path.platform"), ("platform_user" = "$request.path.platform_user")))),
            )),
        (status = 409, description = "The account is linked to another user; nothing was written", body = ProblemDocument, content_type = "application/problem+json"),
    ),
    security(("api_key" = ["admin"]))
)]
pub(crate) async fn link(
    State(app): State<App>,
    caller: Admin,
    IdentityPath(identity): IdentityPath,
    Body(request): Body<LinkRequest>,
) -> Result<Json<LinkChange>, Problem> {
    let user = UserId::new(request.user)?;
    if !caller.may_user(&user) {
        return Err(Problem::forbidden(format!(
            "key {:?} may not link accounts to user '{user}'",
            caller.name
        )));
    }
    // A key restricted to some users links only what is not linked to anyone else: a link
    // either lands on a free identity or is refused, in one atomic step of the map, so it can
    // never move (or reveal) a link to a user outside the restriction.
    if request.relink && caller.restricts_users() {
        return Err(Problem::forbidden(format!(
            "key {:?} is restricted to some users, so it may not relink (move) an account; an admin key for every user may",
            caller.name
        )));
    }
    let map = app.deployment.identities().await?;
    let previous = match map.link(&identity, &user, request.relink).await {
        Err(MemoryError::IdentityTaken { linked_to, .. }) if !caller.may_user(&linked_to) => {
            return Err(Problem::new(
                StatusCode::CONFLICT,
                ProblemKind::Memory(ErrorKind::Conflict),
                format!("{identity} is already linked to another user; nothing was written"),
            ));
        }
        linked => linked?,
    };
    Ok(Json(LinkChange {
        identity: identity.to_string(),
        platform: identity.platform().to_owned(),
        platform_user: identity.platform_user().to_owned(),
        user: Some(user),
        previous,
    }))
}

/// Unlink an account. Unlinking one that is not linked changes nothing. Takes an admin key
/// for every user.
#[utoipa::path(
    delete,
    path = "/v1/identities/{platform}/{platform_user}",
    tag = "identities",
    operation_id = "unlink_identity",
    params(
        ("platform" = memory_core::PersonalityId, Path, description = "The platform"),
        ("platform_user" = String, Path, description = "The platform's id for the account, percent-encoded", min_length = 1, max_length = 256, pattern = r"^[^\x00-\x1f\x7f-\x9f\x20\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000](?:[^\x00-\x1f\x7f-\x9f]*[^\x00-\x1f\x7f-\x9f\x20\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000])?$"),
        Keyed,
    ),
    responses((status = 200, description = "What the unlink changed", body = LinkChange)),
    security(("api_key" = ["admin"]))
)]
pub(crate) async fn unlink(
    State(app): State<App>,
    caller: Admin,
    IdentityPath(identity): IdentityPath,
) -> Result<Json<LinkChange>, Problem> {
    // Unlinking takes the link whoever it is to; a key restricted to some users could check
    // the owner only in a step apart from the unlink, so it may not unlink.
    if caller.restricts_users() {
        return Err(Problem::forbidden(format!(
            "key {:?} is restricted to some users, so it may not unlink an account; an admin key for every user may",
            caller.name
        )));
    }
    let previous = app.deployment.identities().await?.unlink(&identity).await?;
    Ok(Json(LinkChange {
        identity: identity.to_string(),
        platform: identity.platform().to_owned(),
        platform_user: identity.platform_user().to_owned(),
        user: None,
        previous,
    }))
}

/// Every link, one page at a time.
#[utoipa::path(
    get,
    path = "/v1/identities",
    tag = "identities",
    operation_id = "list_identities",
    params(Page),
    responses((status = 200, description = "One page of links", body = IdentitiesPage,
        headers(("Link" = String, description = "`<...>; rel=\"next\"` when there are more")))),
    security(("api_key" = ["admin"]))
)]
pub(crate) async fn list(
    State(app): State<App>,
    caller: Admin,
    Params(page): Params<Page>,
) -> Result<Response, Problem> {
    let limit = page_size(page.limit, DEFAULT_PAGE, MAX_PAGE)?;
    // The cursor compares as identities sort (platform, then platform user id), not as text;
    // any text is a cursor, so a hand-made one is never an error.
    let after = page
        .after
        .as_deref()
        .map(|after| after.split_once(':').unwrap_or((after, "")));
    let mut items: Vec<IdentityView> = app
        .deployment
        .identities()
        .await?
        .identities()
        .await?
        .into_iter()
        .filter(|(identity, user)| {
            caller.may_user(user)
                && after.is_none_or(|after| (identity.platform(), identity.platform_user()) > after)
        })
        .take(limit + 1)
        .map(|(identity, user)| IdentityView::new(&identity, user))
        .collect();
    let next_after = (items.len() > limit).then(|| {
        items.truncate(limit);
        items.last().map(|item| item.identity.clone())
    });
    let next_after = next_after.flatten();
    let next = next_after.as_ref().map(|after| {
        format!(
            "/v1/identities?limit={limit}&after={}",
            super::query_value(after)
        )
    });
    Ok(with_next_link(
        Json(IdentitiesPage { items, next_after }).into_response(),
        next,
    ))
}
