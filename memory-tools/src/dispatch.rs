//! [`MemoryTools`], the entry point: the tools of one conversation, what they keep between
//! calls (the versions the model viewed), and the dispatch of a call to its tool's body in
//! `tools`. Also the helpers every tool's body shares: reading a file, writing one exactly
//! once, and the size note after a write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use memory_core::raw::sha256_hex;
use memory_core::{
    Caps, Document, DocumentId, DocumentReport, IdempotencyKey, IfMatch, MemoryContext,
    MemoryError, MemoryProvider, MemoryUpdate, NoteMeta, Recall, Store, Surface, Version,
    notes_of_context, sync_exactly_once,
};
use serde_json::Value;

use crate::arguments::{
    self, AddArgs, Call, ConsolidateArgs, HistoryArgs, RemoveArgs, ReplaceArgs, SearchArgs,
    ViewArgs,
};
use crate::definitions::{Tool, ToolDefinition};
use crate::wording::{self, refusal};

/// What a tool call gives back to the model: text, and whether it is an error.
///
/// An error always means nothing was written (or, for a backend that went away mid-write, that
/// the outcome is unknown and the text says so); a success always means the write landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// What the model reads.
    pub text: String,
    /// Whether the call failed; MCP's `isError`, the tool-result error flag of model APIs.
    pub is_error: bool,
}

impl ToolOutput {
    fn success(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: false,
        }
    }

    fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: true,
        }
    }
}

/// The memory tools of one conversation: one personality and one user on one provider.
///
/// Keeps the versions the model last viewed, so `memory_consolidate` can refuse to rewrite a
/// file that changed since: create one per conversation (or MCP session), not per call.
pub struct MemoryTools {
    pub(crate) provider: Arc<dyn MemoryProvider>,
    pub(crate) ctx: MemoryContext,
    pub(crate) recall: Option<Arc<dyn Recall>>,
    pub(crate) can_read: bool,
    pub(crate) can_write: bool,
    viewed: Mutex<Viewed>,
}

/// The version of each file whose whole text the model has seen, by a full view and its own
/// writes since. `None`: the model has not seen all of it.
#[derive(Debug, Default)]
pub(crate) struct Viewed {
    pub(crate) memory: Option<Version>,
    pub(crate) user: Option<Version>,
    /// The version of each note the model read (or wrote) last: what a whole `write` of it
    /// is guarded by.
    pub(crate) notes: HashMap<DocumentId, Version>,
}

impl Viewed {
    pub(crate) fn of(&mut self, store: Store) -> &mut Option<Version> {
        match store {
            Store::Memory => &mut self.memory,
            Store::User => &mut self.user,
        }
    }
}

/// The short token `memory_view` shows for a file at `version` and `memory_consolidate` takes
/// back as `viewed`: 12 hex digits of the version's SHA-256, so a model copies it easily and
/// cannot make one up for a version it was not shown. A stateless server (MCP over HTTP)
/// keeps no view between calls; the token carries it.
pub fn view_token(version: &Version) -> String {
    let mut token = sha256_hex(version.as_str());
    token.truncate(12);
    token
}

impl std::fmt::Debug for MemoryTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTools")
            .field("ctx", &self.ctx)
            .field("can_recall", &self.recall.is_some())
            .finish_non_exhaustive()
    }
}

impl MemoryTools {
    /// The tools over `provider` for the conversation of `ctx` (its personality, user, scope,
    /// caps, prefetch budget and session). Every write they make records the surface
    /// [`Surface::Tool`], whatever `ctx` says: it is a tool call.
    pub fn new(provider: Arc<dyn MemoryProvider>, ctx: MemoryContext) -> Self {
        MemoryTools {
            provider,
            ctx: ctx.with_surface(Surface::Tool),
            recall: None,
            can_read: true,
            can_write: true,
            viewed: Mutex::default(),
        }
    }

