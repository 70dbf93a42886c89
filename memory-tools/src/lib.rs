#![doc = include_str!("../README.md")]

mod definitions;

use std::sync::{Arc, Mutex, PoisonError};

use memory_core::raw::{render, sha256_hex};
use memory_core::{
    Caps, Document, DocumentReport, IdempotencyKey, IfMatch, MemoryContext, MemoryError,
    MemoryProvider, MemoryUpdate, Prefetch, Recall, Revision, Store, Surface, Version, is_blank,
    revert_exactly_once, sync_exactly_once,
};
use serde::Deserialize;
use serde_json::{Value, json};

pub use definitions::{
    DEFAULT_HISTORY_RESULTS, DEFAULT_SEARCH_RESULTS, MAX_HISTORY_RESULTS, MAX_SEARCH_RESULTS, Tool,
    ToolDefinition,
};

/// The most characters of one revision's diff that `memory_history` shows; the rest is cut,
/// and the output says so.
pub const MAX_DIFF_CHARS: usize = 2_000;

/// The most characters one `memory_history` listing comes to: older revisions past it are left
/// out, and the output says so. Enough for the default five revisions with short diffs, little
/// enough not to crowd a model's context.
pub const MAX_HISTORY_CHARS: usize = 12_000;

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
    provider: Arc<dyn MemoryProvider>,
    ctx: MemoryContext,
    recall: Option<Arc<dyn Recall>>,
    can_read: bool,
    can_write: bool,
    viewed: Mutex<Viewed>,
}

/// The version of each file whose whole text the model has seen, by a full view and its own
/// writes since. `None`: the model has not seen all of it.
#[derive(Debug, Default)]
struct Viewed {
    memory: Option<Version>,
    user: Option<Version>,
}

