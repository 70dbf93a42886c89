//! Reading documents: one statement for a snapshot of any number, a leaner one for one or two.

use memory_core::{Document, DocumentId, MemoryError, Version};
use sqlx::PgConnection;

use crate::rows::{ChangedRow, ReadRow, SelectedRow, TipColumns};
use crate::store::{PostgresStore, row_key};

impl PostgresStore {
    /// The rows of `ids`, in order, one statement on `connection`: each document with (if
    /// `tips`) the tip of its history, both absent (NULL) for a document never written or never
    /// recorded.
    pub(crate) async fn select_on(
        &self,
        connection: &mut PgConnection,
        ids: &[DocumentId],
        receipts: bool,
        tips: bool,
    ) -> Result<Vec<SelectedRow>, sqlx::Error> {
        let (kinds, owners): (Vec<&str>, Vec<String>) = ids.iter().map(row_key).unzip();
        let statement = if tips {
            &self.sql.select
        } else {
            &self.sql.select_documents
        };
        self.query_as(statement)
            .bind(&kinds)
            .bind(&owners)
            .bind(receipts)
            .fetch_all(connection)
            .await
    }

    /// `ids` as one snapshot, in order, as [`PostgresStore::documents`] reads them, except
    /// that one still at the version `known` gives for it comes back as `None`, its text not
    /// sent (see [`VersionedStore::read_changed`](memory_core::raw::VersionedStore::read_changed)).
    pub(crate) async fn changed_documents(
        &self,
        ids: &[DocumentId],
        known: &[Option<&Version>],
    ) -> Result<Vec<Option<Document>>, MemoryError> {
        let known: Vec<i64> = known
            .iter()
            .map(|known| {
                known
                    .and_then(|version| version.as_str().parse().ok())
                    .unwrap_or(-1)
            })
            .collect();
        if known.len() != ids.len() || known.iter().all(|known| *known < 0) {
            return Ok(self.documents(ids).await?.into_iter().map(Some).collect());
        }
        let (kinds, owners): (Vec<&str>, Vec<String>) = ids.iter().map(row_key).unzip();
        let rows: Vec<ChangedRow> = self
            .single(async |connection| {
                self.query_as(&self.sql.read_changed)
                    .bind(&kinds)
                    .bind(&owners)
                    .bind(&known)
                    .fetch_all(connection)
                    .await
            })
            .await?
            .map_err(|err| self.db_error(err))?;
        ids.iter()
            .zip(rows)
            .map(|(id, row)| {
                if row.unchanged {
                    return Ok(None);
                }
                let selected = SelectedRow {
                    content: row.content,
                    version: row.version,
                    updated_at: row.updated_at,
                    receipts: None,
                    tip: TipColumns::NONE,
                    now: 0,
                };
                Ok(Some(self.fetched(id, selected)?.document))
            })
            .collect()
    }

    /// `ids` as one snapshot, in order, without their histories' tips: what reads need (a
    /// `sync` reads through
    /// [`CompareAndSwap::fetch`](memory_core::raw::CompareAndSwap::fetch), with them).
    ///
    /// One or two documents (a read, a prefetch) are read by the leaner `read_two`: two
    /// primary-key lookups, no arrays to unnest, no join, no sort, no tip; rows are matched to
    /// `ids` here.
    pub(crate) async fn documents(&self, ids: &[DocumentId]) -> Result<Vec<Document>, MemoryError> {
        let (first, second) = match ids {
            [one] => (one, one),
            [first, second] => (first, second),
            _ => {
                let rows = self
                    .single(async |connection| self.select_on(connection, ids, false, false).await)
                    .await?
                    .map_err(|err| self.db_error(err))?;
                return ids
                    .iter()
                    .zip(rows)
                    .map(|(id, row)| Ok(self.fetched(id, row)?.document))
                    .collect();
            }
        };
        let (first, second) = (row_key(first), row_key(second));
        let mut rows: Vec<ReadRow> = self
            .single(async |connection| {
                self.query_as(&self.sql.read_two)
                    .bind(first.0)
                    .bind(&first.1)
                    .bind(second.0)
                    .bind(&second.1)
                    .fetch_all(connection)
                    .await
            })
            .await?
            .map_err(|err| self.db_error(err))?;
        let mut documents: Vec<Document> = Vec::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            // The same document twice: one row, read once.
            if i > 0 && ids[i - 1] == *id {
                documents.push(documents[i - 1].clone());
                continue;
            }
            let key = row_key(id);
            let row = rows
                .iter()
                .position(|row| (row.kind.as_str(), row.owner.as_str()) == (key.0, key.1.as_str()))
                .map(|at| rows.swap_remove(at));
            let (version, updated_at) = (
                row.as_ref().map(|row| row.version),
                row.as_ref().map(|row| row.updated_at),
            );
            let selected = SelectedRow {
                content: row.map(|row| row.content),
                version,
                updated_at,
                receipts: None,
                tip: TipColumns::NONE,
                now: 0,
            };
            documents.push(self.fetched(id, selected)?.document);
        }
        Ok(documents)
    }
}
