//! Exactly-once writes: a `sync` made with an idempotency key applies at most once per
//! document, however often it is repeated after a lost reply or a crash.
//!
//! Each document keeps a bounded log of the keys of the calls that wrote it, with the report
//! each one returned ([`receipts::Receipts`]). The log is
//! stored with the document in the same atomic step as the write (the Postgres row, the Redis
//! hash, a sidecar file under the markdown lock), so a write and its receipt land together or
//! not at all. A call whose key a document's log holds does not touch that document again and
//! reports what the first call did.
//!
//! [`key`] names a call; [`receipts`] is the log a document keeps; [`exactly_once`] sends a call
//! until it lands once.

pub(crate) mod exactly_once;
pub(crate) mod key;
pub(crate) mod receipts;
