//! The kit for backend authors, kept apart from the contract an agent builder uses (as
//! OpenDAL's `raw` and sqlx's driver prelude are).
//!
//! A backend with a version counter per document (a database, a key-value server) implements
//! [`CompareAndSwap`] and [`VersionedStore`], the calls that touch its storage, and is a
//! [`crate::MemoryProvider`] as [`Versioned`]: one generic provider that owns the retry engine
//! ([`CasWriter`]), events, deadlines, retention, history views, receipts and the order of
//! lists. A backend that locks instead (files) plans with [`plan_sync`] and keeps history with
//! [`history_view`] and [`RevisionTip`]. [`StoredRevision`] checks a stored revision's fields.

pub(crate) mod apply;
pub(crate) mod backend;
pub(crate) mod backoff;
pub(crate) mod cas;
pub(crate) mod events;
pub(crate) mod kept;
pub(crate) mod notes;
pub(crate) mod plan;
pub(crate) mod redact;
pub(crate) mod versioned;

pub use apply::{Applied, apply_batch};
pub use backend::{BackendConfig, Opened, ResolveFields};
pub use backoff::Backoff;
pub use cas::queues::LocalQueues;
pub use cas::store::{CasWrite, CompareAndSwap, Fetched, Held, HeldTurn, Hold, Swapped};
pub use cas::writer::{CasWriter, DEFAULT_DEADLINE, LONGEST_DEADLINE};
pub use events::{EVENT_BUFFER, EventBus};
pub use kept::{droppable, history_view, kept_revisions};
pub use notes::check_scope;
pub use plan::{DocumentBatch, Planned, PlannedWrite, check_scopes, plan_sync};
pub use redact::{hide_password_of, redact_url, redact_urls_in};
pub use versioned::provider::Versioned;
pub use versioned::settings::{DEFAULT_MAX_ATTEMPTS, Settings};
pub use versioned::store::{Connect, StoredHistory, VersionedStore};
pub use versioned::stored_revision::StoredRevision;

// The contract's own items a backend builds with, named here too so the kit is one import.
pub use crate::history::compare::{revision_to_restore, text_after};
pub use crate::history::redaction::{Redaction, plan_redaction};
pub use crate::history::retention::CHECKPOINT_EVERY_MOST;
pub use crate::history::revision::RevisionTip;
pub use crate::idempotency::exactly_once::SYNC_SENDS;
pub use crate::idempotency::receipts::{RECEIPTS_KEPT, Receipts};
pub use crate::note::ScopeTotals;
pub use crate::prompt::{
    NOTES_INDEX_CHARS, NOTES_INDEX_LINES, notes_index, render, render_with_notes,
    truncate_keeping_tail,
};
pub use crate::provider::revert_by_replace;
pub use crate::sha256::sha256_hex;
pub use crate::time::{
    format_utc_millis, from_signed_unix_millis, shown_unix_millis, signed_unix_millis, unix_millis,
};
