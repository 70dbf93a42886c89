//! What a writer knows of the documents it read or wrote last: its views, which the next write
//! can be planned from without a read, and the races it lost a moment ago.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::document::{Document, DocumentId, Version};
use crate::history::revision::{Revision, RevisionTip};
use crate::raw::cas::store::Fetched;
use crate::raw::plan::Planned;

/// One document's part of an attempt.
pub(super) struct Step {
    pub(super) planned: Planned,
    /// The version it was read at.
    pub(super) version: u64,
    /// The receipts to store with the write.
    pub(super) receipts: Option<String>,
    /// The revisions to record with the write.
    pub(super) revisions: Vec<Revision>,
    /// Its history's tip, its receipts and whether they were read, as it was read.
    pub(super) tip: RevisionTip,
    pub(super) receipts_before: Option<String>,
    pub(super) receipts_known: bool,
}

impl Step {
    /// The document as it is once this step landed, dated `at` if written (the store's time
    /// for the write, where it told it): what the next write can be planned from. `None` for
    /// a replay, which read receipts only.
    fn view_after(&self, at: Option<SystemTime>) -> Option<(DocumentId, View)> {
        let Planned::Write(write) = &self.planned else {
            return None;
        };
        let before = write.before();
        let (document, version) = match write.new_text() {
            Some(text) => (
                Document {
                    id: before.id.clone(),
                    text: text.to_owned(),
                    version: Version::new((self.version + 1).to_string()),
                    location: before.location.clone(),
                    modified: at,
                },
                self.version + 1,
            ),
            None => (before.clone(), self.version),
        };
        let tip = self
            .revisions
            .last()
            .map_or_else(|| self.tip.clone(), RevisionTip::of);
        let view = View {
            fetched: Fetched {
                document,
                version,
                receipts: self
                    .receipts
                    .clone()
                    .or_else(|| self.receipts_before.clone()),
                tip,
            },
            receipts_known: self.receipts_known || self.receipts.is_some(),
        };
        Some((before.id.clone(), view))
    }
}

/// How many documents' views a writer keeps: past it they are dropped, and the next write of
/// each reads first.
pub(super) const VIEWS_KEPT: usize = 256;

/// A document as this writer last read or wrote it.
#[derive(Debug, Clone)]
pub(super) struct View {
    pub(super) fetched: Fetched,
    /// Whether `fetched.receipts` are the stored ones (a read that did not ask leaves them
    /// unknown, and a keyed call must then read them).
    pub(super) receipts_known: bool,
}

/// How long after a lost race a writer's calls on that document hold from their first attempt.
pub(super) const CONTENDED_FOR: Duration = Duration::from_secs(1);

/// The views of one writer, by document, and when it last lost a race on each.
#[derive(Debug, Default)]
pub(super) struct Views(std::sync::Mutex<Kept>);

#[derive(Debug, Default)]
pub(super) struct Kept {
    pub(super) views: HashMap<DocumentId, View>,
    pub(super) lost: HashMap<DocumentId, Instant>,
}

impl Views {
    pub(super) fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The views of all `ids` in order, with their receipts if `keyed`; `None` if one is not
    /// kept.
    pub(super) fn all(&self, ids: &[DocumentId], keyed: bool) -> Option<Vec<View>> {
        let kept = self.kept();
        ids.iter()
            .map(|id| {
                kept.views
                    .get(id)
                    .filter(|v| v.receipts_known || !keyed)
                    .cloned()
            })
            .collect()
    }

    /// Keeps the documents as `steps` left them, those written dated `at`.
    pub(super) fn keep(&self, steps: &[Step], at: Option<SystemTime>) {
        let mut kept = self.kept();
        for (id, view) in steps.iter().filter_map(|step| step.view_after(at)) {
            if kept.views.len() >= VIEWS_KEPT && !kept.views.contains_key(&id) {
                kept.views.clear();
            }
            kept.views.insert(id, view);
        }
    }

    /// Drops the views of `ids` and notes the time: another writer changed or held one of them.
    pub(super) fn forget(&self, ids: &[DocumentId]) {
        let mut kept = self.kept();
        let now = Instant::now();
        kept.lost
            .retain(|_, at| now.duration_since(*at) < CONTENDED_FOR);
        for id in ids {
            kept.views.remove(id);
            kept.lost.insert(id.clone(), now);
        }
    }

    /// Whether this writer lost a race on one of `ids` within [`CONTENDED_FOR`].
    pub(super) fn contended(&self, ids: &[DocumentId]) -> bool {
        let kept = self.kept();
        ids.iter().any(|id| {
            kept.lost
                .get(id)
                .is_some_and(|at| at.elapsed() < CONTENDED_FOR)
        })
    }
}
