//! `memory_add`: one entry appended to a file.

use memory_core::{IdempotencyKey, MemoryUpdate, Store};

use crate::dispatch::MemoryTools;
use crate::wording;

impl MemoryTools {
    pub(crate) async fn add(
        &self,
        store: Store,
        entry: String,
        key: Option<&IdempotencyKey>,
    ) -> Result<String, String> {
        let report = self
            .write(MemoryUpdate::add(store, entry), None, key)
            .await?;
        Ok(wording::added(store, &self.size_after(&report)))
    }
}