impl Viewed {
    fn of(&mut self, store: Store) -> &mut Option<Version> {
        match store {
            Store::Memory => &mut self.memory,
            Store::User => &mut self.user,
        }
    }
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
            .filter(|tool| {
                if tool.writes() {
                    self.can_write
                } else {
                    self.can_read
                }
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
            return ToolOutput::error(format!(
                "There is no tool named {name:?} here; the memory tools are {}.",
                offered.join(", ")
            ));
        };
        let arguments = if arguments.is_null() {
            Value::Object(Default::default())
        } else {
            arguments
        };
        let definition = tool.definition_for(self.recall.is_some(), self.can_write);
        if let Err(reason) = definitions::check_arguments(&definition, &arguments) {
            return ToolOutput::error(format!(
                "Invalid arguments for {}: {reason}. Nothing was written.",
                tool.name()
            ));
        }
        let call = serde_json::from_value(json!({"name": tool.name(), "arguments": arguments}))
            .map_err(|error| {
                format!(
                    "Invalid arguments for {}: {error}. Nothing was written.",
                    tool.name()
                )
            });
        let result = match call {
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
                Some(_) if !self.can_write => Err("Not reverted: revert_to writes, and this \
                    connection may only read the memory. Nothing was written."
                    .to_owned()),
                Some(number) => self.revert(file.0, number, key).await,
                None => self.history(file.0, limit).await,
            },
            Ok(Call::Search(SearchArgs { query, k })) => self.search(query, k).await,
            Err(refusal) => Err(refusal),
        };
        match result {
            Ok(text) => ToolOutput::success(text),
            Err(text) => ToolOutput::error(text),
        }
    }

    async fn view(&self, query: Option<String>) -> Result<String, String> {
        if let Some(query) = query.filter(|query| !is_blank(query)) {
            if self.recall.is_none() {
                return Err("This memory cannot search; call memory_view without a query.".into());
            }
            let ctx = self.ctx.clone().with_query(query);
            let prefetch = self
                .provider
                .prefetch(&ctx)
                .await
                .map_err(|e| refusal(&e))?;
            return Ok(format!(
                "{}\n\n(These are the MEMORY.md entries most relevant to the query, not all of \
                 it: call memory_view without a query before memory_consolidate.){}",
                shown(&prefetch),
                prefetch
                    .warnings
                    .iter()
                    .map(|warning| format!("\n(Note: {warning}.)"))
                    .collect::<String>()
            ));
        }
        // Read the documents rather than prefetch, to see their sizes and know whether the
        // rendering had to cut them.
        let memory = self.read(Store::Memory).await?;
        let user = self.read(Store::User).await?;
        let prefetch = Prefetch::from_documents(&self.ctx, &memory, &user);
        let whole = prefetch.context == render(&user.text, &memory.text, usize::MAX);
        {
            let mut viewed = self.viewed();
            viewed.memory = whole.then(|| memory.version.clone());
            viewed.user = whole.then(|| user.version.clone());
        }
        let mut text = format!(
            "{}\n\n{}: {}. {}: {}.",
            shown(&prefetch),
            file_name(Store::Memory),
            size(memory.text.len(), self.caps(Store::Memory)),
            file_name(Store::User),
            size(user.text.len(), self.caps(Store::User)),
        );
        if whole && self.can_write {
            text.push_str(&format!(
                "\nView tokens, for memory_consolidate's viewed: {} {}, {} {}.",
                file_name(Store::Memory),
                view_token(&memory.version),
                file_name(Store::User),
                view_token(&user.version),
            ));
        }
        if !whole {
            text.push_str(&format!(
                "\n(This view is cut to the last {} characters. memory_consolidate needs a full \
                 view: shrink the files with memory_remove or memory_replace first.)",
                self.ctx.max_chars
            ));
        }
        Ok(text)
    }

    async fn add(
        &self,
        store: Store,
        entry: String,
        key: Option<&IdempotencyKey>,
    ) -> Result<String, String> {
        let report = self
            .write(MemoryUpdate::add(store, entry), None, key)
            .await?;
        Ok(format!(
            "Added to {}.{}",
            file_name(store),
            self.size_after(&report)
        ))
    }

    async fn replace(
        &self,
        store: Store,
        old: String,
        new: String,
        key: Option<&IdempotencyKey>,
    ) -> Result<String, String> {
        let report = self
            .write(MemoryUpdate::edit(store, old, new), None, key)
            .await?;
        Ok(if report.written {
            format!(
                "Replaced in {}.{}",
                file_name(store),
                self.size_after(&report)
            )
        } else {
            format!(
                "{} already reads that way; nothing changed.",
                file_name(store)
            )
        })
    }

    async fn remove(
        &self,
        store: Store,
        substring: String,
        key: Option<&IdempotencyKey>,
    ) -> Result<String, String> {
        let report = self
            .write(MemoryUpdate::remove(store, substring.clone()), None, key)
            .await?;
        Ok(match report.lines_removed {
            0 => format!(
                "No line of {} contains {substring:?}; 0 lines removed, nothing changed.",
                file_name(store)
            ),
            1 => format!(
                "Removed 1 line containing {substring:?} from {}.{}",
                file_name(store),
                self.size_after(&report)
            ),
            lines => format!(
                "Removed {lines} lines containing {substring:?} from {}.{}",
                file_name(store),
                self.size_after(&report)
            ),
        })
    }

    async fn consolidate(
        &self,
        store: Store,
        content: String,
        viewed: Option<String>,
        key: Option<&IdempotencyKey>,
    ) -> Result<String, String> {
        if is_blank(&content) {
            return Err(format!(
                "Not consolidated: the new content is blank, which would erase {}. Pass the \
                 complete new text; to drop entries use memory_remove. Nothing was written.",
                file_name(store)
            ));
        }
        let version = match viewed {
            // The token names the version the model saw; the write is guarded by the version
            // read now, which is that one only if the token matches it.
            Some(token) => {
                let current = self.read(store).await?;
                if view_token(&current.version) != token.trim() {
                    return Err(format!(
                        "Not consolidated: {} changed since the view whose token you passed \
                         (another writer added or changed something, or the token is not the \
                         file's). Call memory_view again and consolidate what it shows now, \
                         with its token. Nothing was written.",
                        file_name(store)
                    ));
                }
                current.version
            }
            None => self.viewed().of(store).clone().ok_or_else(|| {
                format!(
                    "Not consolidated: memory_consolidate rewrites the whole of {} and needs a \
                     full view of it first. Call memory_view (without a query), then \
                     memory_consolidate with the view token it shows for the file as viewed. \
                     Nothing was written.",
                    file_name(store)
                )
            })?,
        };
        let report = self
            .write(MemoryUpdate::replace(store, content), Some(version), key)
            .await?;
        Ok(format!(
            "Consolidated {}: {} → {} bytes.{}",
            file_name(store),
            report.bytes_before,
            report.bytes_after,
            self.size_after(&report)
        ))
    }

    async fn search(&self, query: String, k: Option<usize>) -> Result<String, String> {
        let recall = self.recall.as_ref().ok_or("This memory cannot search.")?;
        // Within 1 to MAX_SEARCH_RESULTS: the schema's bounds, checked before the call.
        let k = k.unwrap_or(DEFAULT_SEARCH_RESULTS);
        if is_blank(&query) {
            return Err("Invalid arguments for memory_search: the query is blank.".into());
        }
        let document = self.ctx.document(Store::Memory);
        let found = recall
            .search(&document, &query, k)
            .await
            .map_err(|e| refusal(&e))?;
        let listed: Vec<String> = found
            .ranked
            .iter()
            .enumerate()
            .map(|(rank, entry)| format!("[{}] {}", rank + 1, entry.trim()))
            .collect();
        let mut text = match (listed.is_empty(), &found.behind) {
            (true, None) => return Ok(format!("No entry of MEMORY.md matches {query:?}.")),
            (true, Some(_)) => format!("No indexed entry of MEMORY.md matches {query:?}."),
            (false, _) => format!(
                "{} of MEMORY.md for {query:?}, best first:\n\n{}",
                entries(listed.len()),
                listed.join("\n\n")
            ),
        };
        if let Some(behind) = &found.behind {
            let unranked: Vec<String> = found
                .unranked
                .iter()
                .map(|entry| format!("[-] {}", entry.trim()))
                .collect();
            text.push_str(&format!(
                "\n\n(The search index is behind MEMORY.md: {behind}. {} it has not indexed \
                 yet, unranked, in file order:)\n\n{}",
                entries(unranked.len()),
                unranked.join("\n\n")
            ));
        }
        Ok(text)
    }

    /// `memory_history` without `revert_to`: the newest `limit` revisions, each with a diff
    /// against the one before it, within [`MAX_HISTORY_CHARS`].
    async fn history(&self, store: Store, limit: Option<usize>) -> Result<String, String> {
        // Within 1 to MAX_HISTORY_RESULTS: the schema's bounds, checked before the call.
        let limit = limit.unwrap_or(DEFAULT_HISTORY_RESULTS);
        let name = file_name(store);
        // One more than shown: the oldest one shown is diffed against it.
        let revisions = self
            .provider
            .history(&self.ctx.document(store), limit + 1)
            .await
            .map_err(|e| refusal(&e))?;
        if revisions.is_empty() {
            return Ok(format!(
                "{name} has no revisions: it was never written, or this memory keeps no history."
            ));
        }
        let shown = revisions.len().min(limit);
        let mut text = format!("{name}, the latest changes first:");
        let mut listed = 0;
        let deadline = memory_core::diff_deadline();
        for revision in revisions.iter().take(shown) {
            let entry = describe_revision(name, revision, &revisions, deadline);
            if listed > 0 && !fits(text.len(), entry.len()) {
                break;
            }
            text.push_str("\n\n");
            text.push_str(&entry);
            listed += 1;
        }
        if listed < shown {
            text.push_str(&format!(
                "\n\n({} older revisions not shown, to keep this short: the diffs above are \
                 long. Call with a smaller limit to see fewer.)",
                shown - listed
            ));
        } else if revisions.len() > limit && limit < MAX_HISTORY_RESULTS {
            text.push_str(&format!(
                "\n\n(Older revisions are kept too: call with a larger limit, up to \
                 {MAX_HISTORY_RESULTS}, to see them.)"
            ));
        }
        text.push_str(&format!(
            "\n\nTo undo a change, call memory_history with file {name:?} and revert_to set to \
             the revision whose text you want back (the one before the change)."
        ));
        Ok(text)
    }

    /// `memory_history` with `revert_to`: `store`'s document back to the text revision
    /// `number` left, guarded by the version read here, so a write landing meanwhile makes it
    /// a refusal rather than a silent overwrite.
    async fn revert(
        &self,
        store: Store,
        number: u64,
        key: Option<&IdempotencyKey>,
    ) -> Result<String, String> {
        let name = file_name(store);
        let current = self.read(store).await?;
        let reverted = revert_exactly_once(
            &*self.provider,
            &self.keyed(key),
            store,
            number,
            Some(&current.version),
        )
        .await;
        let report = match reverted {
            Ok(report) => report.get(store).cloned().ok_or_else(|| {
                format!("The provider reported no write of {name}; nothing was reverted.")
            })?,
            Err(MemoryError::RevisionNotFound { reason, .. }) => {
                return Err(format!(
                    "Not reverted: {name} has no revision {number} to go back to: {reason}. Call \
                     memory_history to see the revisions kept. Nothing was written."
                ));
            }
            Err(MemoryError::Conflict { .. }) => {
                return Err(format!(
                    "Not reverted: {name} changed while reverting it (another writer wrote it). \
                     Call memory_history again to see that change, then decide. Nothing was \
                     written."
                ));
            }
            Err(err) => return Err(refusal(&err)),
        };
        if !report.written {
            return Ok(format!(
                "{name} already reads as revision {number} left it; nothing changed."
            ));
        }
        // The revert's own revision, to say how to undo it; another write landing just after
        // it would be the newest instead, so it is named only when it is the revert.
        let newest = self
            .provider
            .history(&self.ctx.document(store), 1)
            .await
            .ok()
            .and_then(|revisions| revisions.into_iter().next())
            .filter(|revision| revision.version_after == report.version_after);
        // A revert is never the first revision: the one it restores came before it.
        let undo = newest.map_or_else(String::new, |revision| {
            format!(
                " This revert is revision {}; to undo it, revert_to {}.",
                revision.number,
                revision.number.saturating_sub(1)
            )
        });
        Ok(format!(
            "Reverted {name} to the text of revision {number}: {} → {} bytes.{undo}{}",
            report.bytes_before,
            report.bytes_after,
            self.size_after(&report)
        ))
    }

    /// One of the conversation's two documents, as the tools' provider holds it now: what an
    /// MCP server offers as a resource. Reading it does not count as a view.
    ///
    /// # Errors
    /// Whatever the provider's `read` fails with.
    pub async fn document(&self, store: Store) -> Result<Document, MemoryError> {
        self.provider.read(&self.ctx.document(store)).await
    }

    async fn read(&self, store: Store) -> Result<Document, String> {
        self.document(store).await.map_err(|e| refusal(&e))
    }

    /// Applies one update, guarded by `if_match` when given, and keeps the viewed version in
    /// step when the model saw the text this write started from.
    async fn write(
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
            .ok_or_else(|| format!("The provider reported no write of {}.", file_name(store)))?;
        let mut viewed = self.viewed();
        let seen = viewed.of(store);
        if seen.as_ref() == Some(&report.version_before) {
            *seen = Some(report.version_after.clone());
        }
        Ok(report)
    }

    /// The conversation's context, with the call's idempotency key when it has one.
    fn keyed(&self, key: Option<&IdempotencyKey>) -> std::borrow::Cow<'_, MemoryContext> {
        match key {
            Some(key) => {
                std::borrow::Cow::Owned(self.ctx.clone().with_idempotency_key(key.clone()))
            }
            None => std::borrow::Cow::Borrowed(&self.ctx),
        }
    }

    fn caps(&self, store: Store) -> Caps {
        self.ctx.budgets.for_store(store)
    }

    /// The file's size after a write, and what to do when it is over a cap.
    fn size_after(&self, report: &DocumentReport) -> String {
        let store = report.store;
        let caps = self.caps(store);
        let bytes = report.bytes_after;
        let name = file_name(store);
        let mut text = format!(" {name} is now {}.", size(bytes, caps));
        if caps.hard.is_some_and(|hard| bytes > hard) {
            text.push_str(&format!(
                " It is over its hard cap, so additions will be refused: consolidate it now \
                 (memory_view, then memory_consolidate with a version under {} bytes).",
                caps.hard.unwrap_or_default()
            ));
        } else if caps.soft.is_some_and(|soft| bytes > soft) {
            text.push_str(
                " It is over its soft cap: consolidate it (memory_view, then memory_consolidate \
                 with a shorter version that keeps what matters).",
            );
        }
        text
    }

    fn viewed(&self) -> std::sync::MutexGuard<'_, Viewed> {
        self.viewed.lock().unwrap_or_else(PoisonError::into_inner)
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

