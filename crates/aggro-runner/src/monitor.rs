//! The monitor: interval boundaries, backlog, stop rules, the drain timeout.
//!
//! It wakes at each interval boundary and once a second in between (the
//! backlog rule is checked per second, as the DynamoDB/Spanner tool did), swaps every
//! recorder for an empty one, merges them, and hands the interval to the
//! [`Observer`]. Nothing per request passes through it.

use crate::books::Books;
use crate::loader::Loader;
use crate::plan::{RunPlan, StopReason};
use crate::shared::{RunOutcome, Shared};
use crate::stop::StopHandle;
use aggro_core::{Clock, DueCounter, Nanos, Waiter};
use aggro_stats::Recorder;
use std::sync::Arc;
use tokio::task::JoinSet;

const CHECK_EVERY_NS: Nanos = 1_000_000_000;
/// A run's last interval is left out when it is shorter than this and recorded nothing.
const EMPTY_TAIL_NS: Nanos = 1_000_000;
/// A run stops once every request that ended, interval after interval, failed for this long.
const FAILING_STOP_NS: Nanos = 10_000_000_000;

/// One finished interval, as the observer sees it.
#[derive(Debug)]
pub struct IntervalReport<'a> {
    /// 0-based interval number.
    pub index: usize,
    /// Start, in nanoseconds since the run's start.
    pub start_ns: Nanos,
    /// End, in nanoseconds since the run's start.
    pub end_ns: Nanos,
    /// Every loader's figures merged.
    pub merged: &'a Recorder,
    /// Each loader's own figures (the seed's per-loader view), when the plan keeps loaders apart
    /// ([`RunPlan::per_loader`]); empty otherwise.
    pub loaders: &'a [Recorder],
    /// Due requests not yet started at the end of the interval.
    pub backlog: u64,
    /// Requests the plan intended to have started by the end of the interval.
    pub due: u64,
    /// Requests started so far.
    pub started: u64,
    /// The planned rate at the end of the interval (None in a closed loop).
    pub planned_rate: Option<f64>,
    /// The largest backlog seen at a once-a-second check on the stripes of
    /// loaders that sat idle ([`behind_limit`]), 0 if none: due requests whose
    /// loader was free but did not take them means the generator, not the
    /// backend, fell behind its schedule.
    pub behind: u64,
}

/// The backlog a check must see on idle loaders' stripes to count as the
/// generator falling behind: more than one request per loader and more than
/// a millisecond of the schedule, so a loader caught between finishing one
/// request and taking the next is not mistaken for it.
pub fn behind_limit(loaders: usize, rate: Option<f64>) -> u64 {
    (loaders as u64).max((rate.unwrap_or(0.0) / 1_000.0) as u64)
}

/// Receives the run's progress.
pub trait Observer {
    /// Called at each interval boundary, and once for the final partial interval.
    fn on_interval(&mut self, report: &IntervalReport<'_>);
    /// Called about once a second with the elapsed time and the backlog.
    fn on_tick(&mut self, _elapsed_ns: Nanos, _backlog: u64) {}
}

/// An observer that ignores everything.
impl Observer for () {
    fn on_interval(&mut self, _: &IntervalReport<'_>) {}
}

pub(crate) struct Monitor<'p, C: Clock> {
    plan: &'p RunPlan,
    shared: Arc<Shared<C>>,
    /// Each loader's stripe's due count.
    due: DueCounter,
    spare: Vec<Recorder>,
    merged: Recorder,
    totals: Recorder,
    interval_index: usize,
    interval_start: Nanos,
    /// The interval's `behind` so far.
    behind: u64,
    /// Since when every request that ended has failed (None: one succeeded in the last interval).
    failing_since: Option<Nanos>,
}

impl<'p, C: Clock> Monitor<'p, C> {
    pub fn new(plan: &'p RunPlan, op_count: usize, shared: Arc<Shared<C>>) -> Self {
        let spare = (0..shared.recorders.len()).map(|_| Recorder::new(op_count)).collect();
        let stripes = shared.loaders.iter().map(|l| l.stripe).collect();
        Self {
            plan,
            shared,
            due: DueCounter::new(&plan.rate, plan.pacing, plan.limit, plan.seed, stripes),
            spare,
            merged: Recorder::new(op_count),
            totals: Recorder::new(op_count),
            interval_index: 0,
            interval_start: 0,
            behind: 0,
            failing_since: None,
        }
    }

