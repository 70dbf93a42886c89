//! History on Redis, as the stream stores it: exact trimming back to a checkpoint, the server's
//! clock on every revision, age pruning in the write script, history turned off, and the
//! stream a purge leaves. (What history shows, a purge erasing every stored text and a damaged
//! chain are the conformance suite's, stamped with its `stored_history` group.)

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use memory_conformance::cases::ctx;
use memory_core::raw::sha256_hex;
use memory_core::{IfMatch, MemoryProvider, MemoryUpdate, Retention, Store, Surface};
use memory_redis::RedisConfig;
use redis::AsyncCommands;
use redis::aio::MultiplexedConnection;

async fn admin(keys: &common::PrefixGuard) -> MultiplexedConnection {
    redis::Client::open(keys.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// A provider keeping revisions for a day (no count limit), or `None` without a server.
async fn keeping_a_day() -> Option<(memory_redis::RedisProvider, common::PrefixGuard)> {
    common::provider_with(|config| RedisConfig {
        history: Retention::default().with_max_age(Duration::from_secs(86_400)),
        ..config
    })
    .await
}

/// The server's clock, read with `TIME`.
async fn server_now(connection: &mut MultiplexedConnection) -> SystemTime {
    let (seconds, micros): (u64, u64) = redis::cmd("TIME").query_async(connection).await.unwrap();
    UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_micros(micros)
}

/// A stream's entries (id, fields), oldest first.
type Entries = Vec<(String, Vec<(String, String)>)>;

/// A stream's entries, oldest first, with `XRANGE`.
async fn entries(connection: &mut MultiplexedConnection, key: &str) -> Entries {
    redis::cmd("XRANGE")
        .arg(key)
        .arg("-")
        .arg("+")
        .query_async(connection)
        .await
        .unwrap()
}

/// The ids of a stream's entries, oldest first.
async fn entry_ids(connection: &mut MultiplexedConnection, key: &str) -> Vec<String> {
    let entries = entries(connection, key).await;
    entries.into_iter().map(|(id, _)| id).collect()
}

/// `time` to the whole millisecond below, as stream ids count.
fn floor_ms(time: SystemTime) -> SystemTime {
    let since = time.duration_since(UNIX_EPOCH).unwrap();
    UNIX_EPOCH + Duration::from_millis(u64::try_from(since.as_millis()).unwrap())
}

/// The `number` field of a stream's entries, oldest first: what the server holds, whatever
/// `history` shows.
async fn entry_numbers(connection: &mut MultiplexedConnection, key: &str) -> Vec<u64> {
    let entries = entries(connection, key).await;
    entries.iter().map(number_of).collect()
}

/// An entry's `number` field.
fn number_of((id, fields): &(String, Vec<(String, String)>)) -> u64 {
    let number = fields.iter().find(|(name, _)| name == "number");
    number
        .unwrap_or_else(|| panic!("{id}: {fields:?}"))
        .1
        .parse()
        .unwrap()
}

/// The time of stream entry `id`: its milliseconds.
fn millis_of(id: &str) -> SystemTime {
    let (millis, _) = id.split_once('-').unwrap();
    UNIX_EPOCH + Duration::from_millis(millis.parse().unwrap())
}

/// Count pruning happens in the write itself and is exact: the stream holds the revisions the
/// retention keeps and nothing more, and `history` and `purge` count the same ones.
#[tokio::test]
async fn the_stream_holds_exactly_what_the_retention_keeps() {
    let Some((p, keys)) = common::provider_with(|config| RedisConfig {
        history: Retention::keep(2),
        ..config
    })
    .await
    else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1");
    let document = c.document(Store::Memory);
    // Past one stream node (100 entries), so whole-node trimming alone would show.
    for i in 0..150 {
        p.sync(
            &c,
            &[MemoryUpdate::add(Store::Memory, format!("entry {i}"))],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
        let held: usize = connection
            .xlen(p.store().history_key(&document))
            .await
            .unwrap();
        // The newest two, and the checkpoint (every 2nd, or the first) the older of them is
        // rebuilt from when it is a change.
        let newest: usize = i + 1;
        let base = match newest.saturating_sub(1).max(1) {
            1 => 1,
            oldest => oldest - oldest % 2,
        };
        assert_eq!(held, newest + 1 - base, "after write {i}");
    }
    assert_eq!(
        entry_numbers(&mut connection, &p.store().history_key(&document)).await,
        [148, 149, 150],
        "the newest two and the checkpoint 149 is rebuilt from, in storage"
    );
    let log = p.history(&document, usize::MAX).await.unwrap();
    assert_eq!(log.iter().map(|r| r.number).collect::<Vec<_>>(), [150, 149]);
    let purged = p.purge(&document, Surface::Cli).await.unwrap();
    assert_eq!(purged.revisions, 2, "the kept ones");
}

/// Times are the server's clock: each revision's is the stream entry id Redis stamps when the
/// write script runs, and a document's `modified` is the server's `TIME` in that script, both
/// between two readings of `TIME` around the calls. A hand edit is dated by the document's
/// `modified` as stored, the same on every read and once the next write records it.
#[tokio::test]
async fn revision_times_come_from_the_server_clock() {
    let Some((p, keys)) = common::provider().await else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1");
    let document = c.document(Store::Memory);
    let history_key = p.store().history_key(&document);

    let before = floor_ms(server_now(&mut connection).await);
    for text in ["one", "two"] {
        p.sync(
            &c,
            &[MemoryUpdate::add(Store::Memory, text)],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    }
    let after = server_now(&mut connection).await;
    let during = |time: SystemTime| time >= before && time <= after;
    let log = p.history(&document, usize::MAX).await.unwrap();
    let ids = entry_ids(&mut connection, &history_key).await;
    assert_eq!(ids.len(), 2);
    for (revision, id) in log.iter().rev().zip(&ids) {
        assert_eq!(revision.time, millis_of(id), "the entry id's milliseconds");
        assert!(during(revision.time), "{:?}", revision.time);
    }
    let modified = p.read(&document).await.unwrap().modified.unwrap();
    assert!(during(modified), "{modified:?}");

    let () = connection
        .hset_multiple(
            p.store().key(&document),
            &[("content", "by hand\n"), ("version", "3")],
        )
        .await
        .unwrap();
    let seen = p.history(&document, 1).await.unwrap();
    assert_eq!(seen[0].surface, Surface::External);
    assert_eq!(seen[0].time, modified, "dated by the document's modified");
    assert_eq!(
        p.history(&document, 1).await.unwrap(),
        seen,
        "on every read"
    );

    let before = floor_ms(server_now(&mut connection).await);
    p.sync(
        &c,
        &[MemoryUpdate::add(Store::Memory, "three")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let after = server_now(&mut connection).await;
    let log = p.history(&document, 2).await.unwrap();
    assert_eq!(log[1], seen[0], "recorded as it was shown");
    assert!(
        log[0].time >= before && log[0].time <= after,
        "{:?}",
        log[0].time
    );
}

/// Revisions older than `max_age` are not shown (never the tip), and writes trim them.
#[tokio::test]
async fn revisions_past_the_age_limit_are_pruned_but_never_the_tip() {
    let Some((p, keys)) = keeping_a_day().await else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1");
    let document = c.document(Store::Memory);
    let history_key = p.store().history_key(&document);
    // Two revisions from 1970, as if written long ago, and the document the second one left.
    let texts = ["old one\n", "old one\n\nold two\n"];
    let mut before = ("0".to_owned(), sha256_hex(""), 0);
    for (number, text) in (1u64..).zip(texts) {
        let fields = [
            ("number", number.to_string()),
            ("version_before", before.0.clone()),
            ("version_after", number.to_string()),
            ("sha256_before", before.1.clone()),
            ("sha256_after", sha256_hex(text)),
            ("bytes_before", before.2.to_string()),
            ("bytes_after", text.len().to_string()),
            ("surface", "api".to_owned()),
            ("text", text.to_owned()),
        ];
        let _: String = connection
            .xadd(&history_key, format!("{number}000-0"), &fields)
            .await
            .unwrap();
        before = (number.to_string(), sha256_hex(text), text.len());
    }
    let () = connection
        .hset_multiple(
            p.store().key(&document),
            &[("content", texts[1]), ("version", "2")],
        )
        .await
        .unwrap();

    let shown = p.history(&document, usize::MAX).await.unwrap();
    assert_eq!(
        shown.iter().map(|r| r.number).collect::<Vec<_>>(),
        [2],
        "the tip stays however old; the older one is past the age limit"
    );
    assert_eq!(shown[0].time, UNIX_EPOCH + Duration::from_secs(2));
    assert_eq!(
        entry_numbers(&mut connection, &history_key).await,
        [1, 2],
        "a read prunes nothing: writes do"
    );

    p.sync(
        &c,
        &[MemoryUpdate::add(Store::Memory, "new")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let log = p.history(&document, usize::MAX).await.unwrap();
    assert_eq!(
        log.len(),
        1,
        "the tip moved on: both old ones are past the limit"
    );
    assert_eq!((log[0].number, log[0].version_before.as_str()), (3, "2"));
    // The write trims the stream itself: the old ones are gone from storage, not only hidden.
    // Revision 3 is stored whole (the first write after half the age limit), so nothing older
    // is kept to rebuild it from.
    assert_eq!(
        entry_numbers(&mut connection, &history_key).await,
        [3],
        "the server holds only the kept revision"
    );
    let purged = p.purge(&document, Surface::Cli).await.unwrap();
    assert_eq!(purged.revisions, 1, "only the kept one counts");
    assert_eq!(purged.tombstone.unwrap().number, 4);
}

/// A hand edit's revision is dated by the document's `updated_at_ms` (its `time` field), not
/// its entry id: when that is past the age limit and it is the oldest, the write that records
/// it also drops it from the stream, as `history` leaves it out.
#[tokio::test]
async fn a_hand_edit_dated_past_the_age_limit_leaves_the_stream_at_the_write() {
    let Some((p, keys)) = keeping_a_day().await else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1");
    let document = c.document(Store::Memory);
    let history_key = p.store().history_key(&document);
    // Written by hand in 1970, never by us: no history yet.
    let () = connection
        .hset_multiple(
            p.store().key(&document),
            &[
                ("content", "by hand\n"),
                ("version", "1"),
                ("updated_at_ms", "5000"),
            ],
        )
        .await
        .unwrap();
    p.sync(
        &c,
        &[MemoryUpdate::add(Store::Memory, "new")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let log = p.history(&document, usize::MAX).await.unwrap();
    assert_eq!(
        log.iter().map(|r| r.number).collect::<Vec<_>>(),
        [2],
        "the hand edit, revision 1, is past the age limit: {log:?}"
    );
    assert_eq!(
        entry_numbers(&mut connection, &history_key).await,
        [2],
        "and gone from the stream"
    );
}

/// History off: writes record nothing and touch no history key; a purge erases and leaves
/// no tombstone.
#[tokio::test]
async fn with_history_off_nothing_is_recorded() {
    let Some((p, keys)) = common::provider_with(|config| RedisConfig {
        history: Retention::OFF,
        ..config
    })
    .await
    else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1");
    let document = c.document(Store::Memory);
    p.sync(&c, &[MemoryUpdate::add(Store::Memory, "x")], &IfMatch::NONE)
        .await
        .unwrap();
    let exists: bool = connection
        .exists(p.store().history_key(&document))
        .await
        .unwrap();
    assert!(!exists, "no history key");
    let log = p.history(&document, usize::MAX).await.unwrap();
    assert_eq!(
        log.iter()
            .map(|r| (r.number, r.surface))
            .collect::<Vec<_>>(),
        [(1, Surface::External)],
        "with nothing recorded, the document is a change nobody recorded"
    );
    let purged = p.purge(&document, Surface::Cli).await.unwrap();
    assert_eq!((purged.bytes, purged.revisions), (2, 0));
    assert_eq!(purged.tombstone, None);
    assert!(p.history(&document, usize::MAX).await.unwrap().is_empty());
}

/// A purge erases the document hash (content and receipts), the history and the index entry
/// in one step, and leaves one stream entry: the tombstone, without text.
#[tokio::test]
async fn purge_leaves_only_the_tombstone_entry() {
    let Some((p, keys)) = common::provider().await else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1").with_idempotency_key(memory_core::IdempotencyKey::new("k").unwrap());
    let document = c.document(Store::Memory);
    p.sync(
        &c,
        &[MemoryUpdate::add(Store::Memory, "secret")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let purged = p.purge(&document, Surface::Web).await.unwrap();
    assert!(
        purged.location.ends_with(&p.store().key(&document)),
        "{}",
        purged.location
    );
    let exists: bool = connection.exists(p.store().key(&document)).await.unwrap();
    assert!(!exists, "the hash, and its receipts, are gone");
    let members: Vec<String> = connection.smembers(p.store().index_key()).await.unwrap();
    assert!(members.is_empty(), "{members:?}");
    let entries = entries(&mut connection, &p.store().history_key(&document)).await;
    assert_eq!(entries.len(), 1);
    let fields = &entries[0].1;
    assert!(!fields.iter().any(|(name, _)| name == "text"), "{fields:?}");
    assert!(!format!("{fields:?}").contains("secret"));
    let tombstone = purged.tombstone.unwrap();
    assert_eq!(tombstone.time, millis_of(&entries[0].0));
    assert_eq!((tombstone.number, tombstone.surface), (2, Surface::Web));
    assert!(p.receipts(&document).await.unwrap().is_empty());
}
