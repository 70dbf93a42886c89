//! Where each document lives under a root: Ethos's layout, or a Metis workspace's `.metis/`.
//!
//! Everything else in the crate asks a [`Tree`] for a document's file, so a layout is one
//! mapping here and never a branch elsewhere.

use std::path::{Path, PathBuf};

use memory_core::{DocumentId, MemoryError, NoteScope, PersonalityId, UserId};
use sha2::{Digest, Sha256};

/// How documents map onto files under a markdown provider's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// Ethos's: `MEMORY.md`, `personalities/<id>/MEMORY.md` and `users/<id>/USER.md`.
    Ethos,
    /// A Metis workspace: `.metis/MEMORY.md` is `personality`'s `MEMORY.md` and
    /// `.metis/USER.md` is `user`'s `USER.md`. Every other document is
    /// [`MemoryError::NotInLayout`]: two files cannot hold more without one document silently
    /// standing for another.
    Metis {
        /// The personality whose `MEMORY.md` the workspace's is.
        personality: PersonalityId,
        /// The user whose `USER.md` the workspace's is.
        user: UserId,
    },
}

/// The folder of a Metis workspace that holds its two files.
pub const METIS_DIR: &str = ".metis";

/// The personality a Metis workspace's `MEMORY.md` belongs to unless configured: the
/// workspace folder's name (each character outside `A-Za-z0-9_-` as `-`, at most 48 of them,
/// `workspace` if none is left), `-`, and the first 8 hex digits of the SHA-256 of its real
/// path's bytes. Readable in listings, and two workspaces of one name stay apart.
/// `agent_memory.metis` (the Python client's drop-in for Metis's `MemoryStore`) applies the
/// same rule to the same path, so a drop-in store and a server on the workspace agree.
pub fn workspace_personality(workspace: &Path) -> PersonalityId {
    let real = std::fs::canonicalize(workspace)
        .or_else(|_| std::path::absolute(workspace))
        .unwrap_or_else(|_| workspace.to_path_buf());
    let name = real
        .file_name()
        .map(|name| sanitized(&name.to_string_lossy(), 48))
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "workspace".to_owned());
    let digest = format!("{:x}", Sha256::digest(path_bytes(&real)));
    PersonalityId::new(format!("{name}-{}", &digest[..8]))
        .expect("sanitized characters, at most 48 + 1 + 8 of them")
}

/// The user a Metis workspace's `USER.md` belongs to unless configured: the login name, as
/// Python's `getpass.getuser()` finds it (`LOGNAME`, `USER`, `LNAME`, `USERNAME`, else the
/// password entry of the process's user), each character outside `A-Za-z0-9_-` as `-`, at
/// most 64 of them.
///
/// # Errors
/// [`MemoryError::Config`] when none of those names anyone.
pub fn login_user() -> Result<UserId, MemoryError> {
    ["LOGNAME", "USER", "LNAME", "USERNAME"]
        .iter()
        .filter_map(|var| std::env::var(var).ok())
        .find(|name| !name.is_empty())
        .or_else(password_entry_name)
        .map(|name| sanitized(&name, 64))
        .and_then(|name| UserId::new(name).ok())
        .ok_or_else(|| MemoryError::Config {
            message: "a Metis workspace's USER.md belongs to the login user by default, and none of LOGNAME, USER, LNAME and USERNAME is set, nor has this process's user a name in /etc/passwd; set `user` in the provider's table".into(),
        })
}

/// The name `/etc/passwd` gives the user this process runs as (whose uid owns `/proc/self`),
/// as `getpwuid` finds it for local accounts.
#[cfg(unix)]
fn password_entry_name() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid().to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        (fields.nth(1)? == uid).then(|| name.to_owned())
    })
}

#[cfg(not(unix))]
fn password_entry_name() -> Option<String> {
    None
}

fn sanitized(name: &str, most: usize) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(most)
        .collect()
}

#[cfg(unix)]
fn path_bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
fn path_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().into_owned().into_bytes()
}

/// A root and its layout: what every file operation of the crate starts from.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    pub(crate) root: PathBuf,
    pub(crate) layout: Layout,
}

impl Tree {
    /// The file that holds `document`, or [`MemoryError::NotInLayout`] when the layout has
    /// none for it.
    pub(crate) fn file(&self, document: &DocumentId) -> Result<PathBuf, MemoryError> {
        match &self.layout {
            Layout::Ethos => Ok(ethos_path(&self.root, document)),
            Layout::Metis { personality, user } => {
                let name = match document {
                    DocumentId::PersonalityMemory { personality: p } if p == personality => {
                        "MEMORY.md"
                    }
                    DocumentId::UserProfile { user: u } if u == user => "USER.md",
                    _ => {
                        return Err(MemoryError::NotInLayout {
                            document: document.clone(),
                            location: format!("the Metis workspace {}", self.root.display()),
                            holds: format!(
                                "its {METIS_DIR}/MEMORY.md is personality '{personality}''s MEMORY.md and its {METIS_DIR}/USER.md is user '{user}''s USER.md; use those ids (set `personality` and `user` in its provider table to choose them), or keep other documents in another provider"
                            ),
                        });
                    }
                };
                Ok(self.root.join(METIS_DIR).join(name))
            }
        }
    }