    pub async fn run<L: Loader, O: Observer + ?Sized>(mut self, mut tasks: JoinSet<L>, stop: &StopHandle, observer: &mut O) -> RunOutcome<L> {
        let shared = Arc::clone(&self.shared);
        let mut waiter = shared.clock.waiter().expect("the monitor needs a timer");
        let interval = self.plan.interval_ns.max(1_000_000);
        let plan_end = self.plan.rate.duration_ns();
        // A count-limited run has handed out every slot once its stripes hold this worker's share of the limit.
        let all_taken = self.plan.limit.map(|l| self.plan.share.of_first(l));
        let mut next_interval = interval;
        let mut next_check = CHECK_EVERY_NS.min(interval);
        let mut reason: Option<StopReason> = None;
        let mut interrupted = false;
        let mut drain_deadline: Option<Nanos> = None;
        // The books when the run halted: a run cut short is judged against what was due then.
        let mut halted_books: Option<Books> = None;
        // Requests completed, and when that count last moved. In a run bounded by count alone, a
        // loader hung on a request keeps the rest of its stripe from being taken: once another
        // loader has finished, requests in flight with no completion for the drain timeout end it.
        let mut progress: (u64, Nanos) = (0, 0);
        let mut loaders = Vec::new();

        while !tasks.is_empty() {
            let wake = next_interval.min(next_check).min(drain_deadline.unwrap_or(Nanos::MAX));
            tokio::select! {
                _ = waiter.wait_until(shared.origin + wake) => {}
                _ = stop.stopped(), if reason.is_none() && !interrupted => interrupted = true,
                joined = tasks.join_next() => {
                    if let Some(Ok(loader)) = joined {
                        loaders.push(loader);
                    }
                    continue;
                }
            }
            let now = shared.now();
            let books = self.books(now);
            if interrupted && reason.is_none() {
                reason = Some(StopReason::Interrupted);
                halted_books = Some(books);
                shared.halt_now();
            }
            if now >= next_check {
                observer.on_tick(now, books.backlog);
                let (rule, rate) = (self.plan.backlog_rule, self.plan.rate.rate_at(now));
                if books.idle_backlog > behind_limit(shared.loaders.len(), rate) {
                    self.behind = self.behind.max(books.idle_backlog);
                }
                if reason.is_none() && rule.is_broken(books.backlog, rate) {
                    let limit = rule.limit(rate).expect("a broken rule has a limit");
                    reason = Some(StopReason::Backlog { backlog: books.backlog, limit });
                    halted_books = Some(books);
                    shared.halt_now();
                }
                next_check = now - now % CHECK_EVERY_NS + CHECK_EVERY_NS;
            }
            if now >= next_interval {
                let started_at = self.interval_start;
                self.flush(now, books, observer);
                next_interval += interval * ((now - next_interval) / interval + 1);
                if let Some(seconds) = self.failing_for(started_at, now)
                    && reason.is_none()
                {
                    reason = Some(StopReason::Failing { seconds });
                    halted_books = Some(books);
                    shared.halt_now();
                }
            }
            let stalled = books.started > books.completed && !loaders.is_empty() && plan_end.is_none();
            if books.completed > progress.0 || !stalled {
                progress = (books.completed, now);
            }
            let taken = all_taken.is_some_and(|all| books.issued >= all);
            let over = taken || reason.is_some() || plan_end.is_some_and(|end| now >= end);
            if over && drain_deadline.is_none() {
                drain_deadline = Some(now + self.plan.drain_ns);
            }
            if now - progress.1 >= self.plan.drain_ns && drain_deadline.is_none() {
                drain_deadline = Some(now);
            }
            if drain_deadline.is_some_and(|d| now >= d) {
                shared.halt_now();
                let abandoned = books.started.saturating_sub(books.completed);
                // Tasks can be cancelled; a loader thread stuck in a blocking
                // call cannot, so it is detached and left to finish alone.
                if self.plan.placement == crate::Placement::Threads {
                    tasks.detach_all();
                } else {
                    tasks.abort_all();
                    while let Some(joined) = tasks.join_next().await {
                        if let Ok(loader) = joined {
                            loaders.push(loader);
                        }
                    }
                }
                if abandoned > 0 && !matches!(reason, Some(StopReason::Interrupted)) {
                    reason = Some(StopReason::DrainTimeout { abandoned });
                }
            }
        }

        let now = shared.now();
        let books = self.books(now);
        // A run cut short is judged against what was due when it was stopped,
        // not against what fell due while in-flight requests drained.
        let due = halted_books.map_or(books.due, |b| b.due).max(books.started);
        let books = Books { due, backlog: due - books.started, ..books };
        // The last boundary may have closed everything just before the run ended: a final interval with
        // nothing in it and next to no length would only print a line of zeros (its CPU share divided by
        // almost nothing).
        let nothing_since = now.saturating_sub(self.interval_start) < EMPTY_TAIL_NS && self.shared.recorders.iter().all(|r| r.0.lock().is_empty());
        if self.interval_index == 0 || !nothing_since {
            self.flush(now, books, observer);
        }
        RunOutcome {
            loaders,
            stop_reason: reason.unwrap_or(match shared.aborted.load(std::sync::atomic::Ordering::Relaxed) {
                0 => StopReason::Completed,
                loaders => StopReason::Aborted { loaders },
            }),
            totals: self.totals,
            due,
            started: books.started,
            completed: books.completed,
            backlog_at_end: books.backlog,
            elapsed_ns: now,
        }
    }

