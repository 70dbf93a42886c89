//! JSON Schemas for the types whose wire form is a validated string, for the `openapi`
//! feature: what an HTTP API's OpenAPI document says of them, from the rules that check them.

use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

use crate::{MAX_ID_LEN, MAX_KEY_LEN};

/// An id: personality, user or platform (`^[A-Za-z0-9_-]{1,64}$`).
pub(crate) fn id_schema() -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(format!("^[A-Za-z0-9_-]{{1,{MAX_ID_LEN}}}$")))
        .min_length(Some(1))
        .max_length(Some(MAX_ID_LEN))
        .description(Some("An id: 1 to 64 of A-Z, a-z, 0-9, '_' and '-'."))
        .into()
}

/// An idempotency key: 1 to [`MAX_KEY_LEN`] visible ASCII characters.
pub(crate) fn idempotency_key_schema() -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(format!("^[!-~]{{1,{MAX_KEY_LEN}}}$")))
        .min_length(Some(1))
        .max_length(Some(MAX_KEY_LEN))
        .description(Some(
            "A caller's name for one logical write, the same on every retry of it: 1 to 128 visible ASCII characters.",
        ))
        .into()
}
