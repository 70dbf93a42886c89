//! What is specific to keeping memory in files: where they land, hand edits, bytes that are not
//! ours, what is left on disk, listing a root that holds more than documents, file times, and
//! the identity map's file.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use memory_core::raw::sha256_hex;
use memory_core::{
    DocumentId, Identity, IdentityMap, IfMatch, MemoryContext, MemoryError, MemoryEvent,
    MemoryProvider, MemoryScope, MemoryUpdate, PersonalityId, Store, UserId,
};
use memory_markdown::MarkdownProvider;

use common::{add, ctx, names, set, setup};

#[tokio::test]
async fn documents_land_at_the_ethos_paths_as_plain_files() {
    let (dir, provider) = setup();
    let both = [
        MemoryUpdate::add(Store::Memory, "Ada likes tea."),
        MemoryUpdate::add(Store::User, "Name: Grace."),
    ];
    let report = provider.sync(&ctx(), &both, &IfMatch::NONE).await.unwrap();
    let global = ctx().with_scope(MemoryScope::Global);
    provider
        .sync(&global, &add(Store::Memory, "Shared note."), &IfMatch::NONE)
        .await
        .unwrap();

    let root = dir.path();
    let personal = root.join("personalities/ada/MEMORY.md");
    let user = root.join("users/u1/USER.md");
    assert_eq!(fs::read_to_string(&personal).unwrap(), "Ada likes tea.\n");
    assert_eq!(fs::read_to_string(&user).unwrap(), "Name: Grace.\n");
    assert_eq!(
        fs::read_to_string(root.join("MEMORY.md")).unwrap(),
        "Shared note.\n"
    );

    let memory = report.get(Store::Memory).unwrap();
    assert_eq!(memory.location, personal.display().to_string());
    assert_eq!(
        memory.version_after.as_str(),
        sha256_hex("Ada likes tea.\n")
    );
    assert_eq!(
        report.get(Store::User).unwrap().location,
        user.display().to_string()
    );
    assert_eq!(provider.path(&ctx().document(Store::User)), user);

    let read = provider.read(&ctx().document(Store::Memory)).await.unwrap();
    assert_eq!(read.text, "Ada likes tea.\n");
    assert_eq!(read.version, memory.version_after);
    assert_eq!(read.location, memory.location);
}

#[tokio::test]
async fn nothing_is_created_before_the_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("not-yet");
    let provider = MarkdownProvider::new(&root);
    assert_eq!(provider.root(), root);
    let doc = provider.read(&ctx().document(Store::Memory)).await.unwrap();
    assert_eq!(doc.text, "");
    assert_eq!(doc.version.as_str(), sha256_hex(""));
    let seen = provider.prefetch(&ctx()).await.unwrap();
    assert_eq!(seen.context, None);
    assert_eq!(provider.list().await.unwrap(), vec![]);
    assert!(!root.exists());

    // A write guarded by the version of the missing file lands.
    let guarded = IfMatch {
        memory: Some(seen.memory.version),
        ..IfMatch::NONE
    };
    provider
        .sync(&ctx(), &add(Store::Memory, "first"), &guarded)
        .await
        .unwrap();
    assert_eq!(
        fs::read_to_string(root.join("personalities/ada/MEMORY.md")).unwrap(),
        "first\n"
    );
}

#[test]
fn a_relative_root_is_made_absolute_without_io() {
    let provider = MarkdownProvider::new("some/relative/root");
    assert!(provider.root().is_absolute());
    assert!(provider.root().ends_with("some/relative/root"));
    assert!(!Path::new("some").exists());
}

