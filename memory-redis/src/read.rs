//! Reading documents as one transaction (`MULTI`, per document `TYPE`, `EXISTS` of its history
//! and `HMGET` of the fields asked for, `EXEC`) instead of a script run. A transaction runs
//! whole like a script, so the documents are one consistent snapshot, but nothing passes
//! through Lua: bringing a string into a script costs the server about 1 us per KiB (a 15 KiB
//! document: 16 us, where `HGET` of it costs 0.3 us), and a script run's fixed cost alone is
//! about 5 us. Anything but a plain document with its tip in its hash (or a missing key with
//! no history) goes to the read script, which reads the tip from the history stream and names
//! what is wrong with a key exactly as before.

use memory_core::raw::{Fetched, RevisionTip};
use memory_core::{Document, DocumentId, MemoryError, Version};
use redis::{RedisError, Value};

use crate::store::RedisStore;

/// The hash fields read: the text, version and time, the receipts, the tip.
const FIELDS: [&str; 8] = [
    "content",
    "version",
    "updated_at_ms",
    "receipts",
    "revision",
    "revision_version",
    "revision_sha256",
    "revision_bytes",
];

impl RedisStore {
    /// `ids` as one consistent snapshot, in order (empty at version 0 for a document never
    /// written), for `prefetch` and `read`: text, version and time only. One round trip.
    pub(crate) async fn read_documents(
        &self,
        ids: &[DocumentId],
    ) -> Result<Vec<Document>, MemoryError> {
        Ok(self
            .read_fetched(ids, false, false)
            .await?
            .into_iter()
            .map(|fetched| fetched.document)
            .collect())
    }

    /// [`memory_core::raw::VersionedStore::read_changed`]: one transaction that reads the
    /// version alone of each document with a `known` version, and the others as
    /// [`RedisStore::read_documents`] does. Where a known version changed (or the key is not
    /// what a document is), every document is read again whole, in one snapshot as before:
    /// two round trips, only after a write.
    pub(crate) async fn read_changed(
        &self,
        ids: &[DocumentId],
        known: &[Option<&Version>],
    ) -> Result<Vec<Option<Document>>, MemoryError> {
        let whole = async || {
            let documents = self.read_documents(ids).await?;
            Ok(documents.into_iter().map(Some).collect())
        };
        if known.len() != ids.len() || known.iter().all(Option::is_none) {
            return whole().await;
        }
        let (unknown, keys): (Vec<DocumentId>, Vec<String>) = ids
            .iter()
            .zip(known)
            .filter(|(_, known)| known.is_none())
            .map(|(id, _)| (id.clone(), self.key(id)))
            .unzip();
        let mut transaction = redis::pipe();
        transaction.atomic().ignore_errors();
        for (id, known) in ids.iter().zip(known) {
            if known.is_some() {
                transaction.cmd("HGET").arg(self.key(id)).arg("version");
            }
        }
        self.queue_reads(&mut transaction, &unknown, &keys, false, false);
        let Some(replies) = self.send_transaction(&transaction).await? else {
            return whole().await;
        };
        let versions = known.iter().flatten().count();
        if replies.len() < versions {
            return whole().await;
        }
        let (versions, reads) = replies.split_at(versions);
        let unchanged = known
            .iter()
            .flatten()
            .zip(versions)
            .all(|(known, read)| match read {
                Value::BulkString(read) => read.as_slice() == known.as_str().as_bytes(),
                // A document never written reads as version 0 (a scope with no notes yet).
                Value::Nil => known.as_str() == "0",
                _ => false,
            });
        if !unchanged {
            return whole().await;
        }
        let mut read = match self.parse_reads(&unknown, &keys, reads, false, false) {
            Some(read) => read?,
            None => return whole().await,
        }
        .into_iter()
        .map(|fetched| fetched.document);
        Ok(known
            .iter()
            .map(|known| match known {
                Some(_) => None,
                None => read.next(),
            })
            .collect())
    }

