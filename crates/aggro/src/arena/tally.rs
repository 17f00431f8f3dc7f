//! A scripted swarm's own measures over the intervals closed so far: their total (histograms merged,
//! counters summed; the gauges — bots short of each stage, players out of play — the last interval's),
//! each operation's peak count per second in an interval, and the bots the script's errors stopped. The
//! funnel ([`super::funnel`]) and the storm ([`super::storm`]) are read from it, as the run goes (the live
//! view) and at its end.

use aggro_swarm::{NamedMeasures, SwarmInterval};

/// The script's measures so far.
#[derive(Debug, Default)]
pub struct Tally {
    /// The intervals' measures added (the bots short of each stage: the last interval's).
    pub whole: NamedMeasures,
    /// Each timed operation and the most it counted in one interval, per second.
    peaks: Vec<(String, f64)>,
    /// The most attempts to come back in one interval, per second.
    pub peak_attempts_per_s: f64,
    /// Bots stopped by a script error.
    pub script_errors: u64,
}

impl Tally {
    /// Adds an interval (its threads merged).
    pub fn add(&mut self, iv: &SwarmInterval) {
        self.whole.add(&iv.named);
        self.whole.short_of.clone_from(&iv.named.short_of);
        self.whole.out_of_play = iv.named.out_of_play;
        self.script_errors += iv.counters.script_errors;
        let secs = (iv.end_s - iv.start_s).max(1e-3);
        self.peak_attempts_per_s = self.peak_attempts_per_s.max(iv.named.reconnect_attempts as f64 / secs);
        for (op, h) in &iv.named.timed {
            let rate = h.len() as f64 / secs;
            match self.peaks.iter_mut().find(|(o, _)| o == op) {
                Some((_, peak)) => *peak = peak.max(rate),
                None => self.peaks.push((op.clone(), rate)),
            }
        }
    }

    /// The most operation `op` counted in one interval, per second (0 when never).
    pub fn peak_per_s(&self, op: &str) -> f64 {
        self.peaks.iter().find(|(o, _)| o == op).map_or(0.0, |(_, p)| *p)
    }
}
