//! `memory_consolidate`: a whole file rewritten, only if it is still at the version the model
//! last viewed in full (in this session, or named by the view token it passes).

use memory_core::{IdempotencyKey, MemoryUpdate, Store, is_blank};

use crate::dispatch::{MemoryTools, view_token};
use crate::wording;

impl MemoryTools {
    pub(crate) async fn consolidate(
        &self,
        store: Store,
        content: String,
        viewed: Option<String>,
        key: Option<&IdempotencyKey>,
    ) -> Result<String, String> {
        if is_blank(&content) {
            return Err(wording::consolidation_blank(store));
        }
        let version = match viewed {
            // The token names the version the model saw; the write is guarded by the version
            // read now, which is that one only if the token matches it.
            Some(token) => {
                let current = self.read(store).await?;
                if view_token(&current.version) != token.trim() {
                    return Err(wording::changed_since_token(store));
                }
                current.version
            }
            None => self
                .viewed()
                .of(store)
                .clone()
                .ok_or_else(|| wording::consolidation_needs_a_view(store))?,
        };
        let report = self
            .write(MemoryUpdate::replace(store, content), Some(version), key)
            .await?;
        Ok(wording::consolidated(
            store,
            report.bytes_before,
            report.bytes_after,
            &self.size_after(&report),
        ))
    }
}
