//! The file system's corners: documents that are symbolic links, file modes, temporary files
//! left by killed writers, lock files others created, ids that differ only in case, and file
//! times before 1970.

#![cfg(unix)]

mod common;

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

use memory_core::{
    IdKind, Identity, IdentityMap, IfMatch, MemoryError, MemoryProvider, MemoryUpdate, Store,
    UserId,
};
use memory_markdown::MarkdownProvider;

use common::{add, ctx, ctx_of, names, set};

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn is_link(path: &Path) -> bool {
    fs::symlink_metadata(path).unwrap().file_type().is_symlink()
}

/// A document that is a link (here a chain: absolute, then relative) is written through it:
/// the link stays a link and the file at its end gets the new text; the lock stays beside the
/// link. The identity map too.
#[tokio::test]
async fn a_linked_document_is_written_through_its_links() {
    let dir = tempfile::tempdir().unwrap();
    let (root, dotfiles) = (dir.path().join("memory"), dir.path().join("dotfiles"));
    let provider = MarkdownProvider::new(&root);
    fs::create_dir_all(root.join("personalities/ada")).unwrap();
    fs::create_dir_all(root.join("users")).unwrap();
    fs::create_dir_all(dotfiles.join("memory")).unwrap();
    fs::write(dotfiles.join("memory/ada.md"), "Old note.\n").unwrap();
    // The relative link is resolved against its own directory, not the document's.
    symlink("memory/ada.md", dotfiles.join("ada-link")).unwrap();
    let document = root.join("personalities/ada/MEMORY.md");
    symlink(dotfiles.join("ada-link"), &document).unwrap();
    fs::write(dotfiles.join("ids.json"), "{}\n").unwrap();
    symlink(
        "../../dotfiles/ids.json",
        root.join("users/identity-map.json"),
    )
    .unwrap();

    provider
        .sync(&ctx(), &add(Store::Memory, "New note."), &IfMatch::NONE)
        .await
        .unwrap();
    let identity: Identity = "telegram:42".parse().unwrap();
    provider
        .link(&identity, &UserId::new("u1").unwrap(), false)
        .await
        .unwrap();

    assert!(is_link(&document) && is_link(&dotfiles.join("ada-link")));
    let text = "Old note.\n\nNew note.\n";
    assert_eq!(
        fs::read_to_string(dotfiles.join("memory/ada.md")).unwrap(),
        text
    );
    let read = provider.read(&ctx().document(Store::Memory)).await.unwrap();
    assert_eq!(read.text, text);
    assert_eq!(
        names(&root.join("personalities/ada")),
        set(&["MEMORY.md", ".MEMORY.md.lock", ".MEMORY.md.history.jsonl"])
    );
    assert_eq!(names(&dotfiles.join("memory")), set(&["ada.md"]));

    assert!(is_link(&root.join("users/identity-map.json")));
    assert!(
        fs::read_to_string(dotfiles.join("ids.json"))
            .unwrap()
            .contains("\"platformUserId\": \"42\",\n    \"userId\": \"u1\"")
    );
    assert_eq!(
        provider.resolve(&identity).await.unwrap().unwrap().as_str(),
        "u1"
    );
}

