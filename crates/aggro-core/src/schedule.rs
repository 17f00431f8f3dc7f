//! Load shapes as one iterator of intended start times.
//!
//! A [`Schedule`] turns a [`RatePlan`] (closed loop, or stages of a
//! piecewise-linear rate) and a [`Pacing`] into the sequence of instants at
//! which requests are *meant* to start. The executor takes slots from it in
//! order; it knows nothing else about the shape of the load.
//!
//! The arithmetic works in *count space*: `C(t)` is the number of requests the
//! plan asks for by time `t` (the integral of the rate). Even pacing puts
//! request `i` at `C⁻¹(i)`; Poisson pacing puts arrivals at `C⁻¹(E₁+…+Eᵢ)` with
//! `Eᵢ ~ Exp(1)`, which is exactly a Poisson process of the (time-varying)
//! rate; per-second pacing (the DynamoDB/Spanner tool's) starts all of a second's
//! requests at the start of that second.
//!
//! A run is cut into [`Share`]s — workers, and each worker's loaders — that each
//! take every n-th slot. Even and per-second slots are the same whatever the cut.
//! Poisson arrivals are drawn per share: share `i` of `n` is a Poisson process of
//! `1/n` of the rate (`C⁻¹(n·(E₁+…+Eᵢ))`, its own seeded stream), and `n`
//! independent Poisson processes of rate `r/n` together are exactly one of rate
//! `r`. A share thus draws only its own arrivals, however many shares there are;
//! the price is that the arrival times depend on the number of shares (workers ×
//! loaders), not on the seed alone.

use crate::clock::Nanos;
use crate::rng::Rng;
use serde::{Deserialize, Serialize};

const NS: f64 = 1e9;

/// How requests are spread within the rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Pacing {
    /// Evenly spaced start times.
    #[default]
    Even,
    /// All of a second's requests intended at the start of that second (after the DynamoDB/Spanner tool).
    Second,
    /// Exponential gaps: a Poisson arrival process.
    Poisson,
}

/// One stage of a rate plan: the rate moves linearly from `start_rate` to
/// `end_rate` over `duration`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    /// Length of the stage in nanoseconds.
    pub duration_ns: Nanos,
    /// Requests per second at the start of the stage.
    pub start_rate: f64,
    /// Requests per second at its end.
    pub end_rate: f64,
}

/// What the run asks for over time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum RatePlan {
    /// Closed loop: every loader starts its next request as soon as the last ends.
    Max {
        /// Run length in nanoseconds, if bounded by time.
        duration_ns: Option<Nanos>,
    },
    /// Open loop: intended start times follow these stages in turn.
    Stages {
        /// The stages, run one after another.
        stages: Vec<Stage>,
    },
}

impl RatePlan {
    /// A constant rate for a duration.
    pub fn fixed(rate: f64, duration_ns: Nanos) -> Self {
        RatePlan::Stages { stages: vec![Stage { duration_ns, start_rate: rate, end_rate: rate }] }
    }

    /// Parses ramp stages as `30s:500,60s:2000`: each ramps linearly from the
    /// previous stage's rate (from `initial_rate` for the first) to its own.
    /// Write `0s:500` first to start at 500 at once.
    pub fn parse_stages(text: &str, initial_rate: f64) -> Result<Self, String> {
        let mut stages = Vec::new();
        let mut previous = initial_rate;
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (duration, rate) = part.split_once(':').ok_or_else(|| format!("bad stage {part:?}: expected DURATION:RATE such as 30s:500"))?;
            let duration = crate::units::parse_duration(duration)?;
            let rate: f64 = rate
                .trim()
                .parse()
                .ok()
                .filter(|r: &f64| r.is_finite() && *r >= 0.0)
                .ok_or_else(|| format!("bad stage {part:?}: the rate must be a number ≥ 0"))
                .and_then(|r| crate::units::check_rate(r, &format!("bad stage {part:?}")))?;
            stages.push(Stage { duration_ns: duration.as_nanos() as Nanos, start_rate: previous, end_rate: rate });
            previous = rate;
        }
        if stages.is_empty() {
            return Err("no stages given: expected DURATION:RATE[,DURATION:RATE…]".into());
        }
        if stages.iter().all(|s| s.start_rate == 0.0 && s.end_rate == 0.0) {
            return Err("the stages ask for no requests at all".into());
        }
        Ok(RatePlan::Stages { stages })
    }

    /// Total length in nanoseconds, if bounded.
    pub fn duration_ns(&self) -> Option<Nanos> {
        match self {
            RatePlan::Max { duration_ns } => *duration_ns,
            RatePlan::Stages { stages } => Some(stages.iter().map(|s| s.duration_ns).sum()),
        }
    }

    /// The planned rate at time `t` (None in a closed loop).
    pub fn rate_at(&self, t: Nanos) -> Option<f64> {
        let RatePlan::Stages { stages } = self else { return None };
        let mut start = 0;
        for s in stages {
            if t < start + s.duration_ns {
                let f = (t - start) as f64 / s.duration_ns as f64;
                return Some(s.start_rate + (s.end_rate - s.start_rate) * f);
            }
            start += s.duration_ns;
        }
        stages.last().map(|s| s.end_rate)
    }
}

