//! The identity map: the table `memory_identities`, one row per (platform, platform user id).

use async_trait::async_trait;
use memory_core::{Identity, IdentityMap, MemoryError, UserId};
use sqlx::PgConnection;

use crate::store::PostgresStore;

impl PostgresStore {
    /// [`IdentityMap::link`] on `connection`.
    async fn link_on(
        &self,
        connection: &mut PgConnection,
        identity: &Identity,
        user: &UserId,
        relink: bool,
    ) -> Result<Option<UserId>, MemoryError> {
        let failed = |err| self.identity_error(err);
        let key = (identity.platform(), identity.platform_user());
        let mut transaction = self.transaction(connection).await.map_err(failed)?;
        loop {
            let inserted = self
                .query(&self.sql.link_first)
                .bind(key.0)
                .bind(key.1)
                .bind(user.as_str())
                .execute(&mut *transaction)
                .await
                .map_err(failed)?;
            if inserted.rows_affected() == 1 {
                transaction.commit().await.map_err(failed)?;
                return Ok(None);
            }
            let current: Option<String> = self
                .query_scalar(&self.sql.lock_link)
                .bind(key.0)
                .bind(key.1)
                .fetch_optional(&mut *transaction)
                .await
                .map_err(failed)?;
            // Deleted by hand between the two statements: this is a first link after all.
            let Some(current) = current else {
                continue;
            };
            let current = self.stored_user(identity, current)?;
            // Refused or unchanged: dropping the transaction rolls it back, writing nothing.
            if identity.check_link(Some(&current), user, relink)? {
                self.query(&self.sql.relink)
                    .bind(key.0)
                    .bind(key.1)
                    .bind(user.as_str())
                    .execute(&mut *transaction)
                    .await
                    .map_err(failed)?;
                transaction.commit().await.map_err(failed)?;
            }
            return Ok(Some(current));
        }
    }

    /// [`IdentityMap::unlink`] on `connection`: one `DELETE ... RETURNING`, in a transaction
    /// committed only when the row it removed held a user id of ours. A row that is not ours
    /// is `Corrupt`, and dropping the transaction rolls the delete back, writing nothing.
    async fn unlink_on(
        &self,
        connection: &mut PgConnection,
        identity: &Identity,
    ) -> Result<Option<UserId>, MemoryError> {
        let failed = |err| self.identity_error(err);
        let mut transaction = self.transaction(connection).await.map_err(failed)?;
        let removed: Option<String> = self
            .query_scalar(&self.sql.unlink)
            .bind(identity.platform())
            .bind(identity.platform_user())
            .fetch_optional(&mut *transaction)
            .await
            .map_err(failed)?;
        // Not linked: nothing was deleted, and dropping the transaction ends it.
        let Some(removed) = removed else {
            return Ok(None);
        };
        let removed = self.stored_user(identity, removed)?;
        transaction.commit().await.map_err(failed)?;
        Ok(Some(removed))
    }

    /// The user id of a stored link: anything but a valid id was not written by us.
    fn stored_user(&self, identity: &Identity, user: String) -> Result<UserId, MemoryError> {
        UserId::new(user).map_err(|err| MemoryError::Corrupt {
            location: format!("{}/memory_identities/{identity}", self.location),
            reason: err.to_string(),
        })
    }
}

#[async_trait]
impl IdentityMap for PostgresStore {
    async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        let user: Option<String> = self
            .single(async |connection| {
                self.query_scalar(&self.sql.resolve)
                    .bind(identity.platform())
                    .bind(identity.platform_user())
                    .fetch_optional(connection)
                    .await
            })
            .await?
            .map_err(|err| self.identity_error(err))?;
        user.map(|user| self.stored_user(identity, user))
            .transpose()
    }

    /// One transaction: a first link inserts the row; any other link locks the row, decides
    /// with [`Identity::check_link`] and updates it only if that says so. Concurrent first
    /// links of one identity queue on the primary key, so exactly one inserts and the others
    /// then see its row.
    async fn link(
        &self,
        identity: &Identity,
        user: &UserId,
        relink: bool,
    ) -> Result<Option<UserId>, MemoryError> {
        self.leased(async |connection| self.link_on(connection, identity, user, relink).await)
            .await?
    }

    /// One `DELETE ... RETURNING` (see `unlink_on`): concurrent unlinks of one identity queue on
    /// its row, so exactly one deletes it and returns its user, the others find no row.
    async fn unlink(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        self.leased(async |connection| self.unlink_on(connection, identity).await)
            .await?
    }

    async fn identities(&self) -> Result<Vec<(Identity, UserId)>, MemoryError> {
        let rows: Vec<(String, String, String)> = self
            .single(async |connection| {
                self.query_as(&self.sql.identities)
                    .fetch_all(connection)
                    .await
            })
            .await?
            .map_err(|err| self.identity_error(err))?;
        rows.into_iter()
            .map(|(platform, platform_user, user)| {
                let identity =
                    Identity::new(platform, platform_user).map_err(|err| MemoryError::Corrupt {
                        location: format!("{}/memory_identities", self.location),
                        reason: err.to_string(),
                    })?;
                let user = self.stored_user(&identity, user)?;
                Ok((identity, user))
            })
            .collect()
    }
}
