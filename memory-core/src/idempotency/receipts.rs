//! Each document's log of the keyed calls that wrote it ([`Receipts`]), stored with the
//! document in the same atomic step as the write (the Postgres row, the Redis hash, a sidecar
//! file under the markdown lock), so a write and its receipt land together or not at all.

use serde::{Deserialize, Serialize};

use crate::document::{DocumentId, Version};
use crate::error::MemoryError;
use crate::idempotency::key::IdempotencyKey;
use crate::report::DocumentReport;

/// How many receipts a document keeps: the keys of its last 64 keyed writes. A retry comes
/// seconds after its first try; 64 later keyed writes to the same document push a key out.
pub const RECEIPTS_KEPT: usize = 64;

/// One document's log of the keyed calls that wrote it, oldest first, at most
/// [`RECEIPTS_KEPT`] of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipts {
    entries: Vec<Receipt>,
}

/// That the call with `key` wrote the document, and what it reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Receipt {
    key: IdempotencyKey,
    /// What the call asked of the document
    /// ([`crate::DocumentBatch::fingerprint`](crate::raw::plan::DocumentBatch::fingerprint)), so
    /// the key reused for another call is refused instead of replayed. Absent in receipts written
    /// before it was recorded, which match any call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fingerprint: Option<String>,
    report: DocumentReport,
    /// Recorded before the write it describes was known to land: only a store that cannot
    /// write the log and the document in one step (files) records such a receipt, and the next
    /// writer settles it ([`Receipts::settle`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    unsettled: bool,
}

impl Receipts {
    /// The log as stored at `location` (a path or a key): `None` or blank is an empty log.
    ///
    /// # Errors
    /// [`MemoryError::Corrupt`] naming `location` when the stored text is not a log.
    pub fn parse(location: &str, stored: Option<&str>) -> Result<Receipts, MemoryError> {
        match stored.map(str::trim) {
            None | Some("") => Ok(Receipts::default()),
            Some(json) => serde_json::from_str(json).map_err(|err| MemoryError::Corrupt {
                location: location.to_owned(),
                reason: format!("its idempotency receipts are not readable ({err})"),
            }),
        }
    }