/// A link to nothing, or a loop of links, is `Corrupt` naming the link, and nothing is
/// written anywhere: not the link's target, not the call's other document.
#[tokio::test]
async fn a_dangling_or_looping_link_is_corrupt_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    let provider = MarkdownProvider::new(&root);
    fs::create_dir_all(root.join("personalities/ada")).unwrap();
    fs::create_dir_all(root.join("users/u1")).unwrap();
    let memory = root.join("personalities/ada/MEMORY.md");
    let user = root.join("users/u1/USER.md");
    let missing = dir.path().join("dotfiles/ada.md");
    symlink(&missing, &memory).unwrap();
    symlink("loop-b", root.join("users/u1/loop-a")).unwrap();
    symlink("loop-a", root.join("users/u1/loop-b")).unwrap();
    symlink("loop-a", &user).unwrap();

    let dangling = provider
        .sync(&ctx(), &add(Store::Memory, "Lost?"), &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(
        matches!(&dangling, MemoryError::Corrupt { location, reason }
            if *location == memory.display().to_string() && reason.contains("does not exist")),
        "{dangling}"
    );
    assert!(!missing.exists() && !dir.path().join("dotfiles").exists());

    let looping = provider
        .sync(&ctx(), &add(Store::User, "Lost?"), &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(
        matches!(&looping, MemoryError::Corrupt { location, reason }
            if *location == user.display().to_string() && reason.contains("leads to itself")),
        "{looping}"
    );

    // The looping USER.md is found before the fine global MEMORY.md of the same call is written.
    let both = [
        MemoryUpdate::add(Store::Memory, "Lost?"),
        MemoryUpdate::add(Store::User, "Lost?"),
    ];
    let global = ctx().with_scope(memory_core::MemoryScope::Global);
    let err = provider
        .sync(&global, &both, &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(matches!(err, MemoryError::Corrupt { .. }), "{err}");
    assert!(!root.join("MEMORY.md").exists());

    assert!(is_link(&memory) && is_link(&user));
    assert_eq!(
        names(&root.join("users/u1")),
        set(&["USER.md", ".USER.md.lock", "loop-a", "loop-b"])
    );
}

/// Memory is personal: new files are 0600 and new directories 0700, whatever the umask lets
/// through; a mode someone set by hand is kept.
#[tokio::test]
async fn new_files_are_private_and_a_mode_set_by_hand_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    let provider = MarkdownProvider::new(&root);
    provider
        .sync(&ctx(), &add(Store::User, "Name: Grace."), &IfMatch::NONE)
        .await
        .unwrap();
    for made in [&root, &root.join("users"), &root.join("users/u1")] {
        assert_eq!(mode(made), 0o700, "{}", made.display());
    }
    let profile = root.join("users/u1/USER.md");
    assert_eq!(mode(&profile), 0o600);
    assert_eq!(mode(&root.join("users/u1/.USER.md.lock")), 0o600);

    fs::set_permissions(&profile, fs::Permissions::from_mode(0o640)).unwrap();
    provider
        .sync(&ctx(), &add(Store::User, "Likes tea."), &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(mode(&profile), 0o640);
    assert_eq!(
        fs::read_to_string(&profile).unwrap(),
        "Name: Grace.\n\nLikes tea.\n"
    );
}

/// Temporary files left by writers killed mid-write (each a copy of old text) are removed by
/// the next write of their document, and never make it fail: here they hold every name the
/// earlier scheme (`.<FILE>.<pid>.<counter>.tmp`) would give this process next.
#[tokio::test]
async fn temporary_files_of_killed_writers_are_removed_and_block_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let provider = MarkdownProvider::new(dir.path());
    provider
        .sync(&ctx(), &add(Store::Memory, "One."), &IfMatch::NONE)
        .await
        .unwrap();
    let folder = dir.path().join("personalities/ada");
    let pid = std::process::id();
    for n in 0..1000 {
        fs::write(
            folder.join(format!(".MEMORY.md.{pid}.{n}.tmp")),
            "A secret.\n",
        )
        .unwrap();
    }
    fs::write(folder.join(".MEMORY.md.1.2.3.4.tmp"), "A secret.\n").unwrap();
    // Not this document's: kept.
    fs::write(folder.join(".NOTES.md.1.tmp"), "Not ours.\n").unwrap();

    provider
        .sync(&ctx(), &add(Store::Memory, "Two."), &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(
        names(&folder),
        set(&[
            "MEMORY.md",
            ".MEMORY.md.lock",
            ".MEMORY.md.history.jsonl",
            ".NOTES.md.1.tmp"
        ])
    );
    assert_eq!(
        fs::read_to_string(folder.join("MEMORY.md")).unwrap(),
        "One.\n\nTwo.\n"
    );
}

/// Set in the process [`a_lock_file_this_user_may_not_write_does_not_block_writers`] starts
/// without root's power to write any file: the root to write under.
const UNPRIVILEGED_ROOT: &str = "MEMORY_TEST_UNPRIVILEGED_ROOT";

/// What that process prints once it has written, so that its parent knows it ran the test.
const UNPRIVILEGED_WROTE: &str = "the unprivileged writer wrote";

/// A lock file this process may not open for writing (made by root, say) does not stop a
/// writer who may write the document: flock needs only read access. Root may write any file
/// whatever its mode, so as root the write is made by this test run again in a process
/// without that power (`setpriv` drops `CAP_DAC_OVERRIDE` from its bounding set). Nothing is
/// skipped: without `setpriv` (util-linux) the test fails, saying so.
#[tokio::test]
async fn a_lock_file_this_user_may_not_write_does_not_block_writers() {
    let lock_of = |root: &Path| root.join("personalities/ada/.MEMORY.md.lock");
    let writable = |lock: &Path| fs::OpenOptions::new().write(true).open(lock).is_ok();
    if let Some(root) = std::env::var_os(UNPRIVILEGED_ROOT) {
        let root = Path::new(&root);
        assert!(
            !writable(&lock_of(root)),
            "this process was meant not to be able to write the lock file"
        );
        MarkdownProvider::new(root)
            .sync(&ctx(), &add(Store::Memory, "Two."), &IfMatch::NONE)
            .await
            .unwrap();
        println!("{UNPRIVILEGED_WROTE}");
        return;
    }

    let dir = tempfile::tempdir().unwrap();
    let provider = MarkdownProvider::new(dir.path());
    provider
        .sync(&ctx(), &add(Store::Memory, "One."), &IfMatch::NONE)
        .await
        .unwrap();
    let lock = lock_of(dir.path());
    fs::set_permissions(&lock, fs::Permissions::from_mode(0o400)).unwrap();
    if writable(&lock) {
        // Root (or CAP_DAC_OVERRIDE): this very test, in a process without it.
        let test = "a_lock_file_this_user_may_not_write_does_not_block_writers";
        let out = Command::new("setpriv")
            .args([
                "--bounding-set=-dac_override,-dac_read_search",
                "--inh-caps=-all",
                "--",
            ])
            .arg(std::env::current_exe().unwrap())
            .args([test, "--exact", "--nocapture"])
            .env(UNPRIVILEGED_ROOT, dir.path())
            .output()
            .unwrap_or_else(|err| {
                panic!("this process may write any file; running setpriv (util-linux) to drop that power failed: {err}")
            });
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(UNPRIVILEGED_WROTE),
            "the write without CAP_DAC_OVERRIDE: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    } else {
        provider
            .sync(&ctx(), &add(Store::Memory, "Two."), &IfMatch::NONE)
            .await
            .unwrap();
    }
    assert_eq!(
        fs::read_to_string(dir.path().join("personalities/ada/MEMORY.md")).unwrap(),
        "One.\n\nTwo.\n"
    );
}

/// `ada` is refused beside an existing `Ada` (and a user `U1` beside `u1`), writing nothing:
/// on a case-insensitive file system they would share one file. `Ada` itself still works.
#[tokio::test]
async fn ids_that_differ_only_in_case_never_share_a_document() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let provider = MarkdownProvider::new(root);
    provider
        .sync(
            &ctx_of("Ada", "u1"),
            &add(Store::Memory, "Ada's."),
            &IfMatch::NONE,
        )
        .await
        .unwrap();
    provider
        .sync(
            &ctx_of("Ada", "u1"),
            &add(Store::User, "u1's."),
            &IfMatch::NONE,
        )
        .await
        .unwrap();

    let both = [
        MemoryUpdate::add(Store::Memory, "Whose?"),
        MemoryUpdate::add(Store::User, "Whose?"),
    ];
    let err = provider
        .sync(&ctx_of("ada", "u2"), &both, &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::InvalidId { kind: IdKind::Personality, value, reason }
            if value == "ada" && reason.contains("'Ada'")),
        "{err}"
    );
    let err = provider
        .sync(&ctx_of("Bob", "U1"), &both, &IfMatch::NONE)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::InvalidId { kind: IdKind::User, value, reason }
            if value == "U1" && reason.contains("'u1'")),
        "{err}"
    );
    assert_eq!(names(&root.join("personalities")), set(&["Ada"]));
    assert_eq!(names(&root.join("users")), set(&["u1"]));

    provider
        .sync(&ctx_of("Ada", "u1"), &both, &IfMatch::NONE)
        .await
        .unwrap();
    assert_eq!(
        fs::read_to_string(root.join("personalities/Ada/MEMORY.md")).unwrap(),
        "Ada's.\n\nWhose?\n"
    );
}

