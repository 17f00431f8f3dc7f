//! The executor on a paused tokio clock: deterministic, instant, exact.

use aggro_core::{ErrorClass, Nanos, Pacing, RatePlan, TokioClock};
use aggro_runner::{BacklogRule, IntervalReport, Loader, Observer, Placement, RunPlan, Steps, StopHandle, StopReason, run};
use std::time::Duration;

const MS: Nanos = 1_000_000;
const S: Nanos = 1_000_000_000;

/// A target whose requests take `service`, except that request `stall_at`
/// takes `stall` instead.
struct Stalling {
    service: Duration,
    stall_at: Option<u64>,
    stall: Duration,
}

impl Loader for Stalling {
    async fn run(&mut self, seq: u64, _steps: &mut Steps) -> Result<(), ErrorClass> {
        let d = if Some(seq) == self.stall_at { self.stall } else { self.service };
        tokio::time::sleep(d).await;
        Ok(())
    }
}

#[derive(Default)]
struct Log {
    ticks: Vec<(Nanos, u64)>,
    intervals: Vec<(u64, u64, u64)>, // (ok, max latency, backlog)
    /// Each interval's per-loader ok counts (empty unless the plan keeps loaders apart).
    per_loader: Vec<Vec<u64>>,
}

impl Observer for Log {
    fn on_interval(&mut self, r: &IntervalReport<'_>) {
        self.intervals.push((r.merged.ops[0].ok, r.merged.ops[0].latency.max(), r.backlog));
        self.per_loader.push(r.loaders.iter().map(|l| l.ops[0].ok).collect());
    }
    fn on_tick(&mut self, now: Nanos, backlog: u64) {
        self.ticks.push((now, backlog));
    }
}

fn plan(rate: f64, seconds: u64) -> RunPlan {
    RunPlan {
        rate: RatePlan::fixed(rate, seconds * S),
        pacing: Pacing::Even,
        limit: None,
        interval_ns: S,
        backlog_rule: BacklogRule::Off,
        drain_ns: 10 * S,
        seed: 1,
        placement: Placement::Tasks,
        share: aggro_core::Share::WHOLE,
        // Precise waits spin, and a spin never lets a paused clock advance.
        timer: aggro_runner::TimerMode::Cheap,
        per_loader: false,
        each_loader_limit: None,
        keep_stripes: false,
    }
}

#[tokio::test(start_paused = true)]
async fn a_stall_shows_in_the_latency_of_every_request_scheduled_during_it() {
    // 100/s for 4 s, one loader, 1 ms requests; request 100 (t = 1 s) stalls 1 s.
    let loader = Stalling { service: Duration::from_millis(1), stall_at: Some(100), stall: Duration::from_secs(1) };
    let mut log = Log::default();
    let out = run(&plan(100.0, 4), 1, vec![loader], TokioClock::start(), &StopHandle::new(), &mut log).await;

    assert_eq!(out.stop_reason, StopReason::Completed);
    assert_eq!(out.completed, 400);
    assert_eq!(out.due, 400);
    assert_eq!(out.backlog_at_end, 0);
    let latency = &out.totals.ops[0].latency;
    // The stalled request itself took 1 s; the 99 scheduled behind it waited
    // for it, and while the backlog drains (1 ms each) a few more fall due
    // behind it: about 105 requests are slow — not one.
    assert!(latency.max() >= 1_000 * MS, "max {}", latency.max());
    let slow = latency.count_between(50 * MS, 2_000 * MS);
    assert!((100..=112).contains(&slow), "{slow} slow requests");
    // Service time, by contrast, shows a single slow request.
    let service = &out.totals.ops[0].service;
    assert_eq!(service.count_between(50 * MS, 2_000 * MS), 1);
}

