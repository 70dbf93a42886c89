//! Holding documents after a lost race ([`CompareAndSwap::hold`]), so that writers queue in
//! Redis instead of retrying.
//!
//! A held document has a lock key, `{prefix}:lock:<path>`, holding its holder's random token
//! with an expiry ([`LOCK_TTL`], for a holder that dies holding it). One script run takes the
//! locks of every document of a call, all or none, and reads them as `fetch` does: one round
//! trip. The write script loses for anyone but the holder, so a racing writer cannot slip in
//! under one, and the holder's write lets go in the same run and wakes one waiter per document
//! (a push onto `{prefix}:wake:<path>`). A writer that found a document held blocks on its
//! wake list with `BLPOP`, on a connection of its own (a blocked command would stall every
//! other command of the shared, multiplexed one); Redis serves blocked clients first come first
//! served, so waiters take turns in the order they came. The wait is short ([`WAKE_POLL`]) and
//! then the writer tries again: a wake that went to nobody costs one poll, never a stall.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use memory_core::raw::{CasWrite, Held, HeldTurn, Hold, Swapped};
use memory_core::{DocumentId, MemoryError};
use redis::{Script, Value};
use tokio::time::Instant;

use crate::connection::RedisConnection;
use crate::queue::{LOCK_TTL, WAKE_POLL, WAKE_TTL};
use crate::scripts::LOCK_SCRIPT;
use crate::store::RedisStore;

impl RedisStore {
    /// The key of `document`'s lock: `{prefix}:lock:` and its path in the markdown layout. It
    /// exists only while a writer holds the document, after losing a race for it.
    pub fn lock_key(&self, document: &DocumentId) -> String {
        format!("{{{}}}:lock:{}", self.prefix, document.relative_path())
    }

    /// The key of the list where writers wait for `document`'s lock: `{prefix}:wake:` and its
    /// path in the markdown layout.
    pub fn wake_key(&self, document: &DocumentId) -> String {
        format!("{{{}}}:wake:{}", self.prefix, document.relative_path())
    }

    /// [`CompareAndSwap::hold`](memory_core::raw::CompareAndSwap::hold): tries the locks, and while
    /// another writer holds one, waits on its wake list and tries again, up to `lock_wait`.
    pub(crate) async fn hold_documents(
        &self,
        ids: &[DocumentId],
        receipts: bool,
        lock_wait: Duration,
    ) -> Result<Option<Hold<'_>>, MemoryError> {
        if self.holds.waiters.is_none() || ids.is_empty() {
            return Ok(None);
        }
        let started = Instant::now();
        let token = new_token();
        // As `fetch`: with the tips the turn's revisions follow on from.
        let tips = true;
        let keys: Vec<String> = ids.iter().map(|id| self.key(id)).collect();
        let lock_keys: Vec<String> = ids.iter().map(|id| self.lock_key(id)).collect();
        // One round trip: the locks, then (read only if they were taken) the documents, as a
        // transaction that passes nothing through Lua. Once the locks are taken no other
        // writer can write, so the read is the snapshot the turn writes on.
        let mut pipeline = redis::pipe();
        pipeline.ignore_errors();
        pipeline
            .cmd("EVALSHA")
            .arg(self.holds.lock_script.get_hash())
            .arg(lock_keys.len())
            .arg(&lock_keys)
            .arg(&token)
            .arg(LOCK_TTL.as_millis() as u64);
        pipeline.cmd("MULTI");
        self.queue_reads(&mut pipeline, ids, &keys, receipts, tips);
        pipeline.cmd("EXEC");
        let mut loaded = false;
        loop {
            // Should this call be dropped with the script sent, the locks may be taken: let go.
            let mut release = Some(self.release_of(ids, &token));
            // Holding again under the same token is safe to repeat.
            let reply: redis::RedisResult<Vec<Value>> = self
                .send_repeatable(|mut connection| {
                    let pipeline = &pipeline;
                    async move { pipeline.query_async(&mut connection).await }
                })
                .await;
            let replies = reply.map_err(|err| self.error(err))?;
            let busy = match replies.first() {
                Some(Value::Int(0)) => {
                    let read = match replies.last() {
                        Some(Value::Array(reads)) => {
                            self.parse_reads(ids, &keys, reads, receipts, tips)
                        }
                        _ => None,
                    };
                    let read = match read {
                        Some(read) => read,
                        None => self.fetch_with(ids, receipts, tips).await,
                    };
                    let release = release.take();
                    return match read {
                        Ok(fetched) => Ok(Some(Hold::Held(Held {
                            fetched,
                            turn: Box::new(RedisTurn {
                                provider: self,
                                ids: ids.to_vec(),
                                token,
                                release,
                            }),
                        }))),
                        Err(err) => {
                            if let Some(release) = release {
                                release.run().await;
                            }
                            Err(err)
                        }
                    };
                }
                Some(Value::Int(position)) => usize::try_from(*position)
                    .ok()
                    .and_then(|position| position.checked_sub(1))
                    .and_then(|index| ids.get(index)),
                // First use on this server (or after a restart or SCRIPT FLUSH): load it.
                Some(Value::ServerError(err)) if err.code() == "NOSCRIPT" && !loaded => {
                    loaded = true;
                    if let Some(release) = release.take() {
                        release.forget();
                    }
                    let _: String = redis::cmd("SCRIPT")
                        .arg("LOAD")
                        .arg(LOCK_SCRIPT)
                        .query_async(&mut self.connection.clone())
                        .await
                        .map_err(|err| self.error(err))?;
                    continue;
                }
                Some(Value::ServerError(err)) if err.code() == "CORRUPT" => {
                    let detail = err.details().unwrap_or_default();
                    let (key, reason) =
                        detail.split_once(' ').unwrap_or((detail, "it is not ours"));
                    return Err(self.corrupt(key, reason));
                }
                _ => None,
            };
            let Some(busy) = busy else {
                return Err(MemoryError::Unavailable {
                    what: self.server.clone(),
                    message: format!(
                        "the lock script answered in an unknown shape: {:?}",
                        replies.first()
                    ),
                    source: None,
                });
            };
            // Nothing was taken.
            if let Some(release) = release.take() {
                release.forget();
            }
            let left = lock_wait.saturating_sub(started.elapsed());
            if left < Duration::from_millis(1) {
                return Ok(Some(Hold::Busy(busy.clone())));
            }
            self.holds
                .wait(&self.wake_key(busy), left.min(WAKE_POLL))
                .await;
        }
    }

    /// What lets go of the locks of `ids` that `token` holds.
    fn release_of(&self, ids: &[DocumentId], token: &str) -> Release {
        Release {
            connection: self.connection.clone(),
            script: self.holds.release_script.clone(),
            locks: ids.iter().map(|id| self.lock_key(id)).collect(),
            wakes: ids.iter().map(|id| self.wake_key(id)).collect(),
            token: token.to_owned(),
            armed: true,
        }
    }
}