/// This generator's part of a run split across workers (`--worker I/N`):
/// the slots whose number is `index` modulo `of`. Requests are derived from
/// their slot number, so the shards of a run together make exactly the
/// requests, at exactly the times, of the same run on one machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    /// This worker, from 0.
    pub index: u64,
    /// Workers in all.
    pub of: u64,
}

impl Default for Share {
    fn default() -> Self {
        Self::WHOLE
    }
}

impl Share {
    /// The whole run on one generator.
    pub const WHOLE: Share = Share { index: 0, of: 1 };

    /// Worker `index` (from 0) of `of`; `None` unless `index < of`.
    pub fn new(index: u64, of: u64) -> Option<Self> {
        (index < of).then_some(Self { index, of })
    }

    /// How many of the first `global` slots are this worker's.
    pub fn of_first(&self, global: u64) -> u64 {
        global.saturating_sub(self.index).div_ceil(self.of)
    }

    /// Stripe `index` of `of` within this share: every `of`-th of its slots, starting at its
    /// `index`-th — a loader's part of a worker's part, as a worker's is of the whole run.
    pub fn stripe(&self, index: u64, of: u64) -> Share {
        debug_assert!(index < of, "stripe {index} of {of}");
        Share { index: self.index + self.of * index, of: self.of * of }
    }

    /// This worker's block of `total` things (bots, rooms) numbered from 0, as a half-open range: blocks
    /// in worker order, the first `total % of` workers taking one more.
    pub fn range(&self, total: u64) -> std::ops::Range<u64> {
        let (each, extra) = (total / self.of, total % self.of);
        let start = self.index * each + self.index.min(extra);
        start..start + each + u64::from(self.index < extra)
    }
}

/// What [`Schedule::take_due`] finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take {
    /// A slot due by now, taken.
    Slot {
        /// Its number in the whole run.
        seq: u64,
        /// Its time.
        slot: Slot,
    },
    /// The next slot falls due at this time; nothing was taken.
    Wait(Nanos),
    /// No slot is left.
    Ended,
}

/// One slot of the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Start at this instant (open loop); latency counts from it.
    At(Nanos),
    /// Start now (closed loop); latency counts from the actual start.
    Now,
}

/// A stage with its position in time and count space precomputed.
#[derive(Clone, Copy, Debug)]
struct Span {
    start_ns: Nanos,
    end_ns: Nanos,
    /// `C` at the start of the span.
    count_before: f64,
    /// Requests in the span.
    count: f64,
    /// Rate at the start, per second.
    rate: f64,
    /// Change of rate per second.
    slope: f64,
}

impl Span {
    /// Seconds into the span at which the cumulative count reaches `d`.
    fn seconds_for(&self, d: f64) -> f64 {
        // Solves slope/2·τ² + rate·τ = d in the form that is stable when
        // either slope or rate is zero.
        let root = (self.rate * self.rate + 2.0 * self.slope * d).max(0.0).sqrt();
        2.0 * d / (self.rate + root)
    }

    fn count_at(&self, t: Nanos) -> f64 {
        let tau = (t.min(self.end_ns) - self.start_ns) as f64 / NS;
        self.count_before + self.rate * tau + self.slope * tau * tau / 2.0
    }
}

