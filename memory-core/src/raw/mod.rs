//! The kit for backend authors, kept apart from the contract an agent builder uses (as
//! OpenDAL's `raw` and sqlx's driver prelude are).
//!
//! A backend with a version counter per document (a database, a key-value server) implements
//! [`CompareAndSwap`] and [`VersionedStore`], the calls that touch its storage, and is a
//! [`crate::MemoryProvider`] as [`Versioned`]: one generic provider that owns the retry engine
//! ([`CasWriter`]), events, deadlines, retention, history views, receipts and the order of
//! lists. A backend that locks instead (files) plans with [`plan_sync`] and keeps history with
//! [`history_view`] and [`RevisionTip`]. [`StoredRevision`] checks a stored revision's fields.

pub(crate) mod backend;
pub(crate) mod backoff;
pub(crate) mod cas;
pub(crate) mod history;
pub(crate) mod plan;
pub(crate) mod redact;
pub(crate) mod versioned;

pub use crate::document::{
    format_utc_millis, from_signed_unix_millis, sha256_hex, shown_unix_millis, signed_unix_millis,
    unix_millis,
};
pub use crate::idempotency::{RECEIPTS_KEPT, Receipts, SYNC_SENDS};
pub use crate::prefetch::{render, truncate_keeping_tail};
pub use crate::provider::revert_by_replace;
pub use crate::report::{EVENT_BUFFER, EventBus};
pub use crate::update::{Applied, apply_batch};
pub use backend::{BackendConfig, Opened, ResolveFields};
pub use backoff::Backoff;
pub use cas::{
    CasWrite, CasWriter, CompareAndSwap, DEFAULT_DEADLINE, Fetched, Held, HeldTurn, Hold,
    LONGEST_DEADLINE, LocalQueues,
};
pub use history::{
    CHECKPOINT_EVERY_MOST, RevisionTip, droppable, history_view, kept_revisions,
    revision_to_restore, text_after,
};
pub use plan::{DocumentBatch, Planned, PlannedWrite, plan_sync};
pub use redact::{hide_password_of, redact_url};
pub use versioned::{
    Connect, DEFAULT_MAX_ATTEMPTS, Settings, StoredHistory, StoredRevision, Versioned,
    VersionedStore,
};
