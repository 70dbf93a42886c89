//! The identity map, `users/identity-map.json`, as the markdown provider reads it: whatever
//! Ethos, a person or an older version of this provider left there (Ethos's array of entries,
//! or this provider's old `{"<platform>": {"<platform user id>": "<user id>"}}`).
//!
//! Each input is written as the map under a fresh root on tmpfs and read through the
//! provider's `IdentityMap` calls. Beyond not panicking:
//! - a map that reads gives each identity the user of its first entry, as `resolve` does;
//! - linking an identity it does not hold adds exactly that link, and unlinking it again gives
//!   back the links read at first; the array Ethos wrote keeps every entry byte for byte through
//!   both, the new entry appended last and then removed;
//! - a map that does not read is `Corrupt` naming the file, for every call, and no call
//!   changes it.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use memory_core::{Identity, IdentityMap, MemoryError, UserId};
use memory_markdown::MarkdownProvider;
use serde_json::Value;
use serde_json::value::RawValue;

mod scratch;
use scratch::{root, runtime};

fuzz_target!(|data: &[u8]| {
    let root = root("identities");
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root.join("users")).expect("a root");
    runtime().block_on(check(root, data));
});

async fn check(root: &Path, bytes: &[u8]) {
    let provider = MarkdownProvider::new(root);
    let path = provider.identity_map_path();
    std::fs::write(&path, bytes).expect("the map");
    let user = UserId::new("fuzz-user").expect("an id");

    let links = match provider.identities().await {
        Ok(links) => links,
        Err(err) => {
            check_corrupt(&err, &path);
            // Every other call says the same, and none writes.
            let identity = Identity::new("fuzz", "someone").expect("an identity");
            let resolved = provider.resolve(&identity).await;
            check_corrupt(&resolved.expect_err("a corrupt map resolved"), &path);
            let linked = provider.link(&identity, &user, false).await;
            check_corrupt(&linked.expect_err("a corrupt map linked"), &path);
            let unlinked = provider.unlink(&identity).await;
            check_corrupt(&unlinked.expect_err("a corrupt map unlinked"), &path);
            assert_eq!(
                on_disk(&path).as_deref(),
                Some(bytes),
                "a corrupt map changed"
            );
            return;
        }
    };
    assert_eq!(
        on_disk(&path).as_deref(),
        Some(bytes),
        "a read changed the map"
    );
    for (identity, linked) in &links {
        let resolved = provider
            .resolve(identity)
            .await
            .expect("a map that reads resolves");
        assert_eq!(resolved.as_ref(), Some(linked), "{identity}");
    }

    // An identity the map does not hold.
    let fresh = (0..)
        .map(|n| Identity::new("fuzz", format!("fresh-{n}")).expect("an identity"))
        .find(|identity| links.iter().all(|(linked, _)| linked != identity))
        .expect("an identity not in the map");
    let previous = provider
        .link(&fresh, &user, false)
        .await
        .expect("a link to a map that reads");
    assert_eq!(previous, None);
    let mut expected = links.clone();
    expected.push((fresh.clone(), user.clone()));
    expected.sort();
    let mut after = provider.identities().await.expect("the map as linked");
    after.sort();
    assert_eq!(after, expected, "linking {fresh} changed other links");

    let written =
        elements(&on_disk(&path).expect("the map")).expect("the map is written as Ethos's array");
    let last: Value = serde_json::from_str(written.last().expect("the new entry")).expect("JSON");
    assert_eq!(last["platform"], "fuzz");
    assert_eq!(last["platformUserId"], fresh.platform_user());
    assert_eq!(last["userId"], "fuzz-user");
    // Ethos's array: every entry kept byte for byte.
    let original = elements(bytes);
    if let Some(original) = &original {
        assert_eq!(&written[..written.len() - 1], original.as_slice());
    }

    let unlinked = provider.unlink(&fresh).await.expect("an unlink");
    assert_eq!(unlinked, Some(user));
    let mut back = provider.identities().await.expect("the map as unlinked");
    back.sort();
    let mut links = links;
    links.sort();
    assert_eq!(
        back, links,
        "link then unlink of {fresh} is not the map read"
    );
    if let Some(original) = &original {
        let written = elements(&on_disk(&path).expect("the map")).expect("an array");
        assert_eq!(&written, original);
    }
}

fn on_disk(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

/// `err` is `Corrupt` at `path`, saying why.
fn check_corrupt(err: &MemoryError, path: &Path) {
    let location = path.display().to_string();
    assert!(
        matches!(err, MemoryError::Corrupt { location: l, reason } if *l == location && !reason.trim().is_empty()),
        "expected Corrupt at {location}, got {err:?}"
    );
}

/// The text of each element of `bytes` when it is a JSON array (Ethos's form), as written;
/// `None` for the object form and the empty file.
fn elements(bytes: &[u8]) -> Option<Vec<String>> {
    let elements: Vec<Box<RawValue>> = serde_json::from_slice(bytes).ok()?;
    Some(elements.iter().map(|raw| raw.get().to_owned()).collect())
}
