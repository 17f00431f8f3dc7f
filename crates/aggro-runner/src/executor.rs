//! [`run`]: N loaders taking slots from one schedule.
//!
//! Each loader takes the next slot from the shared [`Schedule`] when it is
//! free, waits on its own precise timer until the slot's intended time if that
//! is still ahead, runs the request and records it — into a recorder it
//! shares with a few other loaders (a couple per core), or its own when the
//! plan keeps loaders apart ([`RunPlan::per_loader`]).
//! Slots are taken in time order, so a backlog (due slots nobody has taken)
//! is simply `due_by(now) - issued`, and a free loader always starts the
//! oldest waiting slot at once.

use crate::loader::{Loader, Steps};
use crate::monitor::{Monitor, Observer};
use crate::plan::{Placement, RunPlan, TimerMode};
use crate::shared::{LoaderSlot, RecorderSlot, RunOutcome, Shared};
use crate::stop::StopHandle;
use aggro_core::{Clock, Nanos, Schedule, Slot, Waiter};
use aggro_stats::Recorder;
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Waits shorter than this are spent yielding to other loaders rather than
/// arming a timer: a timer wake-up takes about this long anyway (on a VM), and
/// at a million requests a second the syscalls would cost more than the wait.
const YIELD_BELOW_NS: Nanos = 50_000;

/// A precise wait arms the timer this long before the slot and spins the
/// rest: a timerfd wake-up on a VM comes ~40 µs late, rarely over 100 µs.
const SPIN_WINDOW_NS: Nanos = 150_000;

/// Under [`TimerMode::Auto`], waits are precise while a loader's requests
/// take less than this (its recent service time, smoothed).
const FAST_SERVICE_NS: Nanos = 100_000;

/// Requests a loader runs back to back before it yields to the runtime: a loader whose slots are
/// all due and whose target answers at once (the null target, a backlog) never waits, and would
/// keep the monitor, the stop and the signal handler from running on its thread.
const YIELD_EVERY: u32 = 64;

/// Recorders per core when loaders share them: a recorder's histograms take
/// 0.1–0.3 MB each at millisecond latencies, so one per loader grew to
/// hundreds of MB with a hundred loaders; a couple per core keeps loaders on
/// different cores from contending.
const RECORDERS_PER_CORE: usize = 2;

