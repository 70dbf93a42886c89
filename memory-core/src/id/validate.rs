//! The check every id passes at construction, and the constructors that run it: the only ways
//! to build an id, each failing with [`MemoryError::InvalidId`].

use std::str::FromStr;

use crate::error::MemoryError;
use crate::id::{IdKind, MAX_ID_LEN, PersonalityId, UserId};

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

macro_rules! validated {
    ($name:ident, $kind:expr) => {
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
        }

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
    };
}

validated!(PersonalityId, IdKind::Personality);
validated!(UserId, IdKind::User);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idempotency::key::IdempotencyKey;
    use crate::identity::Identity;

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
        let key = IdempotencyKey::new("a b").unwrap_err().to_string();
        assert!(
            key.ends_with("idempotency keys are 1 to 128 visible ASCII characters (no spaces)"),
            "{key}"
        );
        let platform_user = "telegram: padded ".parse::<Identity>();
        let platform_user = platform_user.unwrap_err().to_string();
        assert!(
            platform_user.ends_with(
                "platform user ids are 1 to 256 bytes, with no control characters and no leading or trailing whitespace"
            ),
            "{platform_user}"
        );
    }
}
