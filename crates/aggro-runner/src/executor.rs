//! [`run`]: N loaders, each running its own stripe of one schedule.
//!
//! Loader `i` of N takes every N-th slot of the run, starting at its `i`-th, as a `--worker i/n`
//! shard takes every n-th of the whole run: it draws its stripe from a schedule of its own, waits on
//! its own precise timer until each slot's intended time if that is still ahead, runs the request
//! and records it — into the recorder of the thread it runs on, or its own when the plan keeps
//! loaders apart ([`RunPlan::per_loader`]). Nothing is shared-written per request while loaders keep
//! up, so more threads mean more requests; the monitor reads each loader's counts beside each
//! stripe's due count (see `books`). A loader busy past its next slot gives that slot to a loader
//! with nothing due, unless the plan keeps stripes (see `claim`); either way its latency counts
//! from the intended start.

use crate::claim::{Claim, Claimer};
use crate::loader::{Loader, Steps};
use crate::monitor::{Monitor, Observer};
use crate::plan::{Placement, RunPlan, TimerMode};
use crate::shared::{LoaderSlot, RunOutcome, Shared};
use crate::stop::StopHandle;
use aggro_core::{Clock, Nanos, Schedule, Slot, Waiter};
use aggro_stats::Recorder;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

/// Waits shorter than this are spent yielding to other loaders rather than
/// arming a timer: a timer wake-up takes about this long anyway (on a VM), and
/// at a million requests a second the syscalls would cost more than the wait.
const YIELD_BELOW_NS: Nanos = 50_000;

/// A precise wait arms the timer this long before the slot and spins the
/// rest: a timerfd wake-up on a VM comes ~40 µs late, rarely over 100 µs.
const SPIN_WINDOW_NS: Nanos = 150_000;

/// Waits longer than this also watch for the run's halt; shorter ones check it when they end.
/// Watching registers the loader with the halt's waiters (a shared lock), which at a short wait per
/// request would put back the shared write per request that striping took out.
const WATCH_HALT_ABOVE_NS: Nanos = 10_000_000;

/// Under [`TimerMode::Auto`], waits are precise while a loader's requests
/// take less than this (its recent service time, smoothed).
const FAST_SERVICE_NS: Nanos = 100_000;

/// Requests a loader runs back to back before it yields to the runtime: a loader whose slots are
/// all due and whose target answers at once (the null target, a backlog) never waits, and would
/// keep the monitor, the stop and the signal handler from running on its thread.
const YIELD_EVERY: u32 = 64;

/// How many recorders `loaders` loaders record into: their own each when kept apart; otherwise one
/// per thread that may run them — a recorder's histograms take 0.1–0.3 MB each at millisecond
/// latencies, so one per loader grew to hundreds of MB with a hundred loaders.
fn recorder_count(loaders: usize, per_loader: bool, placement: Placement) -> usize {
    if per_loader {
        return loaders;
    }
    let threads = match placement {
        Placement::Threads => loaders,
        Placement::Tasks => tokio::runtime::Handle::current().metrics().num_workers(),
    };
    loaders.min(threads.max(std::thread::available_parallelism().map_or(1, |n| n.get())))
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
    let count = loaders.len();
    let schedule = Schedule::new(&plan.rate, plan.pacing, plan.limit, plan.seed);
    let stripes: Vec<_> = (0..count as u64).map(|i| plan.share.stripe(i, count as u64)).collect();
    let recorders = (0..recorder_count(count, plan.per_loader, plan.placement)).map(|_| Recorder::new(op_count)).collect();
    let slots = stripes.iter().map(|&stripe| LoaderSlot::new(schedule.clone().shared(stripe), stripe)).collect();
    let shared = Arc::new(Shared::new(clock, slots, recorders, plan.per_loader));
    let each = plan.each_loader_limit.unwrap_or(u64::MAX);
    let timer = match (plan.timer, plan.placement) {
        (TimerMode::Auto, Placement::Tasks) => TimerMode::Cheap,
        (mode, _) => mode,
    };
    let mut tasks = tokio::task::JoinSet::new();
    let keep = plan.keep_stripes;
    for (index, loader) in loaders.into_iter().enumerate() {
        let shared = Arc::clone(&shared);
        match plan.placement {
            Placement::Tasks => {
                tasks.spawn(loader_loop(shared, index, loader, keep, timer, each));
            }
            Placement::Threads => {
                tasks.spawn_blocking(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a loader thread needs a runtime");
                    runtime.block_on(loader_loop(shared, index, loader, keep, timer, each))
                });
            }
        }
    }
    Monitor::new(plan, op_count, Arc::clone(&shared)).run(tasks, stop, observer).await
}

