//! What every handler of the service shares: the memory and its deployment, the metrics, the
//! rendered OpenAPI document, the places for diffs and the tasks the service waits for when it
//! stops.

use std::sync::Arc;

use memory_core::MemoryProvider;

use crate::deployment::Deployment;
use crate::ops::Metrics;
use crate::problem::Problem;

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct App {
    /// The memory every document operation goes through: the deployment's.
    pub memory: Arc<dyn MemoryProvider>,
    /// What the deployment says about it: contexts, placements, recall, the identity map.
    pub deployment: Arc<dyn Deployment>,
    /// The web origins that may call the service (`[serve] cors_origins`).
    pub cors_origins: Arc<Vec<String>>,
    pub metrics: std::sync::Arc<Metrics>,
    /// The OpenAPI document, rendered once.
    pub openapi: std::sync::Arc<String>,
    /// Places for diffs on the blocking pool, one per core: see [`App::diffing`].
    pub diffs: std::sync::Arc<tokio::sync::Semaphore>,
    /// The work the service waits for when it stops: writes whose clients went away.
    pub tasks: tokio_util::task::TaskTracker,
}

impl App {
    /// Runs `diffs` (work for the CPU: up to [`memory_core::DIFF_TIME`] each call) on the
    /// blocking pool, one at a time per core, so the async workers keep answering every other
    /// request meanwhile. The place is held until the work ends, even when the request is
    /// answered first (its timeout): abandoned diffs cannot pile up.
    pub(crate) async fn diffing<T: Send + 'static>(
        &self,
        diffs: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Problem> {
        let busy = || Problem::busy("the diff could not be computed now; retry shortly");
        let place = std::sync::Arc::clone(&self.diffs)
            .acquire_owned()
            .await
            .map_err(|_| busy())?;
        tokio::task::spawn_blocking(move || {
            let _place = place;
            diffs()
        })
        .await
        .map_err(|_| busy())
    }
}
