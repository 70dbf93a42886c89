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
//! The identity map has a suite of its own, [`identity_map_suite!`], stamped the same way from a
//! `setup` that returns [`identity::Maps`]: one or more handles on one fresh map.

use std::any::Any;
use std::future::Future;
use std::sync::Arc;

use memory_core::MemoryProvider;

pub mod cases;
pub mod history;
pub mod hosts;
pub mod identity;
pub mod latency;
pub mod model;
#[cfg(feature = "services")]
pub mod services;

/// A provider under test, with whatever keeps its namespace alive (a temp dir, a schema guard).
pub struct Fixture<P: MemoryProvider + ?Sized> {
    provider: Arc<P>,
    _guard: Option<Box<dyn Any + Send>>,
}

impl<P: MemoryProvider + ?Sized> Fixture<P> {
    /// A fixture around a provider that needs nothing else kept alive.
    pub fn from_arc(provider: Arc<P>) -> Self {
        Fixture {
            provider,
            _guard: None,
        }
    }

    /// Keeps `guard` alive until the test ends, then drops it (deleting a temp dir, say).
    pub fn with_guard(mut self, guard: impl Any + Send) -> Self {
        self._guard = Some(Box::new(guard));
        self
    }

    /// The provider.
    pub fn provider(&self) -> Arc<P> {
        Arc::clone(&self.provider)
    }
}

/// What a `setup` fn returns: a [`Fixture`], or `Option<Fixture>` where `None` skips the test
/// because the server it needs is not available.
pub trait IntoFixture<P: MemoryProvider + ?Sized> {
    /// The fixture, or `None` to skip.
    fn into_fixture(self) -> Option<Fixture<P>>;
}

impl<P: MemoryProvider + ?Sized> IntoFixture<P> for Fixture<P> {
    fn into_fixture(self) -> Option<Fixture<P>> {
        Some(self)
    }
}

impl<P: MemoryProvider + ?Sized> IntoFixture<P> for Option<Fixture<P>> {
    fn into_fixture(self) -> Option<Fixture<P>> {
        self
    }
}

impl<P: MemoryProvider> Fixture<P> {
    /// A fixture around `provider`.
    pub fn new(provider: P) -> Self {
        Self::from_arc(Arc::new(provider))
    }
}

/// Runs `future` to completion on a fresh multi-threaded runtime, so that concurrent cases
/// really run in parallel. Used by the macro; plain `#[test]`s keep the macro free of a tokio
/// dependency in the caller.
pub fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("a tokio runtime for the conformance suite")
        .block_on(future)
}

/// Stamps the whole conformance suite as `#[test]` fns for `$setup`, an async fn returning a
/// [`Fixture`] (or an `Option` of one, see [`IntoFixture`]) with a fresh namespace each time it
/// is called: every case of [`conformance_cases!`], and the model-based property test that
/// compares the provider with the reference model ([`model::matches_reference_model`]).
#[macro_export]
macro_rules! conformance_suite {
    ($setup:path) => {
        $crate::conformance_cases!($setup);

        #[test]
        fn matches_reference_model() {
            $crate::model::matches_reference_model($setup);
        }
    };
}

/// Stamps the cases of [`cases`] as `#[test]` fns for `$setup`, without the model-based test:
/// each case checks literal outcomes the contract states. The reference provider itself is
/// stamped with this alone, since comparing it with the reference model would compare it with
/// itself.
#[macro_export]
macro_rules! conformance_cases {
    ($setup:path) => {
        $crate::__stamp_cases!(
            $setup;
            empty_store_gives_no_context,
            add_follows_the_newline_discipline,
            add_of_blank_content_is_refused,
            nul_characters_are_refused,
            replace_sets_and_clears,
            remove_drops_matching_lines_and_counts_them,
            remove_with_no_match_reports_zero_and_writes_nothing,
            remove_of_every_line_leaves_the_document_empty,
            remove_of_empty_substring_is_refused,
            edit_replaces_literally,
            edit_with_no_match_is_refused,
            edit_with_two_matches_is_refused,
            edit_of_empty_text_is_refused,
            failing_update_refuses_its_whole_batch,
            batch_applies_in_order_as_one_write,
            unchanged_batch_keeps_the_version,
            version_changes_whenever_content_changes,
            hard_cap_is_refused_with_the_document_unchanged,
            soft_cap_is_reported_and_evented,
            no_cap_by_default,
            hashes_chain_from_write_to_write,
            report_describes_the_write,
            invalid_ids_are_refused_before_any_io,
            personalities_are_isolated,
            users_are_isolated,
            global_scope_is_shared_by_global_personalities,
            switching_personality_keeps_the_user_profile,
            prefetch_renders_both_sections,
            truncation_keeps_the_tail,
            multibyte_content_is_counted_right,
            stale_if_match_is_a_conflict,
            current_if_match_applies_once,
            concurrent_adds_lose_nothing,
            concurrent_guarded_replaces_have_one_winner,
            events_follow_writes,
            read_and_list_show_what_was_written,
            modified_follows_writes,
            a_repeated_key_applies_once,
            a_key_survives_other_writes,
            a_key_reused_for_other_updates_is_refused,
            concurrent_repeats_of_a_key_land_once,
            keys_are_kept_for_the_last_writes,
            every_change_is_one_revision_newest_first,
            revert_restores_a_revision_as_a_new_one,
            purge_leaves_only_a_tombstone,
            a_second_purge_replaces_the_tombstone,
            concurrent_writes_have_one_revision_each,
        );
    };
}

/// Stamps the identity-map cases of [`identity`] as `#[test]` fns for `$setup`, an async fn
/// returning [`identity::Maps`] (or an `Option` of them, see [`identity::IntoMaps`]) on a fresh,
/// empty map each time it is called.
#[macro_export]
macro_rules! identity_map_suite {
    ($setup:path) => {
        $crate::__stamp_identity_cases!(
            $setup;
            unknown_identities_resolve_to_none,
            linked_identities_resolve_everywhere,
            relinking_to_the_same_user_changes_nothing,
            a_taken_identity_moves_only_with_relink,
            identities_are_sorted_and_complete,
            concurrent_links_lose_nothing,
            concurrent_links_of_one_identity_have_one_winner,
            unlink_returns_the_user_and_removes_only_its_link,
            unlinking_an_identity_not_linked_changes_nothing,
            an_unlinked_identity_links_to_anyone_without_relink,
            concurrent_unlinks_of_one_identity_have_one_winner,
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __stamp_identity_cases {
    ($setup:path; $($case:ident),+ $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::block_on(async {
                    let Some(maps) = $crate::identity::IntoMaps::into_maps($setup().await) else {
                        return;
                    };
                    $crate::identity::$case(maps.handles()).await;
                });
            }
        )+
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __stamp_cases {
    ($setup:path; $($case:ident),+ $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::block_on(async {
                    let Some(fixture) = $crate::IntoFixture::into_fixture($setup().await) else {
                        return;
                    };
                    $crate::cases::$case(fixture.provider()).await;
                });
            }
        )+
    };
}
