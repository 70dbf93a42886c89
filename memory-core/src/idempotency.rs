//! Exactly-once writes: a `sync` made with an idempotency key applies at most once per
//! document, however often it is repeated after a lost reply or a crash.
//!
//! Each document keeps a bounded log of the keys of the calls that wrote it, with the report
//! each one returned ([`Receipts`]). The log is stored with the document in the same atomic
//! step as the write (the Postgres row, the Redis hash, a sidecar file under the markdown lock),
//! so a write and its receipt land together or not at all. A call whose key a document's log
//! holds does not touch that document again and reports what the first call did.

use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::{
    DocumentId, DocumentReport, ErrorKind, IdKind, IfMatch, MemoryContext, MemoryError,
    MemoryProvider, MemoryUpdate, Store, SyncReport, Version,
};

/// How many receipts a document keeps: the keys of its last 64 keyed writes. A retry comes
/// seconds after its first try; 64 later keyed writes to the same document push a key out.
pub const RECEIPTS_KEPT: usize = 64;

/// The longest idempotency key, in bytes.
pub const MAX_KEY_LEN: usize = 128;

/// A caller's name for one logical `sync` call, the same on every retry of it.
///
/// ```
/// # use memory_core::*;
/// let key = IdempotencyKey::new("turn-42:memory_add")?;
/// assert!(IdempotencyKey::new("has space").is_err());
/// assert_ne!(IdempotencyKey::generate(), IdempotencyKey::generate());
/// # Ok::<(), MemoryError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Validates `value`: 1 to [`MAX_KEY_LEN`] visible ASCII characters.
    ///
    /// # Errors
    /// [`MemoryError::InvalidId`] of kind [`IdKind::IdempotencyKey`].
    pub fn new(value: impl Into<String>) -> Result<Self, MemoryError> {
        let value = value.into();
        let reason = if value.is_empty() {
            "it is empty".to_owned()
        } else if value.len() > MAX_KEY_LEN {
            format!(
                "it is {} bytes long, the limit is {MAX_KEY_LEN}",
                value.len()
            )
        } else if let Some(bad) = value.chars().find(|c| !c.is_ascii_graphic()) {
            format!("it contains {bad:?}")
        } else {
            return Ok(IdempotencyKey(value));
        };
        Err(MemoryError::InvalidId {
            kind: IdKind::IdempotencyKey,
            value,
            reason,
        })
    }

    /// A fresh key, unique across processes and hosts for any practical purpose (time, process
    /// id, a per-process counter and a per-process random seed), for a caller that makes one
    /// key per call and repeats the call with it.
    pub fn generate() -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        // RandomState is seeded from the OS once per process: no dependency needed for the bits
        // that tell two hosts (or two processes with one pid) apart.
        let mut random = std::collections::hash_map::RandomState::new().build_hasher();
        random.write_u128(nanos);
        random.write_u32(std::process::id());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        IdempotencyKey(format!("{nanos:x}-{:x}-{n:x}", random.finish()))
    }

    /// The key as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for IdempotencyKey {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::openapi::idempotency_key_schema()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for IdempotencyKey {}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for IdempotencyKey {
    type Error = MemoryError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        IdempotencyKey::new(value)
    }
}

impl From<IdempotencyKey> for String {
    fn from(key: IdempotencyKey) -> String {
        key.0
    }
}

/// How many times [`sync_exactly_once`] sends one call at most.
pub const SYNC_SENDS: u32 = 3;

/// The pause before the second send of [`sync_exactly_once`]; it doubles for each later one.
const FIRST_RESEND_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);

/// `provider.sync` for a caller that can neither lose a write nor make it twice (a tool call,
/// a command): the call carries an idempotency key (the context's, else a fresh one), and when
/// its outcome is unknown, its backend unavailable or only part of it landed, it is sent again
/// with the same key, at most [`SYNC_SENDS`] times in all. A document the call already wrote
/// is not written again, so the call lands exactly once, or fails with the last error.
///
/// The whole call, resends and the pauses before them included, ends within the provider's
/// [`MemoryProvider::deadline`] from its first send: a send that used the deadline up is not
/// repeated, and a resend gets only what is left of it.
///
/// # Errors
/// The last send's error; any refusal (a bad update, a conflict, a cap) at once;
/// [`MemoryError::OutcomeUnknown`] when the deadline passes during a resend.
pub async fn sync_exactly_once<P: MemoryProvider + ?Sized>(
    provider: &P,
    ctx: &MemoryContext,
    updates: &[MemoryUpdate],
    if_match: &IfMatch,
) -> Result<SyncReport, MemoryError> {
    let first = updates.first().map_or(Store::Memory, MemoryUpdate::store);
    exactly_once(provider, ctx.document(first), ctx, |ctx| async move {
        provider.sync(&ctx, updates, if_match).await
    })
    .await
}

