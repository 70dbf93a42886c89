#![doc = include_str!("../README.md")]

// In layers, each using only the ones below it.
//
// The top: the provider and what its calls do.
// `MarkdownProvider`: its settings and paths, and one room per trait it implements.
mod provider;
// `MarkdownConfig`: a provider table of `memory.toml`, and the provider it opens.
mod config;
// What the provider's calls do with a document's files, one room per call: a write, a history
// read, a purge, the receipts.
mod store;

// The middle: the sidecar files and the identity map, each built on `files` alone.
// A document's history: the journal beside it (its files, writer, parser and readers).
mod journal;
// A document's idempotency receipts: the sidecar beside it.
mod receipts;
// The identity map: one JSON file in the form Ethos keeps it, and Ethos's lock on it.
mod identities;

// The bottom.
// The blocking file primitives: reading, locking, atomic replacement, erasing, listing, and
// I/O errors as `MemoryError`s.
mod files;
// Which file holds which document: Ethos's layout, or a Metis workspace's `.metis/`.
mod layout;

pub use config::{LayoutName, MarkdownConfig};
pub use layout::{Layout, METIS_DIR, login_user, workspace_personality};
pub use provider::{DEFAULT_LOCK_TIMEOUT, MarkdownProvider};
