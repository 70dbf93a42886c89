//! The OpenAPI 3.1 document, generated from the handlers' annotations: each operation's own
//! responses, and the problem responses every operation shares, added here in one place.

use utoipa::OpenApi;
use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::path::ParameterIn;
use utoipa::openapi::path::{HttpMethod, Operation};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{AdditionalProperties, Schema, SchemaType, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{RefOr, Required};

use crate::problem::{PROBLEM_JSON, ProblemDocument, ProblemKind};

/// The document's fixed parts; the operations come from the router (`crate::routes`).
#[derive(OpenApi)]
#[openapi(
    info(
        title = "agent-memory",
        description = "Durable memory for LLM agents, over HTTP: the turn cycle (prefetch before a turn, sync after it), documents by their layout path with ETag/If-Match and history, search on recall personalities, the identity map and the directory. Errors are RFC 9457 problem documents whose `kind` is the error's class. Send `Authorization: Bearer <key>` (keys are configured in memory.toml by hash, with scopes read, write, admin, metrics) and an `Idempotency-Key` on writes so a retry lands once.",
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0")
    ),
    tags(
        (name = "turn", description = "What an agent loop calls every turn"),
        (name = "documents", description = "Documents by their layout path"),
        (name = "history", description = "Every change is a revision: list, compare, revert"),
        (name = "identities", description = "Which user a platform account is"),
        (name = "directory", description = "The personalities and users the memory knows"),
        (name = "health", description = "Liveness and readiness"),
    ),
    components(schemas(ProblemDocument))
)]
pub(crate) struct ApiDoc;

/// The problem responses an operation can give besides its own: bad input, no or a wrong
/// key, a key without the scope (or a host that is not this machine, for a server without
/// keys), stored data or configuration the server must fix, busy or unavailable; for one with
/// a body also too large, not JSON and the wrong shape; for a write also a reply that timed
/// out while the write went on.
fn shared_problems(
    method: &HttpMethod,
    operation: &Operation,
) -> Vec<(&'static str, &'static str)> {
    let mut problems = vec![
        (
            "400",
            "The request is invalid: a bad id, parameter or update; nothing was written",
        ),
        ("401", "No valid API key was sent"),
        (
            "403",
            "The key lacks the scope, or may not touch that user or personality",
        ),
        (
            "500",
            "Stored data is corrupt, or the server is misconfigured",
        ),
        (
            "503",
            "Busy or unavailable: nothing was written; retry after Retry-After",
        ),
    ];
    if operation.request_body.is_some() {
        problems.extend([
            ("413", "The body is over the server's limit"),
            ("415", "The body is not application/json"),
        ]);
    }
    if operation.request_body.is_some() || !matches!(method, HttpMethod::Get | HttpMethod::Head) {
        problems.push((
            "422",
            "The body is not the JSON this operation takes, or the call is refused as memory stands (a text to edit not found, a hard cap, an Idempotency-Key already used for another request); nothing was written",
        ));
    }
    if !matches!(method, HttpMethod::Get | HttpMethod::Head) {
        problems.push((
            "504",
            "No answer in time: the write may or may not have landed; repeat it with the same Idempotency-Key",
        ));
    }
    problems
}

/// Adds the bearer scheme, the problem responses every operation shares, and the problem
/// kinds.
pub(crate) fn finish(mut document: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    let components = document.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "api_key",
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(
                    "An API key from [serve.keys] in memory.toml (`memory key new` mints one); a loopback server without keys needs none.",
                ))
                .build(),
        ),
    );
    if let Some(RefOr::T(Schema::Object(problem))) = components.schemas.get_mut("Problem")
        && let Some(RefOr::T(Schema::Object(kind))) = problem.properties.get_mut("kind")
    {
        kind.enum_values = Some(
            ProblemKind::all_names()
                .into_iter()
                .map(serde_json::Value::from)
                .collect(),
        );
    }
    // Updates refuse unknown fields (serde's deny_unknown_fields on the enum), which the
    // derive does not say of each variant.
    if let Some(RefOr::T(Schema::OneOf(updates))) = components.schemas.get_mut("MemoryUpdate") {
        for variant in &mut updates.items {
            if let RefOr::T(Schema::Object(variant)) = variant {
                variant.additional_properties =
                    Some(Box::new(AdditionalProperties::FreeForm(false)));
            }
        }
    }
    let problem = ContentBuilder::new()
        .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
            "Problem",
        ))))
        .build();
    for item in document.paths.paths.values_mut() {
        for (method, operation) in operations(item) {
            for (status, description) in shared_problems(&method, operation) {
                let response = operation
                    .responses
                    .responses
                    .entry(status.to_owned())
                    .or_insert_with(|| {
                        ResponseBuilder::new()
                            .description(description)
                            .build()
                            .into()
                    });
                // An operation's own answer with that status (readiness's 503) may also come
                // as a problem, from the limits every request passes.
                if let RefOr::T(response) = response {
                    response
                        .content
                        .entry(PROBLEM_JSON.to_owned())
                        .or_insert_with(|| problem.clone().into());
                }
            }
            if let Some(RefOr::T(body)) = operation.request_body.as_mut() {
                body.required = Some(Required::True);
            }
            for parameter in operation.parameters.iter_mut().flatten() {
                if let RefOr::T(parameter) = parameter
                    && parameter.parameter_in == ParameterIn::Header
                {
                    not_null(&mut parameter.schema);
                }
            }
        }
    }
    document
}

