//! The `sync` of backends that keep a version counter per document and write with
//! compare-and-swap (PostgreSQL, Redis): read, compute with no lock held, write only if the
//! version is unchanged. A writer that lost that race reads again holding the documents, when
//! the store can hold them: other writers then wait their turn instead of racing, so many
//! writers do not collapse into retries. A hold lost too is retried with jittered backoff, a
//! bounded number of times.
//!
//! [`store`] is what a store implements, [`writer`] the retry engine over it; a writer keeps
//! its [`views`] of the documents it wrote and takes turns with the other writers of its
//! process in [`queues`].

pub(crate) mod queues;
pub(crate) mod store;
mod views;
pub(crate) mod writer;

#[cfg(test)]
mod tests;