/// The iterator of slots; cheap to clone (the executor clones it to count backlog).
#[derive(Clone, Debug)]
pub struct Schedule {
    spans: std::sync::Arc<[Span]>,
    pacing: Pacing,
    closed_loop_end: Option<Nanos>,
    closed_loop: bool,
    limit: Option<u64>,
    rng: Rng,
    /// Position in count space of the next slot of the whole run.
    position: f64,
    span_index: usize,
    /// Slots handed out by this generator.
    issued: u64,
    /// Slots of the whole run passed so far (this generator's and the other workers'; even and
    /// per-second pacing).
    passed: u64,
    seed: u64,
    share: Share,
    closed: bool,
}

impl Schedule {
    /// A schedule for `plan`, at most `limit` requests, random choices from `seed`.
    pub fn new(plan: &RatePlan, pacing: Pacing, limit: Option<u64>, seed: u64) -> Self {
        let mut spans = Vec::new();
        let (closed_loop, closed_loop_end) = match plan {
            RatePlan::Max { duration_ns } => (true, *duration_ns),
            RatePlan::Stages { stages } => {
                let (mut start_ns, mut count_before) = (0, 0.0);
                for s in stages {
                    let seconds = s.duration_ns as f64 / NS;
                    let slope = if seconds > 0.0 { (s.end_rate - s.start_rate) / seconds } else { 0.0 };
                    let count = (s.start_rate + s.end_rate) / 2.0 * seconds;
                    spans.push(Span { start_ns, end_ns: start_ns + s.duration_ns, count_before, count, rate: s.start_rate, slope });
                    start_ns += s.duration_ns;
                    count_before += count;
                }
                (false, None)
            }
        };
        let mut schedule = Self {
            spans: spans.into(),
            pacing,
            closed_loop_end,
            closed_loop,
            limit,
            rng: Rng::seeded(seed),
            position: 0.0,
            span_index: 0,
            issued: 0,
            passed: 0,
            seed,
            share: Share::WHOLE,
            closed: false,
        };
        schedule.draw_first();
        schedule
    }

    /// A Poisson share's stream and first arrival (see the module's docs).
    fn draw_first(&mut self) {
        if self.pacing == Pacing::Poisson {
            self.rng = Rng::stream(self.seed ^ self.share.of.wrapping_mul(0x9E37_79B9_7F4A_7C15), self.share.index);
            self.position = 0.0;
            self.step();
        }
    }

    /// The same schedule, handing out only `share`'s slots.
    pub fn shared(mut self, share: Share) -> Self {
        self.share = share;
        self.draw_first();
        self
    }

    /// The number (in the whole run) of the slot the next [`Schedule::next`] hands out:
    /// what a loader derives its request from.
    pub fn next_seq(&self) -> u64 {
        self.share.index + self.share.of * self.issued
    }

    /// Requests handed out so far.
    pub fn issued(&self) -> u64 {
        self.issued
    }

    /// Ends the schedule: every later [`Schedule::next`] returns `None`.
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// Whether the schedule has ended.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The next slot, or `None` once the plan (or the limit) is exhausted.
    /// `now` is only consulted by a time-bounded closed loop.
    pub fn next(&mut self, now: Nanos) -> Option<Slot> {
        let slot = self.upcoming(now)?;
        self.pass();
        Some(slot)
    }

    /// The next slot if it is due by `now`, taken; otherwise when it falls due, or that the schedule
    /// has ended. A loader looks at its stripe this way, and may look at another's.
    #[inline]
    pub fn take_due(&mut self, now: Nanos) -> Take {
        match self.upcoming(now) {
            None => Take::Ended,
            Some(Slot::At(t)) if t > now => Take::Wait(t),
            Some(slot) => {
                let seq = self.next_seq();
                self.pass();
                Take::Slot { seq, slot }
            }
        }
    }

    /// The next slot without taking it; `None` (and the schedule closed) once it has ended.
    #[inline]
    fn upcoming(&mut self, now: Nanos) -> Option<Slot> {
        if self.is_exhausted() {
            return None;
        }
        if self.closed_loop {
            if self.closed_loop_end.is_some_and(|end| now >= end) {
                self.closed = true;
                return None;
            }
            return Some(Slot::Now);
        }
        let Some(at) = self.peek_time() else {
            self.closed = true;
            return None;
        };
        Some(Slot::At(at))
    }

    /// Hands out the slot [`Schedule::upcoming`] returned.
    #[inline]
    fn pass(&mut self) {
        if !self.closed_loop {
            self.step();
        }
        self.issued += 1;
    }

