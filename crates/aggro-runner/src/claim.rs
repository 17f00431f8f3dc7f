//! Which slot a loader runs next: its own stripe's when one is due; otherwise — where loaders are
//! interchangeable — a due slot of a stripe whose loader is busy or gone.
//!
//! Each stripe's schedule sits behind a lock that only its own loader takes while it keeps up (on
//! its own cache lines, so uncontended). A loader with nothing due looks, before it waits, at a few
//! other stripes: one whose loader has a request in flight and a slot already due gives that slot
//! away, as a pool of loaders would have given it to whoever was free; one whose next slot falls due
//! before this loader's own is watched, and the loader wakes for it. So a loader stuck on a slow
//! request no longer holds its stripe's later slots hostage, and nothing shared is written while
//! every loader keeps up.

use crate::shared::{LoaderSlot, Shared};
use aggro_core::{Clock, Nanos, Schedule, Slot, Take};
use std::sync::atomic::Ordering::Relaxed;

/// Other stripes a loader looks at before one wait (round the ring, from where it last stopped):
/// enough that a busy stripe is soon seen, few enough that a scan costs a handful of cache misses.
const SCAN_AT_MOST: usize = 8;

/// A loader scans at most this often (a loader whose own stripe has ended scans every time): at a
/// hundred thousand requests a second, a scan per request would cost more than the requests.
const SCAN_EVERY_NS: Nanos = 100_000;

/// What a loader does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Run request `seq`, intended at `slot`.
    Run { seq: u64, slot: Slot },
    /// Nothing is due: wait until this time and look again.
    WaitUntil(Nanos),
    /// Its own stripe has ended and no other has a slot for it.
    Done,
}

/// One loader's way of claiming slots.
pub(crate) struct Claimer {
    index: usize,
    /// Whether it may take other stripes' slots.
    steal: bool,
    /// Where the next scan starts among the other stripes.
    scan_from: usize,
    /// No scan before this time.
    next_scan: Nanos,
    /// A busy stripe whose next slot falls due before this loader's own: looked at first on waking.
    watching: Option<usize>,
}

impl Claimer {
    /// Loader `index`'s claimer; `steal` lets it take busy stripes' due slots.
    pub fn new(index: usize, steal: bool) -> Self {
        Self { index, steal, scan_from: 0, next_scan: 0, watching: None }
    }

    /// What loader `index` does at `now`.
    #[inline]
    pub fn next<C: Clock>(&mut self, shared: &Shared<C>, now: Nanos) -> Claim {
        let loaders = &shared.loaders;
        let own = &loaders[self.index];
        let mut wake = match take(own, &mut own.schedule.lock(), now) {
            Take::Slot { seq, slot } => return Claim::Run { seq, slot },
            Take::Wait(t) => Some(t),
            Take::Ended => None,
        };
        let others = loaders.len() - 1;
        if !self.steal || others == 0 {
            return wake.map_or(Claim::Done, Claim::WaitUntil);
        }
        let own_done = wake.is_none();
        let look = |j: usize, wake: &mut Option<Nanos>, watching: &mut Option<usize>| match steal_from(&loaders[j], now) {
            Some(Take::Slot { seq, slot }) => Some(Claim::Run { seq, slot }),
            Some(Take::Wait(t)) if wake.is_none_or(|w| t < w) => {
                (*wake, *watching) = (Some(t), Some(j));
                None
            }
            _ => None,
        };
        let mut watching = None;
        if let Some(j) = self.watching.take()
            && let Some(run) = look(j, &mut wake, &mut watching)
        {
            return run;
        }
        if own_done || now >= self.next_scan {
            self.next_scan = now + SCAN_EVERY_NS;
            let count = if own_done { others } else { others.min(SCAN_AT_MOST) };
            for step in 0..count {
                let j = (self.index + 1 + (self.scan_from + step) % others) % loaders.len();
                if let Some(run) = look(j, &mut wake, &mut watching) {
                    self.scan_from += step + 1;
                    return run;
                }
            }
            self.scan_from += count;
        }
        self.watching = watching;
        wake.map_or(Claim::Done, Claim::WaitUntil)
    }
}

/// Takes `stripe`'s next slot if it is due, noting it in the stripe's books.
#[inline]
fn take(stripe: &LoaderSlot, schedule: &mut Schedule, now: Nanos) -> Take {
    let taken = schedule.take_due(now);
    if let Take::Slot { .. } = taken {
        stripe.issued.store(schedule.issued(), Relaxed);
    }
    taken
}

/// What another stripe offers: nothing while its loader is idle (it takes its own slots) or its
/// schedule is being looked at; otherwise its due slot, taken, or when its next falls due.
fn steal_from(stripe: &LoaderSlot, now: Nanos) -> Option<Take> {
    if !(stripe.is_busy() || stripe.left.load(Relaxed)) {
        return None;
    }
    let mut schedule = stripe.schedule.try_lock()?;
    Some(take(stripe, &mut schedule, now))
}