/// Loader `index`'s loop: claims slots (its stripe's, or a busy stripe's) and runs them until no
/// slot is left for it, the run halts, or it has run `each`.
async fn loader_loop<L: Loader, C: Clock>(shared: Arc<Shared<C>>, index: usize, mut loader: L, keep_stripes: bool, timer: TimerMode, each: u64) -> L {
    let mine = &shared.loaders[index];
    let Ok(mut waiter) = shared.clock.waiter() else {
        // No timer could be made (out of file descriptors): this loader sits out; the others take
        // its stripe, or the monitor sees its backlog.
        mine.leave(keep_stripes);
        return loader;
    };
    let clock = shared.clock.clone();
    let origin = shared.origin;
    let mut steps = Steps::new(Arc::new(move || clock.now().saturating_sub(origin)));
    let mut claimer = Claimer::new(index, !keep_stripes);
    // The loader's service time, smoothed over its last few requests (none yet: slow).
    let mut service_ns = Nanos::MAX;
    let mut unyielded = 0u32;
    let mut ran = 0;
    // The time this loader last woke for: lateness is recorded only for slots it waited for (a slot
    // already due when taken was late because loaders were busy — backlog, the backend's doing —
    // not because the timer was late).
    let mut woke_for = None;
    loop {
        if ran == each {
            mine.retired.store(true, Relaxed);
            break;
        }
        unyielded += 1;
        if unyielded >= YIELD_EVERY {
            unyielded = 0;
            tokio::task::yield_now().await;
        }
        if shared.is_halted() {
            break;
        }
        // A slot taken already due starts now: a clock reading costs about as much as a null request.
        let start = shared.now();
        let (seq, intended) = match claimer.next(&shared, start) {
            Claim::Run { seq, slot: Slot::At(t) } => (seq, Some(t)),
            Claim::Run { seq, slot: Slot::Now } => (seq, None),
            Claim::WaitUntil(t) => {
                let precise = match timer {
                    TimerMode::Cheap => false,
                    TimerMode::Precise => true,
                    TimerMode::Auto => service_ns < FAST_SERVICE_NS,
                };
                if !wait_until(&shared, &mut waiter, start, t, precise).await {
                    break;
                }
                (woke_for, unyielded) = (Some(t), 0);
                continue;
            }
            Claim::Done => break,
        };
        let waited = intended.is_some() && std::mem::take(&mut woke_for) == intended;
        ran += 1;
        mine.started.store(ran, Relaxed);
        steps.clear();
        let result = loader.run(seq, &mut steps).await;
        let end = shared.now();
        service_ns = match service_ns {
            Nanos::MAX => end - start,
            s => s - s / 8 + (end - start) / 8,
        };
        {
            let mut recorder = shared.recorder(index).lock();
            match result {
                Ok(()) => recorder.record_ok(0, end - intended.unwrap_or(start).min(start), end - start),
                Err(class) => recorder.record_failure(0, class),
            }
            if let (Some(t), true) = (intended, waited) {
                recorder.record_lag(start.saturating_sub(t));
            }
            steps.drain_into(&mut recorder, intended.map_or(0, |t| start.saturating_sub(t)));
        }
        mine.completed.store(ran, Relaxed);
        if loader.aborted() {
            mine.leave(keep_stripes);
            shared.aborted.fetch_add(1, Relaxed);
            break;
        }
    }
    loader
}

/// Waits from `now` until `t`: on the timer for a long wait (to just before `t` when `precise`, then
/// spinning), yielding to other loaders for a short one. False if the run halted meanwhile.
async fn wait_until<C: Clock>(shared: &Shared<C>, waiter: &mut C::Waiter, now: Nanos, t: Nanos, precise: bool) -> bool {
    let spin = if precise { SPIN_WINDOW_NS } else { YIELD_BELOW_NS };
    if t - now >= spin {
        let wake = shared.origin + if precise { t - spin } else { t };
        if t - now >= WATCH_HALT_ABOVE_NS {
            tokio::select! {
                biased;
                _ = shared.halt.stopped() => return false,
                _ = waiter.wait_until(wake) => {}
            }
        } else {
            waiter.wait_until(wake).await;
        }
        if shared.is_halted() {
            return false;
        }
    }
    // The rest of a short or precise wait: yield to other loaders (a loader on a thread of its own spins).
    while shared.now() < t {
        tokio::task::yield_now().await;
    }
    true
}
