//! What the loaders and the monitor of one run share — the clock, each loader's stripe and counts,
//! the recorders — and what a run gives back. While loaders keep up nothing here is written by two:
//! each loader's stripe and counts sit on cache lines of their own, and a recorder belongs to the
//! thread that records into it.

use crate::plan::StopReason;
use crate::stop::StopHandle;
use aggro_core::{Clock, Nanos, Schedule, Share};
use aggro_stats::Recorder;
use parking_lot::Mutex;

/// A stripe's lock: taken by its loader once per request, almost never contended, so a spin lock
/// whose release is a plain store (measured: a request on the null target costs ~10 ns less than
/// under `parking_lot::Mutex`, whose release is a second atomic read-modify-write).
pub(crate) type StripeLock<T> = spin::mutex::SpinMutex<T>;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// One loader's stripe and counts, on their own cache lines so loaders on different cores never
/// contend while each keeps up with its own stripe. The counts of requests are the loader's; the
/// stripe's schedule and `issued` are written by whoever takes one of its slots (its loader, or
/// another while it is busy — see `claim`), under the schedule's lock.
#[repr(align(128))]
pub(crate) struct LoaderSlot {
    /// The loader's stripe of the run's schedule.
    pub stripe: Share,
    /// The stripe's schedule.
    pub schedule: StripeLock<Schedule>,
    /// Slots taken from the stripe (started, or about to start), by any loader.
    pub issued: AtomicU64,
    /// Requests this loader started and finished (of its own stripe or another's).
    pub started: AtomicU64,
    pub completed: AtomicU64,
    /// The loader stopped taking slots of its own accord (its `each_loader_limit` reached, or it
    /// left a run whose stripes are kept): the rest of its stripe is no longer intended.
    pub retired: AtomicBool,
    /// The loader left (it aborted, or had no timer) and the others may take the rest of its stripe.
    pub left: AtomicBool,
}

impl LoaderSlot {
    pub fn new(schedule: Schedule, stripe: Share) -> Self {
        Self {
            stripe,
            schedule: StripeLock::new(schedule),
            issued: AtomicU64::new(0),
            started: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            retired: AtomicBool::new(false),
            left: AtomicBool::new(false),
        }
    }

    /// Whether the loader has a request in flight.
    pub fn is_busy(&self) -> bool {
        self.started.load(Relaxed) > self.completed.load(Relaxed)
    }

    /// The loader leaves the run: the others take the rest of its stripe, unless stripes are kept.
    pub fn leave(&self, keep_stripes: bool) {
        if keep_stripes { &self.retired } else { &self.left }.store(true, Relaxed);
    }
}

/// A recorder, on its own cache lines.
#[repr(align(128))]
pub(crate) struct RecorderSlot(pub Mutex<Recorder>);

/// State shared by the loaders and the monitor of one run.
pub(crate) struct Shared<C: Clock> {
    pub clock: C,
    /// Clock reading at the run's start: schedule time 0.
    pub origin: Nanos,
    pub loaders: Vec<LoaderSlot>,
    /// One per loader when the plan keeps loaders apart; otherwise one per thread that runs loaders
    /// (threads beyond their count share them round the ring).
    pub recorders: Vec<RecorderSlot>,
    pub per_loader: bool,
    /// This run's number among the process's runs, so a thread's recorder from an earlier run is not reused.
    pub run_id: u64,
    /// Recorders handed to threads so far.
    pub threads_seen: AtomicUsize,
    /// Set once no new request may start; loaders read it before each slot.
    pub halted: AtomicBool,
    /// Wakes loaders waiting for a future slot when the run halts.
    pub halt: StopHandle,
    /// Loaders that gave up ([`Loader::aborted`](crate::Loader::aborted)).
    pub aborted: AtomicU64,
}

/// Numbers runs, for [`Shared::run_id`].
static RUNS: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// (run, recorder) this thread records into.
    static THREAD_RECORDER: Cell<(u64, usize)> = const { Cell::new((0, 0)) };
}

impl<C: Clock> Shared<C> {
    pub fn new(clock: C, loaders: Vec<LoaderSlot>, recorders: Vec<Recorder>, per_loader: bool) -> Self {
        let origin = clock.now();
        Self {
            clock,
            origin,
            loaders,
            recorders: recorders.into_iter().map(|r| RecorderSlot(Mutex::new(r))).collect(),
            per_loader,
            run_id: RUNS.fetch_add(1, Relaxed),
            threads_seen: AtomicUsize::new(0),
            halted: AtomicBool::new(false),
            halt: StopHandle::new(),
            aborted: AtomicU64::new(0),
        }
    }

    pub fn now(&self) -> Nanos {
        self.clock.now().saturating_sub(self.origin)
    }

    /// The recorder loader `loader` records into on the calling thread: its own when loaders are
    /// kept apart, else the thread's (chosen on the thread's first request of the run).
    pub fn recorder(&self, loader: usize) -> &Mutex<Recorder> {
        let index = if self.per_loader {
            loader
        } else {
            THREAD_RECORDER.with(|mine| match mine.get() {
                (run, index) if run == self.run_id => index,
                _ => {
                    let index = self.threads_seen.fetch_add(1, Relaxed) % self.recorders.len();
                    mine.set((self.run_id, index));
                    index
                }
            })
        };
        &self.recorders[index].0
    }

    /// Whether the run has halted.
    pub fn is_halted(&self) -> bool {
        self.halted.load(Relaxed)
    }

    /// Closes the run to new requests and wakes loaders waiting for future slots.
    pub fn halt_now(&self) {
        self.halted.store(true, Relaxed);
        self.halt.stop();
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