    /// The books at `now`.
    fn books(&mut self, now: Nanos) -> Books {
        self.due.advance(now);
        Books::read(&self.shared.loaders, &self.due)
    }

    /// After the interval `start..now` was flushed: the seconds every request has failed for, once
    /// that reaches [`FAILING_STOP_NS`].
    fn failing_for(&mut self, start: Nanos, now: Nanos) -> Option<u64> {
        let whole = &self.merged.ops[0];
        if whole.ok > 0 || whole.errors() == 0 {
            self.failing_since = None;
            return None;
        }
        let since = *self.failing_since.get_or_insert(start);
        (now - since >= FAILING_STOP_NS).then_some((now - since) / 1_000_000_000)
    }

    fn flush<O: Observer + ?Sized>(&mut self, now: Nanos, books: Books, observer: &mut O) {
        for (live, spare) in self.shared.recorders.iter().zip(self.spare.iter_mut()) {
            std::mem::swap(&mut *live.0.lock(), spare);
        }
        self.merged.reset();
        for r in &self.spare {
            self.merged.merge(r);
        }
        observer.on_interval(&IntervalReport {
            index: self.interval_index,
            start_ns: self.interval_start,
            end_ns: now,
            merged: &self.merged,
            loaders: if self.plan.per_loader { &self.spare } else { &[] },
            backlog: books.backlog,
            due: books.due,
            started: books.started,
            planned_rate: self.plan.rate.rate_at(now),
            behind: std::mem::take(&mut self.behind),
        });
        self.totals.merge(&self.merged);
        self.spare.iter_mut().for_each(Recorder::reset);
        self.interval_index += 1;
        self.interval_start = now;
    }
}
