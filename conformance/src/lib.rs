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
use std::pin::Pin;
use std::sync::Arc;

use memory_core::{DocumentId, MemoryProvider, Retention};

pub mod cases;
pub mod fixture_cases;
pub mod history;
pub mod hosts;
pub mod identity;
pub mod latency;
pub mod model;
#[cfg(feature = "services")]
pub mod proxy;
#[cfg(feature = "services")]
pub mod sentinel;
#[cfg(feature = "services")]
pub mod services;
#[cfg(feature = "services")]
pub mod standby;
mod support;

/// A future a fixture's hook returns.
pub type HookFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Lets go of a document [`Fixture::hold_outside`] holds.
pub type Release = Box<dyn FnOnce() -> HookFuture<()> + Send>;

/// How another host on a fixture's namespace is configured ([`Fixture::host`]): `None` keeps
/// the backend's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Host {
    /// Compare-and-swap attempts per call.
    pub max_attempts: Option<u32>,
    /// How much history its writes keep.
    pub retention: Option<Retention>,
}

type HostHook<P> = Box<dyn Fn(Host) -> HookFuture<Arc<P>> + Send + Sync>;
type HandEditHook = Box<dyn Fn(DocumentId, String) -> HookFuture<()> + Send + Sync>;
type HoldHook = Box<dyn Fn(DocumentId) -> HookFuture<Release> + Send + Sync>;
type StoredHook = Box<dyn Fn(DocumentId) -> HookFuture<String> + Send + Sync>;
type DamageHook = Box<dyn Fn(DocumentId, u64) -> HookFuture<u64> + Send + Sync>;

/// A provider under test, with whatever keeps its namespace alive (a temp dir, a schema guard),
/// and the hooks the cases of several hosts, hand edits and outside holds need (see
/// [`conformance_suite!`]'s groups).
pub struct Fixture<P: MemoryProvider + ?Sized> {
    provider: Arc<P>,
    _guard: Option<Box<dyn Any + Send>>,
    host: Option<HostHook<P>>,
    hand_edit: Option<HandEditHook>,
    hold: Option<HoldHook>,
    stored: Option<StoredHook>,
    damage: Option<DamageHook>,
}

impl<P: MemoryProvider + ?Sized> Fixture<P> {
    /// A fixture around a provider that needs nothing else kept alive.
    pub fn from_arc(provider: Arc<P>) -> Self {
        Fixture {
            provider,
            _guard: None,
            host: None,
            hand_edit: None,
            hold: None,
            stored: None,
            damage: None,
        }
    }

    /// Makes other hosts on the fixture's namespace: `host(settings)` is another provider
    /// value (its own pool, client, handle) on the same documents, as another process or
    /// machine would have. For the `hosts` and `versioned` groups.
    pub fn with_hosts<F, Fut>(mut self, host: F) -> Self
    where
        F: Fn(Host) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Arc<P>> + Send + 'static,
    {
        self.host = Some(Box::new(move |settings| Box::pin(host(settings))));
        self
    }

    /// Edits documents by hand: `edit(document, text)` replaces the stored text the way a
    /// person would (an editor, psql, redis-cli), without the provider. For the `hand_edits`
    /// group.
    pub fn with_hand_edits<F, Fut>(mut self, edit: F) -> Self
    where
        F: Fn(DocumentId, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.hand_edit = Some(Box::new(move |document, text| {
            Box::pin(edit(document, text))
        }));
        self
    }

    /// Holds documents from outside: `hold(document)` takes it as another writer of the
    /// backend does after a lost race (a row lock, a lock key) and returns what lets it go.
    /// For the `outside_holds` group.
    pub fn with_outside_holds<F, Fut>(mut self, hold: F) -> Self
    where
        F: Fn(DocumentId) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Release> + Send + 'static,
    {
        self.hold = Some(Box::new(move |document| Box::pin(hold(document))));
        self
    }

    /// Reads what the backend stores for a document, by hand: `stored(document)` is every byte
    /// it keeps for it (the text, its history's changes and checkpoints, receipts), as one
    /// text to search. For the `stored_history` group.
    pub fn with_stored_history<F, Fut>(mut self, stored: F) -> Self
    where
        F: Fn(DocumentId) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = String> + Send + 'static,
    {
        self.stored = Some(Box::new(move |document| Box::pin(stored(document))));
        self
    }

    /// Damages a document's history by hand: `damage(document, number)` alters or deletes
    /// the stored change of revision `number`, as a person editing the stored bytes would, and
    /// returns the revision history must then name as `Corrupt` (that one, or the next when
    /// the backend can only delete it). For the `stored_history` group.
    pub fn with_history_damage<F, Fut>(mut self, damage: F) -> Self
    where
        F: Fn(DocumentId, u64) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = u64> + Send + 'static,
    {
        self.damage = Some(Box::new(move |document, number| {
            Box::pin(damage(document, number))
        }));
        self
    }

    /// Everything the backend stores for `document`, as one text.
    ///
    /// # Panics
    /// When the fixture has no [`Fixture::with_stored_history`].
    pub async fn stored(&self, document: DocumentId) -> String {
        let stored = self.stored.as_ref().expect(
            "the fixture reads no stored bytes: give setup() a Fixture::with_stored_history",
        );
        stored(document).await
    }