    /// [`memory_core::raw::CompareAndSwap::fetch`] as a transaction, with the receipts if
    /// `receipts` and the tips if `tips`; the read script for anything the transaction cannot
    /// tell. One round trip, two for what the script must tell.
    pub(crate) async fn read_fetched(
        &self,
        ids: &[DocumentId],
        receipts: bool,
        tips: bool,
    ) -> Result<Vec<Fetched>, MemoryError> {
        let keys: Vec<String> = ids.iter().map(|id| self.key(id)).collect();
        let mut transaction = redis::pipe();
        // A command the server refuses (HMGET on a key of another type) is an item of the
        // reply, not a failure of the whole: the read script then says what the key holds.
        transaction.atomic().ignore_errors();
        self.queue_reads(&mut transaction, ids, &keys, receipts, tips);
        let replies = self
            .send_transaction(&transaction)
            .await?
            .unwrap_or_default();
        match self.parse_reads(ids, &keys, &replies, receipts, tips) {
            Some(fetched) => fetched,
            None => self.fetch_with(ids, receipts, tips).await,
        }
    }

    /// The replies to `transaction`, or `None` when the server refused it as a whole (the
    /// reads then go to the read script, which says what is wrong).
    async fn send_transaction(
        &self,
        transaction: &redis::Pipeline,
    ) -> Result<Option<Vec<Value>>, MemoryError> {
        let reply: Result<Vec<Value>, RedisError> = self
            .send_repeatable(|mut connection| async move {
                transaction.query_async(&mut connection).await
            })
            .await;
        match reply {
            Ok(replies) => Ok(Some(replies)),
            Err(err) if err.code().is_some() => Ok(None),
            Err(err) => Err(self.error(err)),
        }
    }

    /// Adds the reads of `ids` (at `keys`) to `pipeline`, between its `MULTI` and `EXEC`.
    pub(crate) fn queue_reads(
        &self,
        pipeline: &mut redis::Pipeline,
        ids: &[DocumentId],
        keys: &[String],
        receipts: bool,
        tips: bool,
    ) {
        // Only what is asked for: the receipts and the tip fields can be most of a reply.
        let fields: &[&str] = match (receipts, tips) {
            (_, true) => &FIELDS,
            (true, false) => &FIELDS[..4],
            (false, false) => &FIELDS[..3],
        };
        for (id, key) in ids.iter().zip(keys) {
            pipeline.cmd("TYPE").arg(key);
            pipeline.cmd("HMGET").arg(key).arg(fields);
            if tips {
                // A missing document may have a history (a purge's tombstone): the script
                // reads its tip.
                pipeline.cmd("EXISTS").arg(self.history_key(id));
            }
        }
    }

    /// The documents from the replies to [`RedisStore::queue_reads`], or `None` when only
    /// the read script can tell.
    pub(crate) fn parse_reads(
        &self,
        ids: &[DocumentId],
        keys: &[String],
        replies: &[Value],
        receipts: bool,
        tips: bool,
    ) -> Option<Result<Vec<Fetched>, MemoryError>> {
        let per = if tips { 3 } else { 2 };
        if replies.len() != per * ids.len() {
            return None;
        }
        ids.iter()
            .zip(keys)
            .zip(replies.chunks_exact(per))
            .map(|((id, key), reply)| self.plain(id, key, reply, receipts, tips))
            .collect()
    }

