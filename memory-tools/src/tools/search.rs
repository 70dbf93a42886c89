//! `memory_search`: the entries most relevant to a query, best first, and those the index has
//! not covered yet.

use memory_core::{Store, is_blank};

use crate::definitions::DEFAULT_SEARCH_RESULTS;
use crate::dispatch::MemoryTools;
use crate::wording::{self, refusal};

impl MemoryTools {
    pub(crate) async fn search(&self, query: String, k: Option<usize>) -> Result<String, String> {
        let recall = self.recall.as_ref().ok_or(wording::CANNOT_SEARCH)?;
        // Within 1 to MAX_SEARCH_RESULTS: the schema's bounds, checked before the call.
        let k = k.unwrap_or(DEFAULT_SEARCH_RESULTS);
        if is_blank(&query) {
            return Err(wording::BLANK_QUERY.into());
        }
        let document = self.ctx.document(Store::Memory);
        let found = recall
            .search(&document, &query, k)
            .await
            .map_err(|e| refusal(&e))?;
        Ok(wording::found(&query, &found))
    }
}
