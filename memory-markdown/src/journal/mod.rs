//! A document's history (`memory_core::Revision`s): the journal `.<NAME>.history.jsonl` beside
//! it, one revision per line as JSON, oldest first, so `cat`, `jq` and `grep` read it.
//!
//! A file system cannot replace two files in one step, so a write appends its revisions to the
//! journal first and then renames the document in, both under the document's lock (as with
//! receipts). A writer killed between the two leaves a tip whose write never landed: readers
//! hide it and the next writer cuts it off, so the journal tells what the document went
//! through. A writer killed mid-append leaves a last line without its newline: ignored and cut
//! off the same way.
//!
//! A line holds a revision's change (its updates), never a whole text but a hand edit's. At
//! each checkpoint ([`Retention::is_checkpoint`](memory_core::Retention::is_checkpoint)) the
//! journal is split: the write renames the live segment to `.<NAME>.history.<first>.jsonl` and
//! starts a new one with its line, and the next write hard-links the document file it
//! replaces, which holds the checkpoint's text, as `.<NAME>.history.<number>.md`. Pruning
//! unlinks the segments before the newest checkpoint at or below the oldest revision kept. So
//! no write rewrites a segment (only a redaction does, replacing it by rename) or writes a
//! text twice: measured, one rewrite in a hundred writes (the journal from the last base,
//! texts included) put markdown's add p99 20-25% above history off, on a 75 KB and on a
//! 1.5 MB document. A write takes its tip from the head of the
//! live segment's last line: from its first KiB when this provider wrote that line
//! (`KnownTips`), else from the line, read with serde skipping what it holds.
//!
//! Appends are not flushed to disk: a second fsync per write would cost 20% to 200% of a write's
//! p50 (measured over 200 adds; under 7% without it). After a power loss the document (which is
//! flushed) may be ahead of the journal; the next write then records the difference as an
//! `external` revision. No text is lost, only who wrote it.
//!
//! The middle layer: the journal file and its lines, built on `files` alone. What a write or a
//! purge does with it is `store`'s.

// The files beside the document: the live segment, the older ones, the checkpoints' texts.
mod segments;
// The tip a write builds on, and whether a tip's write ever reached the document.
mod tip;
// The parser: lines back to revisions (or their heads), checked.
mod parser;
// The readers: the whole history as `history` reads it, and the pieces a write reads.
mod reader;
// Where this provider's writes left each journal's last line, so a write need not read it.
mod known_tips;
// The writer: finding the tip under the lock, recording revisions, segments and pruning.
mod writer;
// A redaction: one revision's line rewritten without its text, the next one's whole.
mod redaction;

pub(crate) use known_tips::KnownTips;
pub(crate) use reader::read_landed;
pub(crate) use redaction::redact;
pub(crate) use segments::{files, path, remove_journal, remove_older};
pub(crate) use tip::{empty_tip, never_written};
pub(crate) use writer::{Journal, lines, now};
