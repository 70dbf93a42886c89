//! How a [`Versioned`](crate::raw::Versioned) provider runs.

use std::time::Duration;

use crate::history::retention::Retention;
use crate::raw::cas::writer::DEFAULT_DEADLINE;

/// How a [`Versioned`](crate::raw::Versioned) provider runs: what a backend's configuration sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Compare-and-swap attempts per call before
    /// [`MemoryError::Contention`](crate::MemoryError::Contention) (at least 1).
    pub max_attempts: u32,
    /// How long one call may take in all.
    pub deadline: Duration,
    /// How much of each document's history writes keep.
    pub retention: Retention,
}

/// The attempts per call unless set otherwise: enough for a few dozen writers on one
/// document, which take turns once they have lost a race.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 64;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            deadline: DEFAULT_DEADLINE,
            retention: Retention::default(),
        }
    }
}
