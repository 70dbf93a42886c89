//! One provider for every store that keeps a version counter per document: the store supplies
//! the calls that touch storage ([`VersionedStore`](store::VersionedStore)),
//! [`Versioned`](provider::Versioned) the rest of the contract (writes through
//! [`CasWriter`](crate::raw::cas::writer::CasWriter), events, deadlines, retention, history
//! views, receipts, `list`'s order, the identity map's order).
//!
//! [`store`] is what a store implements, [`settings`] what its configuration sets,
//! [`provider`] the provider over it, and [`stored_revision`] the check of a revision as a
//! store read it back.

pub(crate) mod provider;
pub(crate) mod settings;
pub(crate) mod store;
pub(crate) mod stored_revision;
