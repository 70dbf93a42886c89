//! The idempotency key: a caller's name for one logical call.

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::MemoryError;
use crate::id::IdKind;

/// The longest idempotency key, in bytes.
pub const MAX_KEY_LEN: usize = 128;

/// A caller's name for one logical `sync` call, the same on every retry of it.
///
/// ```
/// # use memory_core::*;
/// let key = IdempotencyKey::new("turn-42:memory_add")?;
/// assert!(IdempotencyKey::new("has space").is_err());
/// assert_ne!(IdempotencyKey::generate(), IdempotencyKey::generate());
/// # Ok::<(), MemoryError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Validates `value`: 1 to [`MAX_KEY_LEN`] visible ASCII characters.
    ///
    /// # Errors
    /// [`MemoryError::InvalidId`] of kind [`IdKind::IdempotencyKey`].
    pub fn new(value: impl Into<String>) -> Result<Self, MemoryError> {
        let value = value.into();
        let reason = if value.is_empty() {
            "it is empty".to_owned()
        } else if value.len() > MAX_KEY_LEN {
            format!(
                "it is {} bytes long, the limit is {MAX_KEY_LEN}",
                value.len()
            )
        } else if let Some(bad) = value.chars().find(|c| !c.is_ascii_graphic()) {
            format!("it contains {bad:?}")
        } else {
            return Ok(IdempotencyKey(value));
        };
        Err(MemoryError::InvalidId {
            kind: IdKind::IdempotencyKey,
            value,
            reason,
        })
    }

    /// A fresh key, unique across processes and hosts for any practical purpose (time, process
    /// id, a per-process counter and a per-process random seed), for a caller that makes one
    /// key per call and repeats the call with it.
    pub fn generate() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        // RandomState is seeded from the OS once per process: no dependency needed for the bits
        // that tell two hosts (or two processes with one pid) apart.
        let mut random = std::collections::hash_map::RandomState::new().build_hasher();
        random.write_u128(nanos);
        random.write_u32(std::process::id());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        IdempotencyKey(format!("{nanos:x}-{:x}-{n:x}", random.finish()))
    }

    /// The key as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for IdempotencyKey {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        idempotency_key_schema()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for IdempotencyKey {}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for IdempotencyKey {
    type Error = MemoryError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        IdempotencyKey::new(value)
    }
}

impl From<IdempotencyKey> for String {
    fn from(key: IdempotencyKey) -> String {
        key.0
    }
}

/// The JSON Schema of an idempotency key, for the `openapi` feature: what an HTTP API's
/// OpenAPI document says of it, from the rule that checks it.
#[cfg(feature = "openapi")]
/// An idempotency key: 1 to [`MAX_KEY_LEN`] visible ASCII characters.
fn idempotency_key_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
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
