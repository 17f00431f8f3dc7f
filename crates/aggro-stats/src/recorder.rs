//! Per-loader recording, and merging of recorders.

use crate::{Histogram, new_histogram};
use aggro_core::ErrorClass;

/// Index of an operation in a workload's list of operation names.
pub type OpId = usize;

const CLASSES: usize = ErrorClass::ALL.len();

/// One operation's figures for one interval.
#[derive(Clone, Debug)]
pub struct OpStats {
    /// Successful requests, from intended start to completion (open loop),
    /// or from actual start in a closed loop.
    pub latency: Histogram,
    /// Successful requests, from actual start to completion.
    pub service: Histogram,
    /// Requests that completed successfully.
    pub ok: u64,
    /// Failures and retried conflicts by class, indexed by [`ErrorClass::index`].
    pub failures: [u64; CLASSES],
}

impl Default for OpStats {
    fn default() -> Self {
        Self { latency: new_histogram(), service: new_histogram(), ok: 0, failures: [0; CLASSES] }
    }
}

impl OpStats {
    /// Failures that are not conflicts.
    pub fn errors(&self) -> u64 {
        self.count_where(|c| !c.is_conflict())
    }

    /// Conflicts (counted apart from errors).
    pub fn conflicts(&self) -> u64 {
        self.count_where(ErrorClass::is_conflict)
    }

    fn count_where(&self, keep: impl Fn(ErrorClass) -> bool) -> u64 {
        ErrorClass::ALL.iter().filter(|c| keep(**c)).map(|c| self.failures[c.index()]).sum()
    }

    fn merge(&mut self, other: &OpStats) {
        self.latency.add(&other.latency).expect("auto-resizing histograms always merge");
        self.service.add(&other.service).expect("auto-resizing histograms always merge");
        self.ok += other.ok;
        for (a, b) in self.failures.iter_mut().zip(other.failures) {
            *a += b;
        }
    }

    fn reset(&mut self) {
        self.latency.reset();
        self.service.reset();
        self.ok = 0;
        self.failures = [0; CLASSES];
    }
}

/// Everything one loader records in one interval.
#[derive(Clone, Debug)]
pub struct Recorder {
    /// Figures per operation, indexed by [`OpId`].
    pub ops: Vec<OpStats>,
    /// Timer lateness: actual start minus intended start, for requests whose
    /// loader was free and waited for their time (the generator's own
    /// lateness; large values mean aggro, not the backend, fell behind).
    pub lag: Histogram,
}

impl Recorder {
    /// An empty recorder for `op_count` operations.
    pub fn new(op_count: usize) -> Self {
        Self { ops: (0..op_count).map(|_| OpStats::default()).collect(), lag: new_histogram() }
    }

    /// Records a successful request of `op`.
    #[inline]
    pub fn record_ok(&mut self, op: OpId, latency_ns: u64, service_ns: u64) {
        let s = &mut self.ops[op];
        s.ok += 1;
        // Auto-resizing histograms only fail to record on allocation failure.
        let _ = s.latency.record(latency_ns.max(1));
        let _ = s.service.record(service_ns.max(1));
    }

    /// Counts a failure (or a retried conflict) of `op`.
    #[inline]
    pub fn record_failure(&mut self, op: OpId, class: ErrorClass) {
        self.ops[op].failures[class.index()] += 1;
    }

    /// Records how late a waited-for request started against its intended time.
    #[inline]
    pub fn record_lag(&mut self, lag_ns: u64) {
        let _ = self.lag.record(lag_ns.max(1));
    }

    /// Adds `other`'s figures into this one.
    pub fn merge(&mut self, other: &Recorder) {
        for (a, b) in self.ops.iter_mut().zip(&other.ops) {
            a.merge(b);
        }
        self.lag.add(&other.lag).expect("auto-resizing histograms always merge");
    }

    /// Empties the recorder, keeping its allocations.
    pub fn reset(&mut self) {
        self.ops.iter_mut().for_each(OpStats::reset);
        self.lag.reset();
    }

    /// Nothing recorded since it was made or reset.
    pub fn is_empty(&self) -> bool {
        self.lag.is_empty() && self.ops.iter().all(|o| o.ok == 0 && o.failures.iter().all(|&f| f == 0))
    }

    /// Successful requests over all operations.
    pub fn total_ok(&self) -> u64 {
        self.ops.iter().map(|o| o.ok).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_equals_recording_everything_in_one() {
        let mut parts = [Recorder::new(2), Recorder::new(2), Recorder::new(2)];
        let mut whole = Recorder::new(2);
        let mut x = 17u64;
        for i in 0..30_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let latency = 1_000 + (x >> 40) % 50_000_000;
            let op = (i % 2) as usize;
            parts[(i % 3) as usize].record_ok(op, latency, latency / 2);
            whole.record_ok(op, latency, latency / 2);
            if i % 100 == 0 {
                parts[(i % 3) as usize].record_failure(op, ErrorClass::Conflict);
                whole.record_failure(op, ErrorClass::Conflict);
            }
        }
        let mut merged = Recorder::new(2);
        for p in &parts {
            merged.merge(p);
        }
        for op in 0..2 {
            let (m, w) = (&merged.ops[op], &whole.ops[op]);
            assert_eq!(m.ok, w.ok);
            assert_eq!(m.conflicts(), w.conflicts());
            assert_eq!(m.errors(), 0);
            for q in [0.5, 0.95, 0.99, 0.999, 1.0] {
                assert_eq!(m.latency.value_at_quantile(q), w.latency.value_at_quantile(q));
            }
            assert_eq!(m.latency.max(), w.latency.max());
        }
    }

    #[test]
    fn reset_keeps_shape_and_clears_counts() {
        let mut r = Recorder::new(1);
        r.record_ok(0, 5, 5);
        r.record_failure(0, ErrorClass::Timeout);
        r.record_lag(9);
        r.reset();
        assert_eq!(r.total_ok(), 0);
        assert_eq!(r.ops[0].errors(), 0);
        assert_eq!(r.lag.len(), 0);
        assert_eq!(r.ops.len(), 1);
    }

    #[test]
    fn errors_and_conflicts_are_apart() {
        let mut r = Recorder::new(1);
        r.record_failure(0, ErrorClass::Conflict);
        r.record_failure(0, ErrorClass::Deadlock);
        r.record_failure(0, ErrorClass::Timeout);
        assert_eq!(r.ops[0].conflicts(), 2);
        assert_eq!(r.ops[0].errors(), 1);
    }
}