    /// Whether no slot is left: closed, or the limit reached (which closes it).
    fn is_exhausted(&mut self) -> bool {
        if self.limit.is_some_and(|l| self.next_seq() >= l) {
            self.closed = true;
        }
        self.closed
    }

    /// The intended time of the next slot (open loop), None past the end of the plan.
    fn peek_time(&mut self) -> Option<Nanos> {
        self.skip_to(self.next_seq());
        let at = self.time_of(self.position)?;
        Some(match self.pacing {
            Pacing::Second => at - at % 1_000_000_000,
            _ => at,
        })
    }

    /// Passes the other shares' slots before slot `seq`: even and per-second positions are the slot
    /// numbers themselves, so a share jumps to its next at once. (A Poisson share's positions are
    /// its own arrivals: there is nothing to pass.)
    fn skip_to(&mut self, seq: u64) {
        if self.pacing != Pacing::Poisson && self.passed < seq {
            self.position = seq as f64;
            self.passed = seq;
        }
    }

    /// Moves past the slot at `position`.
    fn step(&mut self) {
        match self.pacing {
            Pacing::Poisson => self.position += self.share.of as f64 * self.rng.exp1(),
            _ => {
                self.position += 1.0;
                self.passed += 1;
            }
        }
    }

    /// `C⁻¹(position)`, advancing `span_index`; None past the end of the plan.
    fn time_of(&mut self, position: f64) -> Option<Nanos> {
        while let Some(span) = self.spans.get(self.span_index) {
            let d = position - span.count_before;
            if d < span.count {
                let tau = span.seconds_for(d);
                return Some((span.start_ns + (tau * NS) as Nanos).min(span.end_ns.saturating_sub(1)));
            }
            self.span_index += 1;
        }
        None
    }

    /// How many requests the plan intends to have started by `now`,
    /// counting those already issued. Backlog is `due_by(now) - issued()`.
    pub fn due_by(&self, now: Nanos) -> u64 {
        if self.closed_loop {
            return self.issued;
        }
        if self.pacing == Pacing::Poisson {
            return self.issued + self.count_poisson_due(now);
        }
        self.share.of_first(self.planned_by(now)).max(self.issued)
    }

    /// How many slots of the whole run (every share's) even or per-second pacing intends by `now`,
    /// within the limit: a closed form.
    fn planned_by(&self, now: Nanos) -> u64 {
        let planned = match self.pacing {
            Pacing::Second => self.count_at(now - now % 1_000_000_000 + 1_000_000_000).ceil() as u64,
            _ => self.count_at(now).floor() as u64 + 1,
        };
        let total = self.spans.last().map_or(0.0, |s| s.count_before + s.count).ceil() as u64;
        planned.min(total).min(self.limit.unwrap_or(u64::MAX))
    }

    fn count_at(&self, t: Nanos) -> f64 {
        self.spans.iter().rev().find(|s| s.start_ns <= t).map_or(0.0, |s| s.count_at(t))
    }

    fn count_poisson_due(&self, now: Nanos) -> u64 {
        // Poisson arrivals have no closed form for "how many by now": replay
        // a copy. Bounded so a runaway backlog cannot stall the monitor.
        const CAP: u64 = 5_000_000;
        let mut copy = self.clone();
        let mut n = 0;
        while n < CAP {
            match copy.next(now) {
                Some(Slot::At(t)) if t <= now => n += 1,
                _ => break,
            }
        }
        n
    }
}

/// How many slots of each share of a run fall due by a time that only moves forward: what a striped
/// run's monitor counts while each loader draws its own share. Even and per-second pacing answer in
/// closed form from the whole run's count; Poisson shares are walked, each arrival counted once as
/// its time passes.
#[derive(Clone, Debug)]
pub struct DueCounter {
    whole: Schedule,
    shares: Vec<Share>,
    /// One per share under Poisson pacing; none otherwise.
    walkers: Vec<Schedule>,
    /// The whole run's slots due at the last count (even and per-second pacing).
    whole_due: u64,
}

impl DueCounter {
    /// Counts `shares` of a run, from its start.
    pub fn new(plan: &RatePlan, pacing: Pacing, limit: Option<u64>, seed: u64, shares: Vec<Share>) -> Self {
        let whole = Schedule::new(plan, pacing, limit, seed);
        let walkers = match pacing {
            Pacing::Poisson if !whole.closed_loop => shares.iter().map(|&s| whole.clone().shared(s)).collect(),
            _ => Vec::new(),
        };
        Self { whole, shares, walkers, whole_due: 0 }
    }