    /// Offers only what a caller with these rights may use: reading (`memory_view`,
    /// `memory_history`'s listing, `memory_search`), writing (`memory_add`, `memory_replace`,
    /// `memory_remove`, `memory_consolidate`, `memory_history`'s `revert_to`), or both (the
    /// default). The others are neither offered nor run.
    pub fn with_access(mut self, can_read: bool, can_write: bool) -> Self {
        self.can_read = can_read;
        self.can_write = can_write;
        self
    }

    /// Adds `memory_search` and `memory_view`'s query, answered by `recall` (normally the same
    /// provider, e.g. a `memory_vector::VectorProvider`).
    pub fn with_recall(self, recall: Arc<dyn Recall>) -> Self {
        self.maybe_with_recall(Some(recall))
    }

    /// [`MemoryTools::with_recall`] when there is a recall; without, the tools as they are (no
    /// `memory_search`): for wiring where only some personalities recall.
    pub fn maybe_with_recall(mut self, recall: Option<Arc<dyn Recall>>) -> Self {
        self.recall = recall;
        self
    }

    /// The conversation these tools act for.
    pub fn context(&self) -> &MemoryContext {
        &self.ctx
    }

    /// The tools offered here, in order: `memory_search` only where the provider can recall,
    /// and only those the caller's access allows ([`MemoryTools::with_access`]).
    pub fn tools(&self) -> Vec<Tool> {
        Tool::ALL
            .into_iter()
            .filter(|tool| *tool != Tool::Search || self.recall.is_some())
            .filter(|tool| match tool {
                // Its commands read or write: offered to either, each command checked.
                Tool::Notes => self.can_read || self.can_write,
                tool if tool.writes() => self.can_write,
                _ => self.can_read,
            })
            .collect()
    }

    /// The tool called `name`, if it is offered here.
    pub fn offered(&self, name: &str) -> Option<Tool> {
        Tool::named(name).filter(|tool| self.tools().contains(tool))
    }