#[tokio::test]
async fn a_hand_edit_is_a_new_version_and_the_next_sync_builds_on_it() {
    let (dir, provider) = setup();
    let id = ctx().document(Store::Memory);
    provider
        .sync(
            &ctx(),
            &add(Store::Memory, "from the agent"),
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    let before = provider.read(&id).await.unwrap().version;

    let path = dir.path().join("personalities/ada/MEMORY.md");
    fs::write(&path, "from a person\n").unwrap();
    let edited = provider.read(&id).await.unwrap();
    assert_eq!(edited.text, "from a person\n");
    assert_ne!(edited.version, before);

    // A change computed before the edit is refused and leaves the edit alone.
    let stale = IfMatch {
        memory: Some(before),
        ..IfMatch::NONE
    };
    let err = provider
        .sync(&ctx(), &[MemoryUpdate::replace(Store::Memory, "")], &stale)
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::Conflict { .. }), "{err}");
    assert_eq!(fs::read_to_string(&path).unwrap(), "from a person\n");

    provider
        .sync(
            &ctx(),
            &add(Store::Memory, "from the agent again"),
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "from a person\n\nfrom the agent again\n"
    );
}

#[tokio::test]
async fn bytes_that_are_not_utf8_are_corrupt_and_never_overwritten() {
    let (dir, provider) = setup();
    let path = dir.path().join("personalities/ada/MEMORY.md");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let bytes = b"ok\n\xff\xfe\n".to_vec();
    fs::write(&path, &bytes).unwrap();

    let corrupt = |result: Result<(), MemoryError>| match result.unwrap_err() {
        MemoryError::Corrupt { location, reason } => {
            assert_eq!(location, path.display().to_string());
            assert_eq!(reason, "not valid UTF-8 (byte offset 3)");
        }
        other => panic!("expected Corrupt, got {other}"),
    };
    corrupt(
        provider
            .read(&ctx().document(Store::Memory))
            .await
            .map(drop),
    );
    corrupt(provider.prefetch(&ctx()).await.map(drop));
    for update in [
        MemoryUpdate::add(Store::Memory, "more"),
        MemoryUpdate::replace(Store::Memory, "clean slate"),
    ] {
        // The user document of the same call is not written either.
        let call = [MemoryUpdate::add(Store::User, "Name: Grace."), update];
        corrupt(provider.sync(&ctx(), &call, &IfMatch::NONE).await.map(drop));
    }
    assert_eq!(fs::read(&path).unwrap(), bytes);
    assert!(!dir.path().join("users/u1/USER.md").exists());
}

#[tokio::test]
async fn a_directory_where_a_file_should_be_is_corrupt() {
    let (dir, provider) = setup();
    fs::create_dir_all(dir.path().join("users/u1/USER.md")).unwrap();
    fs::create_dir_all(dir.path().join("personalities")).unwrap();
    fs::write(dir.path().join("personalities/ada"), "a stray file").unwrap();

    let err = provider
        .read(&ctx().document(Store::User))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::Corrupt { reason, .. } if reason.contains("is a directory")),
        "{err}"
    );
    let err = provider
        .sync(&ctx(), &add(Store::User, "x"), &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::Corrupt { .. }), "{err}");
    let err = provider
        .sync(&ctx(), &add(Store::Memory, "x"), &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::Corrupt { reason, .. } if reason.contains("is a file")),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("personalities/ada")).unwrap(),
        "a stray file"
    );
}