/// How many recorders `loaders` loaders record into.
fn recorder_count(loaders: usize, per_loader: bool) -> usize {
    if per_loader {
        return loaders;
    }
    loaders.min(RECORDERS_PER_CORE * std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Runs `plan` with `loaders` (one in-flight slot each), recording operation
/// 0 as the whole request and `op_count - 1` further steps, and reports each
/// interval to `observer`. Returns when the schedule is done and in-flight
/// requests have finished (or been abandoned after the drain timeout), or
/// when `stop` fires.
pub async fn run<L, C, O>(plan: &RunPlan, op_count: usize, loaders: Vec<L>, clock: C, stop: &StopHandle, observer: &mut O) -> RunOutcome<L>
where
    L: Loader,
    C: Clock,
    O: Observer + ?Sized,
{
    assert!(!loaders.is_empty(), "a run needs at least one loader");
    let origin = clock.now();
    let shared = Arc::new(Shared {
        schedule: Mutex::new(Schedule::new(&plan.rate, plan.pacing, plan.limit, plan.seed).shared(plan.share)),
        loaders: (0..loaders.len()).map(|_| LoaderSlot { started: AtomicU64::new(0), completed: AtomicU64::new(0) }).collect(),
        recorders: (0..recorder_count(loaders.len(), plan.per_loader)).map(|_| RecorderSlot(Mutex::new(Recorder::new(op_count)))).collect(),
        halt: StopHandle::new(),
        aborted: AtomicU64::new(0),
        clock,
        origin,
    });
    let each = plan.each_loader_limit.unwrap_or(u64::MAX);
    let timer = match (plan.timer, plan.placement) {
        (TimerMode::Auto, Placement::Tasks) => TimerMode::Cheap,
        (mode, _) => mode,
    };
    let mut tasks = tokio::task::JoinSet::new();
    for (index, loader) in loaders.into_iter().enumerate() {
        let shared = Arc::clone(&shared);
        match plan.placement {
            Placement::Tasks => {
                tasks.spawn(loader_loop(shared, index, loader, timer, each));
            }
            Placement::Threads => {
                tasks.spawn_blocking(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a loader thread needs a runtime");
                    runtime.block_on(loader_loop(shared, index, loader, timer, each))
                });
            }
        }
    }
    Monitor::new(plan, op_count, Arc::clone(&shared)).run(tasks, stop, observer).await
}

/// Loader `index`'s loop: takes slots and runs them until the schedule ends, or it has run `each`.
async fn loader_loop<L: Loader, C: Clock>(shared: Arc<Shared<C>>, index: usize, mut loader: L, timer: TimerMode, each: u64) -> L {
    let Ok(mut waiter) = shared.clock.waiter() else {
        // No timer could be made (out of file descriptors): this slot sits
        // out; the monitor still sees the schedule's backlog.
        return loader;
    };
    let clock = shared.clock.clone();
    let origin = shared.origin;
    let mut steps = Steps::new(Arc::new(move || clock.now().saturating_sub(origin)));
    // The loader's service time, smoothed over its last few requests (none yet: slow).
    let mut service_ns = Nanos::MAX;
    let mut unyielded = 0u32;
    for _ in 0..each {
        unyielded += 1;
        if unyielded >= YIELD_EVERY {
            unyielded = 0;
            tokio::task::yield_now().await;
        }
        let now = shared.now();
        let (seq, slot) = {
            let mut schedule = shared.schedule.lock();
            let seq = schedule.next_seq();
            match schedule.next(now) {
                Some(slot) => (seq, slot),
                None => break,
            }
        };
        // Lateness is recorded only for slots this loader waited for: a slot
        // already due when taken was late because every loader was busy
        // (backlog, the backend's doing), not because the timer was late.
        let mut waited = false;
        let intended = match slot {
            Slot::At(t) => {
                if t > now {
                    (waited, unyielded) = (true, 0);
                    if shared.halt.is_stopped() {
                        break;
                    }
                    let precise = match timer {
                        TimerMode::Cheap => false,
                        TimerMode::Precise => true,
                        TimerMode::Auto => service_ns < FAST_SERVICE_NS,
                    };
                    let spin = if precise { SPIN_WINDOW_NS } else { YIELD_BELOW_NS };
                    if t - now >= spin {
                        let wake = if precise { t - spin } else { t };
                        tokio::select! {
                            biased;
                            _ = shared.halt.stopped() => break,
                            _ = waiter.wait_until(origin + wake) => {}
                        }
                    }
                    // The rest of a short or precise wait: yield to other
                    // loaders (a loader on a thread of its own spins).
                    while shared.now() < t {
                        tokio::task::yield_now().await;
                    }
                }
                Some(t)
            }
            Slot::Now => None,
        };
        let start = shared.now();
        let mine = &shared.loaders[index];
        mine.started.fetch_add(1, Relaxed);
        steps.clear();
        let result = loader.run(seq, &mut steps).await;
        let end = shared.now();
        service_ns = match service_ns {
            Nanos::MAX => end - start,
            s => s - s / 8 + (end - start) / 8,
        };
        {
            let mut recorder = shared.recorders[index % shared.recorders.len()].0.lock();
            match result {
                Ok(()) => recorder.record_ok(0, end - intended.unwrap_or(start).min(start), end - start),
                Err(class) => recorder.record_failure(0, class),
            }
            if let (Some(t), true) = (intended, waited) {
                recorder.record_lag(start.saturating_sub(t));
            }
            steps.drain_into(&mut recorder, intended.map_or(0, |t| start.saturating_sub(t)));
        }
        mine.completed.fetch_add(1, Relaxed);
        if loader.aborted() {
            shared.aborted.fetch_add(1, Relaxed);
            break;
        }
    }
    loader
}
