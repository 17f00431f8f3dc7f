//! How fast bots join. `--connect-rate` forces a rate; by default joins start at a modest rate and
//! ramp up to the most allowed, backing off when joins fail (a seat reservation that expired, a
//! connection the server's listen queue dropped) or when the server waits for a core — so filling
//! the server does not break the very thing being measured. Each change is told in the swarm's
//! interval line.

/// How long the pacer looks before it changes the rate.
pub const WINDOW_US: u64 = 250_000;
/// The rate an adaptive pacer starts at (or the most allowed, if lower), joins per second.
pub const START_RATE: f64 = 200.0;
/// The rate it never backs off below.
pub const FLOOR_RATE: f64 = 5.0;
/// A window whose server waited for a core longer than this share of it is a server starved.
pub const WAIT_SHARE: f64 = 0.25;

/// What the pacer sees of the joins so far (running totals) and of the server.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JoinSignals {
    /// Joins that ended, seated or failed.
    pub ended: u64,
    /// Of those, failed — and opens the server's listen queue dropped.
    pub failed: u64,
    /// Seconds the server's threads have waited for a core, when its process is known.
    pub server_wait_s: Option<f64>,
}

/// The joining rate and why it is what it is.
#[derive(Clone, Debug)]
pub struct JoinPacer {
    rate: f64,
    most: f64,
    adaptive: bool,
    window_from: u64,
    seen: JoinSignals,
    /// Times the rate was cut.
    pub backoffs: u32,
    /// The cuts and their reasons, until an interval's line takes them.
    pub news: Vec<String>,
}

impl JoinPacer {
    /// Joins at `rate` per second, whatever happens.
    pub fn fixed(rate: f64) -> Self {
        Self { rate: rate.max(0.001), most: rate, adaptive: false, window_from: 0, seen: JoinSignals::default(), backoffs: 0, news: Vec::new() }
    }

    /// Joins from [`START_RATE`] up to `most` per second, backing off on failures and a starved server.
    pub fn adaptive(most: f64) -> Self {
        Self { rate: START_RATE.min(most), adaptive: true, ..Self::fixed(most) }
    }

    /// Joins per second now.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Microseconds between two joins now.
    pub fn gap_us(&self) -> u64 {
        ((1e6 / self.rate) as u64).max(1)
    }

    /// Whether [`JoinPacer::look`] would weigh a window at `now` (so the signals, read from the kernel,
    /// are gathered only then).
    pub fn due(&self, now: u64) -> bool {
        self.adaptive && (self.window_from == 0 || now.saturating_sub(self.window_from) >= WINDOW_US)
    }

    /// Looks at what happened since the window began (`now` and the running totals): a window with
    /// failed joins or a starved server halves the rate, a clean one with joins raises it by half,
    /// up to the most allowed. Starts its first window at the first look.
    pub fn look(&mut self, now: u64, seen: JoinSignals) {
        if !self.adaptive {
            return;
        }
        if self.window_from == 0 {
            (self.window_from, self.seen) = (now, seen);
            return;
        }
        let span = now.saturating_sub(self.window_from);
        if span < WINDOW_US {
            return;
        }
        let (ended, failed) = (seen.ended - self.seen.ended, seen.failed - self.seen.failed);
        let waited = match (seen.server_wait_s, self.seen.server_wait_s) {
            (Some(now_s), Some(then_s)) => (now_s - then_s) / (span as f64 / 1e6),
            _ => 0.0,
        };
        (self.window_from, self.seen) = (now, seen);
        let why = if failed > 0 && failed * 100 >= ended.max(1) {
            Some(format!("{failed} of {} joins failed", ended.max(failed)))
        } else if waited > WAIT_SHARE {
            Some(format!("the server waited {:.0}% of the time for a core", waited * 100.0))
        } else {
            None
        };
        match why {
            Some(why) if self.rate > FLOOR_RATE => {
                self.rate = (self.rate / 2.0).max(FLOOR_RATE);
                self.backoffs += 1;
                self.news.push(format!("joins backed off to {:.0}/s ({why} in {} ms)", self.rate, span / 1000));
            }
            None if ended > 0 && self.rate < self.most => self.rate = (self.rate * 1.5).min(self.most),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signals(ended: u64, failed: u64) -> JoinSignals {
        JoinSignals { ended, failed, server_wait_s: None }
    }

    #[test]
    fn a_clean_fill_ramps_to_the_most_and_failures_halve_the_rate() {
        let mut p = JoinPacer::adaptive(1000.0);
        assert_eq!(p.rate(), START_RATE);
        p.look(1, signals(0, 0));
        let mut t = 1;
        let mut ended = 0;
        for _ in 0..6 {
            t += WINDOW_US;
            ended += 50;
            p.look(t, signals(ended, 0));
        }
        assert_eq!(p.rate(), 1000.0, "200 × 1.5^4 passes 1000");
        t += WINDOW_US;
        p.look(t, signals(ended + 100, 12));
        assert_eq!(p.rate(), 500.0);
        assert_eq!(p.backoffs, 1);
        assert_eq!(p.news, ["joins backed off to 500/s (12 of 100 joins failed in 250 ms)"]);
        // A window not yet over changes nothing.
        p.look(t + 1000, signals(ended + 500, 400));
        assert_eq!(p.rate(), 500.0);
    }

    #[test]
    fn a_starved_server_backs_off_and_a_forced_rate_never_moves() {
        let mut p = JoinPacer::adaptive(1000.0);
        p.look(1, JoinSignals { ended: 0, failed: 0, server_wait_s: Some(10.0) });
        p.look(1 + WINDOW_US, JoinSignals { ended: 50, failed: 0, server_wait_s: Some(10.1) });
        assert_eq!(p.rate(), 100.0, "a server waiting 40% of the window");
        assert!(p.news[0].contains("the server waited 40% of the time for a core"), "{:?}", p.news);
        let mut fixed = JoinPacer::fixed(2000.0);
        fixed.look(1, signals(0, 0));
        fixed.look(1 + WINDOW_US, signals(10, 10));
        assert_eq!((fixed.rate(), fixed.gap_us()), (2000.0, 500));
    }
}