/// A writer's turn at documents it holds.
struct RedisTurn<'a> {
    provider: &'a RedisStore,
    ids: Vec<DocumentId>,
    token: String,
    /// Lets go if the turn ends otherwise than by a write that got its reply (which let go).
    release: Option<Release>,
}

#[async_trait]
impl HeldTurn for RedisTurn<'_> {
    async fn write(mut self: Box<Self>, writes: &[CasWrite<'_>]) -> Result<Swapped, MemoryError> {
        let written = self
            .provider
            .write_documents(writes, Some((&self.ids, &self.token)))
            .await;
        // A reply means the script ran, and let go; without one, the release goes after the
        // write on the same connection, and lets go only what the token still holds.
        if written.is_ok()
            && let Some(release) = self.release.take()
        {
            release.forget();
        }
        written
    }

    async fn release(mut self: Box<Self>) {
        if let Some(release) = self.release.take() {
            release.run().await;
        }
    }
}

/// Lets go of the locks a token holds, waking one waiter per document: run, or (dropped
/// unrun) spawned, so that a turn cut off by a deadline or an error does not leave the next
/// writer waiting for the expiry.
struct Release {
    connection: RedisConnection,
    script: Script,
    locks: Vec<String>,
    wakes: Vec<String>,
    token: String,
    armed: bool,
}

impl Release {
    /// Lets go now. A failure leaves the locks to their expiry.
    async fn run(mut self) {
        self.armed = false;
        let mut invocation = self.script.prepare_invoke();
        invocation
            .key(&self.locks)
            .key(&self.wakes)
            .arg(&self.token)
            .arg(WAKE_TTL.as_millis() as u64);
        let _: redis::RedisResult<redis::Value> =
            invocation.invoke_async(&mut self.connection.clone()).await;
    }

    /// Nothing to let go of.
    fn forget(mut self) {
        self.armed = false;
    }
}

impl Drop for Release {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.armed = false;
        // Outside a runtime nothing can be sent: the expiry lets go.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let release = Release {
                connection: self.connection.clone(),
                script: self.script.clone(),
                locks: std::mem::take(&mut self.locks),
                wakes: std::mem::take(&mut self.wakes),
                token: std::mem::take(&mut self.token),
                armed: true,
            };
            runtime.spawn(release.run());
        }
    }
}

/// A token no other holder has: random, with a count for this process.
fn new_token() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let count = COUNT.fetch_add(1, Ordering::Relaxed);
    let random = RandomState::new().hash_one((count, std::process::id(), SystemTime::now()));
    format!("{random:016x}-{count:x}")
}
