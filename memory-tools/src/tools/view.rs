//! `memory_view`: the memory exactly as the top of the prompt shows it, with each file's size,
//! and the view state `memory_consolidate` needs; with a query, the most relevant entries.

use memory_core::raw::render_with_notes;
use memory_core::{Prefetch, Store, is_blank, newest_notes_of_context};

use crate::dispatch::{MemoryTools, view_token};
use crate::wording::{self, refusal};

impl MemoryTools {
    pub(crate) async fn view(&self, query: Option<String>) -> Result<String, String> {
        if let Some(query) = query.filter(|query| !is_blank(query)) {
            if self.recall.is_none() {
                return Err(wording::VIEW_CANNOT_SEARCH.into());
            }
            let ctx = self.ctx.clone().with_query(query);
            let prefetch = self
                .provider
                .prefetch(&ctx)
                .await
                .map_err(|e| refusal(&e))?;
            return Ok(wording::queried_view(&prefetch));
        }
        // Read the documents rather than prefetch, to see their sizes and know whether the
        // rendering had to cut them.
        let memory = self.read(Store::Memory).await?;
        let user = self.read(Store::User).await?;
        let notes = newest_notes_of_context(&*self.provider, &self.ctx)
            .await
            .map_err(|e| refusal(&e))?;
        let prefetch = Prefetch::from_documents(&self.ctx, &memory, &user, &notes);
        let whole =
            prefetch.context == render_with_notes(&user.text, &memory.text, &notes, usize::MAX);
        {
            let mut viewed = self.viewed();
            viewed.memory = whole.then(|| memory.version.clone());
            viewed.user = whole.then(|| user.version.clone());
        }
        let mut text = wording::full_view(
            &prefetch,
            (memory.text.len(), self.caps(Store::Memory)),
            (user.text.len(), self.caps(Store::User)),
        );
        if whole && self.can_write {
            text.push_str(&wording::view_tokens(
                &view_token(&memory.version),
                &view_token(&user.version),
            ));
        }
        if !whole {
            text.push_str(&wording::view_cut(self.ctx.max_chars));
        }
        Ok(text)
    }
}
