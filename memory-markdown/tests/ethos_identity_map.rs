//! The identity map on a root shared with Ethos: `users/identity-map.json` read and written in
//! the form Ethos's `IdentityMap` keeps it (a JSON array of `{platform, platformUserId, userId,
//! displayLabel, firstSeenAt}`, written as `JSON.stringify(entries, null, 2)`), keeping what it
//! does not use as it is, and the older object form still read and turned into the array on the
//! next write.
//!
//! The fixtures were written by Node's own `JSON.stringify(entries, null, 2)`, as Ethos writes the
//! file: two-space indent, no newline at the end.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use memory_core::{Identity, IdentityMap, MemoryError, MemoryProvider, UserId};
use memory_markdown::MarkdownProvider;
use serde_json::Value;
use tempfile::TempDir;

/// Three links as Ethos mints them.
const ETHOS_MAP: &str = include_str!("fixtures/ethos-identity-map.json");
/// Links with fields we do not use, and entries that are not links (a group, a bare string, one
/// whose platform and platform user id are not ids of ours).
const ETHOS_MAP_EXTENDED: &str = include_str!("fixtures/ethos-identity-map-extended.json");

fn setup_with(map: &str) -> (TempDir, MarkdownProvider) {
    let dir = tempfile::tempdir().unwrap();
    let provider = MarkdownProvider::new(dir.path()).with_lock_timeout(Duration::from_millis(300));
    let path = provider.identity_map_path();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, map).unwrap();
    (dir, provider)
}

fn identity(text: &str) -> Identity {
    text.parse().unwrap()
}

fn user(id: &str) -> UserId {
    UserId::new(id).unwrap()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap()
}

/// The entry Ethos would append for a link it minted, at the indent it writes entries.
fn ethos_entry(platform: &str, platform_user: &str, user: &str, first_seen: &str) -> String {
    format!(
        "  {{\n    \"platform\": \"{platform}\",\n    \"platformUserId\": \"{platform_user}\",\n    \"userId\": \"{user}\",\n    \"displayLabel\": \"{platform}:{platform_user}\",\n    \"firstSeenAt\": \"{first_seen}\"\n  }}"
    )
}

/// `text` with the entry `entry` appended to its array, as `JSON.stringify` lays it out.
fn appended(text: &str, entry: &str) -> String {
    let body = text.strip_suffix("\n]").expect("an array Ethos wrote");
    format!("{body},\n{entry}\n]")
}

/// The `firstSeenAt` of the entry of `platform`/`platform_user` in the map at `path`, checked to
/// be `Date.prototype.toISOString`'s form and to lie between `after` and now.
fn first_seen(path: &Path, platform: &str, platform_user: &str, after: SystemTime) -> String {
    let entries: Vec<Value> = serde_json::from_str(&read(path)).unwrap();
    let entry = entries
        .iter()
        .find(|e| e["platform"] == platform && e["platformUserId"] == platform_user)
        .unwrap();
    let stamp = entry["firstSeenAt"].as_str().unwrap().to_owned();
    let bytes = stamp.as_bytes();
    assert_eq!(bytes.len(), 24, "{stamp}");
    for (at, byte) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (23, b'Z'),
    ] {
        assert_eq!(bytes[at], byte, "{stamp}");
    }
    let when = humantime::parse_rfc3339(&stamp).unwrap();
    let floor = after - Duration::from_millis(1);
    assert!(floor <= when && when <= SystemTime::now(), "{stamp}");
    stamp
}

#[tokio::test]
async fn a_map_ethos_wrote_resolves_and_reading_it_writes_nothing() {
    let (dir, provider) = setup_with(ETHOS_MAP);
    let path = provider.identity_map_path();
    let inode = fs::metadata(&path).unwrap().ino();

    assert_eq!(
        provider.resolve(&identity("telegram:12345")).await.unwrap(),
        Some(user("3f9c2a7b1d4e"))
    );
    assert_eq!(
        provider
            .resolve(&identity("whatsapp:4915112345678@s.whatsapp.net"))
            .await
            .unwrap(),
        Some(user("3f9c2a7b1d4e"))
    );
    assert_eq!(
        provider.resolve(&identity("telegram:999")).await.unwrap(),
        None
    );
    assert_eq!(
        provider.identities().await.unwrap(),
        vec![
            (identity("slack:U024BE7LH"), user("a81bc81b4b1e")),
            (identity("telegram:12345"), user("3f9c2a7b1d4e")),
            (
                identity("whatsapp:4915112345678@s.whatsapp.net"),
                user("3f9c2a7b1d4e")
            ),
        ]
    );
    // A link already there, and an unlink of nothing, write nothing either.
    assert_eq!(
        provider
            .link(&identity("slack:U024BE7LH"), &user("a81bc81b4b1e"), false)
            .await
            .unwrap(),
        Some(user("a81bc81b4b1e"))
    );
    assert_eq!(
        provider.unlink(&identity("slack:nobody")).await.unwrap(),
        None
    );
    assert_eq!(read(&path), ETHOS_MAP);
    assert_eq!(fs::metadata(&path).unwrap().ino(), inode, "not rewritten");
    // Nor is the map taken for a document.
    assert!(provider.list().await.unwrap().is_empty());
    drop(dir);
}

