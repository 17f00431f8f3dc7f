//! What a workload gives the executor: a loader per in-flight slot.

use aggro_core::{ErrorClass, Nanos};
use aggro_stats::{OpId, Recorder};
use std::future::Future;
use std::sync::Arc;

/// One in-flight slot of a workload (typically one connection).
pub trait Loader: Send + 'static {
    /// Runs request number `seq` (numbered in schedule order across all
    /// loaders, so choices derived from it are reproducible). Sub-steps and
    /// retried conflicts go into `steps`; the request as a whole is recorded
    /// by the executor under operation 0.
    fn run(&mut self, seq: u64, steps: &mut Steps) -> impl Future<Output = Result<(), ErrorClass>> + Send;

    /// Whether the loader gave up after its last request (pgbench's clients abort on an error that is
    /// not a conflict): it takes no more slots, and the run goes on with the others.
    fn aborted(&self) -> bool {
        false
    }
}

/// What a request records besides its own outcome: timed sub-steps and
/// retried failures. Buffers are reused from request to request.
pub struct Steps {
    clock: Arc<dyn Fn() -> Nanos + Send + Sync>,
    timings: Vec<(OpId, Nanos)>,
    /// When each of `timings` began.
    began: Vec<Nanos>,
    failures: Vec<(OpId, ErrorClass)>,
}

impl std::fmt::Debug for Steps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Steps").field("timings", &self.timings).field("failures", &self.failures).finish()
    }
}

impl Steps {
    pub(crate) fn new(clock: Arc<dyn Fn() -> Nanos + Send + Sync>) -> Self {
        Self { clock, timings: Vec::with_capacity(8), began: Vec::with_capacity(8), failures: Vec::with_capacity(8) }
    }

    /// The clock's reading, for timing a step.
    pub fn now(&self) -> Nanos {
        (self.clock)()
    }

    /// Runs `step` and, if it succeeds, records its duration under `op`;
    /// a failure is counted under `op` with its class.
    pub async fn time<T, F>(&mut self, op: OpId, step: F) -> Result<T, ErrorClass>
    where
        F: Future<Output = Result<T, ErrorClass>>,
    {
        let start = self.now();
        let result = step.await;
        match &result {
            Ok(_) => {
                self.timings.push((op, self.now() - start));
                self.began.push(start);
            }
            Err(class) => self.failures.push((op, *class)),
        }
        result
    }

    /// Records a successful step of `op` that the workload timed itself: it began at `began` (a
    /// [`Steps::now`] reading) and ends now.
    pub fn record_since(&mut self, op: OpId, began: Nanos) {
        self.timings.push((op, self.now().saturating_sub(began)));
        self.began.push(began);
    }

    /// Counts a failure of `op` that the workload handled (a retried conflict).
    pub fn count_failure(&mut self, op: OpId, class: ErrorClass) {
        self.failures.push((op, class));
    }

    /// The successful steps recorded so far in this request.
    pub fn timings(&self) -> &[(OpId, Nanos)] {
        &self.timings
    }

    pub(crate) fn clear(&mut self) {
        self.timings.clear();
        self.began.clear();
        self.failures.clear();
    }

    /// Records the steps; `queued` (how long the request waited past its intended start) is added to
    /// the latency of the steps that began the request — those that began before any step ended: the
    /// transaction spanning the request and its first step — so that every latency counts from the
    /// intended start, and the service time stays each step's own.
    pub(crate) fn drain_into(&self, recorder: &mut Recorder, queued: Nanos) {
        let first_end = self.timings.iter().zip(&self.began).map(|(&(_, ns), &b)| b + ns).min().unwrap_or(0);
        for (&(op, ns), &began) in self.timings.iter().zip(&self.began) {
            let wait = if began < first_end || began + ns == first_end { queued } else { 0 };
            recorder.record_ok(op, ns + wait, ns);
        }
        for &(op, class) in &self.failures {
            recorder.record_failure(op, class);
        }
    }
}
