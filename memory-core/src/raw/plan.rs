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
//!     let planned = batch.apply(current, &[])?;
//!     // ...writes `planned.new_text()` if it is `Some`, and reports with the new version.
//!     let report = planned.report(Version::new("1"));
//!     assert_eq!(report.bytes_after, "Likes tea.\n".len());
//! }
//! # Ok::<(), MemoryError>(())
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use crate::context::MemoryContext;
use crate::context::PLACEHOLDER;
use crate::document::{Document, DocumentId, NoteScope, Store, Version};
use crate::error::MemoryError;
use crate::history::retention::Retention;
use crate::history::revision::{Revision, RevisionTip, Surface};
use crate::id::{PersonalityId, UserId};
use crate::idempotency::key::IdempotencyKey;
use crate::idempotency::receipts::Receipts;
use crate::note::path::NotePath;
use crate::note::{NoteCaps, ScopeTotals};
use crate::raw::apply::{Applied, apply_batch};
use crate::raw::notes::check_scope;
use crate::report::{DocumentReport, IfMatch};
use crate::sha256::sha256_hex;
use crate::update::{Caps, MemoryUpdate, is_blank};

/// Updates, each with its position in the caller's call.
type Positioned = Vec<(usize, MemoryUpdate)>;

/// The updates of one call that target one document, with the call's precondition and caps.
#[derive(Debug, Clone)]
pub struct DocumentBatch {
    store: Store,
    document: DocumentId,
    updates: Positioned,
    if_match: Option<Version>,
    caps: Caps,
    note_caps: NoteCaps,
    /// For the target of a `rename`: the note it moves, planned just before it.
    moves_from: Option<DocumentId>,
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

/// Splits a call into one batch per document touched after refusing malformed updates: the
/// memory scope's document then its notes (by path), then the user scope's. A `rename` is two
/// batches, its note then its target. Does no I/O, so a refusal here is before any read or
/// write. The batches own their updates, so a backend can move them onto a blocking thread or
/// into a retry loop.
///
/// # Errors
/// [`MemoryError::InvalidUpdate`] for the first update that is malformed whatever the text,
/// and for a `rename` sent with other updates or onto its own path.
pub fn plan_sync(
    ctx: &MemoryContext,
    updates: &[MemoryUpdate],
    if_match: &IfMatch,
) -> Result<Vec<DocumentBatch>, MemoryError> {
    let invalid = |index: usize, update: &MemoryUpdate, reason: &str| MemoryError::InvalidUpdate {
        index,
        document: target(ctx, update),
        reason: reason.to_owned(),
    };
    for (index, update) in updates.iter().enumerate() {
        if let Some(reason) = update.malformed() {
            return Err(invalid(index, update, reason));
        }
        if let MemoryUpdate::Rename { note, to, .. } = update {
            if updates.len() > 1 {
                return Err(invalid(
                    index,
                    update,
                    "a `rename` is a call of its own: send it without other updates",
                ));
            }
            if note == to {
                return Err(invalid(
                    index,
                    update,
                    "a `rename` needs a `to` other than its note",
                ));
            }
            // The note and its new path would both be there while it moves (on a file system,
            // a folder where the other is a file), whatever the move leaves.
            if note.collides_with(to) && note.fold_key() != to.fold_key() {
                return Err(MemoryError::NoteCollision {
                    scope: target(ctx, update).scope().document(),
                    path: to.clone(),
                    existing: note.clone(),
                });
            }
        }
    }
    let origin = Arc::new(Origin {
        personality: Some(ctx.personality.clone()).filter(|id| id.as_str() != PLACEHOLDER),
        user: Some(ctx.user.clone()).filter(|id| id.as_str() != PLACEHOLDER),
        surface: ctx.surface,
        session: ctx.session.clone(),
    });
    let batch = |document: DocumentId, updates: Positioned| DocumentBatch {
        store: document.store(),
        if_match: if_match.for_document(&document).cloned(),
        caps: match document.note_path() {
            None => ctx.budgets.for_store(document.store()),
            Some(_) => ctx.budgets.for_note(),
        },
        note_caps: ctx.budgets.notes,
        moves_from: None,
        document,
        updates,
        key: ctx.idempotency_key.clone(),
        origin: Arc::clone(&origin),
    };
    if let [rename @ MemoryUpdate::Rename { to, .. }] = updates {
        let from = target(ctx, rename);
        let arriving = DocumentBatch {
            moves_from: Some(from.clone()),
            ..batch(from.scope().note(to.clone()), vec![(0, rename.clone())])
        };
        return Ok(vec![batch(from, vec![(0, rename.clone())]), arriving]);
    }
    // Keyed by store then path, `None` (the document) first: the order of the reports.
    let mut grouped: BTreeMap<(Store, Option<&NotePath>), Positioned> = BTreeMap::new();
    for (index, update) in updates.iter().enumerate() {
        grouped
            .entry((update.store(), update.note()))
            .or_default()
            .push((index, update.clone()));
    }
    Ok(grouped
        .into_iter()
        .map(|((store, note), updates)| {
            let document = ctx.document(store);
            let document = match note {
                Some(path) => document.scope().note(path.clone()),
                None => document,
            };
            batch(document, updates)
        })
        .collect())
}

/// The document `update` targets in `ctx`: its store's document, or the note it names there.
fn target(ctx: &MemoryContext, update: &MemoryUpdate) -> DocumentId {
    let document = ctx.document(update.store());
    match update.note() {
        Some(path) => document.scope().note(path.clone()),
        None => document,
    }
}

/// Checks the notes a call writes against their scopes' rules (collisions, the scope's caps:
/// [`check_scope`]) and gives each note's report its scope's totals. `existing` lists a
/// scope's notes now, each path with its bytes: a backend reads it in the call's atomic step,
/// under the same lock or in the same transaction as the notes. Scopes the call writes no note
/// of are not listed. Returns each listed scope's notes after the call, for a store that keeps
/// an index of them.
///
/// # Errors
/// The first refusal of [`check_scope`], or what `existing` fails with.
pub fn check_scopes(
    planned: &mut [Planned],
    mut existing: impl FnMut(&NoteScope) -> Result<Vec<(NotePath, usize)>, MemoryError>,
) -> Result<BTreeMap<NoteScope, Vec<(NotePath, usize)>>, MemoryError> {
    let mut scopes: BTreeMap<NoteScope, (Vec<(NotePath, usize)>, NoteCaps)> = BTreeMap::new();
    for planned in planned.iter() {
        if let Planned::Write(write) = planned
            && let Some(path) = write.before.id.note_path()
        {
            let bytes = write.applied.text.len();
            scopes
                .entry(write.before.id.scope())
                .or_insert_with(|| (Vec::new(), write.note_caps))
                .0
                .push((path.clone(), bytes));
        }
    }
    let mut totals = BTreeMap::new();
    let mut listings = BTreeMap::new();
    for (scope, (written, caps)) in &scopes {
        let now = existing(scope)?;
        let after = check_scope(
            &scope.document(),
            now.iter().map(|(path, bytes)| (path, *bytes)),
            written,
            *caps,
        )?;
        totals.insert(scope.clone(), after);
        let mut listing: BTreeMap<NotePath, usize> = now.into_iter().collect();
        listing.extend(written.iter().cloned());
        listing.retain(|_, bytes| *bytes > 0);
        listings.insert(scope.clone(), listing.into_iter().collect());
    }
    for planned in planned.iter_mut() {
        if let Planned::Write(write) = planned
            && write.before.id.note_path().is_some()
        {
            write.scope = totals.get(&write.before.id.scope()).copied();
        }
    }
    Ok(listings)
}

impl DocumentBatch {
    /// The document this batch targets.
    pub fn document(&self) -> &DocumentId {
        &self.document
    }

