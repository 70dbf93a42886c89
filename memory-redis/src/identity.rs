//! The identity map: one hash beside the documents, linked and unlinked by Lua scripts.

use std::collections::HashMap;

use async_trait::async_trait;
use memory_core::{Identity, IdentityMap, MemoryError, UserId};
use redis::{FromRedisValue, RedisError};

use crate::store::RedisStore;

impl RedisStore {
    /// An error on the identity map: a key of another type (`WRONGTYPE`) or content the link
    /// or unlink script refused (`CORRUPT`) is `Corrupt`.
    fn identity_error(&self, err: RedisError) -> MemoryError {
        let key = self.identity_map_key();
        match err.code() {
            Some("WRONGTYPE") => MemoryError::Corrupt {
                location: self.key_location(&key),
                reason: "it is not a hash".to_owned(),
            },
            Some("CORRUPT") => MemoryError::Corrupt {
                location: self.key_location(&key),
                reason: err.detail().unwrap_or_default().to_owned(),
            },
            _ => self.error(err),
        }
    }

    /// A user id as stored in the map: anything but a valid id was not written by us.
    fn stored_user(&self, field: &str, user: Vec<u8>) -> Result<UserId, MemoryError> {
        let corrupt = |reason: String| MemoryError::Corrupt {
            location: self.key_location(&self.identity_map_key()),
            reason: format!("field {field:?}: {reason}"),
        };
        let user = String::from_utf8(user)
            .map_err(|err| corrupt(format!("its user id is not UTF-8 ({})", err.utf8_error())))?;
        UserId::new(user).map_err(|err| corrupt(err.to_string()))
    }

    /// Sends a read of the identity map, once more if the connection had dropped since the
    /// last call (a read is safe to repeat).
    async fn read_identity_map<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
    ) -> Result<T, MemoryError> {
        self.send_repeatable(|mut connection| async move { cmd.query_async(&mut connection).await })
            .await
            .map_err(|err| self.identity_error(err))
    }
}

/// The identity map is one hash beside the documents, [`RedisStore::identity_map_key`];
/// links and unlinks each run in one Lua script, so they are atomic across every client.
#[async_trait]
impl IdentityMap for RedisStore {
    async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        let field = identity.to_string();
        let user: Option<Vec<u8>> = self
            .read_identity_map(redis::cmd("HGET").arg(self.identity_map_key()).arg(&field))
            .await?;
        user.map(|user| self.stored_user(&field, user)).transpose()
    }

    async fn link(
        &self,
        identity: &Identity,
        user: &UserId,
        relink: bool,
    ) -> Result<Option<UserId>, MemoryError> {
        let field = identity.to_string();
        // A link repeated after it landed finds the same user and changes nothing.
        let previous: Option<Vec<u8>> = self
            .link_script
            .key(self.identity_map_key())
            .arg(&field)
            .arg(user.as_str())
            .arg(if relink { "1" } else { "0" })
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(|err| self.identity_error(err))?;
        let previous = previous
            .map(|previous| self.stored_user(&field, previous))
            .transpose()?;
        // The script wrote exactly when this says so; here it only raises IdentityTaken.
        identity.check_link(previous.as_ref(), user, relink)?;
        Ok(previous)
    }

    /// One script reads the field and deletes it, so of concurrent unlinks of one identity
    /// exactly one gets its user. Not sent twice: a repeat after it landed would answer `None`.
    async fn unlink(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        let field = identity.to_string();
        let previous: Option<Vec<u8>> = self
            .unlink_script
            .key(self.identity_map_key())
            .arg(&field)
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(|err| self.identity_error(err))?;
        previous
            .map(|previous| self.stored_user(&field, previous))
            .transpose()
    }

    async fn identities(&self) -> Result<Vec<(Identity, UserId)>, MemoryError> {
        let fields: HashMap<Vec<u8>, Vec<u8>> = self
            .read_identity_map(redis::cmd("HGETALL").arg(self.identity_map_key()))
            .await?;
        fields
            .into_iter()
            .map(|(field, user)| {
                let field = String::from_utf8(field).map_err(|err| MemoryError::Corrupt {
                    location: self.key_location(&self.identity_map_key()),
                    reason: format!(
                        "field {:?} is not UTF-8 ({})",
                        String::from_utf8_lossy(err.as_bytes()),
                        err.utf8_error()
                    ),
                })?;
                let identity = field
                    .parse()
                    .map_err(|err: MemoryError| MemoryError::Corrupt {
                        location: self.key_location(&self.identity_map_key()),
                        reason: format!("field {field:?}: {err}"),
                    })?;
                Ok((identity, self.stored_user(&field, user)?))
            })
            .collect()
    }
}
