//! `memory_history` with `revert_to`: a file back to the text a revision left, as a write of
//! its own (so it can be undone the same way), refused if the file changes meanwhile.

use memory_core::{IdempotencyKey, MemoryError, Store, revert_exactly_once};

use crate::dispatch::MemoryTools;
use crate::wording::{self, refusal};

impl MemoryTools {
    /// `memory_history` with `revert_to`: `store`'s document back to the text revision
    /// `number` left, guarded by the version read here, so a write landing meanwhile makes it
    /// a refusal rather than a silent overwrite.
    pub(crate) async fn revert(
        &self,
        store: Store,
        number: u64,
        key: Option<&IdempotencyKey>,
    ) -> Result<String, String> {
        let current = self.read(store).await?;
        let reverted = revert_exactly_once(
            &*self.provider,
            &self.keyed(key),
            &self.ctx.document(store),
            number,
            Some(&current.version),
        )
        .await;
        let report = match reverted {
            Ok(report) => report
                .get(store)
                .cloned()
                .ok_or_else(|| wording::no_revert_reported(store))?,
            Err(MemoryError::RevisionNotFound { reason, .. }) => {
                return Err(wording::no_revision(store, number, &reason));
            }
            Err(MemoryError::Conflict { .. }) => {
                return Err(wording::changed_while_reverting(store));
            }
            Err(err) => return Err(refusal(&err)),
        };
        if !report.written {
            return Ok(wording::already_reads_as(store, number));
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
        let undo = newest.map_or_else(String::new, |revision| {
            wording::revert_undo(revision.number)
        });
        Ok(wording::reverted(
            store,
            number,
            report.bytes_before,
            report.bytes_after,
            &undo,
            &self.size_after(&report),
        ))
    }
}
