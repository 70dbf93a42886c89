//! The cases that need more of a [`Fixture`] than its provider: other hosts on its namespace,
//! hand edits, documents held from outside. [`crate::conformance_suite!`] stamps them by group.

use std::sync::Arc;

use memory_core::raw::{Versioned, VersionedStore};
use memory_core::{MemoryProvider, Retention};

use crate::{Fixture, Host, history, hosts};

/// How many hosts the many-host cases run.
pub const HOSTS: usize = 4;

/// [`hosts::many_hosts_lose_nothing`] on [`HOSTS`] hosts.
pub async fn many_hosts_lose_nothing<P: MemoryProvider + ?Sized + 'static>(f: &Fixture<P>) {
    hosts::many_hosts_lose_nothing(&f.hosts(HOSTS, Host::default()).await).await;
}

/// [`hosts::two_document_calls_land_whole`] on [`HOSTS`] hosts.
pub async fn two_document_calls_from_many_hosts_land_whole<P>(f: &Fixture<P>)
where
    P: MemoryProvider + ?Sized + 'static,
{
    hosts::two_document_calls_land_whole(&f.hosts(HOSTS, Host::default()).await).await;
}

/// [`hosts::contention_is_reported_never_dropped`] on [`HOSTS`] hosts allowed one attempt.
pub async fn contention_is_reported_never_dropped<P>(f: &Fixture<P>)
where
    P: MemoryProvider + ?Sized + 'static,
{
    let one_attempt = Host {
        max_attempts: Some(1),
        ..Host::default()
    };
    let gave_up =
        hosts::contention_is_reported_never_dropped(&f.hosts(HOSTS, one_attempt).await).await;
    println!("{gave_up} single-attempt adds gave up with Contention");
}

/// [`history::retention_keeps_the_newest`] on a host keeping 3.
pub async fn retention_keeps_the_newest_three<P: MemoryProvider + ?Sized + 'static>(
    f: &Fixture<P>,
) {
    let keeping_three = Host {
        retention: Some(Retention::keep(3)),
        ..Host::default()
    };
    history::retention_keeps_the_newest(f.host(keeping_three).await, 3).await;
}

/// [`history::hand_edits_become_external_revisions`], edited with the fixture's hand.
pub async fn hand_edits_become_external_revisions<P: MemoryProvider + ?Sized + 'static>(
    f: &Fixture<P>,
) {
    history::hand_edits_become_external_revisions(f.provider(), |document, text| {
        f.hand_edit(document, text)
    })
    .await;
}

/// [`hosts::compare_and_swap_gives_up_after_max_attempts`], the rival another host.
pub async fn the_engine_gives_up_after_max_attempts<S: VersionedStore + 'static>(
    f: &Fixture<Versioned<S>>,
) {
    let rival = f.host(Host::default()).await;
    hosts::compare_and_swap_gives_up_after_max_attempts(&*f.provider(), &*rival).await;
}

/// [`hosts::a_write_between_read_and_write_loses_nothing`], the rival another host.
pub async fn a_write_between_read_and_write_loses_nothing<S: VersionedStore + 'static>(
    f: &Fixture<Versioned<S>>,
) {
    let rival = f.host(Host::default()).await;
    hosts::a_write_between_read_and_write_loses_nothing(&*f.provider(), &*rival).await;
}

/// [`hosts::a_held_document_gives_up_at_once`] on a host allowed one attempt, the document
/// held by the fixture's outside hold.
pub async fn a_held_document_gives_up_at_once<P: MemoryProvider + ?Sized + 'static>(
    f: &Fixture<P>,
) {
    let one_attempt: Arc<P> = f
        .host(Host {
            max_attempts: Some(1),
            ..Host::default()
        })
        .await;
    hosts::a_held_document_gives_up_at_once(
        &*one_attempt,
        async |document| f.hold_outside(document.clone()).await,
        async |release| release().await,
    )
    .await;
}
