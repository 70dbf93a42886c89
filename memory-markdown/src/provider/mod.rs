//! [`MarkdownProvider`]: the documents under one root, its settings (layout, lock timeout,
//! retention) and the paths it keeps them at. Each trait it implements is a room of its own;
//! every call runs its blocking file work off the async worker threads ([`blocking`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use memory_core::raw::{EventBus, LocalQueues};
use memory_core::{DocumentId, MemoryError, Retention};

use crate::files::ListedNotes;
use crate::journal::{self, KnownTips};
use crate::layout::{Layout, Tree};

// `MemoryProvider`: documents, writes, receipts, history, purge, events.
mod memory;
// `IdentityMap`: the identity map's file.
mod identity_map;

/// How long a write waits for another writer's lock on a document before giving up with
/// [`MemoryError::Contention`], unless set with [`MarkdownProvider::with_lock_timeout`].
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// Memory kept as plain markdown files under one root directory: in Ethos's layout, or in a
/// Metis workspace's `.metis/` ([`Layout`]).
///
/// Any number of providers, threads and processes on one host may share a root: each write
/// holds an advisory lock on a file beside its document and replaces the document by an atomic
/// rename, so writers never lose each other's updates and readers never see a torn file.
#[derive(Debug)]
pub struct MarkdownProvider {
    tree: Tree,
    lock_timeout: Duration,
    retention: Retention,
    events: EventBus,
    /// This value's writers queue here per document, so only other processes (or values)
    /// poll the file lock against them: polling is not fair, queues are.
    local_queues: LocalQueues,
    /// Where this value's writes left each journal's last line.
    known_tips: KnownTips,
    /// What this value's listings read of each note, by its file's stamp.
    listed_notes: ListedNotes,
}

impl MarkdownProvider {
    /// A provider for the documents under `root`, which need not exist yet: the first write
    /// creates it. Touches nothing on disk.
    ///
    /// A relative `root` is made absolute against the current directory now, so that locations
    /// in reports are unambiguous and a later change of directory does not move the memory.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        MarkdownProvider {
            tree: Tree {
                root: std::path::absolute(&root).unwrap_or(root),
                layout: Layout::Ethos,
            },
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            retention: Retention::default(),
            events: EventBus::new(),
            local_queues: LocalQueues::default(),
            known_tips: KnownTips::default(),
            listed_notes: ListedNotes::default(),
        }
    }

    /// Lays the documents out as `layout` says (default [`Layout::Ethos`]).
    pub fn with_layout(mut self, layout: Layout) -> Self {
        self.tree.layout = layout;
        self
    }

    /// Sets how long a write waits for a document locked by another writer before it fails
    /// with [`MemoryError::Contention`] (default [`DEFAULT_LOCK_TIMEOUT`]).
    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    /// Keeps `retention`'s share of each document's history in its journal,
    /// `.<FILE>.history.jsonl` beside it and the older segments and checkpoint texts beside
    /// that (default: the newest 100 revisions).
    /// [`Retention::OFF`] records none, and a write then removes a journal an earlier
    /// configuration left.
    pub fn with_retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// The journal's live segment, which writes append to: `.<FILE>.history.jsonl` beside
    /// `document`, one revision a line as JSON, oldest first.
    pub fn history_path(&self, document: &DocumentId) -> PathBuf {
        journal::path(&self.path(document))
    }

    /// Every file that holds `document`'s history now: the live segment, the older ones
    /// (`.<FILE>.history.<first>.jsonl`) and the checkpoints' texts
    /// (`.<FILE>.history.<number>.md`), oldest segment first.
    ///
    /// # Errors
    /// `Unavailable` when the document's directory cannot be listed.
    pub fn history_files(&self, document: &DocumentId) -> Result<Vec<PathBuf>, MemoryError> {
        journal::files(&self.tree.file(document)?)
    }

    /// The root directory, as resolved by [`MarkdownProvider::new`].
    pub fn root(&self) -> &Path {
        &self.tree.root
    }

    /// How the documents are laid out under the root.
    pub fn layout(&self) -> &Layout {
        &self.tree.layout
    }

    /// The file that holds `document`: in Ethos's layout the root joined with
    /// [`DocumentId::relative_path`], in a Metis workspace `.metis/MEMORY.md` or
    /// `.metis/USER.md`. A document the layout has no place for is never read or written (its
    /// calls fail with [`MemoryError::NotInLayout`]); for it this is where Ethos's layout would
    /// keep it.
    pub fn path(&self, document: &DocumentId) -> PathBuf {
        self.tree.path(document)
    }

    /// The file that holds the identity map: `<root>/users/identity-map.json`, or
    /// `<root>/.metis/identity-map.json` in a Metis workspace.
    pub fn identity_map_path(&self) -> PathBuf {
        self.tree.identity_map()
    }
}

/// Runs blocking file I/O (and lock waits) off the async worker threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, MemoryError> + Send + 'static,
) -> Result<T, MemoryError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
        Err(err) => Err(MemoryError::unavailable("the blocking I/O pool", err)),
    }
}