/// The query parameters each operation of `document` takes, by (method, route template).
pub(crate) fn query_parameters(document: &utoipa::openapi::OpenApi) -> crate::api::QueryParameters {
    let mut known = crate::api::QueryParameters::new();
    for (path, item) in &document.paths.paths {
        for (method, operation) in [
            (axum::http::Method::GET, &item.get),
            (axum::http::Method::PUT, &item.put),
            (axum::http::Method::POST, &item.post),
            (axum::http::Method::DELETE, &item.delete),
            (axum::http::Method::PATCH, &item.patch),
        ] {
            let Some(operation) = operation else { continue };
            let names = operation
                .parameters
                .iter()
                .flatten()
                .filter_map(|parameter| match parameter {
                    RefOr::T(parameter) if parameter.parameter_in == ParameterIn::Query => {
                        Some(parameter.name.clone())
                    }
                    _ => None,
                })
                .collect();
            known.insert((method, path.clone()), names);
        }
    }
    known
}

/// The writes of `document` (the operations that need the `write` or `admin` scope), as
/// (method, route template).
pub(crate) fn writes(
    document: &utoipa::openapi::OpenApi,
) -> std::collections::HashSet<(axum::http::Method, String)> {
    let writes_memory = |operation: &Operation| {
        let needs = serde_json::to_value(&operation.security).unwrap_or_default();
        ["write", "admin"].iter().any(|scope| {
            needs
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|requirement| requirement.get("api_key")?.as_array())
                .flatten()
                .any(|needed| needed == scope)
        })
    };
    let mut writes = std::collections::HashSet::new();
    for (path, item) in &document.paths.paths {
        for (method, operation) in [
            (axum::http::Method::PUT, &item.put),
            (axum::http::Method::POST, &item.post),
            (axum::http::Method::DELETE, &item.delete),
            (axum::http::Method::PATCH, &item.patch),
        ] {
            if operation.as_ref().is_some_and(writes_memory) {
                writes.insert((method, path.clone()));
            }
        }
    }
    writes
}

/// A header is absent or a string, never JSON's null, whatever `Option` made of its schema.
fn not_null(schema: &mut Option<RefOr<Schema>>) {
    match schema {
        Some(RefOr::T(Schema::Object(object))) => {
            if let SchemaType::Array(types) = &object.schema_type {
                let types: Vec<Type> = types
                    .iter()
                    .filter(|t| **t != Type::Null)
                    .cloned()
                    .collect();
                if let [only] = types.as_slice() {
                    object.schema_type = SchemaType::Type(only.clone());
                }
            }
        }
        Some(RefOr::T(Schema::OneOf(one_of))) => {
            let kept: Vec<RefOr<Schema>> = one_of
                .items
                .iter()
                .filter(|item| !matches!(item, RefOr::T(Schema::Object(o)) if o.schema_type == SchemaType::Type(Type::Null)))
                .cloned()
                .collect();
            if let [only] = kept.as_slice() {
                *schema = Some(only.clone());
            }
        }
        _ => {}
    }
}

fn operations(
    item: &mut utoipa::openapi::PathItem,
) -> impl Iterator<Item = (HttpMethod, &mut Operation)> {
    [
        (HttpMethod::Get, item.get.as_mut()),
        (HttpMethod::Put, item.put.as_mut()),
        (HttpMethod::Post, item.post.as_mut()),
        (HttpMethod::Delete, item.delete.as_mut()),
        (HttpMethod::Patch, item.patch.as_mut()),
        (HttpMethod::Head, item.head.as_mut()),
    ]
    .into_iter()
    .filter_map(|(method, operation)| operation.map(|operation| (method, operation)))
}
