//! The game operations test's loader: one request is one period of one
//! zone — every action of the profile, in the paper's order.

use super::book::{PeriodBook, ZoneState};
use super::profile::{Action, Profile, Tally};
use super::thread_time::ThreadClock;
use super::zone::Zone;
use aggro_core::mmo::MmoConn;
use aggro_core::{ErrorClass, ErrorSamples};
use aggro_runner::{Loader, Steps};
use std::sync::Arc;

/// A zone driven period by period.
pub struct PeriodLoader<C> {
    index: usize,
    zone: Zone<C>,
    profile: Profile,
    tally: Tally,
    book: Arc<PeriodBook>,
    samples: Arc<ErrorSamples>,
    /// The zone's thread's scheduler clock, when the zone has a thread of its own (opened at its first
    /// period, on that thread).
    clock: Clock,
}

enum Clock {
    /// The zone shares its thread with others: the thread's time is not the zone's.
    Shared,
    /// Not opened yet.
    Unopened,
    Open(Option<ThreadClock>),
}

impl<C: MmoConn> PeriodLoader<C> {
    /// Zone number `index` (already filled), running `profile` (already
    /// scaled to the zone's size); `own_thread`: whether the executor gives it a thread of its own, so
    /// that the thread's time is the zone's (and its store's, for a store that runs on the caller's thread).
    pub fn new(index: usize, zone: Zone<C>, profile: Profile, book: Arc<PeriodBook>, samples: Arc<ErrorSamples>, own_thread: bool) -> Self {
        let clock = if own_thread { Clock::Unopened } else { Clock::Shared };
        Self { index, zone, profile, tally: Tally::default(), book, samples, clock }
    }

    /// The zone's thread's clock, if it has one of its own.
    fn clock(&mut self) -> Option<&ThreadClock> {
        if let Clock::Unopened = self.clock {
            self.clock = Clock::Open(ThreadClock::of_this_thread());
        }
        match &self.clock {
            Clock::Open(c) => c.as_ref(),
            _ => None,
        }
    }

    /// The zone, for its ledger after the run.
    pub fn zone(&self) -> &Zone<C> {
        &self.zone
    }

    /// The zone, to shut it down after the run.
    pub fn zone_mut(&mut self) -> &mut Zone<C> {
        &mut self.zone
    }
}

impl<C: MmoConn> Loader for PeriodLoader<C> {
    async fn run(&mut self, _seq: u64, steps: &mut Steps) -> Result<(), ErrorClass> {
        let counts = self.tally.next(&self.profile);
        let thread_before = self.clock().and_then(ThreadClock::read);
        let start = steps.now();
        let mut failed = None;
        for action in Action::ALL {
            let op = action.op();
            for _ in 0..counts[action as usize] {
                let mut refused = 0;
                let t = steps.now();
                let result = self.zone.act(action, &mut refused).await;
                // Every refused lease is counted (as `locked`), apart from
                // the action's own outcome.
                (0..refused).for_each(|_| steps.count_failure(op, ErrorClass::Locked));
                match result {
                    Ok(()) => steps.record_since(op, t),
                    Err(e) => {
                        self.samples.note(&e);
                        if e.class != ErrorClass::Locked {
                            steps.count_failure(op, e.class);
                        }
                        failed.get_or_insert(e.class);
                    }
                }
            }
        }
        let period_ns = steps.now() - start;
        let thread = thread_before.and_then(|before| Some(self.clock()?.read()?.since(before)));
        let state = ZoneState { players: self.zone.len(), items: self.zone.items_held(), counts: self.zone.counts.clone() };
        self.book.period_done(self.index, period_ns, thread, steps.timings(), state, failed);
        failed.map_or(Ok(()), Err)
    }
}