    /// The definitions to hand the model, one per [`MemoryTools::tools`].
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools()
            .into_iter()
            .map(|tool| tool.definition_for(self.recall.is_some(), self.can_write))
            .collect()
    }

    /// Runs the tool called `name` with `arguments` (a JSON object, or null for none) and
    /// returns the text for the model. Never panics and never fails: every problem, from an
    /// unknown tool to a backend that is down, is an error output the model can read.
    pub async fn call(&self, name: &str, arguments: Value) -> ToolOutput {
        self.call_keyed(name, arguments, None).await
    }

    /// [`MemoryTools::call`] with the caller's idempotency key for it: the same call repeated
    /// with the same key (after a lost reply, to any server of the deployment) writes once
    /// and reports what the first one did. Without a key each write gets a fresh one, which
    /// still keeps the provider's own resends from applying it twice.
    pub async fn call_keyed(
        &self,
        name: &str,
        arguments: Value,
        key: Option<IdempotencyKey>,
    ) -> ToolOutput {
        let key = key.as_ref();
        let Some(tool) = self.offered(name) else {
            let offered: Vec<&str> = self.tools().into_iter().map(Tool::name).collect();
            return ToolOutput::error(wording::no_such_tool(name, &offered));
        };
        let arguments = if arguments.is_null() {
            Value::Object(Default::default())
        } else {
            arguments
        };
        let definition = tool.definition_for(self.recall.is_some(), self.can_write);
        let result = match arguments::parse(tool, &definition, arguments) {
            Ok(Call::View(ViewArgs { query })) => self.view(query).await,
            Ok(Call::Add(AddArgs { file, entry })) => self.add(file.0, entry, key).await,
            Ok(Call::Replace(ReplaceArgs { file, old, new })) => {
                self.replace(file.0, old, new, key).await
            }
            Ok(Call::Remove(RemoveArgs { file, substring })) => {
                self.remove(file.0, substring, key).await
            }
            Ok(Call::Consolidate(ConsolidateArgs {
                file,
                content,
                viewed,
            })) => self.consolidate(file.0, content, viewed, key).await,
            Ok(Call::History(HistoryArgs {
                file,
                limit,
                revert_to,
            })) => match revert_to {
                Some(_) if !self.can_write => Err(wording::REVERT_NEEDS_WRITE.to_owned()),
                Some(number) => self.revert(file.0, number, key).await,
                None => self.history(file.0, limit).await,
            },
            Ok(Call::Notes(args)) => self.call_notes(args, key).await,
            Ok(Call::Search(SearchArgs { query, k })) => self.search(query, k).await,
            Err(refused) => Err(refused),
        };
        match result {
            Ok(text) => ToolOutput::success(text),
            Err(text) => ToolOutput::error(text),
        }
    }

    /// One of the conversation's two documents, as the tools' provider holds it now: what an
    /// MCP server offers as a resource. Reading it does not count as a view.
    ///
    /// # Errors
    /// Whatever the provider's `read` fails with.
    pub async fn document(&self, store: Store) -> Result<Document, MemoryError> {
        self.provider.read(&self.ctx.document(store)).await
    }

    /// The notes of the conversation's two scopes, each with its scope's store: what an MCP
    /// server offers as resources beside the two documents.
    ///
    /// # Errors
    /// Whatever the provider's `notes` fails with.
    pub async fn notes(&self) -> Result<Vec<(Store, NoteMeta)>, MemoryError> {
        notes_of_context(&*self.provider, &self.ctx).await
    }

    /// The note `note` when it is one of the conversation's two scopes' (else `None`), as the
    /// provider holds it now.
    ///
    /// # Errors
    /// Whatever the provider's `read` fails with.
    pub async fn note(&self, note: &DocumentId) -> Result<Option<Document>, MemoryError> {
        let in_scope = note.note_path().is_some()
            && [Store::Memory, Store::User]
                .iter()
                .any(|store| self.ctx.document(*store).scope() == note.scope());
        match in_scope {
            true => self.provider.read(note).await.map(Some),
            false => Ok(None),
        }
    }

    /// [`MemoryTools::document`], failing with what the model reads.
    pub(crate) async fn read(&self, store: Store) -> Result<Document, String> {
        self.document(store).await.map_err(|e| refusal(&e))
    }

    /// Applies one update, guarded by `if_match` when given, and keeps the viewed version in
    /// step when the model saw the text this write started from.
    pub(crate) async fn write(
        &self,
        update: MemoryUpdate,
        if_match: Option<Version>,
        key: Option<&IdempotencyKey>,
    ) -> Result<DocumentReport, String> {
        let store = update.store();
        let guard = IfMatch::only(store, if_match);
        // Resent with one key when the reply is lost: the model's call lands exactly once.
        let report = sync_exactly_once(
            &*self.provider,
            &self.keyed(key),
            std::slice::from_ref(&update),
            &guard,
        )
        .await
        .map_err(|e| refusal(&e))?;
        let report = report
            .get(store)
            .cloned()
            .ok_or_else(|| wording::no_write_reported(store))?;
        let mut viewed = self.viewed();
        let seen = viewed.of(store);
        if seen.as_ref() == Some(&report.version_before) {
            *seen = Some(report.version_after.clone());
        }
        Ok(report)
    }

    /// The conversation's context, with the call's idempotency key when it has one.
    pub(crate) fn keyed(
        &self,
        key: Option<&IdempotencyKey>,
    ) -> std::borrow::Cow<'_, MemoryContext> {
        match key {
            Some(key) => {
                std::borrow::Cow::Owned(self.ctx.clone().with_idempotency_key(key.clone()))
            }
            None => std::borrow::Cow::Borrowed(&self.ctx),
        }
    }

    /// The caps of `store`'s file in this conversation.
    pub(crate) fn caps(&self, store: Store) -> Caps {
        self.ctx.budgets.for_store(store)
    }

    /// The file's size after a write, and what to do when it is over a cap.
    pub(crate) fn size_after(&self, report: &DocumentReport) -> String {
        wording::size_after(report.store, report.bytes_after, self.caps(report.store))
    }

    /// The versions the model has viewed.
    pub(crate) fn viewed(&self) -> std::sync::MutexGuard<'_, Viewed> {
        self.viewed.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
