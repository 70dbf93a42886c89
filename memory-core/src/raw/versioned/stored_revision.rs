//! A revision as a store read it back, checked field by field before it is taken for ours.

use std::time::SystemTime;

use crate::document::{DocumentId, Version};
use crate::error::MemoryError;
use crate::history::revision::{Revision, Surface};
use crate::id::{PersonalityId, UserId};
use crate::idempotency::key::IdempotencyKey;
use crate::sha256::sha256_hex;
use crate::update::MemoryUpdate;

/// A revision's fields as a store keeps them, each as plain text or a count, for
/// [`StoredRevision::check`] to turn into a [`Revision`] or refuse as not ours.
#[derive(Debug, Clone)]
pub struct StoredRevision {
    /// Its number.
    pub number: i64,
    /// The version before it.
    pub version_before: String,
    /// The version after it.
    pub version_after: String,
    /// SHA-256 (hex) of the text before.
    pub sha256_before: String,
    /// SHA-256 (hex) of the text after.
    pub sha256_after: String,
    /// UTF-8 bytes before.
    pub bytes_before: i64,
    /// UTF-8 bytes after.
    pub bytes_after: i64,
    /// When it was recorded.
    pub time: SystemTime,
    /// Where it came from, as [`Surface`] displays it.
    pub surface: String,
    /// The personality whose call made it.
    pub personality: Option<String>,
    /// The user of that call.
    pub user: Option<String>,
    /// The call's idempotency key.
    pub idempotency_key: Option<String>,
    /// The caller's session.
    pub session: Option<String>,
    /// The updates it applied, as a JSON array; `None` or empty for none.
    pub updates: Option<String>,
    /// The text after it; `None` for a purge's tombstone, a redacted revision, or one kept as
    /// its change alone.
    pub text: Option<String>,
    /// When its text and updates were erased; `None` when they were not.
    pub redacted_at: Option<SystemTime>,
}

