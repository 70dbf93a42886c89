//! Turns among the writers of one process: a queue per document, so that they wait for each
//! other instead of racing.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

use tokio::sync::{Mutex, MutexGuard};

use crate::document::DocumentId;

/// How many queues [`CasWriter`](crate::raw::cas::writer::CasWriter) spreads documents over.
pub(super) const LOCAL_QUEUES: usize = 64;

/// Per-document FIFO queues for the writers of one provider value, so that they take turns
/// instead of racing each other (for a compare-and-swap, or a polled file lock). Striped: 64
/// queues, shared by documents whose hashes collide.
#[derive(Debug)]
pub struct LocalQueues {
    queues: Vec<Mutex<()>>,
}

impl Default for LocalQueues {
    fn default() -> Self {
        LocalQueues {
            queues: (0..LOCAL_QUEUES).map(|_| Mutex::new(())).collect(),
        }
    }
}

impl LocalQueues {
    /// Waits for a turn on every queue `ids` map to, taken in index order so that two calls
    /// cannot each hold one the other needs. The turn lasts as long as the guards.
    pub async fn turn(&self, ids: &[DocumentId]) -> Vec<MutexGuard<'_, ()>> {
        let mut queues: Vec<usize> = ids.iter().map(queue_of).collect();
        queues.sort_unstable();
        queues.dedup();
        let mut turn = Vec::with_capacity(queues.len());
        for queue in queues {
            turn.push(self.queues[queue].lock().await);
        }
        turn
    }
}

pub(super) fn queue_of(id: &DocumentId) -> usize {
    // A fixed-key hasher: the same document maps to the same queue for the process's life.
    (BuildHasherDefault::<DefaultHasher>::default().hash_one(id) % LOCAL_QUEUES as u64) as usize
}
