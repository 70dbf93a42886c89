//! Pauses between attempts at a contended write, shared by every backend's retry loop.

use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

/// Growing, jittered pauses: each is the current step plus up to as much again at random, and
/// the step doubles up to a ceiling. The jitter keeps writers that lost the same race from
/// retrying in lockstep.
#[derive(Debug, Clone)]
pub struct Backoff {
    step: Duration,
    ceiling: Duration,
    attempt: u64,
}

impl Backoff {
    /// Starts at `first` and never grows the step past `ceiling`.
    pub fn new(first: Duration, ceiling: Duration) -> Self {
        Backoff {
            step: first,
            ceiling,
            attempt: 0,
        }
    }

    /// The next pause to sleep for: between the current step and twice it.
    pub fn next_pause(&mut self) -> Duration {
        self.attempt += 1;
        // A fresh RandomState is randomly keyed, so this is a cheap random number without a
        // dependency.
        let micros = self.step.as_micros() as u64;
        let jitter = RandomState::new().hash_one(self.attempt) % (micros + 1);
        let pause = self.step + Duration::from_micros(jitter);
        self.step = (self.step * 2).min(self.ceiling);
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_to_the_ceiling_with_bounded_jitter() {
        let (first, ceiling) = (Duration::from_micros(100), Duration::from_millis(1));
        let mut backoff = Backoff::new(first, ceiling);
        let pauses: Vec<_> = (0..8).map(|_| backoff.next_pause()).collect();
        let mut step = first;
        for pause in &pauses {
            assert!(
                *pause >= step && *pause <= step * 2,
                "{pause:?} for step {step:?}"
            );
            step = (step * 2).min(ceiling);
        }
        assert!(pauses[7] >= ceiling);
    }
}
