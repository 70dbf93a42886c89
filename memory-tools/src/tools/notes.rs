//! `memory_notes`: the notes beside the two files, listed, read and written by the path the
//! prompt's `## Notes` index shows (`memory/trips/kyoto.md`, `user/diet.md`).

use memory_core::{
    DocumentId, IdempotencyKey, IfMatch, MemoryProvider, MemoryUpdate, NotePath, Store,
    notes_of_context, sync_exactly_once,
};

use crate::arguments::NotesArgs;
use crate::definitions::NoteCommand;
use crate::dispatch::{MemoryTools, view_token};
use crate::wording::{self, refusal};

impl MemoryTools {
    pub(crate) async fn call_notes(
        &self,
        args: NotesArgs,
        key: Option<&IdempotencyKey>,
    ) -> Result<String, String> {
        let NotesArgs {
            command,
            path,
            content,
            old,
            new,
            to,
            viewed,
        } = args;
        let allowed = match command.writes() {
            true => self.can_write,
            false => self.can_read,
        };
        if !allowed {
            return Err(wording::note_command_not_allowed(command.name()));
        }
        let path = match (command, path) {
            (NoteCommand::List, prefix) => {
                return self.list_notes(prefix.as_deref().unwrap_or("")).await;
            }
            (_, Some(path)) => path,
            (_, None) => return Err(wording::note_argument_missing(command.name(), "path")),
        };
        let (store, note) = note_path(&path)?;
        let id = DocumentId::note(&self.ctx.document(store), note.clone());
        let needs = |value: Option<String>, name: &str| {
            value.ok_or_else(|| wording::note_argument_missing(command.name(), name))
        };
        let (update, guard) = match command {
            // `list` returned above.
            NoteCommand::Read | NoteCommand::List => {
                let read = self.provider.read(&id).await.map_err(|e| refusal(&e))?;
                if read.text.trim().is_empty() {
                    return Err(wording::no_such_note(&path));
                }
                let token = view_token(&read.version);
                self.viewed().notes.insert(id, read.version);
                return Ok(wording::note_text(&path, &read.text, &token));
            }
            NoteCommand::Create => (
                MemoryUpdate::create(store, note.clone(), needs(content, "content")?),
                None,
            ),
            NoteCommand::Append => (
                MemoryUpdate::add(store, needs(content, "content")?).in_note(note.clone()),
                None,
            ),
            NoteCommand::Replace => (
                MemoryUpdate::edit(store, needs(old, "old")?, needs(new, "new")?)
                    .in_note(note.clone()),
                None,
            ),
            NoteCommand::Write => {
                let content = needs(content, "content")?;
                // A whole rewrite loses nothing another writer added: it is guarded by the
                // note as the model read it (its view token, or its read in this
                // conversation), unless the note does not exist yet.
                let remembered = self.viewed().notes.get(&id).cloned();
                let guard = match (viewed, remembered) {
                    (Some(token), _) => {
                        let now = self.provider.read(&id).await.map_err(|e| refusal(&e))?;
                        if view_token(&now.version) != token.trim() {
                            return Err(wording::note_changed_since_token(&path));
                        }
                        now.version
                    }
                    (None, Some(version)) => version,
                    (None, None) => {
                        let now = self.provider.read(&id).await.map_err(|e| refusal(&e))?;
                        if !now.text.trim().is_empty() {
                            return Err(wording::note_write_needs_a_read(&path));
                        }
                        now.version
                    }
                };
                (
                    MemoryUpdate::replace(store, content).in_note(note.clone()),
                    Some(guard),
                )
            }
            NoteCommand::Delete => (MemoryUpdate::delete(store, note.clone()), None),
            NoteCommand::Rename => {
                let to = needs(to.clone(), "to")?;
                let (to_store, to_note) = note_path(&to)?;
                if to_store != store {
                    return Err(wording::note_rename_across(&path, &to));
                }
                (MemoryUpdate::rename(store, note.clone(), to_note), None)
            }
        };
        let if_match = IfMatch::only_document(&id, guard);
        let report = sync_exactly_once(
            &*self.provider,
            &self.keyed(key),
            std::slice::from_ref(&update),
            &if_match,
        )
        .await
        .map_err(|e| refusal(&e))?;
        let written = report
            .documents
            .iter()
            .find(|written| written.document == id)
            .ok_or_else(|| wording::no_write_reported(store))?;
        // The model saw what it wrote: a later `write` of it needs no new read.
        self.viewed()
            .notes
            .insert(id, written.version_after.clone());
        Ok(wording::note_written(
            command.name(),
            &path,
            to.as_deref(),
            written,
        ))
    }

    /// The notes of the conversation's two scopes under `prefix` (`memory/`, `user/trips/`,
    /// or empty for all), as the prompt's index names them.
    async fn list_notes(&self, prefix: &str) -> Result<String, String> {
        let notes = notes_of_context(&*self.provider, &self.ctx)
            .await
            .map_err(|e| refusal(&e))?;
        let listed: Vec<_> = notes
            .iter()
            .filter(|(store, note)| format!("{store}/{}", note.path).starts_with(prefix))
            .collect();
        Ok(wording::notes_listed(prefix, &listed))
    }
}

/// `memory/<path>` or `user/<path>`: the store and the note's path in its scope.
fn note_path(path: &str) -> Result<(Store, NotePath), String> {
    let (store, within) = match path.split_once('/') {
        Some(("memory", within)) => (Store::Memory, within),
        Some(("user", within)) => (Store::User, within),
        _ => return Err(wording::not_a_note_path(path)),
    };
    let note = NotePath::new(within).map_err(|e| refusal(&e))?;
    Ok((store, note))
}
