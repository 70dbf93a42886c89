//! What a backend's `setup` gives the suite: the provider under test and the hooks the cases
//! beyond one provider need (other hosts, hand edits, outside holds, stored history).

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use memory_core::{DocumentId, MemoryProvider, Retention};

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
/// [`conformance_suite!`](crate::conformance_suite)'s groups).
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