/// A file time before 1970 (a restored backup, a bad clock) is read as it is and breaks
/// nothing: not read, prefetch, list, nor turning the document into JSON (where it is null).
#[tokio::test]
async fn a_file_time_before_1970_breaks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let provider = MarkdownProvider::new(dir.path());
    provider
        .sync(&ctx(), &add(Store::Memory, "Old."), &IfMatch::NONE)
        .await
        .unwrap();
    let before_1970 = UNIX_EPOCH - Duration::from_secs(24 * 60 * 60);
    fs::File::options()
        .write(true)
        .open(dir.path().join("personalities/ada/MEMORY.md"))
        .unwrap()
        .set_modified(before_1970)
        .unwrap();

    let id = ctx().document(Store::Memory);
    let document = provider.read(&id).await.unwrap();
    assert_eq!(document.modified, Some(before_1970));
    let json: serde_json::Value = serde_json::to_value(&document).unwrap();
    assert_eq!(
        json["modified"],
        serde_json::Value::Null,
        "a time JSON cannot give from 1970 is null (CONTRACT.md): {json}"
    );
    let seen = provider.prefetch(&ctx()).await.unwrap();
    assert_eq!(seen.memory.modified, Some(before_1970));
    serde_json::to_string(&seen.memory).unwrap();
    assert_eq!(provider.list().await.unwrap(), vec![id]);
}
