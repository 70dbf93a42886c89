//! A document's history as one script run, purging a document with its history, and redacting
//! one revision.

use memory_core::raw::{StoredHistory, sha256_hex, unix_millis};
use memory_core::{DocumentId, MemoryError, Purged, Retention, Revision, Surface};

use crate::rows::{array, bulk, max_age_arg, server_time};
use crate::store::RedisStore;

impl RedisStore {
    /// [`VersionedStore::history`](memory_core::raw::VersionedStore::history): the history
    /// script's run, and its reply as the document and its newest revisions.
    pub(crate) async fn read_history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<StoredHistory, MemoryError> {
        let key = self.key(document);
        let history_key = self.history_key(document);
        // At most what Redis counts.
        let count = limit.clamp(1, i64::MAX as usize);
        let mut invocation = self.history_script.prepare_invoke();
        invocation.key(&key).key(&history_key).arg(count);
        let reply: redis::Value = self
            .send_repeatable(|mut connection| {
                let invocation = &invocation;
                async move { invocation.invoke_async(&mut connection).await }
            })
            .await
            .map_err(|err| self.error(err))?;
        let shape = || {
            self.corrupt(
                &history_key,
                "the history script answered in an unknown shape",
            )
        };
        let [seconds, micros, fields, entries] = array(&reply)
            .and_then(|reply| <&[redis::Value; 4]>::try_from(reply).ok())
            .ok_or_else(shape)?;
        let now = server_time(bulk(seconds), bulk(micros)).ok_or_else(shape)?;
        let fields: Vec<Vec<u8>> = array(fields)
            .and_then(|fields| fields.iter().map(|f| bulk(f).map(<[u8]>::to_vec)).collect())
            .ok_or_else(shape)?;
        Ok(StoredHistory {
            current: self.fetched(document, &key, &history_key, &fields)?,
            recorded: self.revisions(document, &history_key, entries)?,
            now,
            location: self.key_location(&history_key),
        })
    }

    /// [`VersionedStore::purge`](memory_core::raw::VersionedStore::purge): the purge script's
    /// run, and its reply as what was erased.
    pub(crate) async fn purge_document(
        &self,
        document: &DocumentId,
        surface: Surface,
        retention: &Retention,
    ) -> Result<Purged, MemoryError> {
        let key = self.key(document);
        let history_key = self.history_key(document);
        let reply: redis::Value = self
            .purge_script
            .key(&key)
            .key(&history_key)
            .key(self.index_key())
            .arg(document.relative_path())
            .arg(surface.to_string())
            .arg(retention.keep.min(i64::MAX as usize))
            .arg(max_age_arg(retention))
            .arg(sha256_hex(""))
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(|err| self.script_error(err))?;
        let shape = || {
            self.corrupt(
                &history_key,
                "the purge script answered in an unknown shape",
            )
        };
        let [bytes, revisions, tombstone] = array(&reply)
            .and_then(|reply| <&[redis::Value; 3]>::try_from(reply).ok())
            .ok_or_else(shape)?;
        let count = |value: &redis::Value| match value {
            redis::Value::Int(count) => usize::try_from(*count).ok(),
            _ => None,
        };
        let tombstone = match array(tombstone).ok_or_else(shape)? {
            [] => None,
            _ => self
                .revisions(
                    document,
                    &history_key,
                    &redis::Value::Array(vec![tombstone.clone()]),
                )?
                .pop(),
        };
        Ok(Purged {
            document: document.clone(),
            location: self.key_location(&key),
            bytes: count(bytes).ok_or_else(shape)?,
            revisions: count(revisions).ok_or_else(shape)?,
            tombstone,
        })
    }

    /// [`VersionedStore::redact`](memory_core::raw::VersionedStore::redact): the redaction
    /// script's run, sent again if the connection had dropped (a second run of one that
    /// landed writes nothing).
    pub(crate) async fn redact_revision(
        &self,
        document: &DocumentId,
        redacted: &Revision,
        rebased: Option<&Revision>,
        tip: u64,
    ) -> Result<bool, MemoryError> {
        let history_key = self.history_key(document);
        let updates = match redacted.updates.is_empty() {
            true => String::new(),
            false => serde_json::to_string(&redacted.updates)
                .map_err(|err| MemoryError::unavailable(document.to_string(), err))?,
        };
        let text = rebased.and_then(|rebased| rebased.text.as_deref());
        let mut invocation = self.redact_script.prepare_invoke();
        invocation
            .key(&history_key)
            .arg(redacted.number.to_string())
            .arg(tip.to_string())
            .arg(redacted.redacted_at.map_or(0, unix_millis).to_string())
            .arg(updates)
            .arg(if text.is_some() { "1" } else { "0" })
            .arg(text.unwrap_or(""));
        let landed: i64 = self
            .send_repeatable(|mut connection| {
                let invocation = &invocation;
                async move { invocation.invoke_async(&mut connection).await }
            })
            .await
            .map_err(|err| self.script_error(err))?;
        Ok(landed == 1)
    }
}