    /// Where `document` is, for display: its file, or for a document the layout has no place
    /// for, where Ethos's layout would keep it under the root (never read or written).
    pub(crate) fn path(&self, document: &DocumentId) -> PathBuf {
        self.file(document)
            .unwrap_or_else(|_| ethos_path(&self.root, document))
    }

    /// The folder of `scope`'s notes, or `None` where the layout has no place for notes.
    pub(crate) fn notes_folder(&self, scope: &NoteScope) -> Option<PathBuf> {
        match self.layout {
            Layout::Ethos => Some(
                scope
                    .folder()
                    .split('/')
                    .fold(self.root.clone(), |path, part| path.join(part)),
            ),
            Layout::Metis { .. } => None,
        }
    }

    /// The documents this layout can hold, each with its file.
    pub(crate) fn metis_documents(&self) -> Option<[DocumentId; 2]> {
        match &self.layout {
            Layout::Ethos => None,
            Layout::Metis { personality, user } => Some([
                DocumentId::PersonalityMemory {
                    personality: personality.clone(),
                },
                DocumentId::user(user),
            ]),
        }
    }

    /// The identity map's file: `users/identity-map.json` as Ethos keeps it, or
    /// `.metis/identity-map.json` in a Metis workspace (beside the files Metis reads, which
    /// it ignores).
    pub(crate) fn identity_map(&self) -> PathBuf {
        match self.layout {
            Layout::Ethos => self.root.join("users").join("identity-map.json"),
            Layout::Metis { .. } => self.root.join(METIS_DIR).join("identity-map.json"),
        }
    }

    /// Ethos's first layout kept one `USER.md` at the root (`~/.ethos/USER.md`); this layout
    /// never reads it, so its presence is worth a warning until it is migrated into
    /// `users/<id>/USER.md`.
    pub(crate) fn unread_root_user(&self) -> Option<PathBuf> {
        let path = self.root.join("USER.md");
        (self.layout == Layout::Ethos && path.is_file()).then_some(path)
    }
}

/// `root` joined with the document's layout path, one component at a time so that the `/` of
/// [`DocumentId::relative_path`] becomes the platform's separator.
fn ethos_path(root: &Path, document: &DocumentId) -> PathBuf {
    document
        .relative_path()
        .split('/')
        .fold(root.to_path_buf(), |path, part| path.join(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_is_named_by_its_folder_and_its_paths_digest() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("my app (v2)");
        std::fs::create_dir(&workspace).unwrap();
        let id = workspace_personality(&workspace);
        let real = std::fs::canonicalize(&workspace).unwrap();
        let digest = format!("{:x}", Sha256::digest(path_bytes(&real)));
        assert_eq!(id.as_str(), format!("my-app--v2--{}", &digest[..8]));
        // Another workspace of the same name is another personality.
        let twin = dir.path().join("twin").join("my app (v2)");
        std::fs::create_dir_all(&twin).unwrap();
        assert_ne!(workspace_personality(&twin), id);
        // Long and non-ASCII names stay ids.
        let long = dir.path().join("ü".repeat(80));
        let id = workspace_personality(&long);
        assert!(id.as_str().starts_with(&"-".repeat(48)), "{id}");
        assert_eq!(id.as_str().len(), 48 + 1 + 8);
        assert!(
            workspace_personality(Path::new("/"))
                .as_str()
                .starts_with("workspace-")
        );
    }

    #[test]
    fn without_login_variables_the_user_is_the_password_entrys() {
        // What Python's getpass.getuser() falls back to, and `id -un` prints.
        let id = std::process::Command::new("id")
            .arg("-un")
            .output()
            .unwrap();
        let name = String::from_utf8(id.stdout).unwrap();
        assert_eq!(password_entry_name().as_deref(), Some(name.trim()));
    }

    #[test]
    fn a_metis_tree_holds_its_two_documents_and_refuses_the_rest_by_name() {
        let tree = Tree {
            root: PathBuf::from("/w"),
            layout: Layout::Metis {
                personality: PersonalityId::new("app").unwrap(),
                user: UserId::new("grace").unwrap(),
            },
        };
        let app = DocumentId::PersonalityMemory {
            personality: PersonalityId::new("app").unwrap(),
        };
        let grace = DocumentId::user(&UserId::new("grace").unwrap());
        assert_eq!(tree.file(&app).unwrap(), Path::new("/w/.metis/MEMORY.md"));
        assert_eq!(tree.file(&grace).unwrap(), Path::new("/w/.metis/USER.md"));
        for other in [
            DocumentId::GlobalMemory,
            DocumentId::PersonalityMemory {
                personality: PersonalityId::new("bob").unwrap(),
            },
            DocumentId::user(&UserId::new("alan").unwrap()),
        ] {
            let err = tree.file(&other).unwrap_err();
            assert_eq!(err.code(), "not-in-layout");
            let message = err.to_string();
            assert!(
                message.contains(&other.relative_path())
                    && message.contains("personality 'app'")
                    && message.contains("user 'grace'"),
                "{message}"
            );
        }
    }
}