/// `provider.revert` sent like [`sync_exactly_once`] sends a `sync`: with one idempotency key
/// on every send, within one deadline. A revert is a `replace` guarded by `if_match`, so a
/// plain resend after a send that landed unseen would meet the revert's own write and be
/// refused as a conflict; with the key, the provider replays the landed send's report
/// (receipts are checked before `if_match`).
///
/// # Errors
/// The last send's error; any refusal (a revision not kept, a conflict, a cap) at once;
/// [`MemoryError::OutcomeUnknown`] when the deadline passes during a resend.
pub async fn revert_exactly_once<P: MemoryProvider + ?Sized>(
    provider: &P,
    ctx: &MemoryContext,
    store: Store,
    number: u64,
    if_match: Option<&Version>,
) -> Result<SyncReport, MemoryError> {
    exactly_once(provider, ctx.document(store), ctx, |ctx| async move {
        provider.revert(&ctx, store, number, if_match).await
    })
    .await
}

/// Sends `call` (a write of `document` first) with `ctx` keyed (its own key, else a fresh
/// one), again on the failures a resend with the same key can complete, at most
/// [`SYNC_SENDS`] times, all within `provider`'s deadline from the first send.
/// (`call` gets its own copy of the keyed context: a future borrowing it could not be `Send`
/// for every lifetime, as axum's handlers need.)
async fn exactly_once<P, Sent>(
    provider: &P,
    document: DocumentId,
    ctx: &MemoryContext,
    call: impl Fn(MemoryContext) -> Sent,
) -> Result<SyncReport, MemoryError>
where
    P: MemoryProvider + ?Sized,
    Sent: Future<Output = Result<SyncReport, MemoryError>>,
{
    let mut ctx = ctx.clone();
    ctx.idempotency_key
        .get_or_insert_with(IdempotencyKey::generate);
    let started = tokio::time::Instant::now();
    let mut pause = FIRST_RESEND_PAUSE;
    let mut last = match call(ctx.clone()).await {
        Err(err) if resending_can_help(&err) => err,
        outcome => return outcome,
    };
    for _ in 1..SYNC_SENDS {
        // Asked after the first send, which connects the providers a router sends to.
        let bound = match provider.deadline() {
            Some(deadline) => match deadline.checked_sub(started.elapsed() + pause) {
                Some(left) if !left.is_zero() => Some((deadline, left)),
                _ => return Err(last),
            },
            None => None,
        };
        tokio::time::sleep(pause).await;
        pause *= 2;
        let sent = call(ctx.clone());
        let outcome = match bound {
            Some((deadline, left)) => match tokio::time::timeout(left, sent).await {
                Ok(outcome) => outcome,
                // Cut off mid-send: it may have landed.
                Err(_) => {
                    return Err(MemoryError::OutcomeUnknown {
                        document,
                        message: format!(
                            "no reply within the call's deadline of {} ms, resends included \
                             (before the last send: {last})",
                            deadline.as_millis()
                        ),
                        source: Some(Box::new(last)),
                    });
                }
            },
            None => sent.await,
        };
        match outcome {
            Err(err) if resending_can_help(&err) => last = err,
            outcome => return outcome,
        }
    }
    Err(last)
}

/// Whether sending a keyed call again can complete it without applying anything twice.
fn resending_can_help(err: &MemoryError) -> bool {
    err.kind().retry_can_help()
        || matches!(
            err.kind(),
            ErrorKind::OutcomeUnknown | ErrorKind::PartiallyApplied
        )
}

/// One document's log of the keyed calls that wrote it, oldest first, at most
/// [`RECEIPTS_KEPT`] of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipts {
    entries: Vec<Receipt>,
}

