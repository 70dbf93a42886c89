//! Which notes folders changed since a listing read them: one inotify instance per provider,
//! watching each listed folder, every folder under it and every note. The kernel queues an
//! event for a change to a watched folder's entries (a file created, deleted, renamed in or
//! out) or to a watched file (written, truncated, touched, its links changed, through any of
//! its paths: a second hard link, the path a symbolic link points to) before the call that made
//! it returns, so a listing that finds no event for its folder knows that no change finished
//! since the folder was armed, by any process, agent-memory or not.
//!
//! A folder is armed only where that holds: on Linux, and on a local file system (a network
//! file system does not report another host's changes). Elsewhere, whenever its watch reports
//! a change, and past the kernel's limit on watches (`fs.inotify.max_user_watches`; each holds
//! a little kernel memory), a listing checks each file's stamp instead.

use std::collections::{BTreeSet, HashMap};
#[cfg(not(target_os = "linux"))]
use std::path::Path;
use std::path::PathBuf;

/// What changed since the last time [`Watcher::changed`] was asked.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Changed {
    /// These folders (as they were armed).
    Folders(BTreeSet<PathBuf>),
    /// Anything: the queue overflowed, or could not be read.
    All,
}

/// The watches of one provider's listings.
#[derive(Debug)]
pub(crate) struct Watcher {
    #[cfg(target_os = "linux")]
    inotify: rustix::fd::OwnedFd,
    /// The folders each watch was armed for (one file can be a note of two folders).
    folders_of: std::sync::Mutex<HashMap<i32, BTreeSet<PathBuf>>>,
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeSet;
    use std::mem::MaybeUninit;
    use std::path::{Path, PathBuf};
    use std::sync::PoisonError;

    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    use rustix::io::Errno;

    use super::{Changed, Watcher};

    /// Every change to a folder's entries, a file's content or attributes, or the folder or
    /// file itself; not reads.
    fn changes() -> WatchFlags {
        WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
    }

    /// File systems whose changes, by any process on this host, inotify reports: the local
    /// ones (`statfs`'s `f_type`). A network or FUSE file system is not among them.
    const LOCAL_FILE_SYSTEMS: [u64; 9] = [
        0xEF53,      // ext2, ext3, ext4
        0x5846_5342, // xfs
        0x9123_683E, // btrfs
        0x0102_1994, // tmpfs
        0x794C_7630, // overlayfs
        0xF2F5_2010, // f2fs
        0x2FC1_2FC1, // zfs
        0xCA45_1A4E, // bcachefs
        0x5265_4973, // reiserfs
    ];

    impl Watcher {
        /// A watcher with nothing armed; `None` where inotify is not to be had.
        pub(crate) fn new() -> Option<Watcher> {
            let inotify = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).ok()?;
            Some(Watcher {
                inotify,
                folders_of: Default::default(),
            })
        }

        /// Whether changes to `folder` can be watched: it is on a local file system.
        pub(crate) fn can_watch(folder: &Path) -> bool {
            rustix::fs::statfs(folder)
                .is_ok_and(|fs| LOCAL_FILE_SYSTEMS.contains(&(fs.f_type as u64)))
        }

        /// Watches `path` (`folder`, a folder under it, or a note, followed if it is a
        /// symbolic link) for `folder`, before it is read. `false` when it cannot be watched
        /// (the kernel's limit on watches, say).
        pub(crate) fn watch(&self, path: &Path, folder: &Path) -> bool {
            let Ok(watch) = inotify::add_watch(&self.inotify, path, changes()) else {
                return false;
            };
            let mut folders_of = self
                .folders_of
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let folders = folders_of.entry(watch).or_default();
            if !folders.contains(folder) {
                folders.insert(folder.to_owned());
            }
            true
        }

        /// The folders a change was reported for since this was last asked; empties the
        /// queue.
        pub(crate) fn changed(&self) -> Changed {
            let mut buffer = [MaybeUninit::<u8>::uninit(); 8192];
            let mut events = inotify::Reader::new(&self.inotify, &mut buffer);
            let mut changed = BTreeSet::<PathBuf>::new();
            let mut folders_of = self
                .folders_of
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            loop {
                match events.next() {
                    Ok(event) if event.events().contains(ReadFlags::QUEUE_OVERFLOW) => {
                        return Changed::All;
                    }
                    Ok(event) => {
                        let folders = if event.events().contains(ReadFlags::IGNORED) {
                            // The watch is gone (its file or folder with it).
                            folders_of.remove(&event.wd())
                        } else {
                            folders_of.get(&event.wd()).cloned()
                        };
                        changed.extend(folders.into_iter().flatten());
                    }
                    Err(Errno::WOULDBLOCK) => return Changed::Folders(changed),
                    Err(Errno::INTR) => continue,
                    Err(_) => return Changed::All,
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
impl Watcher {
    /// None: only Linux's inotify is used.
    pub(crate) fn new() -> Option<Watcher> {
        None
    }

    pub(crate) fn can_watch(_folder: &Path) -> bool {
        false
    }

    pub(crate) fn watch(&self, _path: &Path, _folder: &Path) -> bool {
        false
    }

    pub(crate) fn changed(&self) -> Changed {
        Changed::All
    }
}
