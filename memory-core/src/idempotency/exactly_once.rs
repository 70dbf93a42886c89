//! Sending a call again until it lands exactly once.

use std::future::Future;

use crate::context::MemoryContext;
use crate::document::{DocumentId, Store, Version};
use crate::error::{ErrorKind, MemoryError};
use crate::idempotency::key::IdempotencyKey;
use crate::provider::{MemoryProvider, revert_document};
use crate::report::{IfMatch, SyncReport};
use crate::update::MemoryUpdate;

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

/// A revert of `document` (one of `ctx`'s pair: `provider.revert`; a note of their scopes:
/// [`crate::revert_document`]) sent like [`sync_exactly_once`] sends a `sync`: with one
/// idempotency key on every send, within one deadline. A revert is a `replace` guarded by
/// `if_match`, so a plain resend after a send that landed unseen would meet the revert's own
/// write and be refused as a conflict; with the key, the provider replays the landed send's
/// report (receipts are checked before `if_match`).
///
/// # Errors
/// The last send's error; any refusal (a revision not kept, a conflict, a cap) at once;
/// [`MemoryError::OutcomeUnknown`] when the deadline passes during a resend.
pub async fn revert_exactly_once<P: MemoryProvider + ?Sized>(
    provider: &P,
    ctx: &MemoryContext,
    document: &DocumentId,
    number: u64,
    if_match: Option<&Version>,
) -> Result<SyncReport, MemoryError> {
    exactly_once(provider, document.clone(), ctx, |ctx| async move {
        match document.note_path() {
            None => {
                provider
                    .revert(&ctx, document.store(), number, if_match)
                    .await
            }
            Some(_) => revert_document(provider, &ctx, document, number, if_match).await,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{Document, DocumentId, Store};
    use crate::history::revision::{Purged, Revision, Surface};
    use crate::id::{PersonalityId, UserId};
    use crate::prefetch::Prefetch;
    use crate::reference::InMemoryProvider;
    use crate::report::Subscription;
    use std::sync::atomic::{AtomicU32, Ordering};

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

        async fn notes(
            &self,
            scope: &crate::document::NoteScope,
            prefix: &str,
        ) -> Result<Vec<crate::note::NoteMeta>, MemoryError> {
            self.inner.notes(scope, prefix).await
        }

        async fn history(
            &self,
            document: &DocumentId,
            limit: usize,
        ) -> Result<Vec<Revision>, MemoryError> {
            self.inner.history(document, limit).await
        }

        async fn purge(
            &self,
            document: &DocumentId,
            surface: Surface,
        ) -> Result<Purged, MemoryError> {
            self.inner.purge(document, surface).await
        }

        async fn redact(
            &self,
            document: &DocumentId,
            number: u64,
        ) -> Result<Revision, MemoryError> {
            self.inner.redact(document, number).await
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
        let add = [MemoryUpdate::add(Store::Memory, "Paid.")];
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
        let add = [MemoryUpdate::add(Store::Memory, "Paid.")];
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
        let add = [MemoryUpdate::add(Store::User, "Paid.")];
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
            PersonalityId::new("ada").unwrap(),
            UserId::new("u1").unwrap(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_is_sent_once() {
        let provider = losing(0);
        let edit = [MemoryUpdate::edit(Store::Memory, "absent", "x")];
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
            let replace = [MemoryUpdate::replace(Store::Memory, text)];
            provider.sync(&ctx, &replace, &IfMatch::NONE).await.unwrap();
        }
        provider.lose.store(1, Ordering::SeqCst);
        let memory = ctx.document(Store::Memory);
        let report = revert_exactly_once(&provider, &ctx, &memory, 1, None)
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
}
