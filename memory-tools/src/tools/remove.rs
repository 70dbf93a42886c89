//! `memory_remove`: every line containing a substring dropped, saying how many (zero
//! included).

use memory_core::{IdempotencyKey, MemoryUpdate, Store};

use crate::dispatch::MemoryTools;
use crate::wording;

impl MemoryTools {
    pub(crate) async fn remove(
        &self,
        store: Store,
        substring: String,
        key: Option<&IdempotencyKey>,
    ) -> Result<String, String> {
        let report = self
            .write(MemoryUpdate::remove(store, substring.clone()), None, key)
            .await?;
        Ok(wording::removed(
            store,
            &substring,
            report.lines_removed,
            &self.size_after(&report),
        ))
    }
}
