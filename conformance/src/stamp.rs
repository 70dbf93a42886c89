//! The macros that stamp the suites as named `#[test]` fns, one per case, for a backend's
//! `setup`.

/// Stamps the whole conformance suite as `#[test]` fns for `$setup`, an async fn returning a
/// [`Fixture`] (or an `Option` of one, see [`IntoFixture`]) with a fresh namespace each time it
/// is called: every case of [`conformance_cases!`](crate::conformance_cases), and the
/// model-based property test that compares the provider with the reference model
/// ([`model::matches_reference_model`]).
///
/// After a `;`, groups of cases that need more of the fixture than a provider:
/// - `hosts` ([`Fixture::with_hosts`]): many hosts writing one document, two-document calls
///   landing whole, prefetch listing the notes another host wrote, retention;
/// - `hand_edits` ([`Fixture::with_hand_edits`], and [`Fixture::with_hosts`] for a host with a
///   small retention): a change made outside the provider, and the property test that every
///   kept revision reads back as the text written, across hand edits, checkpoints and pruning
///   ([`history::kept_revisions_rebuild_to_the_texts_written`]);
/// - `versioned` (hosts of a [`memory_core::raw::Versioned`] store): contention reported
///   (one version step per entry), the retry engine beaten by another host, a write of two
///   documents that lands whole or not at all;
/// - `outside_holds` ([`Fixture::with_outside_holds`]): a document another writer holds;
/// - `stored_history` ([`Fixture::with_stored_history`], [`Fixture::with_history_damage`] and
///   [`Fixture::with_hosts`]): a purge leaves no text of the document anywhere, checkpoints
///   and changes alike; a damaged chain of changes is `Corrupt` naming the revision, while the
///   document reads and writes go on.
///
/// ```ignore
/// memory_conformance::conformance_suite!(setup; hosts, hand_edits, versioned, outside_holds);
/// ```
///
/// [`Fixture`]: crate::Fixture
/// [`IntoFixture`]: crate::IntoFixture
/// [`model::matches_reference_model`]: crate::model::matches_reference_model
/// [`Fixture::with_hosts`]: crate::Fixture::with_hosts
/// [`Fixture::with_hand_edits`]: crate::Fixture::with_hand_edits
/// [`history::kept_revisions_rebuild_to_the_texts_written`]: crate::history::kept_revisions_rebuild_to_the_texts_written
/// [`Fixture::with_outside_holds`]: crate::Fixture::with_outside_holds
/// [`Fixture::with_stored_history`]: crate::Fixture::with_stored_history
/// [`Fixture::with_history_damage`]: crate::Fixture::with_history_damage
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
            prefetch_lists_what_other_hosts_wrote,
            retention_keeps_the_newest_three,
        );
    };
    (hand_edits, $setup:path) => {
        $crate::__stamp_fixture_cases!(
            $setup;
            hand_edits_become_external_revisions,
            a_hand_edit_frees_the_newest_revision_for_redaction,
        );

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
            a_write_of_two_documents_lands_whole_or_not_at_all,
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
            redaction_leaves_no_text_in_storage,
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
///
/// [`cases`]: crate::cases
#[macro_export]
macro_rules! conformance_cases {
    ($setup:path) => {
        $crate::__stamp_cases!(
            $setup;
            empty_store_gives_no_context,
            a_note_never_written_reads_as_empty,
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
            redaction_erases_one_revision_and_keeps_the_rest,
        );
    };
}

/// Stamps the notes group of [`notes`] (`CONTRACT.md`, Notes) as `#[test]` fns for `$setup`,
/// as [`conformance_cases!`](crate::conformance_cases) stamps the rest.
///
/// [`notes`]: crate::notes
#[macro_export]
macro_rules! notes_suite {
    ($setup:path) => {
        $crate::__stamp_cases!(
            $setup, notes;
            notes_take_every_update_rule,
            colliding_notes_are_refused,
            a_call_with_notes_is_all_or_nothing,
            listing_agrees_with_reads,
            rename_moves_a_note,
            note_caps_are_enforced,
            notes_are_guarded_and_keyed,
            notes_follow_their_scope,
            racing_writers_on_notes_lose_nothing,
            purging_a_note_erases_it,
            prefetch_indexes_the_notes,
            a_note_revision_is_redacted,
        );
    };
}

/// Stamps the identity-map cases of [`identity`] as `#[test]` fns for `$setup`, an async fn
/// returning [`identity::Maps`] (or an `Option` of them, see [`identity::IntoMaps`]) on a fresh,
/// empty map each time it is called.
///
/// [`identity`]: crate::identity
/// [`identity::Maps`]: crate::identity::Maps
/// [`identity::IntoMaps`]: crate::identity::IntoMaps
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
        $crate::__stamp_cases!($setup, cases; $($case),+);
    };
    ($setup:path, $module:ident; $($case:ident),+ $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::block_on(async {
                    let Some(fixture) = $crate::IntoFixture::into_fixture($setup().await) else {
                        return;
                    };
                    $crate::$module::$case(fixture.provider()).await;
                });
            }
        )+
    };
}
