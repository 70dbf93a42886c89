//! `memory_replace`: the one occurrence of a passage replaced; none or several are the
//! provider's refusal, which says how many.

use memory_core::{IdempotencyKey, MemoryUpdate, Store};

use crate::dispatch::MemoryTools;
use crate::wording;

impl MemoryTools {
    pub(crate) async fn replace(
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
            wording::replaced(store, &self.size_after(&report))
        } else {
            wording::already_reads_that_way(store)
        })
    }
}
