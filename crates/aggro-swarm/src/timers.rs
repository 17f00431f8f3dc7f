//! Every bot's next tick, in one heap: a bot has at most one tick scheduled,
//! which may be moved earlier (a scripted bot's callback sets a timer sooner
//! than its next one); the entry it replaces stays in the heap and is skipped
//! when it comes up.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// When each bot ticks next.
#[derive(Debug, Default)]
pub struct Timers {
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    /// Each bot's scheduled tick (µs), `u64::MAX` when it has none.
    due: Vec<u64>,
}

impl Timers {
    /// Timers for `bots` bots, none scheduled.
    pub fn new(bots: usize) -> Self {
        Self { heap: BinaryHeap::with_capacity(bots), due: vec![u64::MAX; bots] }
    }

    /// Bot `bot` ticks at `at`, instead of when it was to.
    pub fn set(&mut self, bot: usize, at: u64) {
        self.due[bot] = at;
        if at != u64::MAX {
            self.heap.push(Reverse((at, bot as u32)));
        }
    }

    /// Bot `bot` ticks at `at` if that is sooner than its scheduled tick.
    pub fn sooner(&mut self, bot: usize, at: u64) {
        if at < self.due[bot] {
            self.set(bot, at);
        }
    }

    /// The earliest scheduled tick.
    pub fn earliest(&mut self) -> Option<u64> {
        self.skip_stale();
        self.heap.peek().map(|Reverse((at, _))| *at)
    }

    /// The earliest tick due by `now`, taken off: (when it was due, the bot).
    pub fn pop_due(&mut self, now: u64) -> Option<(u64, usize)> {
        self.skip_stale();
        let &Reverse((at, bot)) = self.heap.peek()?;
        if at > now {
            return None;
        }
        self.heap.pop();
        self.due[bot as usize] = u64::MAX;
        Some((at, bot as usize))
    }

    fn skip_stale(&mut self) {
        while let Some(&Reverse((at, bot))) = self.heap.peek() {
            if self.due[bot as usize] == at {
                return;
            }
            self.heap.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_moved_sooner_replaces_the_later_one() {
        let mut t = Timers::new(3);
        t.set(0, 100);
        t.set(1, 50);
        t.sooner(0, 20);
        t.sooner(1, 70);
        assert_eq!(t.earliest(), Some(20));
        assert_eq!(t.pop_due(10), None);
        assert_eq!(t.pop_due(1000), Some((20, 0)));
        assert_eq!(t.pop_due(1000), Some((50, 1)));
        // Bot 0's tick at 100 was replaced; bot 2 never had one.
        assert_eq!(t.pop_due(1000), None);
        assert_eq!(t.earliest(), None);
    }
}
