//! The top layer: what the provider's calls do with a document's files, under its lock or
//! without it. A write (`sync`) reads the document, settles its receipts, finds its journal's
//! tip, and records revisions and receipts before it replaces the text; `history` reads the
//! document and its journal so the two match; `purge` erases them all and leaves the tombstone;
//! `redact` erases one revision's text.
//! Built on the middle layer (`journal`, `receipts`) and the bottom (`files`); only the
//! provider calls it. One room per call: a new call is a new room.

// A write: every touched document locked, planned, then recorded and replaced.
mod sync;
// The receipts as the next writer will settle them, read without the lock.
mod receipts;
// A history read whose document and journal match.
mod history;
// A purge: everything of a document erased but the tombstone.
mod purge;
// A redaction: one revision's text erased from the journal.
mod redact;

pub(crate) use history::history;
pub(crate) use purge::purge;
pub(crate) use receipts::read_receipts;
pub(crate) use redact::redact;
pub(crate) use sync::sync;
