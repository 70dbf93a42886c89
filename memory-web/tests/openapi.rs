//! The committed OpenAPI document (`docs/openapi.json`): what the code generates, and what
//! it promises every operation answers. (What a server serves of it, keyed or not, is tested
//! over the wiring: memory-wiring's `tests/service.rs`.)

use serde_json::Value;

/// The OpenAPI document is generated from the code; the committed copy must be what it
/// generates. `UPDATE_OPENAPI=1` rewrites the committed copy.
#[test]
fn the_committed_openapi_document_is_what_the_code_generates() {
    let generated = memory_web::openapi_json() + "\n";
    let committed_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/openapi.json");
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(&committed_path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/openapi.json differs from what the code generates; regenerate it with `memory openapi > docs/openapi.json` (or UPDATE_OPENAPI=1 cargo nextest run --workspace -E 'test(committed_openapi)')"
    );
    let document: Value = serde_json::from_str(&generated).unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    // Every operation names its error responses as problem documents.
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let responses = operation["responses"].as_object().unwrap();
            for status in ["400", "500", "503"] {
                let problem = &responses[status]["content"]["application/problem+json"];
                assert!(problem.is_object(), "{method} {path} {status}");
            }
        }
    }
}

/// The document names the 422s the service gives: every write taking an `Idempotency-Key`
/// says a key sent with another request is `key-reused`; search says a personality that
/// cannot be searched is refused; and a read's time out is 503, never the write's 504.
#[test]
fn the_openapi_document_names_the_422s_and_504s_the_service_gives() {
    let document: Value = serde_json::from_str(&memory_web::openapi_json()).unwrap();
    let mut keyed_writes = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let keyed = operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|parameter| parameter["name"] == "Idempotency-Key");
            let responses = &operation["responses"];
            if keyed {
                keyed_writes += 1;
                let unprocessable = responses["422"]["description"].as_str().unwrap_or("");
                assert!(
                    unprocessable.contains("key-reused"),
                    "{method} {path}: {unprocessable:?}"
                );
                assert!(responses["504"].is_object(), "{method} {path}");
            }
            let writes = ["put", "post", "delete"].contains(&method.as_str())
                && !["/v1/prefetch", "/v1/search"].contains(&path.as_str());
            assert_eq!(writes, keyed, "{method} {path}: every write takes a key");
            assert_eq!(
                responses["504"].is_object(),
                writes,
                "{method} {path}: 504 is a write's"
            );
            if operation["requestBody"].is_object() {
                let unsupported = responses["415"]["description"].as_str().unwrap();
                assert!(unsupported.contains("UTF-8"), "{method} {path}");
            }
        }
    }
    assert!(keyed_writes >= 15, "{keyed_writes}");
    let search = &document["paths"]["/v1/search"]["post"]["responses"]["422"];
    let description = search["description"].as_str().unwrap();
    assert!(description.contains("vector provider"), "{description}");
    assert!(!description.contains("Idempotency-Key"), "{description}");
    assert!(search["content"]["application/problem+json"].is_object());
    let prefetch = &document["paths"]["/v1/prefetch"]["post"]["responses"];
    assert!(prefetch["504"].is_null());
    assert!(
        !prefetch["422"]["description"]
            .as_str()
            .unwrap()
            .contains("Idempotency-Key")
    );
}
