//! The `IdentityMap` impl, over the map's one JSON file (`identities`).

use async_trait::async_trait;
use memory_core::{Identity, IdentityMap, MemoryError, UserId};

use super::{MarkdownProvider, blocking};
use crate::identities;

/// The map is one JSON file, `users/identity-map.json`, in the form Ethos keeps it, shared by
/// every provider, thread and process on the root like the documents are (and by Ethos): links,
/// and unlinks of a linked identity, hold our lock file and Ethos's beside it and replace it by
/// atomic rename; reads take no lock.
#[async_trait]
impl IdentityMap for MarkdownProvider {
    async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        let (path, identity) = (self.identity_map_path(), identity.clone());
        blocking(move || Ok(identities::read(&path)?.user(&identity))).await
    }

    async fn link(
        &self,
        identity: &Identity,
        user: &UserId,
        relink: bool,
    ) -> Result<Option<UserId>, MemoryError> {
        let (path, identity, user) = (self.identity_map_path(), identity.clone(), user.clone());
        let lock_timeout = self.lock_timeout;
        blocking(move || identities::link(&path, &identity, &user, relink, lock_timeout)).await
    }

    async fn unlink(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        let (path, identity) = (self.identity_map_path(), identity.clone());
        let lock_timeout = self.lock_timeout;
        blocking(move || identities::unlink(&path, &identity, lock_timeout)).await
    }

    async fn identities(&self) -> Result<Vec<(Identity, UserId)>, MemoryError> {
        let path = self.identity_map_path();
        blocking(move || Ok(identities::read(&path)?.links().into_iter().collect())).await
    }
}