#[tokio::test(start_paused = true)]
async fn backlog_rises_during_a_stall_and_falls_after() {
    let loader = Stalling { service: Duration::from_millis(1), stall_at: Some(100), stall: Duration::from_millis(1500) };
    let mut log = Log::default();
    run(&plan(100.0, 5), 1, vec![loader], TokioClock::start(), &StopHandle::new(), &mut log).await;
    let at = |t: Nanos| log.ticks.iter().find(|(n, _)| *n >= t).map(|(_, b)| *b).unwrap();
    // A slot falling due at the very tick may not have been taken yet.
    assert!(at(S) <= 1);
    let peak = log.ticks.iter().map(|(_, b)| *b).max().unwrap();
    assert!((99..=151).contains(&peak), "peak backlog {peak}");
    assert!(at(4 * S) <= 1, "ticks {:?}", log.ticks);
}

#[tokio::test(start_paused = true)]
async fn a_backend_that_cannot_keep_up_is_stopped_by_the_backlog_rule() {
    // 100/s asked, each request takes 20 ms with one loader: 50/s served.
    let loader = Stalling { service: Duration::from_millis(20), stall_at: None, stall: Duration::ZERO };
    let mut p = plan(100.0, 60);
    p.backlog_rule = BacklogRule::PerSecondRate;
    let out = run(&p, 1, vec![loader], TokioClock::start(), &StopHandle::new(), &mut Log::default()).await;
    match out.stop_reason {
        StopReason::Backlog { backlog, limit } => {
            assert_eq!(limit, 100);
            assert!(backlog > 100);
        }
        other => panic!("expected a backlog stop, got {other:?}"),
    }
    assert!(out.elapsed_ns < 10 * S, "stopped after {} ns", out.elapsed_ns);
    // Everything started finished, and the books balance.
    assert_eq!(out.completed, out.started);
    assert_eq!(out.due, out.started + out.backlog_at_end);
}

#[tokio::test(start_paused = true)]
async fn loaders_share_the_schedule_and_the_books_balance() {
    let loaders: Vec<_> = (0..8).map(|_| Stalling { service: Duration::from_millis(30), stall_at: None, stall: Duration::ZERO }).collect();
    let mut log = Log::default();
    let out = run(&plan(200.0, 3), 1, loaders, TokioClock::start(), &StopHandle::new(), &mut log).await;
    assert_eq!(out.completed, 600);
    assert_eq!(out.loaders.len(), 8);
    let per_interval: u64 = log.intervals.iter().map(|i| i.0).sum();
    assert_eq!(per_interval, 600);
    // 8 loaders × 1/30 ms = 266/s of capacity: no request waited for a slot.
    assert!(out.totals.ops[0].latency.max() < 32 * MS);
}