#[tokio::test]
async fn syncs_leave_only_the_document_its_lock_file_and_its_journal() {
    let (dir, provider) = setup();
    let text = || fs::read_to_string(dir.path().join("personalities/ada/MEMORY.md")).unwrap();
    let sync = |updates: Vec<MemoryUpdate>| {
        let provider = &provider;
        async move { provider.sync(&ctx(), &updates, &IfMatch::NONE).await }
    };
    let memory = |report: &memory_core::SyncReport| report.get(Store::Memory).unwrap().clone();

    let one = memory(
        &sync(vec![MemoryUpdate::add(Store::Memory, "one")])
            .await
            .unwrap(),
    );
    assert!(one.written);
    assert_eq!(text(), "one\n");
    let two = memory(
        &sync(vec![
            MemoryUpdate::add(Store::Memory, "two"),
            MemoryUpdate::remove(Store::Memory, "one"),
        ])
        .await
        .unwrap(),
    );
    assert!(two.written && two.lines_removed == 1, "{two:?}");
    // "one\n\ntwo\n" less the line "one", then trim_end + "\n" (CONTRACT.md: remove).
    assert_eq!(text(), "\ntwo\n");
    // Removing what is not there changes nothing: reported, no write, the version kept.
    let none = memory(
        &sync(vec![MemoryUpdate::remove(Store::Memory, "absent")])
            .await
            .unwrap(),
    );
    assert!(!none.written && none.lines_removed == 0, "{none:?}");
    assert_eq!(none.version_before, two.version_after);
    assert_eq!(none.version_after, two.version_after);
    assert_eq!(text(), "\ntwo\n");
    // Editing what is not there is refused, writing nothing.
    let refused = sync(vec![MemoryUpdate::edit(Store::Memory, "absent", "x")]).await;
    assert!(
        matches!(refused, Err(MemoryError::NoMatch { .. })),
        "{refused:?}"
    );
    assert_eq!(text(), "\ntwo\n");
    let three = memory(
        &sync(vec![MemoryUpdate::replace(Store::Memory, "three")])
            .await
            .unwrap(),
    );
    assert!(
        three.written && three.version_before == two.version_after,
        "{three:?}"
    );
    let global = ctx().with_scope(MemoryScope::Global);
    provider
        .sync(&global, &add(Store::Memory, "g"), &IfMatch::NONE)
        .await
        .unwrap();

    let root = dir.path();
    assert_eq!(
        names(&root.join("personalities/ada")),
        set(&["MEMORY.md", ".MEMORY.md.lock", ".MEMORY.md.history.jsonl"])
    );
    assert_eq!(
        fs::read_to_string(root.join("personalities/ada/MEMORY.md")).unwrap(),
        "three\n"
    );
    assert_eq!(
        names(root),
        set(&[
            "MEMORY.md",
            ".MEMORY.md.lock",
            ".MEMORY.md.history.jsonl",
            "personalities"
        ])
    );
    assert_eq!(
        fs::read(root.join("personalities/ada/.MEMORY.md.lock")).unwrap(),
        b""
    );
}

