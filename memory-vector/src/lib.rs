#![doc = include_str!("../README.md")]

// The public face: `VectorProvider`, what it reports, and its `MemoryProvider` and `Recall` impls.
mod provider;
// How a query picks entries: `RecallConfig`, checked at open.
mod config;
// The background indexer: catch-ups after writes and before queries, locks, housekeeping.
mod indexer;
// Ranking (nearest vectors, BM25, their fusion) and which entries a query shows.
mod ranking;
// The LanceDB table of entries: one row per distinct entry of each indexed document.
mod index;
// What the index covers of its source (`coverage.json`) and the lock writers share.
mod coverage;
// A document split into entries: list items, paragraphs, `§` notes, under their headings.
mod entries;
// Documents as queries use them (entries by hash, word weights), kept per state of the text.
mod parsed;
// Query terms as the full-text index makes them, and how much of a query an entry covers.
mod terms;
// Sentence embeddings, offline, by all-MiniLM-L6-v2 or multilingual-e5-small.
mod embed;

pub use config::RecallConfig;
pub use embed::{
    DIMENSIONS, E5_MODEL_DIR_ENV, Embedder, MODEL_DIR_ENV, ModelConfig, ModelName, ORT_LIBRARY_ENV,
    PROVISION_COMMAND, spin_briefly_when_idle,
};
pub use entries::{Entry, entries};
pub use provider::{IndexStatus, RecalledMemory, VectorProvider};
pub use ranking::Ranking;

// Named by the README's links.
#[cfg(doc)]
use memory_core::Recall;
