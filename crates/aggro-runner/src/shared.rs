//! What the loaders and the monitor of one run share — the clock, the schedule, each loader's
//! counts and the recorders — and what a run gives back.

use crate::plan::StopReason;
use crate::stop::StopHandle;
use aggro_core::{Clock, Nanos, Schedule};
use aggro_stats::Recorder;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// What one loader shares with the monitor, on its own cache lines so
/// loaders on different cores never contend.
#[repr(align(128))]
pub(crate) struct LoaderSlot {
    pub started: AtomicU64,
    pub completed: AtomicU64,
}

/// A recorder some loaders share, on its own cache lines.
#[repr(align(128))]
pub(crate) struct RecorderSlot(pub Mutex<Recorder>);

/// State shared by the loaders and the monitor of one run.
pub(crate) struct Shared<C: Clock> {
    pub clock: C,
    /// Clock reading at the run's start: schedule time 0.
    pub origin: Nanos,
    pub schedule: Mutex<Schedule>,
    pub loaders: Vec<LoaderSlot>,
    /// Loader `i` records into recorder `i % recorders.len()`.
    pub recorders: Vec<RecorderSlot>,
    /// Fired when no new request may start (schedule closed early).
    pub halt: StopHandle,
    /// Loaders that gave up ([`Loader::aborted`]).
    pub aborted: AtomicU64,
}

impl<C: Clock> Shared<C> {
    pub fn now(&self) -> Nanos {
        self.clock.now().saturating_sub(self.origin)
    }

    /// Requests started by all loaders.
    pub fn started(&self) -> u64 {
        self.loaders.iter().map(|l| l.started.load(Relaxed)).sum()
    }

    /// Requests completed by all loaders.
    pub fn completed(&self) -> u64 {
        self.loaders.iter().map(|l| l.completed.load(Relaxed)).sum()
    }
}

/// How a run went; the loaders come back so the next run can reuse their
/// connections.
#[derive(Debug)]
pub struct RunOutcome<L> {
    /// Loaders that finished cleanly (abandoned ones are dropped).
    pub loaders: Vec<L>,
    /// Why the run ended.
    pub stop_reason: StopReason,
    /// Every interval merged.
    pub totals: Recorder,
    /// Requests the plan intended to have started by the end.
    pub due: u64,
    /// Requests started.
    pub started: u64,
    /// Requests finished, successfully or not.
    pub completed: u64,
    /// Due requests never started (backlog at the end).
    pub backlog_at_end: u64,
    /// Length of the run in nanoseconds.
    pub elapsed_ns: Nanos,
}