/// Whether an entry of `entry` characters still fits in a listing of `listed` characters.
fn fits(listed: usize, entry: usize) -> bool {
    listed + entry <= MAX_HISTORY_CHARS
}

/// One revision for the model: a header line (number, time, surface, who, sizes, what), then
/// its diff against the revision before it in `history` (searched for until `deadline`, see
/// [`memory_core::unified_diff`]), cut to [`MAX_DIFF_CHARS`].
fn describe_revision(
    name: &str,
    revision: &Revision,
    history: &[Revision],
    deadline: std::time::Instant,
) -> String {
    let who = revision
        .who()
        .map_or_else(String::new, |who| format!(" ({who})"));
    let mut text = format!(
        "Revision {} · {} · from {}{who} · {} → {} bytes · {}",
        revision.number,
        utc(revision.time),
        revision.surface,
        revision.bytes_before,
        revision.bytes_after,
        revision.what_changed(),
    );
    let diff = match revision.diff_in(history, name, deadline) {
        _ if revision.is_tombstone() => "(Purged: the text and the revisions before were \
                                          erased; nothing to show or revert to.)"
            .to_owned(),
        None => "(The revision before it is no longer kept, so there is no diff.)".to_owned(),
        Some(diff) if diff.is_empty() => "(No change in the text.)".to_owned(),
        Some(diff) => cut_diff(diff),
    };
    text.push('\n');
    text.push_str(diff.trim_end());
    text
}

