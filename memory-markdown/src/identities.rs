//! The identity map as one JSON file beside the user profiles, written like a document: under
//! a lock file, by atomic rename.

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use memory_core::{Identity, MemoryError, UserId};

use crate::files;

/// Every link, in the order [`memory_core::IdentityMap::identities`] returns them.
pub(crate) type Links = BTreeMap<Identity, UserId>;

/// `<root>/users/identity-map.json`.
pub(crate) fn path(root: &Path) -> PathBuf {
    root.join("users").join("identity-map.json")
}

/// The map as stored now; a missing file is the empty map. Needs no lock: the file is only ever
/// replaced whole, by rename.
pub(crate) fn read(path: &Path) -> Result<Links, MemoryError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(Links::new()),
        Err(err) => return Err(files::read_error(path, err)),
    };
    let corrupt = |reason: String| MemoryError::Corrupt {
        location: path.display().to_string(),
        reason,
    };
    let platforms: BTreeMap<String, BTreeMap<String, UserId>> = serde_json::from_slice(&bytes)
        .map_err(|err| {
            corrupt(format!(
                r#"not an identity map of the form {{"<platform>": {{"<platform user id>": "<user id>"}}}}: {err}"#
            ))
        })?;
    let mut links = Links::new();
    for (platform, users) in platforms {
        for (platform_user, user) in users {
            let identity = Identity::new(platform.clone(), platform_user)
                .map_err(|err| corrupt(err.to_string()))?;
            links.insert(identity, user);
        }
    }
    Ok(links)
}

/// Links `identity` to `user` under the map's lock, re-reading the map under it, and returns
/// the user it was linked to before. A corrupt map is reported and left as it is.
pub(crate) fn link(
    path: &Path,
    identity: &Identity,
    user: &UserId,
    relink: bool,
    lock_timeout: Duration,
) -> Result<Option<UserId>, MemoryError> {
    let _lock = files::lock(path, lock_timeout, |attempts| MemoryError::Unavailable {
        what: path.display().to_string(),
        message: format!(
            "other writers held its lock for longer than {lock_timeout:?} ({attempts} attempts); nothing was written"
        ),
        source: None,
    })?;
    let mut links = read(path)?;
    let previous = links.get(identity).cloned();
    if identity.check_link(previous.as_ref(), user, relink)? {
        links.insert(identity.clone(), user.clone());
        files::replace(path, &render(&links))?;
    }
    Ok(previous)
}

/// Removes the link of `identity` under the map's lock, re-reading the map under it, and
/// returns the user it was linked to. A corrupt map is reported and left as it is.
///
/// Not linked: nothing is written, not even the lock file or the `users` directory, since an
/// identity absent from the map as read now (it is only ever replaced whole) is absent at that
/// moment, which is all the answer `None` says. Of concurrent unlinks of one identity, exactly
/// one finds it under the lock.
pub(crate) fn unlink(
    path: &Path,
    identity: &Identity,
    lock_timeout: Duration,
) -> Result<Option<UserId>, MemoryError> {
    if !read(path)?.contains_key(identity) {
        return Ok(None);
    }
    let _lock = files::lock(path, lock_timeout, |attempts| MemoryError::Unavailable {
        what: path.display().to_string(),
        message: format!(
            "other writers held its lock for longer than {lock_timeout:?} ({attempts} attempts); nothing was written"
        ),
        source: None,
    })?;
    let mut links = read(path)?;
    let previous = links.remove(identity);
    if previous.is_some() {
        files::replace(path, &render(&links))?;
    }
    Ok(previous)
}

/// `{"<platform>": {"<platform user id>": "<user id>"}}`, sorted and indented, so that a person
/// can read it and diffs between versions are one line per link.
fn render(links: &Links) -> String {
    let mut platforms: BTreeMap<&str, BTreeMap<&str, &str>> = BTreeMap::new();
    for (identity, user) in links {
        platforms
            .entry(identity.platform())
            .or_default()
            .insert(identity.platform_user(), user.as_str());
    }
    let mut text =
        serde_json::to_string_pretty(&platforms).expect("maps of strings always serialize");
    text.push('\n');
    text
}