#[tokio::test]
async fn a_private_file_stays_private() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, provider) = setup();
    provider
        .sync(&ctx(), &add(Store::User, "Name: Grace."), &IfMatch::NONE)
        .await
        .unwrap();
    let path = dir.path().join("users/u1/USER.md");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    provider
        .sync(&ctx(), &add(Store::User, "Likes tea."), &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[tokio::test]
async fn list_finds_documents_and_skips_everything_else() {
    let (dir, provider) = setup();
    let root = dir.path();
    let other = MemoryContext::new(
        PersonalityId::new("bob").unwrap(),
        UserId::new("u2").unwrap(),
    );
    provider
        .sync(&ctx(), &add(Store::Memory, "a"), &IfMatch::NONE)
        .await
        .unwrap();
    // Cleared, but written once: still a document.
    provider
        .sync(
            &other,
            &[MemoryUpdate::add(Store::User, "b")],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    provider
        .sync(
            &other,
            &[MemoryUpdate::replace(Store::User, "")],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    let stray = [
        "notes.md",
        "personalities/bad.id/MEMORY.md",
        "personalities/no-memory/USER.md",
        "personalities/readme.txt",
        "users/identity-map.json",
        "users/u3/MEMORY.md",
        "users/.hidden/USER.md",
    ];
    for path in stray {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "x\n").unwrap();
    }
    fs::create_dir_all(root.join("personalities/dir-not-file/MEMORY.md")).unwrap();
    fs::create_dir_all(root.join("personalities/empty")).unwrap();
    fs::write(root.join("MEMORY.md"), "hand-made global\n").unwrap();

    assert_eq!(
        provider.list().await.unwrap(),
        vec![
            DocumentId::GlobalMemory,
            ctx().document(Store::Memory),
            other.document(Store::User),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_tasks_in_one_process_lose_nothing() {
    const TASKS: usize = 16;
    const ADDS: usize = 10;
    let (dir, provider) = setup();
    let shared = Arc::new(provider);
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            // Half share one provider, half have their own: both must serialise.
            let provider = if t % 2 == 0 {
                shared.clone()
            } else {
                Arc::new(MarkdownProvider::new(dir.path()))
            };
            tokio::spawn(async move {
                for e in 0..ADDS {
                    let both = [
                        MemoryUpdate::add(Store::Memory, format!("t{t}-e{e}")),
                        MemoryUpdate::add(Store::User, format!("t{t}-e{e}")),
                    ];
                    provider.sync(&ctx(), &both, &IfMatch::NONE).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    for store in [Store::Memory, Store::User] {
        let text = shared.read(&ctx().document(store)).await.unwrap().text;
        let entries: BTreeSet<&str> = text.trim_end().split("\n\n").collect();
        assert_eq!(entries.len(), TASKS * ADDS, "{store}: {text}");
    }
}

#[tokio::test]
async fn each_write_is_announced() {
    let (_dir, provider) = setup();
    let mut events = provider.subscribe();
    let report = provider
        .sync(&ctx(), &add(Store::Memory, "a"), &IfMatch::NONE)
        .await
        .unwrap();
    match events.try_recv() {
        Some(MemoryEvent::Updated(document)) => {
            assert_eq!(&document, report.get(Store::Memory).unwrap())
        }
        other => panic!("expected memory.updated, got {other:?}"),
    }
    provider
        .sync(
            &ctx(),
            &[MemoryUpdate::remove(Store::Memory, "absent")],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    assert_eq!(events.try_recv(), None);
}

#[tokio::test]
async fn a_lock_held_too_long_is_contention_and_nothing_is_written() {
    let (dir, provider) = setup();
    let provider = provider.with_lock_timeout(std::time::Duration::from_millis(200));
    provider
        .sync(&ctx(), &add(Store::Memory, "before"), &IfMatch::NONE)
        .await
        .unwrap();
    // Another writer (a stopped process, say) holds the document's lock throughout.
    let lock = fs::File::open(dir.path().join("personalities/ada/.MEMORY.md.lock")).unwrap();
    lock.lock().unwrap();

    let both = [
        MemoryUpdate::add(Store::User, "user note"),
        MemoryUpdate::add(Store::Memory, "after"),
    ];
    let err = provider
        .sync(&ctx(), &both, &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::Contention { document, attempts } if *document == ctx().document(Store::Memory) && *attempts > 1),
        "{err:?}"
    );
    let memory = dir.path().join("personalities/ada/MEMORY.md");
    assert_eq!(fs::read_to_string(&memory).unwrap(), "before\n");
    assert!(
        !dir.path().join("users/u1/USER.md").exists(),
        "no partial call"
    );

    drop(lock);
    provider.sync(&ctx(), &both, &IfMatch::NONE).await.unwrap();
    assert_eq!(fs::read_to_string(&memory).unwrap(), "before\n\nafter\n");
}

/// `modified` is the file's mtime, so a hand edit (or a restored backup) shows its own time.
#[tokio::test]
async fn modified_is_the_file_mtime() {
    let (dir, provider) = setup();
    let id = ctx().document(Store::Memory);
    provider
        .sync(&ctx(), &add(Store::Memory, "a"), &IfMatch::NONE)
        .await
        .unwrap();
    let path = dir.path().join("personalities/ada/MEMORY.md");
    let mtime = fs::metadata(&path).unwrap().modified().unwrap();
    assert_eq!(provider.read(&id).await.unwrap().modified, Some(mtime));

    let restored = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(restored)
        .unwrap();
    assert_eq!(provider.read(&id).await.unwrap().modified, Some(restored));
    let seen = provider.prefetch(&ctx()).await.unwrap();
    assert_eq!(seen.memory.modified, Some(restored));
    assert_eq!(seen.user.modified, None);
}

fn identity(text: &str) -> Identity {
    text.parse().unwrap()
}

/// `text` with the value of every `firstSeenAt` (the time of the link, `toISOString`'s form)
/// replaced by `<time>`.
fn without_times(text: &str) -> String {
    let key = "\"firstSeenAt\": \"";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(key) {
        let (head, tail) = rest.split_at(at + key.len());
        out.push_str(head);
        out.push_str("<time>");
        rest = &tail[24..];
    }
    out.push_str(rest);
    out
}

/// The map is one JSON array beside the profiles, in the form Ethos writes it (one entry per
/// link, in the order they were made), `list` never takes it for a document, and a link that
/// changes nothing does not rewrite it.
#[tokio::test]
async fn the_identity_map_is_ethos_json_beside_the_profiles() {
    use std::os::unix::fs::MetadataExt;
    let (dir, provider) = setup();
    let (grace, ada) = (UserId::new("grace").unwrap(), UserId::new("ada").unwrap());
    for (id, user) in [
        ("telegram:12345", &grace),
        ("slack:U024BE7LH", &ada),
        ("matrix:@grace:example.org", &grace),
        ("telegram:999", &ada),
    ] {
        provider.link(&identity(id), user, false).await.unwrap();
    }
    let path = dir.path().join("users/identity-map.json");
    assert_eq!(provider.identity_map_path(), path);
    let expected = r#"[
  {
    "platform": "telegram",
    "platformUserId": "12345",
    "userId": "grace",
    "displayLabel": "telegram:12345",
    "firstSeenAt": "<time>"
  },
  {
    "platform": "slack",
    "platformUserId": "U024BE7LH",
    "userId": "ada",
    "displayLabel": "slack:U024BE7LH",
    "firstSeenAt": "<time>"
  },
  {
    "platform": "matrix",
    "platformUserId": "@grace:example.org",
    "userId": "grace",
    "displayLabel": "matrix:@grace:example.org",
    "firstSeenAt": "<time>"
  },
  {
    "platform": "telegram",
    "platformUserId": "999",
    "userId": "ada",
    "displayLabel": "telegram:999",
    "firstSeenAt": "<time>"
  }
]"#;
    assert_eq!(without_times(&fs::read_to_string(&path).unwrap()), expected);
    assert_eq!(
        names(&dir.path().join("users")),
        set(&["identity-map.json", ".identity-map.json.lock"])
    );
    assert_eq!(provider.list().await.unwrap(), vec![]);

    let inode = fs::metadata(&path).unwrap().ino();
    let previous = provider
        .link(&identity("telegram:12345"), &grace, true)
        .await
        .unwrap();
    assert_eq!(previous, Some(grace.clone()));
    assert_eq!(fs::metadata(&path).unwrap().ino(), inode, "not rewritten");

    // Profiles beside it are listed as ever.
    provider
        .sync(&ctx(), &add(Store::User, "Name: Grace."), &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(
        provider.list().await.unwrap(),
        vec![ctx().document(Store::User)]
    );

    // A hand edit is read as it is.
    fs::write(&path, r#"{"telegram": {"12345": "ada"}}"#).unwrap();
    assert_eq!(
        provider.resolve(&identity("telegram:12345")).await.unwrap(),
        Some(ada)
    );
}

/// A map file that is not one (bad JSON, another shape, an invalid id) is `Corrupt` naming
/// it, for reads, links and unlinks alike, and is never overwritten, not even by a relink.
#[tokio::test]
async fn a_malformed_identity_map_is_corrupt_and_never_overwritten() {
    let (_dir, provider) = setup();
    let path = provider.identity_map_path();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let grace = UserId::new("grace").unwrap();
    for (bytes, reason) in [
        ("{\"telegram\": {\"12345\": \"grace\"", "EOF"),
        ("[{\"platform\": \"telegram\"", "EOF"),
        ("true", "neither"),
        (
            "[{\"platform\": \"telegram\", \"platformUserId\": \"12345\", \"userId\": \"a b\"}]",
            "user id",
        ),
        ("{\"telegram\": {\"12345\": \"not an id\"}}", "user id"),
        ("{\"tele gram\": {\"12345\": \"grace\"}}", "platform"),
        (
            "{\"telegram\": {\" 12345\": \"grace\"}}",
            "platform user id",
        ),
    ] {
        fs::write(&path, bytes).unwrap();
        let id = identity("telegram:12345");
        let errors = [
            provider.resolve(&id).await.map(drop),
            provider.identities().await.map(drop),
            provider.link(&id, &grace, false).await.map(drop),
            provider
                .link(&identity("slack:1"), &grace, true)
                .await
                .map(drop),
            provider.unlink(&id).await.map(drop),
            provider.unlink(&identity("slack:1")).await.map(drop),
        ];
        for err in errors {
            let err = err.unwrap_err();
            assert!(
                matches!(&err, MemoryError::Corrupt { location, reason: r }
                    if *location == path.display().to_string() && r.contains(reason)),
                "{bytes:?}: {err:?}"
            );
        }
        assert_eq!(fs::read_to_string(&path).unwrap(), bytes);
    }
    assert!(provider.list().await.unwrap().is_empty());
}

/// An unlink rewrites the map without its link, by rename; an unlink of an identity not
/// linked writes nothing: not the map, and on a fresh root not even `users/` or the lock file.
#[tokio::test]
async fn an_unlink_rewrites_the_map_only_when_it_removes_a_link() {
    use std::os::unix::fs::MetadataExt;
    let (dir, provider) = setup();
    let grace = UserId::new("grace").unwrap();
    assert_eq!(
        provider.unlink(&identity("telegram:12345")).await.unwrap(),
        None
    );
    assert!(
        names(dir.path()).is_empty(),
        "an unlink of nothing creates nothing"
    );

    provider
        .link(&identity("telegram:12345"), &grace, false)
        .await
        .unwrap();
    provider
        .link(&identity("slack:U024BE7LH"), &grace, false)
        .await
        .unwrap();
    let path = provider.identity_map_path();
    let inode = fs::metadata(&path).unwrap().ino();
    assert_eq!(
        provider.unlink(&identity("telegram:1")).await.unwrap(),
        None
    );
    assert_eq!(fs::metadata(&path).unwrap().ino(), inode, "not rewritten");

    assert_eq!(
        provider.unlink(&identity("telegram:12345")).await.unwrap(),
        Some(grace)
    );
    assert_ne!(
        fs::metadata(&path).unwrap().ino(),
        inode,
        "replaced by rename"
    );
    let expected = r#"[
  {
    "platform": "slack",
    "platformUserId": "U024BE7LH",
    "userId": "grace",
    "displayLabel": "slack:U024BE7LH",
    "firstSeenAt": "<time>"
  }
]"#;
    assert_eq!(without_times(&fs::read_to_string(&path).unwrap()), expected);
    assert_eq!(
        names(&dir.path().join("users")),
        set(&["identity-map.json", ".identity-map.json.lock"])
    );
}

/// A note is a plain file a person can open, edit and make: a file written by hand in a
/// scope's folder is a note the agent lists and reads; a hand edit lands in what the agent
/// reads next, is recorded as an external revision at the next write, and the write builds on
/// it; a file a note path refuses (hidden, reserved) is not a note.
#[tokio::test]
async fn a_hand_made_or_hand_edited_note_is_what_the_agent_reads() {
    use memory_core::{NotePath, Surface};
    let (dir, provider) = setup();
    let folder = dir.path().join("personalities/ada/notes");
    fs::create_dir_all(folder.join("trips")).unwrap();
    fs::write(folder.join("trips/kyoto.md"), "# Kyoto\nTemples first.\n").unwrap();
    fs::write(folder.join(".hidden.md"), "Not a note.\n").unwrap();
    fs::write(folder.join("CON.md"), "Not a note either.\n").unwrap();

    let scope = ctx().document(Store::Memory).scope();
    let listed = provider.notes(&scope, "").await.unwrap();
    let paths: Vec<&str> = listed.iter().map(|note| note.path.as_str()).collect();
    assert_eq!(paths, ["trips/kyoto.md"]);
    let prompt = provider.prefetch(&ctx()).await.unwrap().context.unwrap();
    assert!(
        prompt.ends_with("## Notes\n\n- memory/trips/kyoto.md (23 bytes): Kyoto"),
        "{prompt}"
    );

    let kyoto = scope.note(NotePath::new("trips/kyoto.md").unwrap());
    let at = NotePath::new("trips/kyoto.md").unwrap();
    provider
        .sync(
            &ctx(),
            &[MemoryUpdate::add(Store::Memory, "Ryokan.").in_note(at.clone())],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    fs::write(
        folder.join("trips/kyoto.md"),
        "# Kyoto\nShrines first.\n\nRyokan.\n",
    )
    .unwrap();
    assert_eq!(
        provider.read(&kyoto).await.unwrap().text,
        "# Kyoto\nShrines first.\n\nRyokan.\n"
    );
    provider
        .sync(
            &ctx(),
            &[MemoryUpdate::add(Store::Memory, "Gardens.").in_note(at)],
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    assert_eq!(
        fs::read_to_string(folder.join("trips/kyoto.md")).unwrap(),
        "# Kyoto\nShrines first.\n\nRyokan.\n\nGardens.\n",
        "the write built on the hand edit"
    );
    let history = provider.history(&kyoto, 10).await.unwrap();
    let surfaces: Vec<Surface> = history.iter().map(|revision| revision.surface).collect();
    assert_eq!(
        surfaces,
        [
            Surface::default(),
            Surface::External,
            Surface::default(),
            Surface::External
        ],
        "newest first: the write, the hand edit, the write, the hand-made file"
    );
}

/// Listing keeps what it read of a note whose file is settled and reads again what changed: a
/// note edited in place (same size, same inode) is listed as it is now, and one written so
/// recently that a change need not move its time is read anew even when its time is put back.
#[tokio::test]
async fn a_listing_is_never_staler_than_the_files() {
    use std::time::{Duration, SystemTime};
    let (dir, provider) = setup();
    let folder = dir.path().join("personalities/ada/notes");
    fs::create_dir_all(&folder).unwrap();
    let scope = ctx().document(Store::Memory).scope();
    let set_time = |name: &str, time: SystemTime| {
        fs::File::options()
            .write(true)
            .open(folder.join(name))
            .unwrap()
            .set_modified(time)
            .unwrap();
    };
    // The description and version the listing gives the note at `path`.
    let (provider, scope) = (&provider, &scope);
    let listed = |path: &'static str| async move {
        let notes = provider.notes(scope, "").await.unwrap();
        let note = notes
            .into_iter()
            .find(|note| note.path.as_str() == path)
            .unwrap();
        (note.description, note.version)
    };

    // Settled: written a minute ago, listed (and kept), then edited in place.
    fs::write(folder.join("old.md"), "Alpha.\n").unwrap();
    set_time("old.md", SystemTime::now() - Duration::from_secs(60));
    assert_eq!(listed("old.md").await.0, "Alpha.");
    fs::write(folder.join("old.md"), "Gamma.\n").unwrap();
    let (description, version) = listed("old.md").await;
    assert_eq!(
        description, "Gamma.",
        "an in-place edit moves the file's time"
    );
    assert_eq!(version.as_str(), sha256_hex("Gamma.\n"));

    // Recent: its time put back after a same-size edit, as a coarse clock could leave it.
    fs::write(folder.join("new.md"), "Delta.\n").unwrap();
    let written = fs::metadata(folder.join("new.md"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(listed("new.md").await.0, "Delta.");
    fs::write(folder.join("new.md"), "Omega.\n").unwrap();
    set_time("new.md", written);
    assert_eq!(
        listed("new.md").await.0,
        "Omega.",
        "a recent note is read again"
    );
}

/// A listing kept while the folder's watch reports nothing is never staler than the files:
/// each change a person can make between two listings shows in the second, in a folder under
/// the scope's, through a symbolic link or a second hard link (which the watch does not see,
/// so such a folder is listed file by file), and when a folder above the scope's is renamed.
#[cfg(unix)]
#[tokio::test]
async fn a_watched_listing_sees_every_change_between_two_listings() {
    use std::time::{Duration, SystemTime};
    let (dir, provider) = setup();
    let folder = dir.path().join("personalities/ada/notes");
    fs::create_dir_all(folder.join("trips")).unwrap();
    let scope = ctx().document(Store::Memory).scope();
    let settled = |path: &Path, text: &str| {
        fs::write(path, text).unwrap();
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(60))
            .unwrap();
    };
    let (provider, scope) = (&provider, &scope);
    // Each note listed as `path: description (bytes)`; the prompt's index agrees.
    let listing = || async move {
        let notes = provider.notes(scope, "").await.unwrap();
        let shown: Vec<String> = notes
            .iter()
            .map(|note| format!("{}: {} ({})", note.path, note.description, note.bytes))
            .collect();
        let prompt = provider.prefetch(&ctx()).await.unwrap().context;
        for note in &notes {
            let line = format!("- memory/{} ({} bytes)", note.path, note.bytes);
            assert!(
                prompt.as_deref().unwrap_or("").contains(&line),
                "{prompt:?}"
            );
        }
        shown
    };
    settled(&folder.join("a.md"), "Alpha.\n");
    settled(&folder.join("trips/kyoto.md"), "Kyoto.\n");
    assert_eq!(
        listing().await,
        ["a.md: Alpha. (7)", "trips/kyoto.md: Kyoto. (7)"]
    );
    assert_eq!(
        listing().await,
        ["a.md: Alpha. (7)", "trips/kyoto.md: Kyoto. (7)"]
    );

    // Appended to in place, in a folder under the scope's.
    {
        use std::io::Write;
        let mut file = fs::OpenOptions::new()
            .append(true)
            .open(folder.join("trips/kyoto.md"))
            .unwrap();
        file.write_all(b"Temples.\n").unwrap();
    }
    assert_eq!(
        listing().await,
        ["a.md: Alpha. (7)", "trips/kyoto.md: Kyoto. (16)"]
    );

    // A new folder, then a note made in it after a listing.
    fs::create_dir(folder.join("food")).unwrap();
    assert_eq!(listing().await.len(), 2);
    settled(&folder.join("food/ramen.md"), "Ramen.\n");
    assert_eq!(
        listing().await,
        [
            "a.md: Alpha. (7)",
            "food/ramen.md: Ramen. (7)",
            "trips/kyoto.md: Kyoto. (16)"
        ]
    );

    // Deleted, and renamed.
    fs::remove_file(folder.join("a.md")).unwrap();
    fs::rename(folder.join("food/ramen.md"), folder.join("ramen.md")).unwrap();
    assert_eq!(
        listing().await,
        ["ramen.md: Ramen. (7)", "trips/kyoto.md: Kyoto. (16)"]
    );

    // A second hard link outside the scope, written through: the same file, edited.
    let outside = dir.path().join("elsewhere");
    fs::create_dir(&outside).unwrap();
    fs::hard_link(folder.join("ramen.md"), outside.join("ramen.md")).unwrap();
    assert_eq!(listing().await.len(), 2);
    fs::write(outside.join("ramen.md"), "Shoyu ramen.\n").unwrap();
    assert_eq!(
        listing().await,
        ["ramen.md: Shoyu ramen. (13)", "trips/kyoto.md: Kyoto. (16)"]
    );
    fs::remove_file(outside.join("ramen.md")).unwrap();

    // A note that is a symbolic link, its target written.
    settled(&outside.join("target.md"), "Target.\n");
    std::os::unix::fs::symlink(outside.join("target.md"), folder.join("linked.md")).unwrap();
    assert_eq!(listing().await.len(), 3);
    fs::write(outside.join("target.md"), "Moved target.\n").unwrap();
    assert!(
        listing()
            .await
            .contains(&"linked.md: Moved target. (14)".to_owned()),
        "{:?}",
        listing().await
    );
    fs::remove_file(folder.join("linked.md")).unwrap();
    assert_eq!(listing().await.len(), 2);

    // The personality's folder renamed away and another put in its place (the watch is on
    // the one that moved), then removed.
    let personality = dir.path().join("personalities/ada");
    fs::rename(&personality, dir.path().join("personalities/ada-old")).unwrap();
    fs::create_dir_all(&folder).unwrap();
    settled(&folder.join("fresh.md"), "Fresh.\n");
    assert_eq!(listing().await, ["fresh.md: Fresh. (7)"]);
    fs::remove_dir_all(&personality).unwrap();
    assert_eq!(listing().await, Vec::<String>::new());
}