/// A diff cut at a line boundary to at most [`MAX_DIFF_CHARS`], saying how much was cut.
fn cut_diff(diff: String) -> String {
    if diff.len() <= MAX_DIFF_CHARS {
        return diff;
    }
    let mut end = MAX_DIFF_CHARS;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    let end = diff[..end].rfind('\n').map_or(end, |at| at + 1);
    format!(
        "{}(diff cut: {} more characters)",
        &diff[..end],
        diff.len() - end
    )
}

/// `2025-06-01 10:00:02 UTC`, or "unknown time" for a stored time that cannot be shown
/// (before 1970, past year 9999).
fn utc(time: std::time::SystemTime) -> String {
    memory_core::format_utc_seconds(time)
        .map_or_else(|| "unknown time".to_owned(), |at| format!("{at} UTC"))
}

/// "1 entry", "3 entries".
fn entries(count: usize) -> String {
    match count {
        1 => "1 entry".to_owned(),
        n => format!("{n} entries"),
    }
}

/// The rendered memory, or what to say when there is none.
fn shown(prefetch: &Prefetch) -> &str {
    prefetch
        .context
        .as_deref()
        .unwrap_or("(Your memory is empty: both MEMORY.md and USER.md are blank.)")
}

fn file_name(store: Store) -> &'static str {
    match store {
        Store::Memory => "MEMORY.md",
        Store::User => "USER.md",
    }
}