/// That the call with `key` wrote the document, and what it reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Receipt {
    key: IdempotencyKey,
    /// What the call asked of the document ([`crate::DocumentBatch::fingerprint`]), so the key
    /// reused for another call is refused instead of replayed. Absent in receipts written
    /// before it was recorded, which match any call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fingerprint: Option<String>,
    report: DocumentReport,
    /// Recorded before the write it describes was known to land: only a store that cannot
    /// write the log and the document in one step (files) records such a receipt, and the next
    /// writer settles it ([`Receipts::settle`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    unsettled: bool,
}

impl Receipts {
    /// The log as stored at `location` (a path or a key): `None` or blank is an empty log.
    ///
    /// # Errors
    /// [`MemoryError::Corrupt`] naming `location` when the stored text is not a log.
    pub fn parse(location: &str, stored: Option<&str>) -> Result<Receipts, MemoryError> {
        match stored.map(str::trim) {
            None | Some("") => Ok(Receipts::default()),
            Some(json) => serde_json::from_str(json).map_err(|err| MemoryError::Corrupt {
                location: location.to_owned(),
                reason: format!("its idempotency receipts are not readable ({err})"),
            }),
        }
    }

    /// The log as stored: compact JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("receipts are plain data")
    }

    /// The report the call with `key` returned for this document, if it wrote it, whatever it
    /// asked (callers use [`Receipts::replay`], which checks that).
    #[cfg(test)]
    fn find(&self, key: &IdempotencyKey) -> Option<&DocumentReport> {
        self.entry(key).map(|entry| &entry.report)
    }

    /// What a repeat of the call with `key`, asking `fingerprint` of `document`, comes to: the
    /// report the call returned when it wrote the document, `None` when it did not.
    ///
    /// # Errors
    /// [`MemoryError::KeyReused`] when the key wrote the document for a call that asked
    /// something else: taking it for a repeat would drop this call's updates.
    pub fn replay(
        &self,
        key: &IdempotencyKey,
        fingerprint: &str,
        document: &crate::DocumentId,
    ) -> Result<Option<&DocumentReport>, MemoryError> {
        match self.entry(key) {
            Some(entry)
                if entry
                    .fingerprint
                    .as_deref()
                    .is_some_and(|f| f != fingerprint) =>
            {
                Err(MemoryError::KeyReused {
                    document: document.clone(),
                    key: key.to_string(),
                })
            }
            entry => Ok(entry.map(|entry| &entry.report)),
        }
    }

    /// Records that the call with `key`, asking `fingerprint` of the document, wrote it,
    /// reporting `report`; drops the oldest receipts past [`RECEIPTS_KEPT`].
    pub fn record(&mut self, key: &IdempotencyKey, fingerprint: &str, report: DocumentReport) {
        self.push(key, fingerprint, report, false);
    }

    /// Records `report` for `key` before the write is known to land, for a store that writes
    /// the log first and the document second: [`Receipts::settle`] keeps or drops it.
    pub fn record_unsettled(
        &mut self,
        key: &IdempotencyKey,
        fingerprint: &str,
        report: DocumentReport,
    ) {
        self.push(key, fingerprint, report, true);
    }

    fn entry(&self, key: &IdempotencyKey) -> Option<&Receipt> {
        self.entries
            .iter()
            .find(|entry| entry.key == *key && !entry.unsettled)
    }

    /// Keeps an unsettled receipt if the document is at the version it reports (its write
    /// landed) and drops it otherwise (the writer stopped between the log and the document).
    /// Returns whether the log changed. Call it holding the document's lock, before the
    /// document changes again.
    pub fn settle(&mut self, current: &Version) -> bool {
        let before = self.entries.len();
        self.entries
            .retain(|entry| !entry.unsettled || entry.report.version_after == *current);
        let mut changed = self.entries.len() != before;
        for entry in self.entries.iter_mut().filter(|entry| entry.unsettled) {
            entry.unsettled = false;
            changed = true;
        }
        changed
    }

    /// Whether the log holds no receipt.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn push(
        &mut self,
        key: &IdempotencyKey,
        fingerprint: &str,
        report: DocumentReport,
        unsettled: bool,
    ) {
        self.entries.retain(|entry| entry.key != *key);
        self.entries.push(Receipt {
            key: key.clone(),
            fingerprint: Some(fingerprint.to_owned()),
            report,
            unsettled,
        });
        let excess = self.entries.len().saturating_sub(RECEIPTS_KEPT);
        self.entries.drain(..excess);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Document, DocumentId, InMemoryProvider, Prefetch, Store, Subscription};
    use std::sync::atomic::AtomicU32;

    fn report(version_after: &str) -> DocumentReport {
        DocumentReport {
            store: Store::Memory,
            document: DocumentId::GlobalMemory,
            location: "mem://MEMORY.md".into(),
            written: true,
            version_before: Version::new("0"),
            version_after: Version::new(version_after),
            sha256_before: String::new(),
            sha256_after: String::new(),
            bytes_before: 0,
            bytes_after: 1,
            lines_removed: 0,
            over_soft_cap: false,
            replayed: false,
        }
    }

    fn key(n: usize) -> IdempotencyKey {
        IdempotencyKey::new(format!("k{n}")).unwrap()
    }

    #[test]
    fn the_log_keeps_the_last_receipts_and_survives_its_stored_form() {
        let mut receipts = Receipts::default();
        for n in 0..RECEIPTS_KEPT + 3 {
            receipts.record(&key(n), "f", report(&n.to_string()));
        }
        let stored = Receipts::parse("here", Some(&receipts.to_json())).unwrap();
        assert_eq!(stored, receipts);
        assert_eq!(stored.entries.len(), RECEIPTS_KEPT);
        assert!(stored.find(&key(2)).is_none(), "the oldest were dropped");
        assert_eq!(
            stored.find(&key(RECEIPTS_KEPT + 2)).unwrap().version_after,
            Version::new((RECEIPTS_KEPT + 2).to_string())
        );
    }

    #[test]
    fn a_key_replays_only_the_call_it_named() {
        let document = DocumentId::GlobalMemory;
        let mut receipts = Receipts::default();
        receipts.record(&key(1), "adds x", report("v1"));
        let replayed = receipts.replay(&key(1), "adds x", &document).unwrap();
        assert_eq!(replayed.unwrap().version_after, Version::new("v1"));
        assert!(
            receipts
                .replay(&key(2), "adds y", &document)
                .unwrap()
                .is_none()
        );
        let err = receipts.replay(&key(1), "adds y", &document).unwrap_err();
        assert!(
            matches!(&err, MemoryError::KeyReused { key, .. } if key == "k1"),
            "{err:?}"
        );
        assert_eq!(err.kind(), ErrorKind::Refused);
        // A receipt stored before fingerprints were recorded matches any call.
        let old = r#"{"entries":[{"key":"k1","report":REPORT}]}"#
            .replace("REPORT", &serde_json::to_string(&report("v1")).unwrap());
        let old = Receipts::parse("here", Some(&old)).unwrap();
        assert!(
            old.replay(&key(1), "anything", &document)
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn an_unsettled_receipt_counts_only_once_its_write_shows() {
        let mut receipts = Receipts::default();
        receipts.record_unsettled(&key(1), "f", report("v1"));
        assert!(
            receipts.find(&key(1)).is_none(),
            "not yet known to have landed"
        );
        assert!(receipts.clone().settle(&Version::new("v0")));
        let mut dropped = receipts.clone();
        dropped.settle(&Version::new("v0"));
        assert!(
            dropped.is_empty(),
            "the write never landed: a retry applies it"
        );
        assert!(receipts.settle(&Version::new("v1")));
        assert!(
            receipts.find(&key(1)).is_some(),
            "it landed: a retry replays it"
        );
        assert!(
            !receipts.settle(&Version::new("v2")),
            "settled receipts stay"
        );
    }

    #[test]
    fn unreadable_logs_are_corrupt_and_keys_are_checked() {
        let err = Receipts::parse("users/u1/.USER.md.receipts.json", Some("{")).unwrap_err();
        assert!(
            matches!(&err, MemoryError::Corrupt { location, .. } if location.contains(".receipts")),
            "{err:?}"
        );
        assert!(Receipts::parse("x", Some("  ")).unwrap().is_empty());
        for bad in ["", "a b", "é", &"k".repeat(MAX_KEY_LEN + 1)] {
            let err = IdempotencyKey::new(bad).unwrap_err();
            assert!(err.to_string().contains("idempotency key"), "{err}");
        }
    }

    /// A provider that applies every call and then, for the first `lose` calls, loses the
    /// reply.
    struct LosesReplies {
        inner: InMemoryProvider,
        lose: AtomicU32,
        /// Every `sync` it was sent.
        sends: AtomicU32,
        /// How long each send waits before it applies, by send (none past the list).
        delays: Vec<std::time::Duration>,
        /// What it reports as its deadline.
        deadline: Option<std::time::Duration>,
    }

    #[async_trait::async_trait]
    impl MemoryProvider for LosesReplies {
        async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
            self.inner.prefetch(ctx).await
        }

        async fn sync(
            &self,
            ctx: &MemoryContext,
            updates: &[MemoryUpdate],
            if_match: &IfMatch,
        ) -> Result<SyncReport, MemoryError> {
            let send = self.sends.fetch_add(1, Ordering::SeqCst) as usize;
            if let Some(delay) = self.delays.get(send) {
                tokio::time::sleep(*delay).await;
            }
            let report = self.inner.sync(ctx, updates, if_match).await?;
            let lost = self
                .lose
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            match lost {
                true => Err(MemoryError::OutcomeUnknown {
                    document: report.documents[0].document.clone(),
                    message: "connection reset".into(),
                    source: None,
                }),
                false => Ok(report),
            }
        }

        async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
            self.inner.read(document).await
        }

        async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
            self.inner.list().await
        }

        async fn history(
            &self,
            document: &DocumentId,
            limit: usize,
        ) -> Result<Vec<crate::Revision>, MemoryError> {
            self.inner.history(document, limit).await
        }

        async fn purge(
            &self,
            document: &DocumentId,
            surface: crate::Surface,
        ) -> Result<crate::Purged, MemoryError> {
            self.inner.purge(document, surface).await
        }

        fn subscribe(&self) -> Subscription {
            self.inner.subscribe()
        }

        fn deadline(&self) -> Option<std::time::Duration> {
            self.deadline
        }
    }

    #[tokio::test(start_paused = true)]
    async fn lost_replies_are_resent_and_apply_once() {
        let provider = losing(SYNC_SENDS - 1);
        let ctx = ctx();
        let add = [crate::MemoryUpdate::add(Store::Memory, "Paid.")];
        let started = tokio::time::Instant::now();
        let report = sync_exactly_once(&provider, &ctx, &add, &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!(
            started.elapsed(),
            FIRST_RESEND_PAUSE * 3,
            "the pause doubles after each send"
        );
        assert_eq!(provider.sends.load(Ordering::SeqCst), SYNC_SENDS);
        assert_eq!(report.documents[0].version_after, Version::new("1"));
        let memory = provider.read(&ctx.document(Store::Memory)).await.unwrap();
        assert_eq!(memory.text, "Paid.\n", "three sends, one write");

        provider.lose.store(SYNC_SENDS, Ordering::SeqCst);
        let err = sync_exactly_once(&provider, &ctx, &add, &IfMatch::NONE)
            .await
            .unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::OutcomeUnknown,
            "the last error: {err}"
        );
        let memory = provider.read(&ctx.document(Store::Memory)).await.unwrap();
        assert_eq!(
            memory.text, "Paid.\n\nPaid.\n",
            "still once for the second call"
        );
    }

    fn losing(lose: u32) -> LosesReplies {
        LosesReplies {
            inner: InMemoryProvider::new(),
            lose: AtomicU32::new(lose),
            sends: AtomicU32::new(0),
            delays: Vec::new(),
            deadline: None,
        }
    }

    const SECOND: std::time::Duration = std::time::Duration::from_secs(1);

    /// A send that used the provider's deadline up is not sent again: the call ends with its
    /// error at the deadline, not three deadlines later.
    #[tokio::test(start_paused = true)]
    async fn a_send_that_used_the_deadline_up_is_not_repeated() {
        let provider = LosesReplies {
            delays: vec![SECOND],
            deadline: Some(SECOND),
            ..losing(1)
        };
        let add = [crate::MemoryUpdate::add(Store::Memory, "Paid.")];
        let started = tokio::time::Instant::now();
        let err = sync_exactly_once(&provider, &ctx(), &add, &IfMatch::NONE)
            .await
            .unwrap_err();
        assert_eq!(started.elapsed(), SECOND);
        assert_eq!(provider.sends.load(Ordering::SeqCst), 1);
        assert!(
            matches!(&err, MemoryError::OutcomeUnknown { message, .. } if message == "connection reset"),
            "the send's own error: {err:?}"
        );
    }

    /// A resend gets only what is left of the deadline: one that stalls is cut off there, and
    /// the call's outcome is unknown (the first send landed, unseen), naming the deadline.
    #[tokio::test(start_paused = true)]
    async fn a_resend_is_cut_off_at_the_deadline() {
        let provider = LosesReplies {
            delays: vec![std::time::Duration::ZERO, 10 * SECOND],
            deadline: Some(SECOND),
            ..losing(1)
        };
        let ctx = ctx();
        let add = [crate::MemoryUpdate::add(Store::User, "Paid.")];
        let started = tokio::time::Instant::now();
        let err = sync_exactly_once(&provider, &ctx, &add, &IfMatch::NONE)
            .await
            .unwrap_err();
        assert_eq!(
            started.elapsed(),
            SECOND,
            "the pause and the resend within it"
        );
        assert_eq!(provider.sends.load(Ordering::SeqCst), 2);
        match &err {
            MemoryError::OutcomeUnknown {
                document, message, ..
            } => {
                assert_eq!(*document, ctx.document(Store::User));
                assert!(
                    message.contains("deadline of 1000 ms") && message.contains("connection reset"),
                    "{message}"
                );
            }
            other => panic!("outcome unknown: {other:?}"),
        }
        let user = provider.read(&ctx.document(Store::User)).await.unwrap();
        assert_eq!(user.text, "Paid.\n", "the first send landed, once");

        // Time enough left: the resend completes the call.
        let provider = LosesReplies {
            deadline: Some(SECOND),
            ..losing(1)
        };
        let report = sync_exactly_once(&provider, &ctx, &add, &IfMatch::NONE)
            .await
            .unwrap();
        assert_eq!(provider.sends.load(Ordering::SeqCst), 2);
        assert!(
            report.documents[0].replayed,
            "the resend replays the landed send"
        );
    }

    fn ctx() -> MemoryContext {
        MemoryContext::new(
            crate::PersonalityId::new("ada").unwrap(),
            crate::UserId::new("u1").unwrap(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_is_sent_once() {
        let provider = losing(0);
        let edit = [crate::MemoryUpdate::edit(Store::Memory, "absent", "x")];
        let err = sync_exactly_once(&provider, &ctx(), &edit, &IfMatch::NONE)
            .await
            .unwrap_err();
        assert!(matches!(err, MemoryError::NoMatch { .. }), "{err:?}");
        assert_eq!(provider.sends.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_revert_whose_reply_is_lost_lands_once() {
        let provider = losing(0);
        let ctx = ctx();
        for text in ["first", "second"] {
            let replace = [crate::MemoryUpdate::replace(Store::Memory, text)];
            provider.sync(&ctx, &replace, &IfMatch::NONE).await.unwrap();
        }
        provider.lose.store(1, Ordering::SeqCst);
        let report = revert_exactly_once(&provider, &ctx, Store::Memory, 1, None)
            .await
            .unwrap();
        assert_eq!(provider.sends.load(Ordering::SeqCst), 2 + 2, "sent again");
        assert_eq!(report.documents[0].version_after, Version::new("3"));
        let memory = provider.read(&ctx.document(Store::Memory)).await.unwrap();
        assert_eq!(
            (memory.text.as_str(), memory.version),
            ("first\n", Version::new("3"))
        );
    }

    #[test]
    fn a_key_reads_as_given_and_a_log_with_a_receipt_is_not_empty() {
        let key = IdempotencyKey::new("turn-1").unwrap();
        assert_eq!(key.as_str(), "turn-1");
        assert_eq!(key.to_string(), "turn-1");
        let mut receipts = Receipts::default();
        assert!(receipts.is_empty());
        receipts.record(&key, "f", report("1"));
        assert!(!receipts.is_empty());
    }
}
