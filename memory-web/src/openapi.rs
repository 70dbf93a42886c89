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

/// The document's fixed parts; the operations come from the router (`crate::api::routes`).
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
        (name = "history", description = "Every change is a revision: list, compare, revert, redact"),
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
/// a body also too large, not JSON in UTF-8 and the wrong shape; for a write also a refusal as
/// memory stands, a key sent before with another request, and a reply that timed out while
/// the write went on (a read past its time is 503).
fn shared_problems(method: &HttpMethod, operation: &Operation) -> Vec<(&'static str, String)> {
    let mut problems: Vec<(&'static str, String)> = vec![
        (
            "400",
            "The request is invalid: a bad id, parameter or update; nothing was written".into(),
        ),
        ("401", "No valid API key was sent".into()),
        (
            "403",
            "The key lacks the scope, or may not touch that user or personality".into(),
        ),
        (
            "500",
            "Stored data is corrupt, or the server is misconfigured".into(),
        ),
        (
            "503",
            "Busy or unavailable: nothing was written; retry after Retry-After".into(),
        ),
    ];
    let has_body = operation.request_body.is_some();
    if has_body {
        problems.extend([
            (
                "408",
                "The body did not arrive whole within the server's body timeout; nothing was done"
                    .into(),
            ),
            ("413", "The body is over the server's limit".into()),
            (
                "415",
                "The body is not application/json, or names a charset other than UTF-8".into(),
            ),
        ]);
    }
    // As the service tells them (`write_shapes`): an operation other than GET needing the
    // write or admin scope. Prefetch and search are reads, though they take a body.
    let write = !matches!(method, HttpMethod::Get | HttpMethod::Head)
        && needed_scope(operation).is_some_and(is_write_scope);
    let keyed = takes_header(operation, "Idempotency-Key");
    let mut unprocessable = Vec::new();
    if has_body {
        unprocessable.push(
            "the body is not the JSON this operation takes (a missing, unknown or mistyped field)"
                .to_owned(),
        );
    }
    // Only a write with a body can be refused for what it asks (an edit, a text over a cap).
    if write && has_body {
        unprocessable.push("the write is refused as memory stands (a text to edit not found or found twice, a hard cap: `code` says which)".to_owned());
    }
    if keyed {
        unprocessable.push(
            "the Idempotency-Key was sent before with another request (`code` `key-reused`)"
                .to_owned(),
        );
    }
    if let Some((first, rest)) = unprocessable.split_first() {
        let mut description = first[..1].to_uppercase() + &first[1..];
        for reason in rest {
            description.push_str("; or ");
            description.push_str(reason);
        }
        description.push_str("; nothing was written");
        problems.push(("422", description));
    }
    if write {
        problems.push((
            "504",
            "No answer in time: the write may or may not have landed; repeat it with the same Idempotency-Key".into(),
        ));
    }
    problems
}

/// The scope `operation` needs, if any (`security: [{}]` operations are public).
fn needed_scope(operation: &Operation) -> Option<crate::settings::Scope> {
    let needs = serde_json::to_value(&operation.security).unwrap_or_default();
    let needed: Vec<String> = needs
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|requirement| requirement.get("api_key")?.as_array())
        .flatten()
        .filter_map(|scope| scope.as_str().map(str::to_owned))
        .collect();
    // The widest scope named: admin holds the others.
    [
        crate::settings::Scope::Admin,
        crate::settings::Scope::Write,
        crate::settings::Scope::Metrics,
        crate::settings::Scope::Read,
    ]
    .into_iter()
    .find(|scope| needed.iter().any(|needed| needed == scope.name()))
}

/// Whether `scope` is one a write needs: `write`, or `admin` (purge, identity links).
fn is_write_scope(scope: crate::settings::Scope) -> bool {
    matches!(
        scope,
        crate::settings::Scope::Write | crate::settings::Scope::Admin
    )
}

