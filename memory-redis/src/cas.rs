//! Compare-and-swap: the snapshot read, the write script (followed by `WAIT` when replicas are
//! asked for), and the hold, whose queue is in `hold.rs`.

use std::time::Duration;

use async_trait::async_trait;
use memory_core::raw::{CasWrite, CompareAndSwap, Fetched, Hold, Swapped, sha256_hex};
use memory_core::{DocumentId, MemoryError, Retention};
use redis::Script;

use crate::queue::WAKE_TTL;
use crate::rows::{max_age_arg, modified_at};
use crate::store::RedisStore;

#[async_trait]
impl CompareAndSwap for RedisStore {
    /// One transaction (see `read.rs`): one round trip, one atomic snapshot, with each
    /// document's newest revision (the tip a write's revisions follow on from).
    async fn fetch(&self, ids: &[DocumentId], receipts: bool) -> Result<Vec<Fetched>, MemoryError> {
        self.read_fetched(ids, receipts, true).await
    }

    /// One script run: checks every version (and, where revisions are recorded, that the
    /// history still ends where they follow on), then writes every document with its
    /// revisions and prunes what the retention no longer keeps, atomically. A document another
    /// writer holds ([`CompareAndSwap::hold`]) is a lost race: this never waits for its lock,
    /// so `lock_wait` has nothing to bound.
    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        _lock_wait: Duration,
    ) -> Result<Swapped, MemoryError> {
        self.write_documents(writes, None).await
    }

    /// The write script compares the stored text with a write's expected text: a writer
    /// alone writes from its last view, one script run and no read.
    fn checks_text(&self) -> bool {
        true
    }

    /// With `wait_replicas` set, a write of its own ([`RedisStore::replicated_key`]) and
    /// `WAIT` for it: replicas apply the master's writes in order, so those that have it have
    /// every write before it, the replayed call's among them. `OutcomeUnknown` when too few
    /// confirm it, as for a write.
    async fn confirm_replay(&self, ids: &[DocumentId]) -> Result<(), MemoryError> {
        let Some(first) = ids.first().filter(|_| self.wait.is_some()) else {
            return Ok(());
        };
        let mut pipeline = redis::pipe();
        pipeline
            .cmd("SET")
            .arg(self.replicated_key())
            .arg(1)
            .arg("PX")
            .arg(1000);
        let replies = self.with_wait(pipeline, None).await?;
        self.check_replicas(first, &replies)
    }

    /// Holds the documents in the store's queue: see `hold.rs`.
    async fn hold(
        &self,
        ids: &[DocumentId],
        receipts: bool,
        lock_wait: Duration,
    ) -> Result<Option<Hold<'_>>, MemoryError> {
        self.hold_documents(ids, receipts, lock_wait).await
    }
}