    /// Damages revision `number` of `document`'s history; returns the revision to be named.
    ///
    /// # Panics
    /// When the fixture has no [`Fixture::with_history_damage`].
    pub async fn damage_history(&self, document: DocumentId, number: u64) -> u64 {
        let damage = self
            .damage
            .as_ref()
            .expect("the fixture damages nothing: give setup() a Fixture::with_history_damage");
        damage(document, number).await
    }

    /// Another host on the namespace, configured as `settings` says.
    ///
    /// # Panics
    /// When the fixture has no [`Fixture::with_hosts`]: a case of the `hosts` group was
    /// stamped for a backend that cannot make hosts.
    pub async fn host(&self, settings: Host) -> Arc<P> {
        let host = self
            .host
            .as_ref()
            .expect("the fixture makes no hosts: give setup() a Fixture::with_hosts");
        host(settings).await
    }

    /// `count` hosts configured as `settings` says.
    ///
    /// # Panics
    /// As [`Fixture::host`].
    pub async fn hosts(&self, count: usize, settings: Host) -> Vec<Arc<P>> {
        let mut hosts = Vec::with_capacity(count);
        for _ in 0..count {
            hosts.push(self.host(settings).await);
        }
        hosts
    }

    /// Replaces `document`'s stored text by hand.
    ///
    /// # Panics
    /// When the fixture has no [`Fixture::with_hand_edits`].
    pub async fn hand_edit(&self, document: DocumentId, text: String) {
        let edit = self
            .hand_edit
            .as_ref()
            .expect("the fixture edits nothing by hand: give setup() a Fixture::with_hand_edits");
        edit(document, text).await;
    }

    /// Holds `document` from outside until the returned release runs.
    ///
    /// # Panics
    /// When the fixture has no [`Fixture::with_outside_holds`].
    pub async fn hold_outside(&self, document: DocumentId) -> Release {
        let hold = self
            .hold
            .as_ref()
            .expect("the fixture holds nothing: give setup() a Fixture::with_outside_holds");
        hold(document).await
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
///
/// After a `;`, groups of cases that need more of the fixture than a provider:
/// - `hosts` ([`Fixture::with_hosts`]): many hosts writing one document, two-document calls
///   landing whole, retention;
/// - `hand_edits` ([`Fixture::with_hand_edits`], and [`Fixture::with_hosts`] for a host with a
///   small retention): a change made outside the provider, and the property test that every
///   kept revision reads back as the text written, across hand edits, checkpoints and pruning
///   ([`history::kept_revisions_rebuild_to_the_texts_written`]);
/// - `versioned` (hosts of a [`memory_core::raw::Versioned`] store): contention reported
///   (one version step per entry), the retry engine beaten by another host;
/// - `outside_holds` ([`Fixture::with_outside_holds`]): a document another writer holds;
/// - `stored_history` ([`Fixture::with_stored_history`], [`Fixture::with_history_damage`] and
///   [`Fixture::with_hosts`]): a purge leaves no text of the document anywhere, checkpoints
///   and changes alike; a damaged chain of changes is `Corrupt` naming the revision, while the
///   document reads and writes go on.
///
/// ```ignore
/// memory_conformance::conformance_suite!(setup; hosts, hand_edits, versioned, outside_holds);
/// ```
#[macro_export]
macro_rules! conformance_suite {
    ($setup:path $(; $($group:ident),+ $(,)?)?) => {
        $crate::conformance_cases!($setup);

        #[test]
        fn matches_reference_model() {
            $crate::model::matches_reference_model($setup);
        }

        $($($crate::__stamp_group!($group, $setup);)+)?
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __stamp_group {
    (hosts, $setup:path) => {
        $crate::__stamp_fixture_cases!(
            $setup;
            many_hosts_lose_nothing,
            two_document_calls_from_many_hosts_land_whole,
            retention_keeps_the_newest_three,
        );
    };
    (hand_edits, $setup:path) => {
        $crate::__stamp_fixture_cases!($setup; hand_edits_become_external_revisions);

        #[test]
        fn kept_revisions_rebuild_to_the_texts_written() {
            $crate::history::kept_revisions_rebuild_to_the_texts_written($setup);
        }
    };
    (versioned, $setup:path) => {
        $crate::__stamp_fixture_cases!(
            $setup;
            contention_is_reported_never_dropped,
            the_engine_gives_up_after_max_attempts,
            a_write_between_read_and_write_loses_nothing,
        );
    };
    (outside_holds, $setup:path) => {
        $crate::__stamp_fixture_cases!($setup; a_held_document_gives_up_at_once);
    };
    (stored_history, $setup:path) => {
        $crate::__stamp_fixture_cases!(
            $setup;
            purge_erases_checkpoints_and_changes_alike,
            a_damaged_chain_is_corrupt_naming_the_revision,
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __stamp_fixture_cases {
    ($setup:path; $($case:ident),+ $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::block_on(async {
                    let Some(fixture) = $crate::IntoFixture::into_fixture($setup().await) else {
                        return;
                    };
                    $crate::fixture_cases::$case(&fixture).await;
                });
            }
        )+
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
            a_keyed_write_shows_in_receipts,
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
