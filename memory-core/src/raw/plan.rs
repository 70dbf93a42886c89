//! The steps of `sync` every backend shares: validate, group per document, check the
//! precondition, apply, report. Backends only read and write.
//!
//! ```
//! # use memory_core::*;
//! # use memory_core::raw::plan_sync;
//! # let ctx = MemoryContext::new(PersonalityId::new("ada")?, UserId::new("u1")?);
//! let updates = [MemoryUpdate::add(Store::Memory, "Likes tea.")];
//! for batch in plan_sync(&ctx, &updates, &IfMatch::NONE)? {
//!     // A backend reads the current document here (under its lock, or for its CAS)...
//!     let current = Document {
//!         id: batch.document().clone(),
//!         text: String::new(),
//!         version: Version::new("0"),
//!         location: "mem://example".into(),
//!         modified: None,
//!     };
//!     let planned = batch.apply(current)?;
//!     // ...writes `planned.new_text()` if it is `Some`, and reports with the new version.
//!     let report = planned.report(Version::new("1"));
//!     assert_eq!(report.bytes_after, "Likes tea.\n".len());
//! }
//! # Ok::<(), MemoryError>(())
//! ```

use std::sync::Arc;
use std::time::SystemTime;

use crate::context::MemoryContext;
use crate::context::PLACEHOLDER;
use crate::document::{Document, DocumentId, Store, Version};
use crate::error::MemoryError;
use crate::history::retention::Retention;
use crate::history::revision::{Revision, RevisionTip, Surface};
use crate::id::{PersonalityId, UserId};
use crate::idempotency::key::IdempotencyKey;
use crate::idempotency::receipts::Receipts;
use crate::raw::apply::{Applied, apply_batch};
use crate::report::{DocumentReport, IfMatch};
use crate::sha256::sha256_hex;
use crate::update::{Caps, MemoryUpdate};

/// The updates of one call that target one document, with the call's precondition and caps.
#[derive(Debug, Clone)]
pub struct DocumentBatch {
    store: Store,
    document: DocumentId,
    updates: Vec<(usize, MemoryUpdate)>,
    if_match: Option<Version>,
    caps: Caps,
    key: Option<IdempotencyKey>,
    origin: Arc<Origin>,
}

/// Who makes a call, as its revisions record it.
#[derive(Debug)]
struct Origin {
    personality: Option<PersonalityId>,
    user: Option<UserId>,
    surface: Surface,
    session: Option<String>,
}

/// Splits a call into one batch per document touched, memory first, after refusing malformed
/// updates. Does no I/O, so a refusal here is before any read or write. The batches own their
/// updates, so a backend can move them onto a blocking thread or into a retry loop.
///
/// # Errors
/// [`MemoryError::InvalidUpdate`] for the first update that is malformed whatever the text.
pub fn plan_sync(
    ctx: &MemoryContext,
    updates: &[MemoryUpdate],
    if_match: &IfMatch,
) -> Result<Vec<DocumentBatch>, MemoryError> {
    if let Some((index, update, reason)) = updates
        .iter()
        .enumerate()
        .find_map(|(i, u)| u.malformed().map(|reason| (i, u, reason)))
    {
        return Err(MemoryError::InvalidUpdate {
            index,
            document: ctx.document(update.store()),
            reason: reason.to_owned(),
        });
    }
    let origin = Arc::new(Origin {
        personality: Some(ctx.personality.clone()).filter(|id| id.as_str() != PLACEHOLDER),
        user: Some(ctx.user.clone()).filter(|id| id.as_str() != PLACEHOLDER),
        surface: ctx.surface,
        session: ctx.session.clone(),
    });
    Ok([Store::Memory, Store::User]
        .into_iter()
        .filter_map(|store| {
            let mine: Vec<_> = updates
                .iter()
                .enumerate()
                .filter(|(_, u)| u.store() == store)
                .map(|(i, u)| (i, u.clone()))
                .collect();
            (!mine.is_empty()).then(|| DocumentBatch {
                store,
                document: ctx.document(store),
                updates: mine,
                if_match: if_match.for_store(store).cloned(),
                caps: ctx.budgets.for_store(store),
                key: ctx.idempotency_key.clone(),
                origin: Arc::clone(&origin),
            })
        })
        .collect())
}

impl DocumentBatch {
    /// The document this batch targets.
    pub fn document(&self) -> &DocumentId {
        &self.document
    }

    /// The call's idempotency key, if it has one: a backend reads the document's [`Receipts`]
    /// only then.
    pub fn key(&self) -> Option<&IdempotencyKey> {
        self.key.as_ref()
    }

    /// What the call asks of this document, as its receipt records it: the SHA-256 of its
    /// updates' JSON. A repeat of the call asks the same; a key reused for another call does
    /// not, and is refused ([`MemoryError::KeyReused`]) instead of replayed.
    pub fn fingerprint(&self) -> String {
        let updates: Vec<&MemoryUpdate> = self.updates.iter().map(|(_, update)| update).collect();
        // Updates are strings and enums: serializing them cannot fail.
        sha256_hex(&serde_json::to_string(&updates).unwrap_or_default())
    }