impl RedisStore {
    /// [`CompareAndSwap::compare_and_swap`], by the holder of `held` (the documents it holds
    /// and its token) or, with `None`, by a writer that holds nothing and so loses to one that
    /// does. A holder lets go of all it holds in the same script run, written or not.
    pub(crate) async fn write_documents(
        &self,
        writes: &[CasWrite<'_>],
        held: Option<(&[DocumentId], &str)>,
    ) -> Result<Swapped, MemoryError> {
        let mut invocation = ScriptCall::default();
        for write in writes {
            // The write's own revision (the last) hashed this same text already.
            let sha256 = match write.revisions.last() {
                Some(own) if own.text.as_deref() == Some(write.text) => own.sha256_after.clone(),
                _ => sha256_hex(write.text),
            };
            invocation
                .key(self.key(write.id))
                .arg(write.expected)
                .arg(write.text)
                .arg(sha256)
                .arg(write.id.relative_path())
                .arg(write.receipts.unwrap_or_default());
        }
        invocation.key(self.index_key());
        for write in writes {
            invocation.key(self.history_key(write.id));
        }
        // One retention for the call: the provider's. Redis takes counts up to i64::MAX.
        let retention = writes
            .first()
            .map_or(Retention::OFF, |write| write.retention);
        let keep = retention.keep.min(i64::MAX as usize);
        invocation.arg(keep).arg(max_age_arg(&retention));
        // The revisions of a write follow on from its history's tip, read with the document.
        let recorded = |write: &CasWrite<'_>| retention.is_on() && !write.revisions.is_empty();
        for write in writes {
            invocation.arg(match write.revisions.first() {
                Some(first) if recorded(write) => first.number.saturating_sub(1).to_string(),
                _ => String::new(),
            });
        }
        for write in writes.iter().filter(|write| recorded(write)) {
            let (own_index, own) = match write.revisions {
                [.., own] => (write.revisions.len() - 1, own),
                [] => continue,
            };
            invocation
                .arg(write.revisions.len())
                .arg(own.number)
                .arg(own.version_after.as_str())
                .arg(&own.sha256_after)
                .arg(own.bytes_after);
            for (index, revision) in write.revisions.iter().enumerate() {
                let mut fields = Self::entry_fields(revision)?;
                // The write's own revision comes last, its text the document's new content
                // (not sent twice); any before it record changes nobody recorded, dated as the
                // document's `modified` dated them when read.
                let mode = match revision.text.as_deref() {
                    // Between checkpoints: the updates are the change, no text.
                    None => "c",
                    Some(text) if index == own_index && text == write.text => "=",
                    Some(text) => {
                        fields.push(("text", text.to_owned()));
                        if index < own_index { "d" } else { "-" }
                    }
                };
                invocation.arg(fields.len()).arg(mode);
                for (name, value) in fields {
                    invocation.arg(name).arg(value);
                }
            }
        }
        // The locks: the written documents' first, in the same order, then the rest held.
        let mut locked: Vec<&DocumentId> = writes.iter().map(|write| write.id).collect();
        if let Some((ids, _)) = held {
            locked.extend(ids.iter().filter(|id| !writes.iter().any(|w| w.id == *id)));
        }
        for id in &locked {
            invocation.key(self.lock_key(id));
        }
        for id in &locked {
            invocation.key(self.wake_key(id));
        }
        let mut checks = String::with_capacity(writes.len());
        for write in writes {
            invocation.arg(write.expected_text.unwrap_or_default());
            checks.push(if write.expected_text.is_some() {
                '1'
            } else {
                '0'
            });
        }
        invocation
            .arg(checks)
            .arg(locked.len())
            .arg(held.map_or("", |(_, token)| token))
            .arg(WAKE_TTL.as_millis() as u64);
        self.run_write(&invocation, writes).await
    }
}

impl RedisStore {
    /// Runs the write script with `call`, and with `wait_replicas` set, `WAIT` after it in the
    /// same pipeline, so on the same connection: the write is acknowledged only once that many
    /// replicas have it. The script answers with the position of the document that lost its
    /// race (nothing was written then), or with 0 and the time it dated every write.
    async fn run_write(
        &self,
        call: &ScriptCall,
        writes: &[CasWrite<'_>],
    ) -> Result<Swapped, MemoryError> {
        let mut pipeline = redis::pipe();
        pipeline.add_command(call.command(&self.write_script));
        let replies = self.with_wait(pipeline, Some(&self.write_script)).await?;
        let answer = replies.first().and_then(|reply| {
            let lost = |at: usize| writes.get(at.checked_sub(1)?).map(|write| write.id.clone());
            match redis::from_redis_value_ref::<(usize, Vec<u8>)>(reply) {
                Ok((0, at)) => Some(Swapped::Landed(modified_at(&at).ok().flatten())),
                Ok(_) => None,
                Err(_) => redis::from_redis_value_ref::<usize>(reply)
                    .ok()
                    .and_then(lost)
                    .map(Swapped::Lost),
            }
        });
        let Some(answer) = answer else {
            return Err(self.unknown_shape("the write script", &replies));
        };
        if matches!(answer, Swapped::Landed(_))
            && let Some(first) = writes.first()
        {
            self.check_replicas(first.id, &replies)?;
        }
        Ok(answer)
    }

    /// Sends `pipeline` (one write: `script`'s run, if any), followed by `WAIT` when the
    /// settings ask for replicas; loads the script first where the server does not have it.
    async fn with_wait(
        &self,
        mut pipeline: redis::Pipeline,
        script: Option<&Script>,
    ) -> Result<Vec<redis::Value>, MemoryError> {
        if let Some(wait) = self.wait {
            let timeout = u64::try_from(wait.timeout.as_millis()).unwrap_or(u64::MAX);
            pipeline.cmd("WAIT").arg(wait.replicas).arg(timeout);
        }
        // Each reply as a value, so that a script's own refusal (`CORRUPT`) reaches
        // `script_error` as the server said it.
        pipeline.ignore_errors();
        let mut loaded = false;
        loop {
            let replies: Vec<redis::Value> = pipeline
                .query_async(&mut self.connection.clone())
                .await
                .map_err(|err| self.error(err))?;
            match (replies.first(), script) {
                // First use on this server (or after a restart or SCRIPT FLUSH): load it.
                (Some(redis::Value::ServerError(err)), Some(script))
                    if err.code() == "NOSCRIPT" && !loaded =>
                {
                    loaded = true;
                    script
                        .load_async(&mut self.connection.clone())
                        .await
                        .map_err(|err| self.error(err))?;
                }
                (Some(redis::Value::ServerError(err)), _) => {
                    return Err(self.script_error(err.clone().into()));
                }
                _ => return Ok(replies),
            }
        }
    }

    /// With `wait_replicas` set: `OutcomeUnknown` for `document` unless the `WAIT` that ends
    /// `replies` counted as many replicas. The write is on the master then, and a failover
    /// could lose it: the caller repeats the call with its idempotency key, which waits again.
    fn check_replicas(
        &self,
        document: &DocumentId,
        replies: &[redis::Value],
    ) -> Result<(), MemoryError> {
        let Some(wait) = self.wait else {
            return Ok(());
        };
        let confirmed = replies
            .last()
            .and_then(|reply| redis::from_redis_value_ref::<u64>(reply).ok())
            .unwrap_or(0);
        if confirmed >= u64::from(wait.replicas) {
            return Ok(());
        }
        Err(MemoryError::OutcomeUnknown {
            document: document.clone(),
            message: format!(
                "{} has the write, but {confirmed} of the {} replicas wait_replicas asks for confirmed it within {:?}: a failover now could lose it; repeat the call with the same idempotency key",
                self.server, wait.replicas, wait.timeout
            ),
            source: None,
        })
    }

    /// The key a replayed call writes so that `WAIT` covers what it replays: see
    /// [`CompareAndSwap::confirm_replay`]. A string expiring after a second.
    pub fn replicated_key(&self) -> String {
        format!("{{{}}}:replicated", self.prefix)
    }

    /// `Unavailable`: `what` answered in a shape that is not its own.
    fn unknown_shape(&self, what: &str, replies: &[redis::Value]) -> MemoryError {
        MemoryError::Unavailable {
            what: self.server.clone(),
            message: format!("{what} answered in an unknown shape: {replies:?}"),
            source: None,
        }
    }
}

/// A script's keys and arguments, gathered in any order, sent as one `EVALSHA` (in a pipeline
/// where `WAIT` follows it, which `redis::ScriptInvocation` cannot join).
#[derive(Default)]
struct ScriptCall {
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl ScriptCall {
    fn key(&mut self, key: impl redis::ToRedisArgs) -> &mut Self {
        self.keys.extend(key.to_redis_args());
        self
    }

    fn arg(&mut self, arg: impl redis::ToRedisArgs) -> &mut Self {
        self.args.extend(arg.to_redis_args());
        self
    }

    /// `EVALSHA` of `script` with these keys and arguments.
    fn command(&self, script: &Script) -> redis::Cmd {
        let mut command = redis::cmd("EVALSHA");
        command
            .arg(script.get_hash())
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&self.args);
        command
    }
}