/// A new link is appended as Ethos appends an entry it mints: its fields in Ethos's order, the
/// display label Ethos gives when the platform names none, the time as `toISOString` writes it;
/// everything before it stays byte for byte, and the file ends as `JSON.stringify` ends it.
#[tokio::test]
async fn a_link_appends_the_entry_ethos_would_mint_and_keeps_the_rest_byte_for_byte() {
    let (_dir, provider) = setup_with(ETHOS_MAP);
    let path = provider.identity_map_path();
    let before = SystemTime::now();
    assert_eq!(
        provider
            .link(&identity("telegram:999"), &user("grace"), false)
            .await
            .unwrap(),
        None
    );
    let stamp = first_seen(&path, "telegram", "999", before);
    assert_eq!(
        read(&path),
        appended(ETHOS_MAP, &ethos_entry("telegram", "999", "grace", &stamp))
    );
    assert_eq!(
        provider.resolve(&identity("telegram:999")).await.unwrap(),
        Some(user("grace"))
    );
    // Only the map and the two programs' locks: ours stays, Ethos's is removed when released.
    let names: Vec<String> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.contains(&".identity-map.json.lock".to_owned()),
        "{names:?}"
    );
}

/// A relink changes `userId` and nothing else: the fields we do not use, the entries that are
/// not links, the spacing, all stay as Ethos wrote them.
#[tokio::test]
async fn a_relink_changes_only_the_user_id_of_its_entry() {
    let (_dir, provider) = setup_with(ETHOS_MAP_EXTENDED);
    let path = provider.identity_map_path();
    let taken = provider
        .link(&identity("telegram:12345"), &user("grace"), false)
        .await
        .unwrap_err();
    assert!(
        matches!(taken, MemoryError::IdentityTaken { .. }),
        "{taken:?}"
    );
    assert_eq!(
        read(&path),
        ETHOS_MAP_EXTENDED,
        "a refused link writes nothing"
    );

    assert_eq!(
        provider
            .link(&identity("telegram:12345"), &user("grace"), true)
            .await
            .unwrap(),
        Some(user("3f9c2a7b1d4e"))
    );
    let expected =
        ETHOS_MAP_EXTENDED.replacen("\"userId\": \"3f9c2a7b1d4e\"", "\"userId\": \"grace\"", 1);
    assert_ne!(expected, ETHOS_MAP_EXTENDED);
    assert_eq!(read(&path), expected);
    assert_eq!(
        provider.identities().await.unwrap(),
        vec![
            (identity("slack:U024BE7LH"), user("a81bc81b4b1e")),
            (identity("telegram:12345"), user("grace")),
        ],
        "entries that are not links of ours are kept, not listed"
    );
}

/// An unlink removes its entry and nothing else.
#[tokio::test]
async fn an_unlink_removes_only_its_entry() {
    let (_dir, provider) = setup_with(ETHOS_MAP_EXTENDED);
    let path = provider.identity_map_path();
    assert_eq!(
        provider.unlink(&identity("slack:U024BE7LH")).await.unwrap(),
        Some(user("a81bc81b4b1e"))
    );
    let slack = "  {\n    \"platform\": \"slack\",\n    \"platformUserId\": \"U024BE7LH\",\n    \"userId\": \"a81bc81b4b1e\",\n    \"displayLabel\": \"slack:U024BE7LH\",\n    \"firstSeenAt\": \"2026-09-02T08:30:12.345Z\",\n    \"locale\": \"en-GB\"\n  },\n";
    assert!(ETHOS_MAP_EXTENDED.contains(slack));
    assert_eq!(read(&path), ETHOS_MAP_EXTENDED.replacen(slack, "", 1));
    assert_eq!(
        provider
            .resolve(&identity("slack:U024BE7LH"))
            .await
            .unwrap(),
        None
    );

    // The last link gone, the entries that are not links stay.
    provider.unlink(&identity("telegram:12345")).await.unwrap();
    let left: Vec<Value> = serde_json::from_str(&read(&path)).unwrap();
    assert_eq!(left.len(), 3, "{left:?}");
    assert!(provider.identities().await.unwrap().is_empty());
}

