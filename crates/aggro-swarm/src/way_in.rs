//! A built-in bot's way in (Colyseus: a seat reserved, the socket connected, the room joined, its first
//! state; relay: connected, joined, its room full): the stages aggro sees, each timed from the bot's intended start into operation `stage:NAME`
//! once per bot, and, as each interval closes, how many playing bots are short of each — the same
//! funnel a script's `stage()` calls make (`script/stages.rs`), for bots that have no script. And their
//! way back (Colyseus bots with `--reconnect`): each player's time from losing its server to its seat
//! again (operation `reconnect`), the attempts, and the players still out of play as an interval closes.

use crate::profile::{NamedMeasures, RECONNECT, STAGE};
use aggro_stats::Histogram;

/// The stages one kind of bot passes, in order (a bot's reached stages are the bits of a `u64`).
pub type StageNames = &'static [&'static str];

/// A thread's bots' way in over the open interval.
#[derive(Debug)]
pub struct WayIn {
    names: StageNames,
    /// Each stage's times (ns from the bots' intended starts) this interval.
    times: Vec<Histogram>,
    /// Bots that began their way in this interval.
    started: u64,
    /// Players' ways back to play this interval (ns from losing their server), and their attempts.
    back: Histogram,
    attempts: u64,
}

impl WayIn {
    pub fn new(names: StageNames) -> Self {
        assert!(names.len() <= 64, "a bot's stages are the bits of a u64");
        let times = names.iter().map(|_| aggro_stats::new_histogram()).collect();
        Self { names, times, started: 0, back: aggro_stats::new_histogram(), attempts: 0 }
    }

    /// A bot began its way in.
    pub fn start(&mut self) {
        self.started += 1;
    }

    /// A bot reached stage `k`, `us` µs after its intended start.
    pub fn reach(&mut self, k: usize, us: u64) {
        // The histogram resizes itself to take the value.
        let _ = self.times[k].record(us.saturating_mul(1000));
    }

    /// A player who lost its server tried to come back.
    pub fn attempt(&mut self) {
        self.attempts += 1;
    }

    /// A player is back in play, `us` µs after it lost its server.
    pub fn back(&mut self, us: u64) {
        let _ = self.back.record(us.saturating_mul(1000));
    }

    /// Closes the interval into `named`: each stage a bot reached in it as `stage:NAME`, the bots started,
    /// of the bots playing now whose reached stages are the bits of `playing` those short of each; and the
    /// ways back, with the attempts, and the `out_of_play` players not back yet.
    pub fn close(&mut self, named: &mut NamedMeasures, playing: impl Iterator<Item = u64>, out_of_play: u64) {
        if self.names.is_empty() {
            return;
        }
        if !self.back.is_empty() {
            named.timed.push((RECONNECT.to_string(), std::mem::replace(&mut self.back, aggro_stats::new_histogram())));
        }
        named.reconnect_attempts += std::mem::take(&mut self.attempts);
        named.out_of_play += out_of_play;
        for (name, h) in self.names.iter().zip(&mut self.times) {
            if !h.is_empty() {
                named.timed.push((format!("{STAGE}{name}"), std::mem::replace(h, aggro_stats::new_histogram())));
            }
        }
        named.started += std::mem::take(&mut self.started);
        let mut short = vec![0u64; self.names.len()];
        for reached in playing {
            for (k, s) in short.iter_mut().enumerate() {
                *s += u64::from(reached & (1 << k) == 0);
            }
        }
        named.short_of = self.names.iter().map(|n| n.to_string()).zip(short).collect();
    }
}

/// A bot's stages reached, as bits in its kind's [`StageNames`] order, and its intended start.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reached {
    bits: u64,
    born_us: u64,
}

impl Reached {
    /// A bot whose way in begins at `born_us` (its first tick's due time: its intended moment to join).
    pub fn born(born_us: u64) -> Self {
        Self { bits: 0, born_us }
    }

    /// Marks stage `k` reached at `now_us`; the µs since the bot's intended start the first time, None
    /// after.
    pub fn reach(&mut self, k: usize, now_us: u64) -> Option<u64> {
        let bit = 1u64 << k;
        (self.bits & bit == 0).then(|| {
            self.bits |= bit;
            now_us.saturating_sub(self.born_us)
        })
    }

    /// The stages reached, as bits.
    pub fn bits(&self) -> u64 {
        self.bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stage_is_timed_once_per_bot_and_playing_bots_short_of_it_are_counted() {
        let mut way = WayIn::new(&["seat", "joined"]);
        let mut bot = Reached::born(1_000);
        way.start();
        assert_eq!(bot.reach(0, 3_000), Some(2_000));
        assert_eq!(bot.reach(0, 9_000), None, "once per bot");
        way.reach(0, 2_000);
        let mut named = NamedMeasures::default();
        way.close(&mut named, [bot.bits(), 0b11].into_iter(), 0);
        assert_eq!(named.timed.len(), 1, "no bot joined this interval: {:?}", named.timed);
        let (name, h) = &named.timed[0];
        assert_eq!((name.as_str(), h.len()), ("stage:seat", 1));
        assert!(h.equivalent(h.max(), 2_000_000), "2 ms, in ns: {}", h.max());
        assert_eq!(named.started, 1);
        assert_eq!(named.short_of, [("seat".to_string(), 0), ("joined".to_string(), 1)]);
        let mut next = NamedMeasures::default();
        way.close(&mut next, std::iter::empty(), 0);
        assert!(next.timed.is_empty() && next.started == 0, "each interval its own");
    }
}
