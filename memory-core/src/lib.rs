#![doc = include_str!("../README.md")]

mod backoff;
mod cas;
mod context;
mod document;
mod error;
mod history;
mod id;
mod idempotency;
mod identity;
#[cfg(feature = "openapi")]
mod openapi;
mod plan;
mod prefetch;
mod provider;
mod recall;
mod redact;
mod reference;
mod report;
mod update;

pub use backoff::Backoff;
pub use cas::{
    CasWrite, CasWriter, CompareAndSwap, DEFAULT_DEADLINE, Fetched, Held, HeldTurn, Hold,
    LocalQueues,
};
pub use context::{DEFAULT_MAX_CHARS, MemoryContext};
pub use document::{
    Document, DocumentId, DocumentMeta, MemoryScope, Store, Version, format_utc, format_utc_millis,
    format_utc_seconds, from_signed_unix_millis, sha256_hex, shown_unix_millis, signed_unix_millis,
    unix_millis,
};
pub use error::{BoxError, ErrorKind, KEY_REUSED_CODE, MemoryError};
pub use history::{
    DEFAULT_KEEP, Purged, Retention, Revision, RevisionDiff, RevisionEntry, RevisionTip, Surface,
    history_view, revision_to_restore, text_after, unified_diff,
};
pub use id::{IdKind, MAX_ID_LEN, PersonalityId, UserId};
pub use idempotency::{
    IdempotencyKey, MAX_KEY_LEN, RECEIPTS_KEPT, Receipts, SYNC_SENDS, revert_exactly_once,
    sync_exactly_once,
};
pub use identity::{Identity, IdentityMap, InMemoryIdentityMap, MAX_PLATFORM_USER_LEN};
pub use plan::{DocumentBatch, Planned, PlannedWrite, plan_sync};
pub use prefetch::{Prefetch, render, truncate_keeping_tail};
pub use provider::{MemoryProvider, revert_by_replace};
pub use recall::{Recall, Recalled};
pub use redact::{hide_password_of, redact_url};
pub use reference::InMemoryProvider;
pub use report::{
    DocumentReport, EVENT_BUFFER, EventBus, IfMatch, MemoryEvent, Subscription, SyncReport,
};
pub use update::{Applied, Budgets, Caps, MemoryUpdate, apply_batch, is_blank};
