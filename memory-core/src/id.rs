//! Validated identifiers for personalities and users.
//!
//! Ids become path segments and key parts in every backend, so they are checked once, at
//! construction, against `^[A-Za-z0-9_-]{1,64}$`. A value of these types is always safe to use
//! as a file name or key; there is no way to build one that is not.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::MemoryError;

/// The longest id accepted, in bytes (all accepted characters are ASCII).
pub const MAX_ID_LEN: usize = 64;

/// Which kind of id failed validation; carried by [`MemoryError::InvalidId`].
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

pub(crate) fn validate(kind: IdKind, value: &str) -> Result<(), MemoryError> {
    let reason = if value.is_empty() {
        "it is empty".to_owned()
    } else if value.len() > MAX_ID_LEN {
        format!(
            "it is {} bytes long, the limit is {MAX_ID_LEN}",
            value.len()
        )
    } else if let Some(bad) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        format!("it contains {bad:?}")
    } else {
        return Ok(());
    };
    Err(MemoryError::InvalidId {
        kind,
        value: value.to_owned(),
        reason,
    })
}

macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident, $kind:expr) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Validates `value` against `^[A-Za-z0-9_-]{1,64}$`.
            ///
            /// # Errors
            /// [`MemoryError::InvalidId`] naming the value and what is wrong with it.
            pub fn new(value: impl Into<String>) -> Result<Self, MemoryError> {
                let value = value.into();
                validate($kind, &value)?;
                Ok(Self(value))
            }

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
                crate::openapi::id_schema()
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {}

        impl FromStr for $name {
            type Err = MemoryError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::new(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = MemoryError;
            fn try_from(value: String) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = MemoryError;
            fn try_from(value: &str) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

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
    PersonalityId,
    IdKind::Personality
);

id_type!(
    /// The id of a user: selects `users/<id>/USER.md`, whatever the personality.
    UserId,
    IdKind::User
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_alphabet() {
        for ok in ["a", "A-z_09", &"x".repeat(64)] {
            assert_eq!(PersonalityId::new(ok).unwrap().as_str(), ok);
            assert_eq!(UserId::new(ok).unwrap().as_str(), ok);
        }
    }

    #[test]
    fn refuses_everything_else_with_a_reason() {
        let long = "x".repeat(65);
        for bad in [
            "", "../x", "a/b", "a b", "é", "a\0b", ".", "..", "a.md", &long,
        ] {
            let err = UserId::new(bad).unwrap_err();
            assert!(
                matches!(&err, MemoryError::InvalidId { kind: IdKind::User, value, .. } if value == bad),
                "{bad:?}: {err}"
            );
        }
    }

    #[test]
    fn deserialising_validates() {
        let ok: UserId = serde_json::from_str("\"u-1\"").unwrap();
        assert_eq!(ok.as_str(), "u-1");
        let err = serde_json::from_str::<UserId>("\"../etc\"").unwrap_err();
        assert!(err.to_string().contains("user id"), "{err}");
    }

    #[test]
    fn errors_state_the_rule_of_their_kind() {
        let user = UserId::new("a b").unwrap_err().to_string();
        assert!(
            user.ends_with("ids may use only A-Z, a-z, 0-9, '_' and '-', 1 to 64 of them"),
            "{user}"
        );
        let key = crate::IdempotencyKey::new("a b").unwrap_err().to_string();
        assert!(
            key.ends_with("idempotency keys are 1 to 128 visible ASCII characters (no spaces)"),
            "{key}"
        );
        let platform_user = "telegram: padded ".parse::<crate::Identity>();
        let platform_user = platform_user.unwrap_err().to_string();
        assert!(
            platform_user.ends_with(
                "platform user ids are 1 to 256 bytes, with no control characters and no leading or trailing whitespace"
            ),
            "{platform_user}"
        );
    }
}
