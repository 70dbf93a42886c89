//! Validated identifiers for personalities and users.
//!
//! Ids become path segments and key parts in every backend, so they are checked once, at
//! construction, against `^[A-Za-z0-9_-]{1,64}$`. A value of these types is always safe to use
//! as a file name or key; there is no way to build one that is not.
//!
//! The types are here; [`validate`] holds the check and the constructors that run it.

use std::fmt;

use serde::{Deserialize, Serialize};

pub(crate) mod validate;

/// The longest id accepted, in bytes (all accepted characters are ASCII).
pub const MAX_ID_LEN: usize = 64;

/// Which kind of id failed validation; carried by
/// [`MemoryError::InvalidId`](crate::MemoryError::InvalidId).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdKind {
    /// A [`PersonalityId`].
    Personality,
    /// A [`UserId`].
    User,
    /// The platform of an [`crate::Identity`] (`telegram`, `slack`).
    Platform,
    /// A platform's own user id in an [`crate::Identity`].
    PlatformUser,
    /// An [`crate::IdempotencyKey`].
    IdempotencyKey,
}

impl IdKind {
    /// The rule values of this kind must follow, for error messages.
    pub fn rule(self) -> &'static str {
        match self {
            IdKind::PlatformUser => {
                "platform user ids are 1 to 256 bytes, with no control characters and no leading or trailing whitespace"
            }
            IdKind::IdempotencyKey => {
                "idempotency keys are 1 to 128 visible ASCII characters (no spaces)"
            }
            _ => "ids may use only A-Z, a-z, 0-9, '_' and '-', 1 to 64 of them",
        }
    }
}

impl fmt::Display for IdKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IdKind::Personality => "personality id",
            IdKind::User => "user id",
            IdKind::Platform => "platform",
            IdKind::PlatformUser => "platform user id",
            IdKind::IdempotencyKey => "idempotency key",
        })
    }
}

macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        /// A string of 1 to 64 of `A-Z`, `a-z`, `0-9`, `_` and `-`.
        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                id_schema()
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {}

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    };
}

id_type!(
    /// The id of an agent personality: selects `personalities/<id>/MEMORY.md` under the
    /// per-personality memory scope.
    PersonalityId
);

id_type!(
    /// The id of a user: selects `users/<id>/USER.md`, whatever the personality.
    UserId
);

/// The JSON Schema of an id, for the `openapi` feature: what an HTTP API's OpenAPI document
/// says of it, from the rule that checks it.
#[cfg(feature = "openapi")]
/// An id: personality, user or platform (`^[A-Za-z0-9_-]{1,64}$`).
fn id_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(format!("^[A-Za-z0-9_-]{{1,{MAX_ID_LEN}}}$")))
        .min_length(Some(1))
        .max_length(Some(MAX_ID_LEN))
        .description(Some("An id: 1 to 64 of A-Z, a-z, 0-9, '_' and '-'."))
        .into()
}
