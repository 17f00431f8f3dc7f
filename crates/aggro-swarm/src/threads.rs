//! One swarm process on every core: `threads` swarms, one per thread, each with its block of the
//! bots, run as one — each interval merged across the threads once every thread has closed it
//! (histograms added, counters summed: [`SwarmInterval::merge`]).
//!
//! Threads share nothing while they run: each has its own sockets, timers, bots and (for scripts)
//! Lua state, made on the thread itself. A bot's delay is measured against the send time its sender
//! wrote, on the one monotonic clock every thread reads, so a sender on one thread and its receivers
//! on another are timed and checked exactly as on one.

use super::{Behaviour, Swarm, SwarmInterval};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How often the merging thread looks at the caller's stop flag while it waits for intervals.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// Runs the swarms `make(t)` builds for `t` in `0..threads`, each made and run on a thread of its own,
/// until the duration passes or `stop` is set; `on_interval` sees each interval merged. One thread
/// runs on the caller's. If a thread fails, the others are stopped and its error is returned. Returns
/// the whole run: the caller keeps what it wants of each interval.
pub fn run_threads<B, F>(threads: usize, make: F, stop: &AtomicBool, mut on_interval: impl FnMut(&SwarmInterval)) -> io::Result<SwarmInterval>
where
    B: Behaviour,
    F: Fn(usize) -> io::Result<Swarm<B>> + Sync,
{
    if threads <= 1 {
        return make(0)?.run(stop, |iv| on_interval(&iv));
    }
    let halt = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, SwarmInterval)>();
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for t in 0..threads {
            let (tx, make, halt) = (tx.clone(), &make, &halt);
            let spawned = std::thread::Builder::new().name(format!("swarm-{t}")).spawn_scoped(scope, move || {
                let run = make(t).and_then(|swarm| {
                    let mut swarm = swarm.sharing_wakes(t, threads);
                    swarm.run(halt, |iv| {
                        let _ = tx.send((t, iv));
                    })
                });
                if run.is_err() {
                    halt.store(true, Ordering::Relaxed);
                }
                run
            });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    halt.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        drop(tx);
        let mut merger = Merger::new(threads);
        loop {
            if stop.load(Ordering::Relaxed) {
                halt.store(true, Ordering::Relaxed);
            }
            match rx.recv_timeout(STOP_CHECK) {
                Ok((t, iv)) => merger.take(t, iv, &mut on_interval),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        let mut totals = Vec::with_capacity(threads);
        for h in handles {
            totals.push(h.join().map_err(|_| io::Error::other("a swarm thread panicked"))??);
        }
        merger.finish(&mut on_interval);
        Ok(SwarmInterval::merge(&totals))
    })
}

/// Intervals as the threads close them, merged in order once every thread has closed each.
struct Merger {
    threads: usize,
    /// Intervals each thread has closed so far.
    closed: Vec<usize>,
    /// Parts of the intervals not yet merged, from the `merged`-th on.
    waiting: Vec<Vec<SwarmInterval>>,
    /// Intervals merged so far.
    merged: usize,
}

impl Merger {
    fn new(threads: usize) -> Self {
        Self { threads, closed: vec![0; threads], waiting: Vec::new(), merged: 0 }
    }

    fn take(&mut self, thread: usize, iv: SwarmInterval, on_interval: &mut impl FnMut(&SwarmInterval)) {
        let k = self.closed[thread] - self.merged;
        self.closed[thread] += 1;
        if self.waiting.len() <= k {
            self.waiting.resize_with(k + 1, Vec::new);
        }
        self.waiting[k].push(iv);
        while self.waiting.first().is_some_and(|parts| parts.len() == self.threads) {
            self.emit(on_interval);
        }
    }

    /// Merges the oldest waiting interval, with the parts it has.
    fn emit(&mut self, on_interval: &mut impl FnMut(&SwarmInterval)) {
        let parts = self.waiting.remove(0);
        on_interval(&SwarmInterval::merge(&parts));
        self.merged += 1;
    }

    /// Every thread has ended: intervals some thread did not close (one ended a little early) are
    /// merged from the parts there are.
    fn finish(&mut self, on_interval: &mut impl FnMut(&SwarmInterval)) {
        while !self.waiting.is_empty() {
            self.emit(on_interval);
        }
    }
}
