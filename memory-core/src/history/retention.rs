//! How much history a provider keeps, and which revisions it stores whole.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// Revisions kept per document unless a provider is configured otherwise.
pub const DEFAULT_KEEP: usize = 100;

/// How much history a provider keeps per document: the newest `keep` revisions, and of those
/// only the ones younger than `max_age` when it is set. `keep = 0` keeps none: history off.
///
/// In a provider's configuration: `history = { keep = 100, max_age_days = 90 }`, both optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "RetentionConfig", into = "RetentionConfig")]
pub struct Retention {
    /// Revisions kept per document (default [`DEFAULT_KEEP`]); 0 records none.
    pub keep: usize,
    /// Revisions older than this are pruned too; `None` (the default) keeps them by count only.
    pub max_age: Option<Duration>,
}

/// [`Retention`] as configuration files write it.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RetentionConfig {
    #[serde(default = "default_keep")]
    keep: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_age_days: Option<u32>,
}

fn default_keep() -> usize {
    DEFAULT_KEEP
}

impl From<RetentionConfig> for Retention {
    fn from(config: RetentionConfig) -> Self {
        Retention {
            keep: config.keep,
            max_age: config
                .max_age_days
                .map(|days| Duration::from_secs(u64::from(days) * 86_400)),
        }
    }
}

impl From<Retention> for RetentionConfig {
    fn from(retention: Retention) -> Self {
        RetentionConfig {
            keep: retention.keep,
            max_age_days: retention
                .max_age
                .map(|age| u32::try_from(age.as_secs().div_ceil(86_400)).unwrap_or(u32::MAX)),
        }
    }
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            keep: DEFAULT_KEEP,
            max_age: None,
        }
    }
}

impl Retention {
    /// Keeps nothing: writes record no revision.
    pub const OFF: Retention = Retention {
        keep: 0,
        max_age: None,
    };

    /// Whether a purge that erased a text (`erased_text`) or `erased_revisions` revisions
    /// leaves a tombstone: when history is on and there was something to erase. Each store
    /// stores it in the purge's own atomic step (Redis's purge script follows this rule).
    pub fn leaves_tombstone(&self, erased_text: bool, erased_revisions: usize) -> bool {
        self.is_on() && (erased_text || erased_revisions > 0)
    }

    /// How often a write's revision is stored whole, a checkpoint: every `keep`th, and at
    /// least every [`CHECKPOINT_EVERY_MOST`]th. Between checkpoints a revision keeps only its
    /// updates, and its text is rebuilt from the checkpoint before it. With a checkpoint per
    /// `keep` revisions the kept revisions and those back to the checkpoint below them hold at
    /// most two whole texts, and reading one rebuilds it over at most
    /// [`CHECKPOINT_EVERY_MOST`] - 1 revisions.
    pub fn checkpoint_every(&self) -> u64 {
        u64::try_from(self.keep)
            .unwrap_or(u64::MAX)
            .clamp(1, CHECKPOINT_EVERY_MOST)
    }

    /// Whether revision `number`, written by an agent at `now` on a document last written at
    /// `last_write`, is stored whole: every [`Retention::checkpoint_every`]th, and with an age
    /// limit also the first write of each half of it (`max_age / 2` since the Unix epoch), so
    /// that the base of the oldest revision the age limit keeps is at most half the limit
    /// older, and a store drops what is past it by one and a half times the limit at most.
    /// Hand edits are always stored whole: the writer does not hold the text they replaced,
    /// so it could not write them as a change.
    pub fn is_checkpoint(
        &self,
        number: u64,
        last_write: Option<SystemTime>,
        now: SystemTime,
    ) -> bool {
        let new_period = self.max_age.is_some_and(|age| {
            let half = (age / 2).as_millis().max(1);
            let period = |time: SystemTime| {
                time.duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |since| since.as_millis() / half)
            };
            last_write.is_none_or(|last| period(last) != period(now))
        });
        new_period || number.is_multiple_of(self.checkpoint_every())
    }

    /// Keeps the newest `keep` revisions of each document.
    pub fn keep(keep: usize) -> Retention {
        Retention {
            keep,
            max_age: None,
        }
    }

    /// Also prunes revisions older than `max_age`.
    pub fn with_max_age(mut self, max_age: Duration) -> Retention {
        self.max_age = Some(max_age);
        self
    }

    /// Whether writes record revisions at all.
    pub fn is_on(&self) -> bool {
        self.keep > 0
    }

    /// The lowest revision number kept once `tip` is the newest: older ones are pruned.
    pub fn oldest_kept(&self, tip: u64) -> u64 {
        let keep = u64::try_from(self.keep).unwrap_or(u64::MAX);
        (tip + 1).saturating_sub(keep).max(1)
    }

    /// Whether a revision made at `time` is past the age limit at `now`. A time in the future
    /// (a clock set back) is never past it.
    pub fn too_old(&self, time: SystemTime, now: SystemTime) -> bool {
        self.max_age
            .is_some_and(|max_age| now.duration_since(time).is_ok_and(|age| age > max_age))
    }

    /// Whether revision `number`, made at `time`, is pruned once `tip` is the newest. The tip
    /// itself is always kept, however old: it is what tells the next hand edit apart.
    pub fn prunes(&self, number: u64, time: SystemTime, tip: u64, now: SystemTime) -> bool {
        number < tip && (number < self.oldest_kept(tip) || self.too_old(time, now))
    }

    /// How many of `stored` (each revision's number and time) it keeps once `tip` is the
    /// newest, at `now`: what `history` shows and a purge reports erasing, whatever a store
    /// holds beyond them to rebuild the kept ones from. With history off, every one (what an
    /// earlier configuration left).
    pub fn count_kept(
        &self,
        stored: impl IntoIterator<Item = (u64, SystemTime)>,
        tip: u64,
        now: SystemTime,
    ) -> usize {
        stored
            .into_iter()
            .filter(|&(number, time)| !self.is_on() || !self.prunes(number, time, tip, now))
            .count()
    }
}

/// The most revisions between two checkpoints: see [`Retention::checkpoint_every`].
pub const CHECKPOINT_EVERY_MOST: u64 = 100;
