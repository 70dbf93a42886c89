//! The conformance suite: the memory contract (`CONTRACT.md`) as tests every provider must pass.
//!
//! A backend's test file is one `setup` fn and one macro call:
//!
//! ```ignore
//! async fn setup() -> memory_conformance::Fixture<MyProvider> {
//!     let namespace = tempfile::tempdir().unwrap(); // or a random key prefix, a schema...
//!     memory_conformance::Fixture::new(MyProvider::new(namespace.path())).with_guard(namespace)
//! }
//! memory_conformance::conformance_suite!(setup);
//! ```
//!
//! The macro stamps one named `#[test]` per case, and the model-based test. `setup` is called
//! once per test and must give each call its own namespace, so the tests can run in parallel. A
//! backend that needs a server returns `Option<Fixture<_>>` from `setup`, and `None` skips the
//! test (see `services`, behind the `services` feature). The cases are also public async fns in
//! [`cases`], and the model-based property test is [`model::matches_reference_model`].
//! [`hosts`] has the cases for several provider values sharing one namespace (pools, clients,
//! processes), which a backend's own tests call with the hosts it builds.
//!
//! Notes have a group of their own, [`notes_suite!`], stamped for the backends that write
//! notes.
//!
//! The identity map has a suite of its own, [`identity_map_suite!`], stamped the same way from a
//! `setup` that returns [`identity::Maps`]: one or more handles on one fresh map.

pub mod cases;
mod fixture;
pub mod fixture_cases;
pub mod history;
pub mod hosts;
pub mod identity;
pub mod latency;
pub mod model;
pub mod notes;
#[cfg(feature = "services")]
pub mod proxy;
#[cfg(feature = "services")]
pub mod sentinel;
#[cfg(feature = "services")]
pub mod services;
mod stamp;
#[cfg(feature = "services")]
pub mod standby;
mod support;

pub use fixture::{Fixture, HookFuture, Host, IntoFixture, Release, block_on};
