//! The figures of one histogram that an interval line prints.

use crate::Histogram;
use serde::{Deserialize, Serialize};

/// Count, mean and percentiles of one histogram, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Values recorded.
    pub count: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 95th percentile.
    pub p95_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest value.
    pub max_ns: u64,
}

impl Summary {
    /// Reads the summary off a (merged) histogram.
    pub fn of(h: &Histogram) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        Self {
            count: h.len(),
            mean_ns: h.mean(),
            p50_ns: h.value_at_quantile(0.50),
            p95_ns: h.value_at_quantile(0.95),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let mut h = crate::new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let s = Summary::of(&h);
        assert_eq!(s.count, 1000);
        assert!((s.mean_ns - 500_500.0).abs() < 600.0);
        assert!((499_000..=501_000).contains(&s.p50_ns), "{}", s.p50_ns);
        assert!((989_000..=991_000).contains(&s.p99_ns), "{}", s.p99_ns);
        assert!((999_000..=1_001_000).contains(&s.max_ns));
        assert_eq!(Summary::of(&crate::new_histogram()), Summary::default());
    }
}