    /// The log as stored: compact JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("receipts are plain data")
    }

    /// The report the call with `key` returned for this document, if it wrote it, whatever it
    /// asked (callers use [`Receipts::replay`], which checks that).
    #[cfg(test)]
    fn find(&self, key: &IdempotencyKey) -> Option<&DocumentReport> {
        self.entry(key).map(|entry| &entry.report)
    }

    /// What a repeat of the call with `key`, asking `fingerprint` of `document`, comes to: the
    /// report the call returned when it wrote the document, `None` when it did not.
    ///
    /// # Errors
    /// [`MemoryError::KeyReused`] when the key wrote the document for a call that asked
    /// something else: taking it for a repeat would drop this call's updates.
    pub fn replay(
        &self,
        key: &IdempotencyKey,
        fingerprint: &str,
        document: &DocumentId,
    ) -> Result<Option<&DocumentReport>, MemoryError> {
        match self.entry(key) {
            Some(entry)
                if entry
                    .fingerprint
                    .as_deref()
                    .is_some_and(|f| f != fingerprint) =>
            {
                Err(MemoryError::KeyReused {
                    document: document.clone(),
                    key: key.to_string(),
                })
            }
            entry => Ok(entry.map(|entry| &entry.report)),
        }
    }

    /// Records that the call with `key`, asking `fingerprint` of the document, wrote it,
    /// reporting `report`; drops the oldest receipts past [`RECEIPTS_KEPT`].
    pub fn record(&mut self, key: &IdempotencyKey, fingerprint: &str, report: DocumentReport) {
        self.push(key, fingerprint, report, false);
    }

    /// Records `report` for `key` before the write is known to land, for a store that writes
    /// the log first and the document second: [`Receipts::settle`] keeps or drops it.
    pub fn record_unsettled(
        &mut self,
        key: &IdempotencyKey,
        fingerprint: &str,
        report: DocumentReport,
    ) {
        self.push(key, fingerprint, report, true);
    }

    fn entry(&self, key: &IdempotencyKey) -> Option<&Receipt> {
        self.entries
            .iter()
            .find(|entry| entry.key == *key && !entry.unsettled)
    }

    /// Keeps an unsettled receipt if the document is at the version it reports (its write
    /// landed) and drops it otherwise (the writer stopped between the log and the document).
    /// Returns whether the log changed. Call it holding the document's lock, before the
    /// document changes again.
    pub fn settle(&mut self, current: &Version) -> bool {
        let before = self.entries.len();
        self.entries
            .retain(|entry| !entry.unsettled || entry.report.version_after == *current);
        let mut changed = self.entries.len() != before;
        for entry in self.entries.iter_mut().filter(|entry| entry.unsettled) {
            entry.unsettled = false;
            changed = true;
        }
        changed
    }

    /// Whether the log holds no receipt.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn push(
        &mut self,
        key: &IdempotencyKey,
        fingerprint: &str,
        report: DocumentReport,
        unsettled: bool,
    ) {
        self.entries.retain(|entry| entry.key != *key);
        self.entries.push(Receipt {
            key: key.clone(),
            fingerprint: Some(fingerprint.to_owned()),
            report,
            unsettled,
        });
        let excess = self.entries.len().saturating_sub(RECEIPTS_KEPT);
        self.entries.drain(..excess);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{DocumentId, Store};
    use crate::error::ErrorKind;
    use crate::idempotency::key::MAX_KEY_LEN;

    fn report(version_after: &str) -> DocumentReport {
        DocumentReport {
            store: Store::Memory,
            document: DocumentId::GlobalMemory,
            location: "mem://MEMORY.md".into(),
            written: true,
            version_before: Version::new("0"),
            version_after: Version::new(version_after),
            sha256_before: String::new(),
            sha256_after: String::new(),
            bytes_before: 0,
            bytes_after: 1,
            lines_removed: 0,
            over_soft_cap: false,
            replayed: false,
            scope: None,
        }
    }

    fn key(n: usize) -> IdempotencyKey {
        IdempotencyKey::new(format!("k{n}")).unwrap()
    }

    #[test]
    fn the_log_keeps_the_last_receipts_and_survives_its_stored_form() {
        let mut receipts = Receipts::default();
        for n in 0..RECEIPTS_KEPT + 3 {
            receipts.record(&key(n), "f", report(&n.to_string()));
        }
        let stored = Receipts::parse("here", Some(&receipts.to_json())).unwrap();
        assert_eq!(stored, receipts);
        assert_eq!(stored.entries.len(), RECEIPTS_KEPT);
        assert!(stored.find(&key(2)).is_none(), "the oldest were dropped");
        assert_eq!(
            stored.find(&key(RECEIPTS_KEPT + 2)).unwrap().version_after,
            Version::new((RECEIPTS_KEPT + 2).to_string())
        );
    }

    #[test]
    fn a_key_replays_only_the_call_it_named() {
        let document = DocumentId::GlobalMemory;
        let mut receipts = Receipts::default();
        receipts.record(&key(1), "adds x", report("v1"));
        let replayed = receipts.replay(&key(1), "adds x", &document).unwrap();
        assert_eq!(replayed.unwrap().version_after, Version::new("v1"));
        assert!(
            receipts
                .replay(&key(2), "adds y", &document)
                .unwrap()
                .is_none()
        );
        let err = receipts.replay(&key(1), "adds y", &document).unwrap_err();
        assert!(
            matches!(&err, MemoryError::KeyReused { key, .. } if key == "k1"),
            "{err:?}"
        );
        assert_eq!(err.kind(), ErrorKind::Refused);
        // A receipt stored before fingerprints were recorded matches any call.
        let old = r#"{"entries":[{"key":"k1","report":REPORT}]}"#
            .replace("REPORT", &serde_json::to_string(&report("v1")).unwrap());
        let old = Receipts::parse("here", Some(&old)).unwrap();
        assert!(
            old.replay(&key(1), "anything", &document)
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn an_unsettled_receipt_counts_only_once_its_write_shows() {
        let mut receipts = Receipts::default();
        receipts.record_unsettled(&key(1), "f", report("v1"));
        assert!(
            receipts.find(&key(1)).is_none(),
            "not yet known to have landed"
        );
        assert!(receipts.clone().settle(&Version::new("v0")));
        let mut dropped = receipts.clone();
        dropped.settle(&Version::new("v0"));
        assert!(
            dropped.is_empty(),
            "the write never landed: a retry applies it"
        );
        assert!(receipts.settle(&Version::new("v1")));
        assert!(
            receipts.find(&key(1)).is_some(),
            "it landed: a retry replays it"
        );
        assert!(
            !receipts.settle(&Version::new("v2")),
            "settled receipts stay"
        );
    }

    #[test]
    fn unreadable_logs_are_corrupt_and_keys_are_checked() {
        let err = Receipts::parse("users/u1/.USER.md.receipts.json", Some("{")).unwrap_err();
        assert!(
            matches!(&err, MemoryError::Corrupt { location, .. } if location.contains(".receipts")),
            "{err:?}"
        );
        assert!(Receipts::parse("x", Some("  ")).unwrap().is_empty());
        for bad in ["", "a b", "é", &"k".repeat(MAX_KEY_LEN + 1)] {
            let err = IdempotencyKey::new(bad).unwrap_err();
            assert!(err.to_string().contains("idempotency key"), "{err}");
        }
    }

    #[test]
    fn a_key_reads_as_given_and_a_log_with_a_receipt_is_not_empty() {
        let key = IdempotencyKey::new("turn-1").unwrap();
        assert_eq!(key.as_str(), "turn-1");
        assert_eq!(key.to_string(), "turn-1");
        let mut receipts = Receipts::default();
        assert!(receipts.is_empty());
        receipts.record(&key, "f", report("1"));
        assert!(!receipts.is_empty());
    }
}