    /// What the batch comes to against `current` (the document as read now) and `receipts` (its
    /// idempotency log, read in the same step): [`Planned::Replayed`] when a call with this
    /// call's key already wrote the document, else [`DocumentBatch::apply`].
    ///
    /// # Errors
    /// [`MemoryError::KeyReused`] when the receipts hold the call's key for other updates; else
    /// as [`DocumentBatch::apply`].
    pub fn plan(&self, current: Document, receipts: &Receipts) -> Result<Planned, MemoryError> {
        let replayed = match &self.key {
            Some(key) => receipts.replay(key, &self.fingerprint(), &self.document)?,
            None => None,
        };
        match replayed {
            Some(report) => Ok(Planned::Replayed(DocumentReport {
                replayed: true,
                ..report.clone()
            })),
            None => self.apply(current).map(Planned::Write),
        }
    }

    /// Checks the precondition against `current` (the document as read now), then applies the
    /// updates in order and checks the caps.
    ///
    /// # Errors
    /// [`MemoryError::Conflict`] when `current` is not at the required version, else any
    /// refusal of [`crate::apply_batch`](crate::raw::apply_batch).
    pub fn apply(&self, current: Document) -> Result<PlannedWrite, MemoryError> {
        if let Some(expected) = &self.if_match
            && *expected != current.version
        {
            return Err(MemoryError::Conflict {
                document: self.document.clone(),
                expected: expected.clone(),
                current: current.version,
            });
        }
        let applied = apply_batch(
            &self.document,
            &current.text,
            self.updates.iter().map(|(i, u)| (*i, u)),
            self.caps,
        )?;
        Ok(PlannedWrite {
            store: self.store,
            sha256_before: sha256_hex(&current.text),
            sha256_after: sha256_hex(&applied.text),
            before: current,
            applied,
            updates: self.updates.iter().map(|(_, u)| u.clone()).collect(),
            key: self.key.clone(),
            origin: Arc::clone(&self.origin),
        })
    }
}

/// What one batch of a call comes to.
#[derive(Debug, Clone)]
pub enum Planned {
    /// The call's idempotency key shows it already wrote this document: report what it did
    /// then (marked [`DocumentReport::replayed`]), write nothing and announce nothing.
    Replayed(DocumentReport),
    /// Write this (or nothing, when it leaves the text unchanged).
    Write(PlannedWrite),
}

/// A batch applied to the current text, ready to be written (or not, when unchanged).
#[derive(Debug, Clone)]
pub struct PlannedWrite {
    store: Store,
    before: Document,
    applied: Applied,
    /// The hashes of the text before and after, computed once for the report and revisions.
    sha256_before: String,
    sha256_after: String,
    updates: Vec<MemoryUpdate>,
    key: Option<IdempotencyKey>,
    origin: Arc<Origin>,
}

impl PlannedWrite {
    /// The document as it was read.
    pub fn before(&self) -> &Document {
        &self.before
    }

    /// The text to write, or `None` when the batch left it unchanged (write nothing, keep the
    /// version).
    pub fn new_text(&self) -> Option<&str> {
        self.applied.changed.then_some(self.applied.text.as_str())
    }

    /// The report, given the version the write produced (ignored when nothing was written).
    pub fn report(&self, version_after: Version) -> DocumentReport {
        let before = &self.before;
        let written = self.applied.changed;
        DocumentReport {
            store: self.store,
            document: before.id.clone(),
            location: before.location.clone(),
            written,
            version_before: before.version.clone(),
            version_after: if written {
                version_after
            } else {
                before.version.clone()
            },
            sha256_before: self.sha256_before.clone(),
            sha256_after: self.sha256_after.clone(),
            bytes_before: before.text.len(),
            bytes_after: self.applied.text.len(),
            lines_removed: self.applied.lines_removed,
            over_soft_cap: self.applied.over_soft_cap,
            replayed: false,
        }
    }

    /// The revisions this write records after `tip` (the newest recorded revision, read in the
    /// same step as the document): an external one first when the document was changed since
    /// without being recorded (a hand edit), then the write's own. None when it writes nothing.
    /// `version_after` is the version the write produces, `now` the time it is recorded at (a
    /// backend with a server stamps its own). The write's own revision carries its text only
    /// when `retention` makes it a checkpoint ([`Retention::is_checkpoint`]); otherwise its
    /// updates are its change, and readers rebuild its text ([`crate::raw::kept_revisions`]).
    pub fn revisions(
        &self,
        tip: &RevisionTip,
        version_after: Version,
        now: SystemTime,
        retention: &Retention,
    ) -> Vec<Revision> {
        let Some(text) = self.new_text() else {
            return Vec::new();
        };
        let before = &self.before;
        let external = tip.unrecorded_hashed(before, self.sha256_before.clone(), now);
        let number = external
            .as_ref()
            .map_or(tip.number, |r| r.number)
            .saturating_add(1);
        let write = Revision {
            number,
            document: before.id.clone(),
            version_before: before.version.clone(),
            version_after,
            sha256_before: self.sha256_before.clone(),
            sha256_after: self.sha256_after.clone(),
            bytes_before: before.text.len(),
            bytes_after: text.len(),
            time: now,
            surface: self.origin.surface,
            personality: self.origin.personality.clone(),
            user: self.origin.user.clone(),
            idempotency_key: self.key.clone(),
            session: self.origin.session.clone(),
            updates: self.updates.clone(),
            text: retention
                .is_checkpoint(number, before.modified, now)
                .then(|| text.to_owned()),
        };
        external.into_iter().chain([write]).collect()
    }
}