fn size(bytes: usize, caps: Caps) -> String {
    match (caps.soft, caps.hard) {
        (None, None) => format!("{bytes} bytes"),
        (Some(soft), None) => format!("{bytes} bytes (soft cap {soft})"),
        (None, Some(hard)) => format!("{bytes} bytes (hard cap {hard})"),
        (Some(soft), Some(hard)) => format!("{bytes} bytes (soft cap {soft}, hard cap {hard})"),
    }
}

/// What the model reads when the provider refused or failed a call.
fn refusal(error: &MemoryError) -> String {
    match error {
        MemoryError::NoMatch { document, .. } => format!(
            "Not replaced: the text to replace occurs 0 times in {}. Call memory_view and quote \
             text the file contains. Nothing was written.",
            file_name(document.store())
        ),
        MemoryError::AmbiguousMatch {
            document, count, ..
        } => format!(
            "Not replaced: the text to replace occurs {count} times in {}. Quote more of it so \
             that it occurs exactly once. Nothing was written.",
            file_name(document.store())
        ),
        MemoryError::HardCapExceeded {
            document,
            bytes,
            hard_cap,
        } => format!(
            "Not written: {} would be {bytes} bytes, over its hard cap of {hard_cap}. \
             Consolidate it first (memory_view, then memory_consolidate with a shorter \
             version). Nothing was written.",
            file_name(document.store())
        ),
        MemoryError::Conflict { document, .. } => format!(
            "Not consolidated: {} changed since you last viewed it (another writer added or \
             changed something). Call memory_view again and consolidate what it shows now. \
             Nothing was written.",
            file_name(document.store())
        ),
        MemoryError::InvalidUpdate { reason, .. } => {
            format!("Not written: {reason}. Nothing was written.")
        }
        other => format!(
            "The memory call failed ({}): {}.",
            other.kind(),
            without_paths(&other.to_string())
        ),
    }
}

