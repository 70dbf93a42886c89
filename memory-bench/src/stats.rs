//! Latency samples and their percentiles.

use std::time::{Duration, Instant};

/// Latencies of one measured operation.
#[derive(Debug, Clone, Default)]
pub struct Samples(Vec<Duration>);

impl Samples {
    /// Times `op` once and keeps the sample.
    pub async fn time<T, E>(
        &mut self,
        op: impl std::future::Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        let started = Instant::now();
        let result = op.await;
        self.0.push(started.elapsed());
        result
    }

    /// The samples, in the order taken.
    pub fn samples(&self) -> &[Duration] {
        &self.0
    }

    /// Adds a sample measured elsewhere.
    pub fn push(&mut self, sample: Duration) {
        self.0.push(sample);
    }

    /// Adds the samples of another run (a concurrent task's), in its order.
    pub fn append(&mut self, other: &Samples) {
        self.0.extend_from_slice(&other.0);
    }

    /// The `q` quantile (0 to 1) in milliseconds, nearest rank; 0 when there are no samples.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        let mut sorted = self.0.clone();
        sorted.sort_unstable();
        let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1].as_secs_f64() * 1e3
    }

    /// p50, p95 and p99 in milliseconds.
    pub fn percentiles(&self) -> Percentiles {
        Percentiles {
            p50: self.quantile_ms(0.50),
            p95: self.quantile_ms(0.95),
            p99: self.quantile_ms(0.99),
        }
    }
}

/// p50, p95 and p99 of some samples, in milliseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Percentiles {
    /// The median.
    pub p50: f64,
    /// The 95th percentile.
    pub p95: f64,
    /// The 99th percentile.
    pub p99: f64,
}

/// Milliseconds, with the precision the magnitude deserves.
pub fn ms(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else if value >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

impl std::fmt::Display for Percentiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} / {} / {}", ms(self.p50), ms(self.p95), ms(self.p99))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut samples = Samples::default();
        for ms in 1..=100 {
            samples.push(Duration::from_millis(ms));
        }
        let p = samples.percentiles();
        assert_eq!((p.p50, p.p95, p.p99), (50.0, 95.0, 99.0));
        assert_eq!(Samples::default().quantile_ms(0.5), 0.0);
    }
}
