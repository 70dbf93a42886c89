//! The read of `prefetch` and `read`: only the text, version and time of each document, as
//! one transaction (`MULTI`, per document `TYPE` and `HMGET`, `EXEC`) instead of a script run.
//! A transaction runs whole like a script, so the documents are one consistent snapshot, and it
//! costs the server about a microsecond where a script run's fixed cost alone is about five.
//! Anything but a plain document or a missing key goes to the read script, which names what is
//! wrong with the key exactly as a sync would.

use memory_core::{Document, DocumentId, MemoryError};
use redis::{RedisError, Value};

use crate::RedisProvider;

impl RedisProvider {
    /// `ids` as one consistent snapshot, in order (empty at version 0 for a document never
    /// written): one round trip.
    pub(crate) async fn read_documents(
        &self,
        ids: &[DocumentId],
    ) -> Result<Vec<Document>, MemoryError> {
        let keys: Vec<String> = ids.iter().map(|id| self.key(id)).collect();
        let mut transaction = redis::pipe();
        // A command the server refuses (HMGET on a key of another type) is an item of the
        // reply, not a failure of the whole: the read script then says what the key holds.
        transaction.atomic().ignore_errors();
        for key in &keys {
            transaction.cmd("TYPE").arg(key);
            transaction
                .cmd("HMGET")
                .arg(key)
                .arg("content")
                .arg("version")
                .arg("updated_at_ms");
        }
        let mut reply: Result<Vec<Value>, RedisError> =
            transaction.query_async(&mut self.connection.clone()).await;
        // As for the read script: a connection dropped since the last call fails its first
        // command while the manager reconnects, and a read is safe to send again.
        if reply.as_ref().is_err_and(RedisError::is_connection_dropped) {
            reply = transaction.query_async(&mut self.connection.clone()).await;
        }
        let replies = match reply {
            Ok(replies) => replies,
            Err(err) if err.code().is_some() => Vec::new(),
            Err(err) => return Err(self.error(err)),
        };
        let plain = (replies.len() == 2 * ids.len())
            .then(|| {
                ids.iter()
                    .zip(&keys)
                    .zip(replies.chunks_exact(2))
                    .map(|((id, key), reply)| self.plain_document(id, key, &reply[0], &reply[1]))
                    .collect::<Option<Result<Vec<Document>, MemoryError>>>()
            })
            .flatten();
        match plain {
            Some(documents) => documents,
            None => Ok(self
                .fetch_with(ids, false, false)
                .await?
                .into_iter()
                .map(|fetched| fetched.document)
                .collect()),
        }
    }

    /// The document at `key` from its `TYPE` and `HMGET content version updated_at_ms`, or
    /// `None` when it is not a plain document or a missing key (the read script then tells).
    fn plain_document(
        &self,
        id: &DocumentId,
        key: &str,
        kind: &Value,
        fields: &Value,
    ) -> Option<Result<Document, MemoryError>> {
        let kind = match kind {
            Value::SimpleString(kind) => kind.as_str(),
            Value::BulkString(kind) => std::str::from_utf8(kind).ok()?,
            _ => return None,
        };
        let Value::Array(fields) = fields else {
            return None;
        };
        let field = |index: usize| match fields.get(index) {
            Some(Value::BulkString(bytes)) => Some(bytes.clone()),
            _ => None,
        };
        match kind {
            "none" => Some(
                self.document(id, key, b"none", &[])
                    .map(|(document, ..)| document),
            ),
            "hash" => {
                let (content, version) = (field(0)?, field(1)?);
                // What the read script checks: a positive integer version.
                let positive = std::str::from_utf8(&version)
                    .ok()
                    .and_then(|version| version.parse::<u64>().ok())
                    .is_some_and(|version| version >= 1);
                if !positive {
                    return None;
                }
                let millis = field(2).unwrap_or_default();
                Some(
                    self.document(id, key, b"ok", &[content, version, millis, Vec::new()])
                        .map(|(document, ..)| document),
                )
            }
            _ => None,
        }
    }
}
