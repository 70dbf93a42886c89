//! Holding the documents after a lost race, where the store can.

use super::*;

/// A [`FlakyStore`] that can hold documents: a held write cannot lose, unless `busy` says
/// the next holds find the documents held by another writer.
#[derive(Default)]
struct HoldingStore {
    store: FlakyStore,
    holds: AtomicU32,
    busy: AtomicU32,
    released: AtomicU32,
    /// Written as another writer's text before the next hold reads.
    other_writer: StdMutex<Option<String>>,
}

struct TestTurn<'a>(&'a HoldingStore);

#[async_trait]
impl HeldTurn for TestTurn<'_> {
    async fn write(self: Box<Self>, writes: &[CasWrite<'_>]) -> Result<Swapped, MemoryError> {
        // Held: the races `lose` stands for cannot happen.
        let lose = self.0.store.lose.swap(0, Ordering::SeqCst);
        let result = self.0.store.compare_and_swap(writes, Duration::ZERO).await;
        self.0.store.lose.store(lose, Ordering::SeqCst);
        result
    }

    async fn release(self: Box<Self>) {
        self.0.released.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl CompareAndSwap for HoldingStore {
    async fn fetch(&self, ids: &[DocumentId], receipts: bool) -> Result<Vec<Fetched>, MemoryError> {
        self.store.fetch(ids, receipts).await
    }

    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        lock_wait: Duration,
    ) -> Result<Swapped, MemoryError> {
        self.store.compare_and_swap(writes, lock_wait).await
    }

    async fn hold(
        &self,
        ids: &[DocumentId],
        receipts: bool,
        _lock_wait: Duration,
    ) -> Result<Option<Hold<'_>>, MemoryError> {
        self.holds.fetch_add(1, Ordering::SeqCst);
        let busy = self
            .busy
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if busy {
            return Ok(Some(Hold::Busy(ids[0].clone())));
        }
        if let Some(text) = self.other_writer.lock().unwrap().take() {
            let mut documents = self.store.documents.lock().unwrap();
            let (_, version, receipts) = documents.get(&ids[0]).cloned().unwrap_or_default();
            documents.insert(ids[0].clone(), (text, version + 1, receipts));
        }
        Ok(Some(Hold::Held(Held {
            fetched: self.fetch(ids, receipts).await?,
            turn: Box::new(TestTurn(self)),
        })))
    }
}

#[tokio::test(start_paused = true)]
async fn a_lost_race_is_followed_at_once_by_a_held_attempt() {
    let store = HoldingStore::default();
    let writer = CasWriter::new(5);
    let add = [MemoryUpdate::add(Store::Memory, "queued")];
    // Every racing attempt would lose: only holding gets the write in.
    store.store.lose.store(u32::MAX, Ordering::SeqCst);
    let started = Instant::now();
    let report = writer
        .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "no backoff before holding"
    );
    assert_eq!(report.retries, 1);
    assert_eq!(store.holds.load(Ordering::SeqCst), 1);
    assert_eq!(report.documents[0].version_after, Version::new("1"));

    // Held by another writer past the lock wait: backed off, then held again (from the
    // first attempt: the race was lost a moment ago).
    store.busy.store(2, Ordering::SeqCst);
    store.holds.store(0, Ordering::SeqCst);
    let report = writer
        .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!((report.retries, store.holds.load(Ordering::SeqCst)), (2, 3));
    assert!(started.elapsed() > Duration::ZERO, "busy holds back off");

    // Busy to the end: contention, nothing written.
    store.busy.store(u32::MAX, Ordering::SeqCst);
    let err = writer
        .sync(&store, &EventBus::new(), &ctx(), &add, &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(
        matches!(err, MemoryError::Contention { attempts: 5, .. }),
        "{err:?}"
    );
    let memory = store
        .store
        .read_by_fetch(&ctx().document(Store::Memory))
        .await
        .unwrap();
    assert_eq!(memory.version, Version::new("2"));
}

#[tokio::test(start_paused = true)]
async fn a_writer_that_just_lost_a_race_holds_from_its_next_first_attempt() {
    let store = HoldingStore::default();
    let writer = CasWriter::new(5);
    let events = EventBus::new();
    let add = [MemoryUpdate::add(Store::Memory, "x")];
    store.store.lose.store(1, Ordering::SeqCst);
    let report = writer
        .sync(&store, &events, &ctx(), &add, &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!((report.retries, store.holds.load(Ordering::SeqCst)), (1, 1));
    // Contended a moment ago: the next call holds at once, losing nothing first.
    store.store.lose.store(u32::MAX, Ordering::SeqCst);
    let report = writer
        .sync(&store, &events, &ctx(), &add, &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!((report.retries, store.holds.load(Ordering::SeqCst)), (0, 2));
    // A while later it races first again (and, every race lost, holds after one).
    tokio::time::advance(CONTENDED_FOR).await;
    let report = writer
        .sync(&store, &events, &ctx(), &add, &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!((report.retries, store.holds.load(Ordering::SeqCst)), (1, 3));
}

#[tokio::test]
async fn a_held_attempt_that_writes_nothing_releases_its_hold() {
    let store = HoldingStore::default();
    let writer = CasWriter::new(3);
    store.store.lose.store(u32::MAX, Ordering::SeqCst);
    // Changes nothing: no write, and the hold is let go.
    let noop = [MemoryUpdate::remove(Store::Memory, "absent")];
    let report = writer
        .sync(&store, &EventBus::new(), &ctx(), &noop, &IfMatch::NONE)
        .await
        .unwrap();
    assert!(!report.documents[0].written);
    assert_eq!(
        store.holds.load(Ordering::SeqCst),
        0,
        "nothing to write, no race"
    );

    // Lost to another writer, whose text the held read then sees: the caller's if_match is
    // stale now, so the call is refused, nothing is written and the hold is let go.
    let add = [MemoryUpdate::add(Store::Memory, "x")];
    store.store.lose.store(1, Ordering::SeqCst);
    *store.other_writer.lock().unwrap() = Some("theirs\n".to_owned());
    let err = writer
        .sync(
            &store,
            &EventBus::new(),
            &ctx(),
            &add,
            &IfMatch::only(Store::Memory, Some(Version::new("0"))),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::Conflict { .. }), "{err:?}");
    assert_eq!(store.holds.load(Ordering::SeqCst), 1);
    assert_eq!(store.released.load(Ordering::SeqCst), 1);
    let memory = store
        .store
        .read_by_fetch(&ctx().document(Store::Memory))
        .await
        .unwrap();
    assert_eq!(
        (memory.text.as_str(), memory.version),
        ("theirs\n", Version::new("1"))
    );
}