/// Whether `operation` takes the header `name`.
fn takes_header(operation: &Operation, name: &str) -> bool {
    operation.parameters.iter().flatten().any(|parameter| {
        matches!(parameter, RefOr::T(parameter)
            if parameter.parameter_in == ParameterIn::Header && parameter.name.eq_ignore_ascii_case(name))
    })
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

/// How the document tells a client to authenticate, on a server with keys; a server without
/// keys says [`KEYLESS_ACCESS`] instead.
const KEYED_ACCESS: &str = "Send `Authorization: Bearer <key>` (keys are configured in memory.toml by hash, with scopes read, write, admin, metrics) and an `Idempotency-Key` on writes so a retry lands once.";

/// What a server without keys says of access.
const KEYLESS_ACCESS: &str = "This server runs on loopback without keys: it answers any request naming this machine in `Host` (localhost, 127.0.0.1 or [::1]), with no `Authorization`, and refuses every other host with 403. Send an `Idempotency-Key` on writes so a retry lands once.";

/// The document as a server serves it, in JSON: the finished `document` when the server takes
/// API keys (what `memory openapi` prints and `docs/openapi.json` holds), else [`keyless`].
pub(crate) fn served_json(document: &utoipa::openapi::OpenApi, has_keys: bool) -> String {
    let served = match has_keys {
        true => document.clone(),
        false => keyless(document.clone()),
    };
    served.to_pretty_json().unwrap_or_default()
}

/// The finished `document` as a loopback server without keys serves it, true to the access it
/// gives: no security scheme and no operation needing one (a client generated from it sends
/// no key), no 401, and 403 only for a `Host` that is not this machine.
pub(crate) fn keyless(mut document: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    if let Some(description) = document.info.description.as_mut() {
        *description = description.replace(KEYED_ACCESS, KEYLESS_ACCESS);
    }
    if let Some(components) = document.components.as_mut() {
        components.security_schemes.clear();
    }
    document.security = None;
    for item in document.paths.paths.values_mut() {
        for (_, operation) in operations(item) {
            operation.security = None;
            let responses = &mut operation.responses.responses;
            responses.remove("401");
            if let Some(RefOr::T(forbidden)) = responses.get_mut("403") {
                forbidden.description =
                    "The Host header names a host other than this machine (localhost, 127.0.0.1 or [::1])"
                        .to_owned();
            }
        }
    }
    document
}

/// The query parameters each operation of `document` takes, by (method, route template).
pub(crate) fn query_parameters(
    document: &utoipa::openapi::OpenApi,
) -> crate::request::QueryParameters {
    let mut known = crate::request::QueryParameters::new();
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

/// What a write's request must be whatever memory holds, as its operation in the document
/// says: the replay of a keyed write checks it before answering from what it remembers, so a
/// repeat that is itself invalid gets the answer it would get without the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WriteShape {
    /// The scope the operation needs (`write` or `admin`).
    pub scope: crate::settings::Scope,
    /// Whether it reads `If-Match`, and if so whether it requires one: `Some(true)` required,
    /// `Some(false)` optional, `None` not read.
    pub if_match: Option<bool>,
    /// Whether it takes a JSON body.
    pub json_body: bool,
}

/// The [`WriteShape`] of each write of `document`, by (method, route template).
pub(crate) fn write_shapes(
    document: &utoipa::openapi::OpenApi,
) -> std::collections::HashMap<(axum::http::Method, String), WriteShape> {
    let mut shapes = std::collections::HashMap::new();
    for (path, item) in &document.paths.paths {
        for (method, operation) in [
            (axum::http::Method::PUT, &item.put),
            (axum::http::Method::POST, &item.post),
            (axum::http::Method::DELETE, &item.delete),
            (axum::http::Method::PATCH, &item.patch),
        ] {
            let Some(operation) = operation else { continue };
            let Some(scope) = needed_scope(operation).filter(|scope| is_write_scope(*scope)) else {
                continue;
            };
            let if_match =
                operation
                    .parameters
                    .iter()
                    .flatten()
                    .find_map(|parameter| match parameter {
                        RefOr::T(parameter)
                            if parameter.parameter_in == ParameterIn::Header
                                && parameter.name.eq_ignore_ascii_case("if-match") =>
                        {
                            Some(parameter.required == Required::True)
                        }
                        _ => None,
                    });
            shapes.insert(
                (method, path.clone()),
                WriteShape {
                    scope,
                    if_match,
                    json_body: operation.request_body.is_some(),
                },
            );
        }
    }
    shapes
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