    /// Counts the slots due by `now` (an earlier time than the last one counts nothing more).
    pub fn advance(&mut self, now: Nanos) {
        if self.whole.closed_loop {
            return;
        }
        if self.walkers.is_empty() {
            self.whole_due = self.whole_due.max(self.whole.planned_by(now));
        }
        for w in &mut self.walkers {
            while !w.is_exhausted() && w.peek_time().is_some_and(|t| t <= now) {
                w.pass();
            }
        }
    }

    /// Slots of share `k` due at the last [`DueCounter::advance`] (None in a closed loop, which
    /// intends no times).
    pub fn due(&self, k: usize) -> Option<u64> {
        if self.whole.closed_loop {
            return None;
        }
        Some(match self.walkers.get(k) {
            Some(w) => w.issued,
            None => self.shares[k].of_first(self.whole_due),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;
    const SECOND: Nanos = 1_000_000_000;

    fn times(plan: &RatePlan, pacing: Pacing) -> Vec<Nanos> {
        let mut s = Schedule::new(plan, pacing, None, 1);
        std::iter::from_fn(|| match s.next(0) {
            Some(Slot::At(t)) => Some(t),
            _ => None,
        })
        .collect()
    }

    #[test]
    fn even_pacing_spaces_requests_evenly() {
        let t = times(&RatePlan::fixed(1000.0, 1_000_000_000), Pacing::Even);
        assert_eq!(t.len(), 1000);
        assert_eq!(t[0], 0);
        assert_eq!(t[1], 1_000_000);
        assert_eq!(t[999], 999_000_000);
    }

    #[test]
    fn second_pacing_batches_each_second() {
        let t = times(&RatePlan::fixed(3.0, 2_000_000_000), Pacing::Second);
        assert_eq!(t, vec![0, 0, 0, 1_000_000_000, 1_000_000_000, 1_000_000_000]);
    }

    #[test]
    fn poisson_pacing_has_the_right_count_and_is_seeded() {
        let plan = RatePlan::fixed(10_000.0, 10_000_000_000);
        let t = times(&plan, Pacing::Poisson);
        assert!((t.len() as f64 - 100_000.0).abs() < 1_500.0, "{}", t.len());
        assert!(t.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(t, times(&plan, Pacing::Poisson));
    }

    #[test]
    fn a_linear_ramp_asks_for_its_integral() {
        // 0 → 1000/s over 10 s is 5,000 requests, denser at the end.
        let plan = RatePlan::parse_stages("10s:1000", 0.0).unwrap();
        let t = times(&plan, Pacing::Even);
        assert!((t.len() as i64 - 5_000).abs() <= 1, "{}", t.len());
        let first_half = t.iter().filter(|&&x| x < 5_000_000_000).count();
        assert!((first_half as i64 - 1_250).abs() <= 2, "{first_half}");
    }

    #[test]
    fn stages_chain_and_report_their_rate() {
        let plan = RatePlan::parse_stages("0s:500, 2s:500, 2s:1500", 0.0).unwrap();
        assert_eq!(plan.duration_ns(), Some(4_000_000_000));
        assert_eq!(plan.rate_at(1_000_000_000), Some(500.0));
        assert_eq!(plan.rate_at(3_000_000_000), Some(1000.0));
        let t = times(&plan, Pacing::Even);
        assert!((t.len() as i64 - 3_000).abs() <= 1, "{}", t.len());
        assert!(RatePlan::parse_stages("30s", 0.0).is_err());
        assert!(RatePlan::parse_stages("30s:x", 0.0).is_err());
        assert!(RatePlan::parse_stages("5s:0", 0.0).is_err());
    }

    #[test]
    fn due_by_counts_what_should_have_started() {
        let plan = RatePlan::fixed(1000.0, 10_000_000_000);
        let mut s = Schedule::new(&plan, Pacing::Even, None, 1);
        assert_eq!(s.due_by(0), 1);
        assert_eq!(s.due_by(999_999), 1);
        assert_eq!(s.due_by(1_000_000), 2);
        assert_eq!(s.due_by(500_000_000), 501);
        for _ in 0..100 {
            s.next(0);
        }
        assert_eq!(s.due_by(500_000_000) - s.issued(), 401);
        assert_eq!(s.due_by(u64::MAX / 2), 10_000);

        let second = Schedule::new(&plan, Pacing::Second, None, 1);
        assert_eq!(second.due_by(0), 1000);
        assert_eq!(second.due_by(1_500_000_000), 2000);

        let poisson = Schedule::new(&plan, Pacing::Poisson, None, 1);
        let due = poisson.due_by(1_000_000_000);
        assert!((900..1100).contains(&due), "{due}");
    }

    #[test]
    fn closed_loop_runs_until_time_or_limit() {
        let mut s = Schedule::new(&RatePlan::Max { duration_ns: Some(100) }, Pacing::Even, Some(3), 0);
        assert_eq!(s.next(0), Some(Slot::Now));
        assert_eq!(s.next(200), None);
        let mut s = Schedule::new(&RatePlan::Max { duration_ns: None }, Pacing::Even, Some(2), 0);
        assert_eq!((s.next(0), s.next(0), s.next(0)), (Some(Slot::Now), Some(Slot::Now), None));
        assert_eq!(s.due_by(10), 2);
    }

    #[test]
    fn take_due_takes_only_what_is_due() {
        // 10/s for 1 s: slots at 0, 100, …, 900 ms; this stripe (1 of 2) holds 100, 300, …
        let mut s = Schedule::new(&RatePlan::fixed(10.0, SECOND), Pacing::Even, None, 1).shared(Share::WHOLE.stripe(1, 2));
        assert_eq!(s.take_due(50 * MS), Take::Wait(100 * MS));
        assert_eq!(s.issued(), 0, "looking takes nothing");
        assert_eq!(s.take_due(350 * MS), Take::Slot { seq: 1, slot: Slot::At(100 * MS) });
        assert_eq!(s.take_due(350 * MS), Take::Slot { seq: 3, slot: Slot::At(300 * MS) });
        assert_eq!(s.take_due(350 * MS), Take::Wait(500 * MS));
        for _ in 0..3 {
            assert!(matches!(s.take_due(2 * SECOND), Take::Slot { .. }));
        }
        assert_eq!(s.take_due(2 * SECOND), Take::Ended);
        let mut closed = Schedule::new(&RatePlan::Max { duration_ns: None }, Pacing::Even, Some(1), 1);
        assert_eq!(closed.take_due(0), Take::Slot { seq: 0, slot: Slot::Now });
        assert_eq!(closed.take_due(0), Take::Ended);
    }

    #[test]
    fn close_ends_the_schedule() {
        let mut s = Schedule::new(&RatePlan::fixed(10.0, 10_000_000_000), Pacing::Even, None, 0);
        assert!(s.next(0).is_some());
        s.close();
        assert_eq!(s.next(0), None);
    }

    #[test]
    fn shares_split_things_and_counts() {
        assert_eq!(Share::new(3, 3), None);
        let parts: Vec<std::ops::Range<u64>> = (0..4).map(|i| Share::new(i, 4).unwrap().range(10)).collect();
        assert_eq!(parts, vec![0..3, 3..6, 6..8, 8..10]);
        assert_eq!(Share::new(2, 3).unwrap().of_first(9), 3);
        assert_eq!(Share::new(2, 3).unwrap().of_first(2), 0);
    }

    /// Every load shape the executor runs, by number.
    fn shape(kind: u8, pacing: Pacing) -> (RatePlan, Pacing) {
        match kind {
            0 => (RatePlan::Max { duration_ns: None }, Pacing::Even),
            1 => (RatePlan::fixed(3_000.0, 1_000_000_000), pacing),
            _ => (RatePlan::parse_stages("0s:200, 500ms:2000, 1s:50", 0.0).unwrap(), pacing),
        }
    }

    fn slots(mut s: Schedule) -> Vec<(u64, Slot)> {
        std::iter::from_fn(|| Some((s.next_seq(), s.next(0)?))).collect()
    }

    /// Each share's slots, as `(seq, slot)`, from a schedule of its own.
    fn shares_slots(plan: &RatePlan, pacing: Pacing, limit: Option<u64>, seed: u64, workers: u64, loaders: u64) -> Vec<(u64, Slot)> {
        let mut union = Vec::new();
        for w in 0..workers {
            let share = Share::new(w, workers).unwrap();
            for l in 0..loaders {
                let stripe = share.stripe(l, loaders);
                let mine = slots(Schedule::new(plan, pacing, limit, seed).shared(stripe));
                assert!(mine.iter().all(|(seq, _)| seq % (workers * loaders) == w + workers * l));
                let in_order = mine.windows(2).all(|p| match (p[0].1, p[1].1) {
                    (Slot::At(a), Slot::At(b)) => a <= b,
                    _ => true,
                });
                assert!(in_order, "a share's slots are in time order");
                union.extend(mine);
            }
        }
        union.sort_by_key(|(seq, _)| *seq);
        union
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// A worker's share cut into loaders' stripes: the stripes of every worker together are
        /// exactly the run's slots, each once, at the same times — for every load shape. Poisson
        /// arrivals are drawn per share, so they are the same run's for the same count of shares
        /// however it is cut into workers and loaders.
        #[test]
        fn stripes_of_shares_make_the_whole_run_once(
            kind in 0u8..3,
            pacing in proptest::sample::select(vec![Pacing::Even, Pacing::Second, Pacing::Poisson]),
            workers in 1u64..4,
            loaders in 1u64..9,
            limit in proptest::option::of(1u64..3_000),
            seed in 0u64..1_000,
        ) {
            let (plan, pacing) = shape(kind, pacing);
            // A closed loop needs a count to end.
            let limit = if kind == 0 { Some(limit.unwrap_or(500)) } else { limit };
            let union = shares_slots(&plan, pacing, limit, seed, workers, loaders);
            proptest::prop_assert!(union.windows(2).all(|p| p[0].0 < p[1].0), "a slot twice");
            let same = if pacing == Pacing::Poisson && kind != 0 {
                union == shares_slots(&plan, pacing, limit, seed, 1, workers * loaders)
            } else {
                union == slots(Schedule::new(&plan, pacing, limit, seed))
            };
            proptest::prop_assert!(same, "the shares are not the run's slots");
        }

        /// The monitor's count of each share's due slots agrees with the share's own schedule, at any
        /// sequence of rising times.
        #[test]
        fn the_due_counter_counts_what_each_share_says_is_due(
            kind in 1u8..3,
            pacing in proptest::sample::select(vec![Pacing::Even, Pacing::Second, Pacing::Poisson]),
            shares in 1u64..6,
            limit in proptest::option::of(1u64..3_000),
            mut times in proptest::collection::vec(0u64..2_000_000_000, 1..20),
        ) {
            let (plan, pacing) = shape(kind, pacing);
            times.sort_unstable();
            let stripes: Vec<Share> = (0..shares).map(|k| Share::WHOLE.stripe(k, shares)).collect();
            let mut counter = DueCounter::new(&plan, pacing, limit, 5, stripes.clone());
            for t in times {
                counter.advance(t);
                for (k, &stripe) in stripes.iter().enumerate() {
                    let schedule = Schedule::new(&plan, pacing, limit, 5).shared(stripe);
                    proptest::prop_assert_eq!(counter.due(k), Some(schedule.due_by(t)), "share {} at {}", k, t);
                }
            }
        }
    }

    #[test]
    fn poisson_shares_together_keep_the_rate() {
        // 8 shares of 10,000/s for 10 s: about 100,000 arrivals in all, as one schedule would make.
        let plan = RatePlan::fixed(10_000.0, 10_000_000_000);
        let n = shares_slots(&plan, Pacing::Poisson, None, 3, 2, 4).len();
        assert!((n as f64 - 100_000.0).abs() < 1_500.0, "{n}");
    }

    #[test]
    fn a_closed_loop_has_no_due_count() {
        let mut counter = DueCounter::new(&RatePlan::Max { duration_ns: None }, Pacing::Even, Some(10), 1, vec![Share::WHOLE]);
        counter.advance(5);
        assert_eq!(counter.due(0), None);
        assert_eq!(Share::new(1, 3).unwrap().stripe(2, 4), Share { index: 7, of: 12 });
    }

    #[test]
    fn a_share_counts_only_its_own_backlog() {
        let plan = RatePlan::fixed(1000.0, 1_000_000_000);
        let s = Schedule::new(&plan, Pacing::Even, None, 1).shared(Share::new(1, 4).unwrap());
        // 501 slots of the whole run are due at 0.5 s (0 … 500); slots 1, 5, … 497 are worker 1's.
        assert_eq!(s.due_by(500_000_000), 125);
    }
}