    /// The document at `key` from its `TYPE`, `HMGET` (and `EXISTS` of its history if `tips`),
    /// or `None` for what only the read script can tell: not a plain document, a tip not in
    /// its hash, or a missing document with a history.
    fn plain(
        &self,
        id: &DocumentId,
        key: &str,
        reply: &[Value],
        receipts: bool,
        tips: bool,
    ) -> Option<Result<Fetched, MemoryError>> {
        let kind = match &reply[0] {
            Value::SimpleString(kind) => kind.as_str(),
            Value::BulkString(kind) => std::str::from_utf8(kind).ok()?,
            _ => return None,
        };
        let Value::Array(fields) = &reply[1] else {
            return None;
        };
        let field = |index: usize| match fields.get(index) {
            Some(Value::BulkString(bytes)) => Some(bytes.clone()),
            _ => None,
        };
        let empty_tip = || RevisionTip::empty(Version::new("0"));
        let (read, tip) = match kind {
            "none" => {
                if tips && !matches!(reply.get(2), Some(Value::Int(0))) {
                    return None;
                }
                (self.document(id, key, b"none", &[]), empty_tip())
            }
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
                let no_history = matches!(reply.get(2), Some(Value::Int(0)));
                let tip = if tips && field(4).is_none() && no_history {
                    // No revision in the hash and no stream (a scope's index, a document
                    // written with history off): no tip, as the read script finds.
                    empty_tip()
                } else if tips {
                    let tip = [field(4)?, field(5)?, field(6)?, field(7)?];
                    if !is_tip(&tip) {
                        return None;
                    }
                    match self.tip(key, [&tip[0], &tip[1], &tip[2], &tip[3]]) {
                        Ok(tip) => tip,
                        Err(err) => return Some(Err(err)),
                    }
                } else {
                    empty_tip()
                };
                let millis = field(2).unwrap_or_default();
                let stored = if receipts {
                    field(3).unwrap_or_default()
                } else {
                    Vec::new()
                };
                (
                    self.document(id, key, b"ok", &[content, version, millis, stored]),
                    tip,
                )
            }
            _ => return None,
        };
        Some(read.map(|(document, version, receipts)| Fetched {
            document,
            version,
            receipts,
            tip,
        }))
    }

    /// [`CompareAndSwap::fetch`](memory_core::raw::CompareAndSwap::fetch), reading each
    /// document's newest revision only if `tips`: a read or prefetch needs none, and so neither
    /// pays for it nor fails on a bad history. One script run: one round trip, one atomic
    /// snapshot.
    pub(crate) async fn fetch_with(
        &self,
        ids: &[DocumentId],
        receipts: bool,
        tips: bool,
    ) -> Result<Vec<Fetched>, MemoryError> {
        let keys: Vec<String> = ids.iter().map(|id| self.key(id)).collect();
        let history_keys: Vec<String> = ids.iter().map(|id| self.history_key(id)).collect();
        let mut invocation = self.read_script.prepare_invoke();
        invocation
            .key(&keys)
            .key(&history_keys)
            .arg(if receipts { "1" } else { "0" })
            .arg(if tips { "1" } else { "0" });
        let replies = self
            .send_repeatable(|mut connection| {
                let invocation = &invocation;
                async move { invocation.invoke_async(&mut connection).await }
            })
            .await;
        // As bytes: the fields are whatever the key holds, and a field that is not UTF-8 is
        // the key's fault (Corrupt, naming it), not the server's.
        let replies: Vec<Vec<Vec<u8>>> = replies.map_err(|err| self.error(err))?;
        self.parse_documents(ids, &keys, &history_keys, replies)
    }

    /// The documents `ids` (at `keys`, with histories at `history_keys`) from what
    /// `read_document` answered for each.
    fn parse_documents(
        &self,
        ids: &[DocumentId],
        keys: &[String],
        history_keys: &[String],
        replies: Vec<Vec<Vec<u8>>>,
    ) -> Result<Vec<Fetched>, MemoryError> {
        if replies.len() != keys.len() {
            return Err(MemoryError::Unavailable {
                what: self.server.clone(),
                message: format!(
                    "the read script answered {} documents for {} keys",
                    replies.len(),
                    keys.len()
                ),
                source: None,
            });
        }
        ids.iter()
            .zip(keys.iter().zip(history_keys))
            .zip(replies)
            .map(|((id, (key, history_key)), reply)| self.fetched(id, key, history_key, &reply))
            .collect()
    }
}

/// What the scripts' `is_tip` accepts: a number from 1 and a size, both decimal counts below
/// 10^15, a version, and a SHA-256 in lowercase hex.
fn is_tip([number, version, sha256, bytes]: &[Vec<u8>; 4]) -> bool {
    let count = |value: &[u8]| {
        !value.is_empty() && value.len() <= 15 && value.iter().all(u8::is_ascii_digit)
    };
    count(number)
        && number.iter().any(|digit| *digit != b'0')
        && !version.is_empty()
        && sha256.len() == 64
        && sha256
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        && count(bytes)
}
