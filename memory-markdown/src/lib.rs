#![doc = include_str!("../README.md")]

mod config;
// In layers, each using only the ones below it: `layout` (which file holds which document)
// and `files` (the file primitives) at the bottom;
// `journal`, `receipts` and `identities` (the sidecar files and the identity map) in the
// middle; `store` (what a write, a history read and a purge do with them) on top.
mod files;
mod identities;
mod journal;
mod layout;
mod receipts;
mod store;

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use memory_core::raw::{EventBus, LocalQueues, Receipts, plan_sync};
use memory_core::{
    Document, DocumentId, Identity, IdentityMap, IfMatch, MemoryContext, MemoryError,
    MemoryProvider, MemoryUpdate, Prefetch, Purged, Retention, Revision, Store, Subscription,
    Surface, SyncReport, UserId,
};

use crate::journal::KnownTips;

pub use config::{LayoutName, MarkdownConfig};
pub use layout::{Layout, METIS_DIR, login_user, workspace_personality};

use crate::layout::Tree;

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

#[async_trait]
impl MemoryProvider for MarkdownProvider {
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        // No lock: writes are atomic renames, so each read sees one whole version.
        let tree = self.tree.clone();
        let ids = (ctx.document(Store::Memory), ctx.document(Store::User));
        let (memory, user, unread) = blocking(move || {
            let documents = (files::read(&tree, ids.0)?, files::read(&tree, ids.1)?);
            Ok((documents.0, documents.1, tree.unread_root_user()))
        })
        .await?;
        let mut seen = Prefetch::from_documents(ctx, &memory, &user);
        if let Some(path) = unread {
            seen.warnings.push(format!(
                "{} is not read: a USER.md at the root is Ethos's first layout (~/.ethos/USER.md), and this one keeps each user's profile in users/<id>/USER.md; move it there with `memory migrate --root-user <id>`",
                path.display()
            ));
        }
        Ok(seen)
    }

    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        let batches = plan_sync(ctx, updates, if_match)?;
        let ids: Vec<DocumentId> = batches.iter().map(|b| b.document().clone()).collect();
        let _my_turn = self.local_queues.turn(&ids).await;
        let (tree, lock_timeout, retention) =
            (self.tree.clone(), self.lock_timeout, self.retention);
        // Published from the blocking task, under the locks, so that a write that lands is
        // announced even if the caller stops waiting for it.
        let (events, known_tips) = (self.events.clone(), self.known_tips.clone());
        blocking(move || {
            store::sync(
                &tree,
                &batches,
                lock_timeout,
                retention,
                &events,
                &known_tips,
            )
        })
        .await
    }

    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        let (tree, document) = (self.tree.clone(), document.clone());
        blocking(move || files::read(&tree, document)).await
    }

    /// Read without the lock: a receipt its writer has not settled yet is judged against the
    /// document as read, as the next writer will judge it.
    async fn receipts(&self, document: &DocumentId) -> Result<Receipts, MemoryError> {
        let (tree, document) = (self.tree.clone(), document.clone());
        blocking(move || store::read_receipts(&tree, document)).await
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        let tree = self.tree.clone();
        blocking(move || files::list(&tree)).await
    }

    /// Read without the lock, like documents, unless writes keep changing the document while it
    /// is read: see the journal in the crate's README.
    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<Vec<Revision>, MemoryError> {
        let (tree, document) = (self.tree.clone(), document.clone());
        let (retention, lock_timeout) = (self.retention, self.lock_timeout);
        blocking(move || store::history(&tree, document, retention, limit, lock_timeout)).await
    }

    /// Under the document's lock, so no write lands between the erasing and the tombstone.
    async fn purge(&self, document: &DocumentId, surface: Surface) -> Result<Purged, MemoryError> {
        let (tree, document) = (self.tree.clone(), document.clone());
        let (retention, lock_timeout) = (self.retention, self.lock_timeout);
        blocking(move || store::purge(&tree, &document, retention, surface, lock_timeout)).await
    }

    fn subscribe(&self) -> Subscription {
        self.events.subscribe()
    }

    /// The lock timeout: the only wait a call makes that is not the disk's.
    fn deadline(&self) -> Option<Duration> {
        Some(self.lock_timeout)
    }
}

/// The map is one JSON file, `users/identity-map.json`, in the form Ethos keeps it, shared by
/// every provider, thread and process on the root like the documents are (and by Ethos): links,
/// and unlinks of a linked identity, hold our lock file and Ethos's beside it and replace it by
/// atomic rename; reads take no lock.
#[async_trait]
impl IdentityMap for MarkdownProvider {
    async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        let (path, identity) = (self.identity_map_path(), identity.clone());
        blocking(move || Ok(identities::read(&path)?.user(&identity))).await
    }

    async fn link(
        &self,
        identity: &Identity,
        user: &UserId,
        relink: bool,
    ) -> Result<Option<UserId>, MemoryError> {
        let (path, identity, user) = (self.identity_map_path(), identity.clone(), user.clone());
        let lock_timeout = self.lock_timeout;
        blocking(move || identities::link(&path, &identity, &user, relink, lock_timeout)).await
    }

    async fn unlink(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        let (path, identity) = (self.identity_map_path(), identity.clone());
        let lock_timeout = self.lock_timeout;
        blocking(move || identities::unlink(&path, &identity, lock_timeout)).await
    }

    async fn identities(&self) -> Result<Vec<(Identity, UserId)>, MemoryError> {
        let path = self.identity_map_path();
        blocking(move || Ok(identities::read(&path)?.links().into_iter().collect())).await
    }
}