/// Loaders share a few recorders unless the plan keeps them apart; the
/// merged figures are the same either way, and kept apart each loader's own
/// add up to them.
#[tokio::test(start_paused = true)]
async fn loaders_share_recorders_unless_kept_apart() {
    for per_loader in [false, true] {
        let loaders: Vec<_> = (0..40).map(|_| Stalling { service: Duration::from_millis(30), stall_at: None, stall: Duration::ZERO }).collect();
        let mut p = plan(400.0, 3);
        p.per_loader = per_loader;
        let mut log = Log::default();
        let out = run(&p, 1, loaders, TokioClock::start(), &StopHandle::new(), &mut log).await;
        assert_eq!(out.completed, 1200);
        assert_eq!(out.totals.ops[0].ok, 1200);
        assert_eq!(log.intervals.iter().map(|i| i.0).sum::<u64>(), 1200);
        for (interval, loaders) in log.intervals.iter().zip(&log.per_loader) {
            if per_loader {
                assert_eq!(loaders.len(), 40);
                assert_eq!(loaders.iter().sum::<u64>(), interval.0);
            } else {
                assert!(loaders.is_empty());
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn closed_loop_runs_a_fixed_count() {
    let loaders: Vec<_> = (0..3).map(|_| Stalling { service: Duration::from_millis(10), stall_at: None, stall: Duration::ZERO }).collect();
    let mut p = plan(1.0, 1);
    p.rate = RatePlan::Max { duration_ns: None };
    p.limit = Some(90);
    let out = run(&p, 1, loaders, TokioClock::start(), &StopHandle::new(), &mut ()).await;
    assert_eq!(out.completed, 90);
    assert_eq!(out.elapsed_ns, 300 * MS);
}

#[tokio::test(start_paused = true)]
async fn stop_ends_a_run_early_and_it_still_reports() {
    let loader = Stalling { service: Duration::from_millis(1), stall_at: None, stall: Duration::ZERO };
    let stop = StopHandle::new();
    let stopper = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        stopper.stop();
    });
    let mut log = Log::default();
    let out = run(&plan(10.0, 3600), 1, vec![loader], TokioClock::start(), &stop, &mut log).await;
    assert_eq!(out.stop_reason, StopReason::Interrupted);
    assert!((24..=26).contains(&out.completed), "{}", out.completed);
    assert_eq!(log.intervals.len(), 3, "two whole intervals and the partial last one");
}

#[tokio::test(start_paused = true)]
async fn a_hung_backend_is_abandoned_after_the_drain_timeout() {
    let loader = Stalling { service: Duration::from_millis(1), stall_at: Some(5), stall: Duration::from_secs(3600) };
    let mut p = plan(10.0, 2);
    p.drain_ns = 3 * S;
    let out = run(&p, 1, vec![loader], TokioClock::start(), &StopHandle::new(), &mut ()).await;
    assert_eq!(out.stop_reason, StopReason::DrainTimeout { abandoned: 1 });
    assert!(out.elapsed_ns <= 6 * S);
    assert_eq!(out.completed, 5);
}

/// Each loader runs its own stripe: of 3 loaders, loader i runs requests i, i + 3, i + 6, …
#[tokio::test(start_paused = true)]
async fn each_loader_runs_every_nth_request_of_the_run() {
    struct Seen(Vec<u64>);
    impl Loader for Seen {
        async fn run(&mut self, seq: u64, _steps: &mut Steps) -> Result<(), ErrorClass> {
            self.0.push(seq);
            tokio::time::sleep(Duration::from_millis(1)).await;
            Ok(())
        }
    }
    let mut p = plan(100.0, 1);
    p.limit = Some(30);
    let out = run(&p, 1, vec![Seen(Vec::new()), Seen(Vec::new()), Seen(Vec::new())], TokioClock::start(), &StopHandle::new(), &mut ()).await;
    let mut seen: Vec<Vec<u64>> = out.loaders.into_iter().map(|l| l.0).collect();
    seen.sort();
    let stripe = |i: u64| (0..10).map(|k| i + 3 * k).collect::<Vec<u64>>();
    assert_eq!(seen, vec![stripe(0), stripe(1), stripe(2)]);
}

/// In a run bounded by count alone, a loader hung on a request leaves the rest of its stripe to the
/// others; the drain timeout without a completion then abandons its request and ends the run.
#[tokio::test(start_paused = true)]
async fn a_loader_hung_in_a_count_bounded_run_is_abandoned() {
    let loaders = vec![
        Stalling { service: Duration::from_millis(1), stall_at: None, stall: Duration::ZERO },
        Stalling { service: Duration::from_millis(1), stall_at: Some(3), stall: Duration::from_secs(3600) },
    ];
    let mut p = plan(1.0, 1);
    p.rate = RatePlan::Max { duration_ns: None };
    p.limit = Some(100);
    p.drain_ns = 3 * S;
    let out = run(&p, 1, loaders, TokioClock::start(), &StopHandle::new(), &mut ()).await;
    assert_eq!(out.stop_reason, StopReason::DrainTimeout { abandoned: 1 });
    assert_eq!(out.completed, 99, "every request but the one loader 1 hung on");
    assert!(out.elapsed_ns <= 5 * S, "{}", out.elapsed_ns);
}

/// Two loaders at 100/s, 1 ms requests; request 10 stalls for a second. Slots of the stalled
/// loader's stripe that fall due meanwhile go to the idle loader, on time, as a pool would run them;
/// with stripes kept (an MMO zone's periods are its own) they wait for their loader.
async fn slow_requests_with_one_stalled_loader(keep_stripes: bool) -> u64 {
    let loader = || Stalling { service: Duration::from_millis(1), stall_at: Some(10), stall: Duration::from_secs(1) };
    let mut p = plan(100.0, 3);
    p.keep_stripes = keep_stripes;
    let out = run(&p, 1, vec![loader(), loader()], TokioClock::start(), &StopHandle::new(), &mut ()).await;
    assert_eq!((out.completed, out.backlog_at_end), (300, 0));
    out.totals.ops[0].latency.count_between(10 * MS, 2_000 * MS)
}

#[tokio::test(start_paused = true)]
async fn an_idle_loader_runs_the_due_slots_of_a_stalled_one() {
    assert_eq!(slow_requests_with_one_stalled_loader(false).await, 1, "only the stalled request is slow");
    let kept = slow_requests_with_one_stalled_loader(true).await;
    assert!((45..=55).contains(&kept), "{kept} slow requests behind the stalled one");
}

/// However slots move between loaders, every slot of the run is run once: four loaders at 200/s,
/// every 7th request slow enough that its loader's next slots go to others.
#[tokio::test(start_paused = true)]
async fn slots_taken_from_busy_loaders_are_each_run_once() {
    struct Uneven(Vec<u64>);
    impl Loader for Uneven {
        async fn run(&mut self, seq: u64, _steps: &mut Steps) -> Result<(), ErrorClass> {
            self.0.push(seq);
            tokio::time::sleep(Duration::from_millis(if seq.is_multiple_of(7) { 40 } else { 1 })).await;
            Ok(())
        }
    }
    let out = run(&plan(200.0, 2), 1, (0..4).map(|_| Uneven(Vec::new())).collect(), TokioClock::start(), &StopHandle::new(), &mut ()).await;
    let mut seen: Vec<u64> = out.loaders.iter().flat_map(|l| l.0.iter().copied()).collect();
    // A loader ran slots of another's stripe when its slots are not all of one stripe.
    let away = out.loaders.iter().filter(|l| l.0.iter().any(|s| s % 4 != l.0[0] % 4)).count();
    seen.sort();
    assert_eq!(seen, (0..400).collect::<Vec<u64>>());
    assert!(away > 0, "no loader ran another's slot");
}

/// A loader with a timed sub-step and a retried conflict every request.
struct TwoSteps;

impl Loader for TwoSteps {
    async fn run(&mut self, _seq: u64, steps: &mut Steps) -> Result<(), ErrorClass> {
        steps.count_failure(1, ErrorClass::Conflict);
        steps
            .time(1, async {
                tokio::time::sleep(Duration::from_millis(2)).await;
                Ok(())
            })
            .await?;
        steps
            .time(2, async {
                tokio::time::sleep(Duration::from_millis(3)).await;
                Ok(())
            })
            .await
    }
}

#[tokio::test(start_paused = true)]
async fn steps_are_timed_and_conflicts_counted_apart() {
    let out = run(&plan(10.0, 1), 3, vec![TwoSteps], TokioClock::start(), &StopHandle::new(), &mut ()).await;
    let ops = &out.totals.ops;
    assert_eq!((ops[0].ok, ops[1].ok, ops[2].ok), (10, 10, 10));
    assert_eq!(ops[1].conflicts(), 10);
    assert_eq!(ops[1].errors(), 0);
    assert_eq!(ops[1].service.max() / MS, 2);
    assert_eq!(ops[2].service.max() / MS, 3);
    assert_eq!(ops[0].service.max() / MS, 5);
}

/// A loader for which request `block_at` blocks the thread (as an embedded
/// database's call does) instead of awaiting.
struct Blocking {
    block_at: Option<u64>,
}

impl Loader for Blocking {
    async fn run(&mut self, seq: u64, _steps: &mut Steps) -> Result<(), ErrorClass> {
        if Some(seq) == self.block_at {
            std::thread::sleep(Duration::from_millis(300));
        }
        Ok(())
    }
}

/// The largest timer lateness of a real-clock run where one loader blocks.
async fn lateness_with_one_blocked_loader(placement: Placement) -> u64 {
    let mut p = plan(200.0, 1);
    p.placement = placement;
    // Whichever loader takes request 20 blocks; the other should keep time.
    let loaders = vec![Blocking { block_at: Some(20) }, Blocking { block_at: Some(20) }];
    let out = run(&p, 1, loaders, aggro_core::MonotonicClock::start(), &StopHandle::new(), &mut ()).await;
    assert_eq!(out.completed, 200);
    out.totals.lag.max()
}

#[tokio::test(flavor = "current_thread")]
async fn a_blocking_call_delays_only_its_own_loader_when_loaders_have_threads() {
    // Sharing one thread, the other loader's timer waits out the 300 ms block.
    let shared = lateness_with_one_blocked_loader(Placement::Tasks).await;
    assert!(shared > 100 * MS, "lateness {shared} ns");
    // On threads of their own, it keeps time (generous bound for a busy CI machine).
    let own = lateness_with_one_blocked_loader(Placement::Threads).await;
    assert!(own < 50 * MS, "lateness {own} ns");
}

/// A target that answers every request after `from` requests with an error.
struct FailingFrom {
    from: u64,
}

impl Loader for FailingFrom {
    async fn run(&mut self, seq: u64, _steps: &mut Steps) -> Result<(), ErrorClass> {
        tokio::time::sleep(Duration::from_millis(1)).await;
        if seq >= self.from { Err(ErrorClass::Server) } else { Ok(()) }
    }
}

#[tokio::test(start_paused = true)]
async fn a_run_whose_every_request_fails_for_ten_seconds_stops_by_itself() {
    // 100/s for 60 s; from t = 2 s on every request fails.
    let mut log = Log::default();
    let out = run(&plan(100.0, 60), 1, vec![FailingFrom { from: 200 }], TokioClock::start(), &StopHandle::new(), &mut log).await;
    assert_eq!(out.stop_reason, StopReason::Failing { seconds: 10 });
    assert_eq!(out.totals.ops[0].ok, 200);
    assert!((1_000..=1_300).contains(&out.totals.ops[0].errors()), "{} errors", out.totals.ops[0].errors());
    // A single success in an interval starts the count again.
    let mut log = Log::default();
    struct Flaky;
    impl Loader for Flaky {
        async fn run(&mut self, seq: u64, _steps: &mut Steps) -> Result<(), ErrorClass> {
            if seq.is_multiple_of(150) { Ok(()) } else { Err(ErrorClass::Server) }
        }
    }
    let out = run(&plan(100.0, 20), 1, vec![Flaky], TokioClock::start(), &StopHandle::new(), &mut log).await;
    assert_eq!(out.stop_reason, StopReason::Completed);
}

/// A request of two timed steps, 1 ms each (ops 1 and 2), the whole recorded as op 3 too; request
/// `stall_at`'s first step takes a second.
struct StallingSteps {
    stall_at: u64,
}

impl Loader for StallingSteps {
    async fn run(&mut self, seq: u64, steps: &mut Steps) -> Result<(), ErrorClass> {
        let begun = steps.now();
        let first = if seq == self.stall_at { Duration::from_secs(1) } else { Duration::from_millis(1) };
        steps
            .time(1, async {
                tokio::time::sleep(first).await;
                Ok(())
            })
            .await?;
        steps
            .time(2, async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                Ok(())
            })
            .await?;
        steps.record_since(3, begun);
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_step_and_a_transaction_count_their_latency_from_the_intended_start() {
    // 100/s for 4 s; request 100's first step stalls a second, and ~100 requests queue behind it.
    let mut log = Log::default();
    let out = run(&plan(100.0, 4), 4, vec![StallingSteps { stall_at: 100 }], TokioClock::start(), &StopHandle::new(), &mut log).await;
    let (whole, first, second, txn) = (&out.totals.ops[0], &out.totals.ops[1], &out.totals.ops[2], &out.totals.ops[3]);
    // The queue shows in the first step's and the transaction's latency as in the request's…
    for op in [first, txn] {
        assert_eq!(op.latency.count_between(50 * MS, 2_100 * MS), whole.latency.count_between(50 * MS, 2_100 * MS), "as many slow as whole requests");
        assert!(op.latency.value_at_quantile(0.99) >= 500 * MS, "p99 {}", op.latency.value_at_quantile(0.99));
    }
    // …not in the second step's, nor in any step's service time.
    assert!(second.latency.max() < 10 * MS, "second step {}", second.latency.max());
    assert!(first.service.count_between(50 * MS, 2_100 * MS) == 1, "one slow first step");
}
