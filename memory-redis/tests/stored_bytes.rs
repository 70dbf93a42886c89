//! Whatever bytes a key holds, a call answers with an error that names the key, or with the
//! document, and never panics or blames the server: content that is not UTF-8, keys of other
//! types, versions and times out of range, receipts that are not a log, an identity map or an
//! index with foreign bytes, a history that is not a stream of revisions. What is not ours is
//! left as it was.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use memory_conformance::cases::ctx;
use memory_core::{
    IdempotencyKey, Identity, IdentityMap, IfMatch, MemoryContext, MemoryError, MemoryProvider,
    MemoryUpdate, Store, Surface, UserId,
};
use memory_redis::RedisProvider;
use redis::AsyncCommands;
use redis::aio::MultiplexedConnection;

async fn admin(keys: &common::PrefixGuard) -> MultiplexedConnection {
    redis::Client::open(keys.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// What `key` holds, to show it is byte for byte what it was: its `DUMP`, but a hash's fields
/// in order (a large hash's `DUMP` follows its table's order, which rehashing changes).
async fn dump(connection: &mut MultiplexedConnection, key: &str) -> Vec<u8> {
    let kind: String = redis::cmd("TYPE")
        .arg(key)
        .query_async(connection)
        .await
        .unwrap();
    if kind == "hash" {
        let fields: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
            connection.hgetall(key).await.unwrap();
        return format!("{fields:?}").into_bytes();
    }
    redis::cmd("DUMP")
        .arg(key)
        .query_async(connection)
        .await
        .unwrap()
}

fn assert_corrupt_naming<T: std::fmt::Debug>(
    what: &str,
    result: Result<T, MemoryError>,
    key: &str,
) {
    let err = result.expect_err(what);
    assert!(
        matches!(&err, MemoryError::Corrupt { location, .. } if location.contains(key)),
        "{what}: {err:?}"
    );
}

/// Read, prefetch, and syncs touching the document (one plain, one keyed) are all `Corrupt`
/// naming `key`, and `key` is unchanged.
async fn assert_document_corrupt(
    p: &RedisProvider,
    connection: &mut MultiplexedConnection,
    c: &MemoryContext,
    store: Store,
    label: &str,
) {
    let key = p.store().key(&c.document(store));
    let before = dump(connection, &key).await;
    assert_corrupt_naming(
        &format!("{label}: read"),
        p.read(&c.document(store)).await,
        &key,
    );
    assert_corrupt_naming(&format!("{label}: prefetch"), p.prefetch(c).await, &key);
    let keyed = c
        .clone()
        .with_idempotency_key(IdempotencyKey::new("turn-1").unwrap());
    for (call, context) in [("sync", c), ("keyed sync", &keyed)] {
        let result = p
            .sync(
                context,
                &[MemoryUpdate::add(store, "overwrite")],
                &IfMatch::NONE,
            )
            .await;
        assert_corrupt_naming(&format!("{label}: {call}"), result, &key);
    }
    assert_eq!(
        dump(connection, &key).await,
        before,
        "{label}: left untouched"
    );
}

/// Invalid UTF-8 in the content was `Unavailable ... retry later` (the reply failed to decode
/// as text); it is the key's fault and stays so on every retry.
#[tokio::test]
async fn content_that_is_not_utf8_is_corrupt_naming_the_key() {
    let Some((p, keys)) = common::provider().await else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1");
    let key = p.store().key(&c.document(Store::Memory));
    for content in [&b"caf\xe9"[..], b"\xff\xfe", b"ok then \xc3"] {
        let () = connection
            .hset_multiple(&key, &[("content", content), ("version", b"3")])
            .await
            .unwrap();
        assert_document_corrupt(&p, &mut connection, &c, Store::Memory, "content").await;
        let err = p.read(&c.document(Store::Memory)).await.unwrap_err();
        assert!(err.to_string().contains("not UTF-8"), "{err}");
    }
    // The user document of the same context is fine, and readable on its own.
    assert_eq!(p.read(&c.document(Store::User)).await.unwrap().text, "");
    assert!(p.list().await.unwrap().is_empty(), "nothing was written");
}

/// Keys of every other type, including strings that are not UTF-8, are `Corrupt` naming the key
/// for read, prefetch and sync, and are left alone.
#[tokio::test]
async fn document_keys_of_other_types_are_corrupt_naming_the_key() {
    let Some((p, keys)) = common::provider().await else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1");
    let key = p.store().key(&c.document(Store::User));
    let fill: [(&str, redis::Cmd); 5] = [
        (
            "string",
            redis::cmd("SET").arg(&key).arg(b"\xff\xfe").clone(),
        ),
        (
            "list",
            redis::cmd("RPUSH").arg(&key).arg("a").arg(b"\xff").clone(),
        ),
        ("set", redis::cmd("SADD").arg(&key).arg("content").clone()),
        (
            "zset",
            redis::cmd("ZADD").arg(&key).arg(1).arg("version").clone(),
        ),
        (
            "stream",
            redis::cmd("XADD")
                .arg(&key)
                .arg("*")
                .arg("content")
                .arg("x")
                .clone(),
        ),
    ];
    for (label, cmd) in fill {
        let () = redis::cmd("DEL")
            .arg(&key)
            .query_async(&mut connection)
            .await
            .unwrap();
        let _: redis::Value = cmd.query_async(&mut connection).await.unwrap();
        assert_document_corrupt(&p, &mut connection, &c, Store::User, label).await;
    }
}

/// Versions no write of ours makes: past 2^53 (where the Lua script's doubles stop counting
/// exactly, and u64::MAX would overflow the next version) or not decimal.
#[tokio::test]
async fn versions_out_of_range_are_corrupt_and_never_overflow() {
    let Some((p, keys)) = common::provider().await else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1");
    let key = p.store().key(&c.document(Store::Memory));
    for version in [
        "18446744073709551615",
        "9007199254740993",
        "1e300",
        "0x10",
        "\u{ff}",
    ] {
        let () = connection
            .hset_multiple(&key, &[("content", "x\n"), ("version", version)])
            .await
            .unwrap();
        assert_document_corrupt(&p, &mut connection, &c, Store::Memory, version).await;
    }
    // The largest version counted exactly still works, and the next write steps it.
    let () = connection
        .hset(&key, "version", "9007199254740990")
        .await
        .unwrap();
    let report = p
        .sync(&c, &[MemoryUpdate::add(Store::Memory, "y")], &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(
        report.documents[0].version_after.as_str(),
        "9007199254740991"
    );
}

/// `updated_at_ms` no clock gives (negative, past the year 9999, past u64) is an unknown time,
/// not a panic or an unreadable document, read or prefetched or printed as JSON; and the next
/// write replaces it. Before, `-1` made the document unreadable and year 584,556,019 was
/// handed on as a time to whoever printed it.
#[tokio::test]
async fn times_out_of_range_are_unknown_and_never_panic() {
    let Some((p, keys)) = common::provider().await else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1");
    let document = c.document(Store::Memory);
    let key = p.store().key(&document);
    let last_ms_of_9999 = 253_402_300_799_999u64;
    for millis in [
        (last_ms_of_9999 + 1).to_string(),
        u64::MAX.to_string(),
        "18446744073709551616".to_owned(),
        i64::MAX.to_string(),
        "-1".to_owned(),
        i64::MIN.to_string(),
        "-99999999999999999999999999".to_owned(),
        "99999999999999999999999999999999999999999".to_owned(),
        String::new(),
    ] {
        let () = connection
            .hset_multiple(
                &key,
                &[
                    ("content", "kept\n"),
                    ("version", "1"),
                    ("updated_at_ms", &millis),
                ],
            )
            .await
            .unwrap();
        let read = p.read(&document).await.unwrap();
        assert_eq!(read.modified, None, "{millis}: unknown");
        assert_eq!(read.text, "kept\n");
        let json = serde_json::to_value(&read).unwrap();
        assert!(json["modified"].is_null(), "{millis}: {json}");
        let meta = serde_json::to_string(&read.meta()).unwrap();
        assert!(meta.contains("\"modified\":null"), "{millis}: {meta}");
        let prefetch = p.prefetch(&c).await.unwrap();
        assert_eq!(prefetch.memory.modified, None, "{millis}");
        assert!(
            prefetch
                .context
                .is_some_and(|context| context.contains("kept")),
            "{millis}"
        );
        serde_json::to_string(&p.prefetch(&c).await.unwrap()).unwrap();

        let before = SystemTime::now() - Duration::from_secs(60);
        p.sync(
            &c,
            &[MemoryUpdate::add(Store::Memory, "more")],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
        let written = p.read(&document).await.unwrap().modified;
        assert!(
            written.is_some_and(|at| at > before),
            "{millis}: the write stamped a time: {written:?}"
        );
        let () = connection.del(&key).await.unwrap();
    }

    // The edges that are times stay times.
    for (millis, at) in [
        (
            last_ms_of_9999,
            UNIX_EPOCH + Duration::from_millis(last_ms_of_9999),
        ),
        (0, UNIX_EPOCH),
    ] {
        let () = connection
            .hset_multiple(
                &key,
                &[
                    ("content", "x\n".to_owned()),
                    ("version", "1".to_owned()),
                    ("updated_at_ms", millis.to_string()),
                ],
            )
            .await
            .unwrap();
        let read = p.read(&document).await.unwrap();
        assert_eq!(read.modified, Some(at));
        let json = serde_json::to_value(&read).unwrap();
        assert_eq!(json["modified"], millis);
    }

    // Anything but an integer is not a time of ours: corrupt, as before.
    for millis in ["soon", "1.5", "-", "\u{ff}"] {
        let () = connection
            .hset(&key, "updated_at_ms", millis)
            .await
            .unwrap();
        assert_document_corrupt(&p, &mut connection, &c, Store::Memory, millis).await;
    }
}

/// A `receipts` field that is not a log of ours fails keyed calls as `Corrupt` naming the key,
/// and is left as it is; calls without a key do not read it.
#[tokio::test]
async fn receipts_that_are_not_a_log_are_corrupt_naming_the_key() {
    let Some((p, keys)) = common::provider().await else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1");
    let keyed = c
        .clone()
        .with_idempotency_key(IdempotencyKey::new("turn-1").unwrap());
    let key = p.store().key(&c.document(Store::Memory));
    let add = [MemoryUpdate::add(Store::Memory, "entry")];
    p.sync(&keyed, &add, &IfMatch::NONE).await.unwrap();
    let log: Vec<u8> = connection.hget(&key, "receipts").await.unwrap();
    assert!(!log.is_empty(), "the keyed call stored a receipt");

    for receipts in [
        &b"42"[..],
        b"not json",
        b"{\"entries\": 7}",
        b"[\xff]",
        b"\xff",
    ] {
        let () = connection.hset(&key, "receipts", receipts).await.unwrap();
        let before = dump(&mut connection, &key).await;
        // Another process, which reads the receipts (`p` would answer the replay from its
        // view of the document, as it wrote it).
        let other = common::host(&keys, memory_conformance::Host::default()).await;
        let result = other.sync(&keyed, &add, &IfMatch::NONE).await;
        assert_corrupt_naming(&String::from_utf8_lossy(receipts), result, &key);
        assert_eq!(dump(&mut connection, &key).await, before, "left untouched");
        let read = p.read(&c.document(Store::Memory)).await.unwrap();
        assert_eq!(read.text, "entry\n", "a read does not need the receipts");
    }
}

/// An identity map whose fields or values are not UTF-8 is `Corrupt` naming its key (it was
/// `Unavailable`), and is left alone.
#[tokio::test]
async fn an_identity_map_with_bytes_that_are_not_utf8_is_corrupt() {
    let Some((p, keys)) = common::provider().await else {
        return;
    };
    let mut connection = admin(&keys).await;
    let key = p.store().identity_map_key();
    let identity: Identity = "telegram:1".parse().unwrap();
    let grace = UserId::new("grace").unwrap();

    let () = connection
        .hset(&key, "telegram:1", &b"gr\xffce"[..])
        .await
        .unwrap();
    let before = dump(&mut connection, &key).await;
    assert_corrupt_naming("resolve", p.resolve(&identity).await, &key);
    assert_corrupt_naming("identities", p.identities().await, &key);
    assert_corrupt_naming("relink", p.link(&identity, &grace, true).await, &key);
    assert_corrupt_naming("link", p.link(&identity, &grace, false).await, &key);
    assert_corrupt_naming("unlink", p.unlink(&identity).await, &key);
    assert_eq!(dump(&mut connection, &key).await, before, "left untouched");

    let () = connection.del(&key).await.unwrap();
    let () = connection
        .hset(&key, &b"telegram:\xff"[..], "grace")
        .await
        .unwrap();
    assert_corrupt_naming("identities", p.identities().await, &key);
    assert_eq!(
        p.resolve(&identity).await.unwrap(),
        None,
        "other fields resolve"
    );
}

/// The index set: a key of another type is `Corrupt` naming it (it was `Unavailable`); a
/// member that is not UTF-8 names no document and is skipped, like any path outside the layout.
#[tokio::test]
async fn an_index_with_foreign_bytes_is_corrupt_or_skipped() {
    let Some((p, keys)) = common::provider().await else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1");
    p.sync(&c, &[MemoryUpdate::add(Store::User, "x")], &IfMatch::NONE)
        .await
        .unwrap();
    let () = connection
        .sadd(p.store().index_key(), &b"users/\xff/USER.md"[..])
        .await
        .unwrap();
    assert_eq!(p.list().await.unwrap(), vec![c.document(Store::User)]);

    let () = connection.del(p.store().index_key()).await.unwrap();
    let () = connection
        .set(p.store().index_key(), "not a set")
        .await
        .unwrap();
    assert_corrupt_naming("list", p.list().await, &p.store().index_key());
}

/// `Corrupt` naming the key `at` from sync, history and purge of the memory document of `c`,
/// with the document and its history left byte for byte as they were; read and prefetch do
/// not need the history.
async fn assert_history_corrupt(
    p: &RedisProvider,
    connection: &mut MultiplexedConnection,
    c: &MemoryContext,
    label: &str,
    at: &str,
) {
    let document = c.document(Store::Memory);
    let (key, history_key) = (p.store().key(&document), p.store().history_key(&document));
    let before = (
        dump(connection, &key).await,
        dump(connection, &history_key).await,
    );
    p.read(&document).await.expect("a read needs no history");
    p.prefetch(c).await.expect("a prefetch needs no history");
    let add = [MemoryUpdate::add(Store::Memory, "more")];
    assert_corrupt_naming(
        &format!("{label}: sync"),
        p.sync(c, &add, &IfMatch::NONE).await,
        at,
    );
    assert_corrupt_naming(
        &format!("{label}: history"),
        p.history(&document, usize::MAX).await,
        at,
    );
    assert_corrupt_naming(
        &format!("{label}: purge"),
        p.purge(&document, Surface::Cli).await,
        at,
    );
    let after = (
        dump(connection, &key).await,
        dump(connection, &history_key).await,
    );
    assert_eq!(after, before, "{label}: left untouched");
}

/// A history key of another type is `Corrupt` naming it for every call that needs the
/// history, and is left alone.
#[tokio::test]
async fn history_keys_of_other_types_are_corrupt_naming_the_key() {
    let Some((p, keys)) = common::provider().await else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1");
    p.sync(
        &c,
        &[MemoryUpdate::add(Store::Memory, "kept")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let history_key = p.store().history_key(&c.document(Store::Memory));
    let fill: [(&str, redis::Cmd); 5] = [
        (
            "string",
            redis::cmd("SET").arg(&history_key).arg(b"\xff\xfe").clone(),
        ),
        (
            "list",
            redis::cmd("RPUSH").arg(&history_key).arg("number").clone(),
        ),
        (
            "hash",
            redis::cmd("HSET")
                .arg(&history_key)
                .arg("number")
                .arg("1")
                .clone(),
        ),
        ("set", redis::cmd("SADD").arg(&history_key).arg("1").clone()),
        (
            "zset",
            redis::cmd("ZADD").arg(&history_key).arg(1).arg("1").clone(),
        ),
    ];
    for (label, cmd) in fill {
        let () = connection.del(&history_key).await.unwrap();
        let _: redis::Value = cmd.query_async(&mut connection).await.unwrap();
        assert_history_corrupt(&p, &mut connection, &c, label, &history_key).await;
    }
}

/// The fields of the document hash that keep its newest revision.
const TIP_FIELDS: [&str; 4] = [
    "revision",
    "revision_version",
    "revision_sha256",
    "revision_bytes",
];

async fn hmget(connection: &mut MultiplexedConnection, key: &str, fields: &[&str]) -> Vec<String> {
    redis::cmd("HMGET")
        .arg(key)
        .arg(fields)
        .query_async(connection)
        .await
        .unwrap()
}

/// The newest revision's fields a write keeps in the document hash (`revision`,
/// `revision_version`, `revision_sha256`, `revision_bytes`) that are not a revision's are
/// `Corrupt` naming the document key for every call that needs the history.
#[tokio::test]
async fn revision_fields_that_are_not_ours_are_corrupt_naming_the_document() {
    let Some((p, keys)) = common::provider().await else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1");
    p.sync(
        &c,
        &[MemoryUpdate::add(Store::Memory, "kept")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let key = p.store().key(&c.document(Store::Memory));
    let stored: Vec<(&str, String)> = TIP_FIELDS
        .into_iter()
        .zip(hmget(&mut connection, &key, &TIP_FIELDS).await)
        .collect();
    assert_eq!(stored[0].1, "1", "the write kept its revision in the hash");
    for (field, value) in [
        ("revision", "one"),
        ("revision", "0"),
        ("revision", "-1"),
        ("revision_sha256", "not a hash"),
        ("revision_bytes", "1e3"),
    ] {
        let () = connection.hset_multiple(&key, &stored).await.unwrap();
        let () = connection.hset(&key, field, value).await.unwrap();
        assert_history_corrupt(&p, &mut connection, &c, &format!("{field} {value}"), &key).await;
    }
    let () = connection.hset_multiple(&key, &stored).await.unwrap();
    let () = connection.hdel(&key, "revision_version").await.unwrap();
    assert_history_corrupt(&p, &mut connection, &c, "no revision_version", &key).await;
}

/// A stream entry's fields, as bytes.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// The fields of the first revision as the provider stored it.
async fn first_entry(connection: &mut MultiplexedConnection, key: &str) -> Fields {
    let entries: Vec<(String, Fields)> = redis::cmd("XRANGE")
        .arg(key)
        .arg("-")
        .arg("+")
        .query_async(connection)
        .await
        .unwrap();
    entries.into_iter().next().unwrap().1
}

/// `fields` with `name` set to `value` (added when absent), or removed when `value` is `None`.
fn with_field(fields: &[(Vec<u8>, Vec<u8>)], name: &str, value: Option<&[u8]>) -> Fields {
    let mut changed: Vec<_> = fields
        .iter()
        .filter(|(field, _)| field != name.as_bytes())
        .cloned()
        .collect();
    if let Some(value) = value {
        changed.push((name.as_bytes().to_vec(), value.to_vec()));
    }
    changed
}

/// Stream entries that are not revisions of ours: as the newest entry they fail every call that
/// needs the history, as `Corrupt` naming the key, and nothing is written or erased; values
/// only a full reading checks fail `history`. Never a panic.
#[tokio::test]
async fn history_entries_that_are_not_ours_are_corrupt_naming_the_key() {
    let Some((p, keys)) = common::provider().await else {
        return;
    };
    let mut connection = admin(&keys).await;
    let c = ctx("ada", "u1");
    p.sync(
        &c,
        &[MemoryUpdate::add(Store::Memory, "kept")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let history_key = p.store().history_key(&c.document(Store::Memory));
    let first = first_entry(&mut connection, &history_key).await;
    // The first revision again as the second: a valid entry (it changes nothing) to break.
    let second = with_field(&first, "number", Some(b"2"));
    let write = async |connection: &mut MultiplexedConnection,
                       entries: &[&[(Vec<u8>, Vec<u8>)]]| {
        let () = connection.del(&history_key).await.unwrap();
        for fields in entries {
            let _: String = connection.xadd(&history_key, "*", fields).await.unwrap();
        }
    };

    let newest: [(&str, Fields); 7] = [
        ("foreign fields", vec![(b"content".to_vec(), b"x".to_vec())]),
        (
            "number not a count",
            with_field(&second, "number", Some(b"two")),
        ),
        ("number zero", with_field(&second, "number", Some(b"0"))),
        (
            "number past 2^53",
            with_field(&second, "number", Some(b"18446744073709551615")),
        ),
        (
            "sha256 not hex",
            with_field(&second, "sha256_after", Some(b"zz")),
        ),
        (
            "bytes negative",
            with_field(&second, "bytes_after", Some(b"-1")),
        ),
        (
            "no version_after",
            with_field(&second, "version_after", None),
        ),
    ];
    let key = p.store().key(&c.document(Store::Memory));
    let document = c.document(Store::Memory);
    for (label, fields) in &newest {
        write(&mut connection, &[&first, fields]).await;
        // The document hash keeps its newest revision, so a write does not read the entry;
        // showing or purging the history does, and refuses.
        let before = (
            dump(&mut connection, &key).await,
            dump(&mut connection, &history_key).await,
        );
        assert_corrupt_naming(label, p.history(&document, usize::MAX).await, &history_key);
        assert_corrupt_naming(label, p.purge(&document, Surface::Cli).await, &history_key);
        let after = (
            dump(&mut connection, &key).await,
            dump(&mut connection, &history_key).await,
        );
        assert_eq!(after, before, "{label}: left untouched");
        // A hash without those fields (written before history was kept, or by hand) takes
        // its tip from the newest entry: then a write refuses too.
        let stored = hmget(&mut connection, &key, &TIP_FIELDS).await;
        let () = connection.hdel(&key, &TIP_FIELDS).await.unwrap();
        assert_history_corrupt(&p, &mut connection, &c, label, &history_key).await;
        let restore: Vec<(&str, String)> = TIP_FIELDS.into_iter().zip(stored).collect();
        let () = connection.hset_multiple(&key, &restore).await.unwrap();
    }

    // Not ours further back: the history cannot be shown or purged, and is left alone.
    let foreign = [(b"colour".to_vec(), b"red".to_vec())];
    let () = connection.del(&history_key).await.unwrap();
    let _: String = connection
        .xadd(&history_key, "1-0", &foreign)
        .await
        .unwrap();
    let _: String = connection.xadd(&history_key, "*", &second).await.unwrap();
    let before = dump(&mut connection, &history_key).await;
    assert_corrupt_naming(
        "older: history",
        p.history(&document, usize::MAX).await,
        &history_key,
    );
    assert_corrupt_naming(
        "older: purge",
        p.purge(&document, Surface::Cli).await,
        &history_key,
    );
    assert_eq!(dump(&mut connection, &history_key).await, before);

    let values: [(&str, Fields); 9] = [
        ("text not UTF-8", with_field(&second, "text", Some(b"\xff"))),
        (
            "text not what its hash says",
            with_field(&second, "text", Some(b"other\n")),
        ),
        (
            "unknown surface",
            with_field(&second, "surface", Some(b"robot")),
        ),
        (
            "updates not JSON",
            with_field(&second, "updates", Some(b"not json")),
        ),
        (
            "updates not updates",
            with_field(&second, "updates", Some(b"[{\"op\": 7}]")),
        ),
        ("unknown field", with_field(&second, "colour", Some(b"red"))),
        (
            "time not a time",
            with_field(&second, "time", Some(b"soon")),
        ),
        (
            "personality not an id",
            with_field(&second, "personality", Some(b"a b")),
        ),
        (
            "sha256_before not hex",
            with_field(&second, "sha256_before", Some(b"ZZ")),
        ),
    ];
    for (label, fields) in &values {
        write(&mut connection, &[&first, fields]).await;
        let before = dump(&mut connection, &history_key).await;
        let result = p.history(&document, usize::MAX).await;
        assert_corrupt_naming(label, result, &history_key);
        assert_eq!(dump(&mut connection, &history_key).await, before, "{label}");
    }
    // With the history deleted by hand, what is left shows, and writes number on.
    let () = connection.del(&history_key).await.unwrap();
    assert!(p.history(&document, usize::MAX).await.unwrap().is_empty());
    p.sync(
        &c,
        &[MemoryUpdate::add(Store::Memory, "more")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let log = p.history(&document, usize::MAX).await.unwrap();
    assert_eq!(log.iter().map(|r| r.number).collect::<Vec<_>>(), [2]);
}