    /// Whether this batch is the note a `rename` moves away from (its text goes to the next
    /// batch, the rename's target).
    pub fn moves_away(&self) -> bool {
        self.moves_from.is_none()
            && matches!(self.updates.as_slice(), [(_, MemoryUpdate::Rename { .. })])
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
    /// call's key already wrote the document, else [`DocumentBatch::apply`]. `earlier` is
    /// what the call's batches before this one came to (a `rename`'s target takes its text
    /// from its note's).
    ///
    /// # Errors
    /// [`MemoryError::KeyReused`] when the receipts hold the call's key for other updates; else
    /// as [`DocumentBatch::apply`].
    pub fn plan(
        &self,
        current: Document,
        receipts: &Receipts,
        earlier: &[Planned],
    ) -> Result<Planned, MemoryError> {
        let replayed = match &self.key {
            Some(key) => receipts.replay(key, &self.fingerprint(), &self.document)?,
            None => None,
        };
        match replayed {
            Some(report) => Ok(Planned::Replayed(DocumentReport {
                replayed: true,
                ..report.clone()
            })),
            None => self.apply(current, earlier).map(Planned::Write),
        }
    }

    /// Checks the precondition against `current` (the document as read now), then applies the
    /// updates in order and checks the caps. A note left blank is left empty: it no longer
    /// exists. A `rename`'s target takes the text its note had, found among `earlier` (what
    /// the call's batches before this one came to).
    ///
    /// # Errors
    /// [`MemoryError::Conflict`] when `current` is not at the required version,
    /// [`MemoryError::NoteExists`] for a `rename` onto a note that exists, else any refusal of
    /// [`crate::apply_batch`](crate::raw::apply_batch).
    pub fn apply(
        &self,
        current: Document,
        earlier: &[Planned],
    ) -> Result<PlannedWrite, MemoryError> {
        if let Some(expected) = &self.if_match
            && *expected != current.version
        {
            return Err(MemoryError::Conflict {
                document: self.document.clone(),
                expected: expected.clone(),
                current: current.version,
            });
        }
        let mut applied = match &self.moves_from {
            Some(from) => self.arrive(from, &current, earlier)?,
            None => apply_batch(
                &self.document,
                &current.text,
                self.updates.iter().map(|(i, u)| (*i, u)),
                self.caps,
            )?,
        };
        if self.document.note_path().is_some() && is_blank(&applied.text) {
            applied.text.clear();
            applied.changed = !current.text.is_empty();
        }
        Ok(PlannedWrite {
            store: self.store,
            sha256_before: sha256_hex(&current.text),
            sha256_after: sha256_hex(&applied.text),
            before: current,
            applied,
            updates: self.updates.iter().map(|(_, u)| u.clone()).collect(),
            moved_in: self.moves_from.is_some(),
            note_caps: self.note_caps,
            scope: None,
            key: self.key.clone(),
            origin: Arc::clone(&self.origin),
        })
    }

    /// The target of a `rename` takes the text its note `from` had, when it does not exist.
    fn arrive(
        &self,
        from: &DocumentId,
        current: &Document,
        earlier: &[Planned],
    ) -> Result<Applied, MemoryError> {
        let (index, update) = &self.updates[0];
        let (Some(path), Some(from_path)) = (self.document.note_path(), from.note_path()) else {
            return Err(MemoryError::InvalidUpdate {
                index: *index,
                document: self.document.clone(),
                reason: "a `rename` moves a note to another note".to_owned(),
            });
        };
        let scope = self.document.scope().document();
        if !is_blank(&current.text) {
            return Err(MemoryError::NoteExists {
                index: *index,
                action: update.action(),
                scope,
                path: path.clone(),
            });
        }
        let moved = earlier.iter().find_map(|planned| match planned {
            Planned::Write(write) if write.before.id == *from => Some(&write.before.text),
            _ => None,
        });
        match moved {
            Some(text) => Ok(Applied {
                text: text.clone(),
                changed: *text != current.text,
                lines_removed: 0,
                over_soft_cap: false,
            }),
            // Its note was replayed: so is the rename, from the target's own receipts, unless
            // they were lost; then the rename is not there to finish.
            None => Err(MemoryError::NoteNotFound {
                index: *index,
                action: update.action(),
                scope,
                path: from_path.clone(),
            }),
        }
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
    /// Whether this is the target of a `rename`, whose text its updates cannot rebuild.
    moved_in: bool,
    note_caps: NoteCaps,
    scope: Option<ScopeTotals>,
    key: Option<IdempotencyKey>,
    origin: Arc<Origin>,
}

impl PlannedWrite {
    /// The write of a scope's index (`before`, as read) with `text`: no updates, no revisions,
    /// no report of its own.
    pub(crate) fn scope_index(before: Document, text: String) -> PlannedWrite {
        PlannedWrite {
            store: before.id.store(),
            sha256_before: sha256_hex(&before.text),
            sha256_after: sha256_hex(&text),
            applied: Applied {
                changed: text != before.text,
                text,
                lines_removed: 0,
                over_soft_cap: false,
            },
            before,
            updates: Vec::new(),
            moved_in: false,
            note_caps: NoteCaps::DEFAULT,
            scope: None,
            key: None,
            origin: Arc::new(Origin {
                personality: None,
                user: None,
                surface: Surface::default(),
                session: None,
            }),
        }
    }

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
            scope: self.scope,
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
            text: (self.moved_in || retention.is_checkpoint(number, before.modified, now))
                .then(|| text.to_owned()),
            redacted_at: None,
        };
        external.into_iter().chain([write]).collect()
    }
}