impl StoredRevision {
    /// The revision of `document` these fields describe, or [`MemoryError::Corrupt`] at
    /// `location` (`<where the history is>#<number>`) naming the first field that is not ours:
    /// a number below 1, a negative count, a hash that is not SHA-256 in hex, a surface we do
    /// not write, an id or key that is not valid, updates that do not parse, or a text whose
    /// size or hash is not the one recorded beside it.
    ///
    /// # Errors
    /// As above.
    pub fn check(self, document: &DocumentId, location: &str) -> Result<Revision, MemoryError> {
        let number = self.number;
        let corrupt = |field: &str, reason: String| MemoryError::Corrupt {
            location: format!("{location}#{number}"),
            reason: format!("{field}: {reason}"),
        };
        let count = |field: &str, value: i64| {
            u64::try_from(value).map_err(|_| corrupt(field, format!("{value} is negative")))
        };
        let size = |field: &str, value: i64| {
            count(field, value).and_then(|value| {
                usize::try_from(value).map_err(|_| corrupt(field, format!("{value} is too large")))
            })
        };
        if number < 1 {
            return Err(corrupt(
                "number",
                format!("{number} is not a revision number: they start at 1"),
            ));
        }
        for (field, hash) in [
            ("sha256_before", &self.sha256_before),
            ("sha256_after", &self.sha256_after),
        ] {
            let hex = hash.len() == 64
                && hash
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if !hex {
                return Err(corrupt(field, format!("{hash:?} is not a SHA-256 in hex")));
            }
        }
        let surface: Surface = self
            .surface
            .parse()
            .map_err(|reason: String| corrupt("surface", reason))?;
        let personality = self
            .personality
            .map(PersonalityId::new)
            .transpose()
            .map_err(|err| corrupt("personality", err.to_string()))?;
        let user = self
            .user
            .map(UserId::new)
            .transpose()
            .map_err(|err| corrupt("user", err.to_string()))?;
        let idempotency_key = self
            .idempotency_key
            .map(IdempotencyKey::new)
            .transpose()
            .map_err(|err| corrupt("idempotency_key", err.to_string()))?;
        let updates: Vec<MemoryUpdate> = match self.updates.as_deref() {
            None | Some("") => Vec::new(),
            Some(json) => serde_json::from_str(json)
                .map_err(|err| corrupt("updates", format!("not a list of updates: {err}")))?,
        };
        let bytes_after = size("bytes_after", self.bytes_after)?;
        if let Some(text) = &self.text
            && (text.len() != bytes_after || sha256_hex(text) != self.sha256_after)
        {
            return Err(corrupt(
                "text",
                "it is not the text its sha256_after and bytes_after describe".to_owned(),
            ));
        }
        Ok(Revision {
            number: count("number", number)?,
            document: document.clone(),
            version_before: Version::new(self.version_before),
            version_after: Version::new(self.version_after),
            sha256_before: self.sha256_before,
            sha256_after: self.sha256_after,
            bytes_before: size("bytes_before", self.bytes_before)?,
            bytes_after,
            time: self.time,
            surface,
            personality,
            user,
            idempotency_key,
            session: self.session,
            updates,
            text: self.text,
            redacted_at: self.redacted_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Store;

    /// A revision 1 of "hello" as a store would keep it, every field ours.
    fn stored() -> StoredRevision {
        StoredRevision {
            number: 1,
            version_before: "0".to_owned(),
            version_after: "1".to_owned(),
            sha256_before: sha256_hex(""),
            sha256_after: sha256_hex("hello"),
            bytes_before: 0,
            bytes_after: 5,
            time: SystemTime::UNIX_EPOCH,
            surface: "tool".to_owned(),
            personality: Some("ada".to_owned()),
            user: None,
            idempotency_key: None,
            session: None,
            updates: Some(r#"[{"action":"add","store":"memory","content":"hello"}]"#.to_owned()),
            text: Some("hello".to_owned()),
            redacted_at: None,
        }
    }

    /// The field `check` names as not ours, or `None` when it takes the revision.
    fn refused(revision: StoredRevision) -> Option<String> {
        match revision.check(&DocumentId::GlobalMemory, "store://h") {
            Ok(_) => None,
            Err(MemoryError::Corrupt { location, reason }) => {
                assert!(location.starts_with("store://h#"), "{location}");
                Some(reason)
            }
            Err(err) => panic!("not Corrupt: {err:?}"),
        }
    }

    #[test]
    fn a_revision_of_ours_is_taken_whole() {
        let revision = stored().check(&DocumentId::GlobalMemory, "h").unwrap();
        assert_eq!(revision.number, 1);
        assert_eq!(revision.text.as_deref(), Some("hello"));
        assert_eq!(
            revision.updates,
            [MemoryUpdate::add(Store::Memory, "hello")]
        );
        let second = StoredRevision {
            number: 2,
            ..stored()
        };
        assert_eq!(refused(second), None, "any number from 1 on");
    }

    #[test]
    fn numbers_start_at_one() {
        for number in [0, -1, i64::MIN] {
            let reason = refused(StoredRevision { number, ..stored() });
            assert_eq!(
                reason,
                Some(format!(
                    "number: {number} is not a revision number: they start at 1"
                ))
            );
        }
    }

    #[test]
    fn hashes_are_sha256_in_lowercase_hex() {
        let hello = sha256_hex("hello");
        for (before, why) in [
            (hello[..63].to_owned(), "one digit short"),
            (format!("{hello}0"), "one digit long"),
            (format!("g{}", &hello[1..]), "not hex"),
            (hello.to_uppercase(), "uppercase"),
            (String::new(), "empty"),
        ] {
            let reason = refused(StoredRevision {
                sha256_before: before,
                ..stored()
            });
            assert!(
                reason
                    .as_deref()
                    .is_some_and(|reason| reason.starts_with("sha256_before: ")),
                "{why}: {reason:?}"
            );
        }
        // Every hex digit passes: 0-9 and a-f.
        let digits = "0123456789abcdef".repeat(4);
        assert_eq!(
            refused(StoredRevision {
                sha256_before: digits,
                ..stored()
            }),
            None
        );
    }

    #[test]
    fn a_text_must_be_the_one_its_size_and_hash_describe() {
        let text_refused =
            Some("text: it is not the text its sha256_after and bytes_after describe".to_owned());
        // The size right, the hash another text's.
        let other = StoredRevision {
            text: Some("jello".to_owned()),
            ..stored()
        };
        assert_eq!(refused(other), text_refused);
        // The hash right, the size wrong.
        let longer = StoredRevision {
            bytes_after: 6,
            ..stored()
        };
        assert_eq!(refused(longer), text_refused);
        // A change without its text is not checked against them.
        let change = StoredRevision {
            text: None,
            bytes_after: 6,
            ..stored()
        };
        assert_eq!(refused(change), None);
    }
}