/// Of two entries for one identity the first answers, as Ethos's `entries.find` does; a relink
/// moves both and an unlink removes both, so neither program sees the old user afterwards.
#[tokio::test]
async fn the_first_of_several_entries_for_an_identity_counts() {
    let map = r#"[
  {
    "platform": "telegram",
    "platformUserId": "12345",
    "userId": "first",
    "displayLabel": "telegram:12345",
    "firstSeenAt": "2026-09-01T10:00:00.000Z"
  },
  {
    "platform": "telegram",
    "platformUserId": "12345",
    "userId": "second",
    "displayLabel": "again",
    "firstSeenAt": "2026-09-02T10:00:00.000Z"
  }
]"#;
    let (_dir, provider) = setup_with(map);
    let path = provider.identity_map_path();
    let id = identity("telegram:12345");
    assert_eq!(provider.resolve(&id).await.unwrap(), Some(user("first")));
    assert_eq!(
        provider.identities().await.unwrap(),
        vec![(id.clone(), user("first"))]
    );
    assert_eq!(
        provider.link(&id, &user("third"), true).await.unwrap(),
        Some(user("first"))
    );
    assert_eq!(
        read(&path),
        map.replace("\"userId\": \"first\"", "\"userId\": \"third\"")
            .replace("\"userId\": \"second\"", "\"userId\": \"third\"")
    );
    assert_eq!(provider.unlink(&id).await.unwrap(), Some(user("third")));
    assert_eq!(read(&path), "[]");
    assert_eq!(provider.resolve(&id).await.unwrap(), None);
}

/// A field given twice in one entry is read as `JSON.parse` reads it (the last counts), and a
/// relink of that entry writes it once, where `JSON.stringify` would.
#[tokio::test]
async fn a_duplicate_field_reads_as_json_parse_reads_it() {
    let map = "[\n  {\n    \"platform\": \"telegram\",\n    \"userId\": \"old\",\n    \"platformUserId\": \"12345\",\n    \"userId\": \"grace\"\n  }\n]";
    let (_dir, provider) = setup_with(map);
    let id = identity("telegram:12345");
    assert_eq!(provider.resolve(&id).await.unwrap(), Some(user("grace")));
    provider.link(&id, &user("ada"), true).await.unwrap();
    assert_eq!(
        read(&provider.identity_map_path()),
        "[\n  {\n    \"platform\": \"telegram\",\n    \"userId\": \"ada\",\n    \"platformUserId\": \"12345\"\n  }\n]"
    );
}

/// The object form this provider wrote before still reads as it did, and stays as it is until a
/// write changes the map, which writes Ethos's array: its links as entries (sorted as they
/// were, dated with the conversion), the new link after them.
#[tokio::test]
async fn the_older_object_form_reads_and_turns_into_the_array_on_the_next_write() {
    let legacy = "{\n  \"slack\": {\n    \"U024BE7LH\": \"ada\"\n  },\n  \"telegram\": {\n    \"12345\": \"grace\",\n    \"999\": \"ada\"\n  }\n}\n";
    let (_dir, provider) = setup_with(legacy);
    let path = provider.identity_map_path();
    let inode = fs::metadata(&path).unwrap().ino();
    assert_eq!(
        provider.resolve(&identity("telegram:12345")).await.unwrap(),
        Some(user("grace"))
    );
    assert_eq!(provider.identities().await.unwrap().len(), 3);
    // Nothing to change: nothing converted.
    provider
        .link(&identity("telegram:12345"), &user("grace"), false)
        .await
        .unwrap();
    assert_eq!(provider.unlink(&identity("matrix:x")).await.unwrap(), None);
    assert_eq!(read(&path), legacy);
    assert_eq!(fs::metadata(&path).unwrap().ino(), inode);

    let before = SystemTime::now();
    provider
        .link(
            &identity("discord:80351110224678912"),
            &user("grace"),
            false,
        )
        .await
        .unwrap();
    let stamp = |platform, platform_user| first_seen(&path, platform, platform_user, before);
    let expected = format!(
        "[\n{},\n{},\n{},\n{}\n]",
        ethos_entry("slack", "U024BE7LH", "ada", &stamp("slack", "U024BE7LH")),
        ethos_entry("telegram", "12345", "grace", &stamp("telegram", "12345")),
        ethos_entry("telegram", "999", "ada", &stamp("telegram", "999")),
        ethos_entry(
            "discord",
            "80351110224678912",
            "grace",
            &stamp("discord", "80351110224678912")
        ),
    );
    assert_eq!(read(&path), expected);
    assert_eq!(provider.identities().await.unwrap().len(), 4);
}