/// `text` with every absolute path cut to its place in the memory layout
/// (`personalities/ada/MEMORY.md`), or to "(a file of the memory)" outside it: the model needs
/// to know which document, never where the host keeps it.
fn without_paths(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('/') {
        let at_word_start = rest[..start]
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || "\"'(`".contains(c));
        let end = rest[start..]
            .find(|c: char| c.is_whitespace() || "\"'`);,".contains(c))
            .map_or(rest.len(), |len| start + len);
        out.push_str(&rest[..start]);
        let token = &rest[start..end];
        if at_word_start && token.len() > 1 {
            out.push_str(in_layout(token));
        } else {
            out.push_str(token);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The layout part of an absolute path.
fn in_layout(path: &str) -> &str {
    for dir in ["/personalities/", "/users/"] {
        if let Some(at) = path.rfind(dir) {
            return &path[at + 1..];
        }
    }
    match path.rsplit_once('/') {
        Some((_, "MEMORY.md")) => "MEMORY.md",
        _ => "(a file of the memory)",
    }
}

/// `file` as the tools name it.
#[derive(Debug)]
struct File(Store);

impl<'de> Deserialize<'de> for File {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        match name.as_str() {
            "MEMORY.md" => Ok(File(Store::Memory)),
            "USER.md" => Ok(File(Store::User)),
            _ => Err(serde::de::Error::custom(format_args!(
                "file is {name:?}; it must be \"MEMORY.md\" or \"USER.md\""
            ))),
        }
    }
}

/// A call, parsed: the tool's name picks the variant, so each tool's arguments are checked
/// against their own fields.
#[derive(Deserialize)]
#[serde(tag = "name", content = "arguments")]
enum Call {
    #[serde(rename = "memory_view")]
    View(ViewArgs),
    #[serde(rename = "memory_add")]
    Add(AddArgs),
    #[serde(rename = "memory_replace")]
    Replace(ReplaceArgs),
    #[serde(rename = "memory_remove")]
    Remove(RemoveArgs),
    #[serde(rename = "memory_consolidate")]
    Consolidate(ConsolidateArgs),
    #[serde(rename = "memory_history")]
    History(HistoryArgs),
    #[serde(rename = "memory_search")]
    Search(SearchArgs),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ViewArgs {
    query: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddArgs {
    file: File,
    entry: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplaceArgs {
    file: File,
    old: String,
    new: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoveArgs {
    file: File,
    substring: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsolidateArgs {
    file: File,
    content: String,
    viewed: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryArgs {
    file: File,
    limit: Option<usize>,
    revert_to: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    k: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_told_which_document_never_where_the_host_keeps_it() {
        let err = MemoryError::unavailable(
            "/home/grace/.agent-memory/personalities/ada/MEMORY.md",
            std::io::Error::other("Permission denied (os error 13)"),
        );
        let text = refusal(&err);
        assert_eq!(
            text,
            "The memory call failed (unavailable): personalities/ada/MEMORY.md is unavailable: \
             Permission denied (os error 13); retry later."
        );
        let corrupt = MemoryError::Corrupt {
            location: "/srv/memory/users/u1/USER.md".into(),
            reason: "/srv/memory/users is a file, where a directory should be".into(),
        };
        let text = refusal(&corrupt);
        assert!(!text.contains("/srv"), "{text}");
        assert!(
            text.contains("(corrupt): users/u1/USER.md is corrupt"),
            "{text}"
        );
        assert_eq!(
            without_paths("and/or /etc/passwd"),
            "and/or (a file of the memory)"
        );
        // A lone slash is no path; a global MEMORY.md at the root is named by its name.
        assert_eq!(without_paths("a / b"), "a / b");
        assert_eq!(
            without_paths("/srv/memory/MEMORY.md is corrupt"),
            "MEMORY.md is corrupt"
        );
    }

    #[test]
    fn an_entry_fits_up_to_the_listings_cap() {
        assert!(fits(MAX_HISTORY_CHARS - 10, 10));
        assert!(!fits(MAX_HISTORY_CHARS - 10, 11));
    }

    #[test]
    fn a_long_diff_is_cut_at_a_line_and_a_character_boundary() {
        let lines: String = (0..30).map(|n| format!("{n:>99}\n")).collect();
        assert_eq!(lines.len(), 3_000);
        let cut = cut_diff(lines.clone());
        assert_eq!(
            cut,
            format!("{}(diff cut: 1000 more characters)", &lines[..2_000])
        );
        // No newline to cut at, and byte 2000 inside a two-byte character: cut before it.
        let wide = format!("x{}", "é".repeat(1_500));
        let cut = cut_diff(wide.clone());
        assert_eq!(
            cut,
            format!("{}(diff cut: 1002 more characters)", &wide[..1_999])
        );
        let short = "--- a\n+++ b\n".to_owned();
        assert_eq!(cut_diff(short.clone()), short);
    }

    fn revision(number: u64, text: Option<&str>) -> Revision {
        Revision {
            number,
            document: memory_core::DocumentId::GlobalMemory,
            version_before: Version::new((number - 1).to_string()),
            version_after: Version::new(number.to_string()),
            sha256_before: String::new(),
            sha256_after: String::new(),
            bytes_before: 0,
            bytes_after: text.map_or(0, str::len),
            time: std::time::UNIX_EPOCH,
            surface: Surface::Api,
            personality: None,
            user: None,
            idempotency_key: None,
            session: None,
            updates: Vec::new(),
            text: text.map(str::to_owned),
        }
    }

    #[test]
    fn each_revision_says_what_its_change_was() {
        let history = [
            revision(4, None),
            revision(3, Some("same\n")),
            revision(2, Some("same\n")),
        ];
        let described = |at: usize| {
            describe_revision(
                "MEMORY.md",
                &history[at],
                &history,
                memory_core::diff_deadline(),
            )
        };
        assert!(
            described(0).ends_with("· purged\n(Purged: the text and the revisions before were erased; nothing to show or revert to.)"),
            "{}",
            described(0)
        );
        assert!(
            described(1).ends_with("\n(No change in the text.)"),
            "{}",
            described(1)
        );
        assert!(
            described(2)
                .ends_with("\n(The revision before it is no longer kept, so there is no diff.)"),
            "{}",
            described(2)
        );
    }

    #[test]
    fn times_are_shown_in_utc_or_said_unknown() {
        use std::time::{Duration, UNIX_EPOCH};
        let at = UNIX_EPOCH + Duration::from_secs(1_748_772_002);
        assert_eq!(utc(at), "2025-06-01 10:00:02 UTC");
        assert_eq!(utc(UNIX_EPOCH - Duration::from_secs(1)), "unknown time");
    }
}
