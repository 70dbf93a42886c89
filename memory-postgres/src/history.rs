//! A document's history as one snapshot, purging a document with its history, and redacting
//! one revision.

use memory_core::raw::{StoredHistory, from_signed_unix_millis, sha256_hex, signed_unix_millis};
use memory_core::{DocumentId, MemoryError, Purged, Retention, Revision, Surface, Version};
use sqlx::{Connection, PgConnection};

use crate::rows::{ErasedRow, HistoryRow, stored_count, to_i64};
use crate::store::{PostgresStore, row_key};

impl PostgresStore {
    /// [`VersionedStore::history`](memory_core::raw::VersionedStore::history) on `connection`:
    /// the document, its tip and its newest `limit` revisions read in one snapshot (a
    /// read-only repeatable-read transaction).
    pub(crate) async fn history_on(
        &self,
        connection: &mut PgConnection,
        document: &DocumentId,
        limit: usize,
    ) -> Result<StoredHistory, MemoryError> {
        let failed = |err| self.history_error(err);
        let mut transaction = connection
            .begin_with(self.begin.snapshot.clone())
            .await
            .map_err(failed)?;
        let selected = self
            .select_on(
                &mut transaction,
                std::slice::from_ref(document),
                false,
                true,
            )
            .await
            .map_err(failed)?;
        let (kind, owner) = row_key(document);
        let rows: Vec<HistoryRow> = self
            .query_as(&self.sql.history)
            .bind(kind)
            .bind(&owner)
            // "All" (usize::MAX) is more than any document holds.
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&mut *transaction)
            .await
            .map_err(failed)?;
        transaction.commit().await.map_err(failed)?;
        let Some(row) = selected.into_iter().next() else {
            return Err(self.unavailable(sqlx::Error::RowNotFound));
        };
        let now = from_signed_unix_millis(row.now);
        Ok(StoredHistory {
            current: self.fetched(document, row)?,
            recorded: rows
                .into_iter()
                .map(|row| self.revision(document, row))
                .collect::<Result<_, _>>()?,
            now,
            location: self.history_location(document),
        })
    }

    /// [`VersionedStore::purge`](memory_core::raw::VersionedStore::purge) on `connection`, in
    /// one transaction that holds the document's row (or, for a document with no row, its key)
    /// from the first statement, so that no write lands between the erasing and the commit: a
    /// write waiting on it then finds the document gone, and retries on the document as never
    /// written.
    pub(crate) async fn purge_on(
        &self,
        connection: &mut PgConnection,
        document: &DocumentId,
        surface: Surface,
        retention: &Retention,
    ) -> Result<Purged, MemoryError> {
        let failed = |err| self.db_error(err);
        let (kind, owner) = row_key(document);
        let mut transaction = self.transaction(connection).await.map_err(failed)?;
        let erased_text = loop {
            let deleted: Option<String> = self
                .query_scalar(&self.sql.purge_document)
                .bind(kind)
                .bind(&owner)
                .fetch_optional(&mut *transaction)
                .await
                .map_err(failed)?;
            if deleted.is_some() {
                break deleted;
            }
            // No row: an empty one, never committed, holds the key instead, so a first write
            // of the document waits for the purge. One written in between ends in a conflict
            // here: then it is deleted like any other.
            let held = self
                .query(&self.sql.purge_hold)
                .bind(kind)
                .bind(&owner)
                .bind(sha256_hex(""))
                .execute(&mut *transaction)
                .await
                .map_err(failed)?;
            if held.rows_affected() == 1 {
                break None;
            }
        };
        let erased: ErasedRow = self
            .query_as(&self.sql.purge_history)
            .bind(kind)
            .bind(&owner)
            .fetch_one(&mut *transaction)
            .await
            .map_err(|err| self.history_error(err))?;
        let tip = self.tip(document, erased.tip)?;
        let now = from_signed_unix_millis(erased.now);
        let mut stored = Vec::with_capacity(erased.numbers.len());
        for (number, time) in erased.numbers.into_iter().zip(erased.times) {
            let number = stored_count(number, "number", || self.history_location(document))?;
            stored.push((number, from_signed_unix_millis(time)));
        }
        let revisions = retention.count_kept(stored, tip.number, now);
        let tombstone = retention
            .leaves_tombstone(erased_text.is_some(), revisions)
            .then(|| Revision::tombstone(document, &tip, Version::new("0"), surface, now));
        if let Some(tombstone) = &tombstone {
            self.query(&self.sql.tombstone)
                .bind(kind)
                .bind(&owner)
                .bind(to_i64(tombstone.number))
                .bind(tombstone.version_before.as_str())
                .bind(tombstone.version_after.as_str())
                .bind(&tombstone.sha256_before)
                .bind(&tombstone.sha256_after)
                .bind(to_i64(tombstone.bytes_before))
                .bind(to_i64(tombstone.bytes_after))
                .bind(tombstone.surface.to_string())
                .execute(&mut *transaction)
                .await
                .map_err(|err| self.history_error(err))?;
        }
        transaction.commit().await.map_err(failed)?;
        Ok(Purged {
            document: document.clone(),
            location: self.location_of(document),
            bytes: erased_text.map_or(0, |text| text.len()),
            revisions,
            tombstone,
        })
    }

    /// [`VersionedStore::redact`](memory_core::raw::VersionedStore::redact): the redaction
    /// statement, whose count says whether it landed.
    pub(crate) async fn redact_revision(
        &self,
        document: &DocumentId,
        redacted: &Revision,
        rebased: Option<&Revision>,
        tip: u64,
    ) -> Result<bool, MemoryError> {
        let (kind, owner) = row_key(document);
        let updates = serde_json::to_string(&redacted.updates)
            .map_err(|err| MemoryError::unavailable(document.to_string(), err))?;
        let at = redacted.redacted_at.map_or(0, signed_unix_millis);
        let text = rebased.and_then(|rebased| rebased.text.as_deref());
        let count: i64 = self
            .single(async |connection| {
                self.query_scalar(&self.sql.redact)
                    .bind(kind)
                    .bind(&owner)
                    .bind(to_i64(redacted.number))
                    .bind(&updates)
                    .bind(at)
                    .bind(to_i64(tip))
                    .bind(text)
                    .fetch_one(connection)
                    .await
            })
            .await?
            .map_err(|err| self.history_error(err))?;
        Ok(count > 0)
    }
}
