//! When a swarm thread wakes for its bots' ticks: on a grid, so ticks due within one step go out
//! together, late by less than a step (counted in the tick lateness). A thread alone wakes at most
//! 20,000 times a second for them, where with every bot on its own phase it woke for each tick — most
//! of the CPU of a thread that is not saturated. Threads of one swarm share that budget: each steps
//! `threads` times as far, its grid offset from the others', so the process wakes as often in all
//! whatever its threads and together they still wake every 50 µs (40,000 idle scripted bots on two
//! threads cost 1.48× one thread's CPU per callback when each woke on the 50 µs grid, 1.33–1.35× sharing
//! it; `bench/swarm-threads.sh`). Reading the sockets so shared (each thread every `threads` ×
//! `--read-every`) changed nothing for relay bots on two threads (1.16–1.17× one thread either way):
//! not done.

/// A thread's grid step when it runs alone, µs.
const STEP_US: u64 = 50;

/// The coarsest step a thread's grid takes however many threads share the budget, µs: past ten
/// threads, ticks late by up to half a millisecond are the limit, not the wakes.
const MOST_STEP_US: u64 = 500;

/// The moments a thread wakes for ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TickGrid {
    step: u64,
    offset: u64,
}

impl Default for TickGrid {
    /// A thread alone: every 50 µs.
    fn default() -> Self {
        Self { step: STEP_US, offset: 0 }
    }
}

impl TickGrid {
    /// Thread `thread`'s grid of `threads` sharing the wakes.
    pub fn shared(thread: usize, threads: usize) -> Self {
        let threads = threads.max(1) as u64;
        let step = (STEP_US * threads).min(MOST_STEP_US);
        Self { step, offset: (thread as u64 * STEP_US) % step }
    }

    /// The first moment of the grid at or after `due`.
    pub fn wake_for(&self, due: u64) -> u64 {
        due.saturating_add((self.offset + self.step - due % self.step) % self.step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_thread_wakes_every_50_us_and_threads_sharing_interleave() {
        let alone = TickGrid::default();
        assert_eq!((alone.wake_for(0), alone.wake_for(1), alone.wake_for(50), alone.wake_for(51)), (0, 50, 50, 100));
        let [a, b] = [TickGrid::shared(0, 2), TickGrid::shared(1, 2)];
        assert_eq!((a.wake_for(1), a.wake_for(100), a.wake_for(101)), (100, 100, 200));
        assert_eq!((b.wake_for(0), b.wake_for(50), b.wake_for(51), b.wake_for(149)), (50, 50, 150, 150));
        // Between them the two threads still wake every 50 µs.
        let mut wakes: Vec<u64> = (0..400).flat_map(|t| [a.wake_for(t), b.wake_for(t)]).collect();
        wakes.sort_unstable();
        wakes.dedup();
        assert_eq!(wakes, (0..=9).map(|i| i * 50).collect::<Vec<_>>(), "dues up to 399 wake up to 450");
    }

    #[test]
    fn many_threads_step_no_more_than_half_a_millisecond() {
        let g = TickGrid::shared(13, 64);
        assert_eq!(g.step, MOST_STEP_US);
        for due in [0, 1, 499, 500, 12_345] {
            let wake = g.wake_for(due);
            assert!(wake >= due && wake - due < MOST_STEP_US && wake % MOST_STEP_US == g.offset, "{due} → {wake}");
        }
    }
}
