//! Fanning a provider's events out to its subscribers.

use tokio::sync::broadcast;

use crate::report::{MemoryEvent, Subscription, SyncReport};

/// How many events a subscriber may fall behind before it misses the oldest ones.
pub const EVENT_BUFFER: usize = 1024;

/// Fans events out to subscribers. Publishing never waits and never fails: a subscriber that
/// falls more than [`EVENT_BUFFER`] events behind misses the oldest and is told how many.
#[derive(Debug, Clone)]
pub struct EventBus {
    sender: broadcast::Sender<MemoryEvent>,
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus {
            sender: broadcast::channel(EVENT_BUFFER).0,
        }
    }
}

impl EventBus {
    /// A bus with no subscribers.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new subscriber, which sees events published from now on.
    pub fn subscribe(&self) -> Subscription {
        Subscription::new(self.sender.subscribe())
    }

    /// Emits `memory.updated` for every written document of `report`, and `memory.eviction` for
    /// those left over their soft cap.
    pub fn publish(&self, report: &SyncReport) {
        for document in report.documents.iter().filter(|d| d.written && !d.replayed) {
            // An error only means nobody is listening.
            let _ = self.sender.send(MemoryEvent::Updated(document.clone()));
            if document.over_soft_cap {
                let _ = self.sender.send(MemoryEvent::Eviction(document.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{DocumentId, Store, Version};
    use crate::report::DocumentReport;

    fn written(n: usize, over_soft_cap: bool) -> SyncReport {
        let v = Version::new(n.to_string());
        SyncReport {
            documents: vec![DocumentReport {
                store: Store::Memory,
                document: DocumentId::GlobalMemory,
                location: "memory://MEMORY.md".into(),
                written: true,
                version_before: v.clone(),
                version_after: v,
                sha256_before: String::new(),
                sha256_after: String::new(),
                bytes_before: 0,
                bytes_after: n,
                lines_removed: 0,
                over_soft_cap,
                replayed: false,
                scope: None,
            }],
            ..SyncReport::default()
        }
    }

    #[test]
    fn a_subscriber_that_never_reads_cannot_block_or_fail_publishing() {
        let bus = EventBus::new();
        let mut slow = bus.subscribe();
        // publish() is synchronous: finishing this loop is the proof it never waits.
        for n in 0..3 * EVENT_BUFFER {
            bus.publish(&written(n, false));
        }
        let first = slow.try_recv().expect("the newest events are kept");
        assert_eq!(
            slow.missed(),
            2 * EVENT_BUFFER as u64,
            "and the subscriber is told what it missed"
        );
        assert_eq!(first.report().bytes_after, 2 * EVENT_BUFFER);
    }

    #[test]
    fn soft_cap_overflow_adds_an_eviction_and_unwritten_documents_emit_nothing() {
        let bus = EventBus::new();
        let mut sub = bus.subscribe();
        bus.publish(&written(1, true));
        let mut unwritten = written(2, true);
        unwritten.documents[0].written = false;
        bus.publish(&unwritten);
        let names: Vec<_> = std::iter::from_fn(|| sub.try_recv())
            .map(|e| e.name())
            .collect();
        assert_eq!(names, ["memory.updated", "memory.eviction"]);
        let json = serde_json::to_value(bus_event()).unwrap();
        assert_eq!(json["event"], "memory.eviction");
        assert_eq!(json["bytes_after"], 1);
    }

    fn bus_event() -> MemoryEvent {
        MemoryEvent::Eviction(written(1, true).documents.remove(0))
    }

    #[tokio::test]
    async fn a_subscriber_that_falls_behind_skips_and_counts_what_it_missed() {
        let bus = EventBus::new();
        let mut events = bus.subscribe();
        let published = EVENT_BUFFER + 3;
        for n in 1..=published {
            bus.publish(&written(n, false));
        }
        let Some(MemoryEvent::Updated(first)) = events.recv().await else {
            panic!("an event")
        };
        assert_eq!(first.version_after, Version::new("4"), "the oldest kept");
        assert_eq!(events.missed(), 3);
        drop(bus);
        let mut rest = 0;
        while events.recv().await.is_some() {
            rest += 1;
        }
        assert_eq!(rest, EVENT_BUFFER - 1, "then None once the bus is gone");
        assert_eq!(events.missed(), 3);
    }
}