/// An unlink converts too, and an empty map is Ethos's empty array.
#[tokio::test]
async fn an_unlink_of_the_older_form_writes_the_array() {
    let (_dir, provider) = setup_with(r#"{"telegram": {"12345": "grace"}}"#);
    assert_eq!(
        provider.unlink(&identity("telegram:12345")).await.unwrap(),
        Some(user("grace"))
    );
    assert_eq!(read(&provider.identity_map_path()), "[]");
}

/// An empty file is the empty map, as Ethos reads it (`raw ? JSON.parse(raw) : []`).
#[tokio::test]
async fn an_empty_file_is_the_empty_map() {
    let (_dir, provider) = setup_with("");
    let id = identity("telegram:12345");
    assert_eq!(provider.resolve(&id).await.unwrap(), None);
    assert!(provider.identities().await.unwrap().is_empty());
    let before = SystemTime::now();
    provider.link(&id, &user("grace"), false).await.unwrap();
    let path = provider.identity_map_path();
    let stamp = first_seen(&path, "telegram", "12345", before);
    assert_eq!(
        read(&path),
        format!(
            "[\n{}\n]",
            ethos_entry("telegram", "12345", "grace", &stamp)
        )
    );
}

/// A file in neither form, or an entry that links an identity of ours to something that is not
/// a user id, is `Corrupt` naming the file, for every call, and is never overwritten.
#[tokio::test]
async fn a_map_in_neither_form_is_corrupt_and_never_overwritten() {
    for (bytes, reason) in [
        ("5", "neither"),
        ("null", "neither"),
        ("\"grace\"", "neither"),
        ("   ", "neither"),
        ("[{\"platform\": \"telegram\",", "EOF"),
        ("[] trailing", "trailing characters"),
        (
            "[{\"platform\": \"telegram\", \"platformUserId\": \"12345\", \"userId\": \"not an id\"}]",
            "entry 1 of the array: the userId of telegram:12345",
        ),
        (
            "[{}, {\"platform\": \"telegram\", \"platformUserId\": \"12345\", \"userId\": 7}]",
            "entry 2 of the array: the userId of telegram:12345 is 7, not a string",
        ),
        (
            "[{\"platform\": \"telegram\", \"platformUserId\": \"12345\"}]",
            "telegram:12345 has no userId",
        ),
        ("{\"telegram\": [\"grace\"]}", "of the form {\"<platform>\""),
    ] {
        let (_dir, provider) = setup_with(bytes);
        let path = provider.identity_map_path();
        let id = identity("telegram:12345");
        let errors = [
            provider.resolve(&id).await.map(drop),
            provider.identities().await.map(drop),
            provider.link(&id, &user("grace"), true).await.map(drop),
            provider
                .link(&identity("slack:1"), &user("grace"), false)
                .await
                .map(drop),
            provider.unlink(&id).await.map(drop),
        ];
        for err in errors {
            let err = err.unwrap_err();
            assert!(
                matches!(&err, MemoryError::Corrupt { location, reason: r }
                    if *location == path.display().to_string() && r.contains(reason)),
                "{bytes:?}: {err:?}"
            );
        }
        assert_eq!(read(&path), bytes);
        assert!(!path.with_extension("json.lock").exists());
    }
}

/// Ethos takes `identity-map.json.lock` before it adds an entry; a link here waits for a live
/// holder (and, past its timeout, writes nothing and says whose lock it is), and takes over the
/// lock of a holder that is gone, as Ethos would.
#[tokio::test]
async fn a_link_waits_for_ethoss_lock_and_takes_over_an_abandoned_one() {
    let (_dir, provider) = setup_with(ETHOS_MAP);
    let path = provider.identity_map_path();
    let lock = path.with_extension("json.lock");
    assert_eq!(lock.file_name().unwrap(), "identity-map.json.lock");
    let live = format!(
        r#"{{"token":"live","pid":{},"boot":null,"startedAt":"2026-09-01T10:00:00.000Z"}}"#,
        std::process::id()
    );
    fs::write(&lock, &live).unwrap();
    let err = provider
        .link(&identity("telegram:999"), &user("grace"), false)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::Unavailable { what, message, .. }
            if *what == lock.display().to_string()
                && message.contains(&format!("by process {}", std::process::id()))
                && message.contains("nothing was written")),
        "{err:?}"
    );
    assert_eq!(read(&path), ETHOS_MAP);
    assert_eq!(read(&lock), live, "a live holder's lock is left alone");

    // Released while a link waits: the link goes through.
    let waiting = {
        let lock = lock.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            fs::remove_file(lock).unwrap();
        })
    };
    provider
        .link(&identity("telegram:999"), &user("grace"), false)
        .await
        .unwrap();
    waiting.join().unwrap();
    assert!(!lock.exists(), "released");

    // A holder no process wears any more (above the largest pid Linux hands out).
    fs::write(
        &lock,
        r#"{"token":"dead","pid":4194305,"boot":null,"startedAt":"2026-09-01T10:00:00.000Z"}"#,
    )
    .unwrap();
    provider
        .link(&identity("telegram:1000"), &user("grace"), false)
        .await
        .unwrap();
    assert!(!lock.exists(), "taken over, then released");
    assert_eq!(provider.identities().await.unwrap().len(), 5);
}
