//! When and how fast the sweeps run (`sweep.rs` runs them): a sweep is due once the log holds
//! `trigger` times the live bytes; a young one is chosen if it gives back more per byte copied than
//! a full one; either is paced by the new writes it may take (`docs/stackdb-format.md`, "Space").

use crate::error::{Error, Result};
use crate::heads::{Estimates, State};
use crate::plan::PLAN_BYTES;

/// When and how fast dead records are reclaimed.
///
/// A sweep starts when the log holds more than `trigger` × the live bytes,
/// and is paced to finish by the time new writes have added `pace` times
/// what it sweeps: the live bytes for a full sweep, the young records' span
/// for a young one. A full sweep copies the live bytes, so the log stays
/// under about (`trigger` + 1 + `pace`) × live, and each byte written costs
/// about 1 + 1 / (`trigger` − 1) bytes of log; a young sweep copies only the
/// young records still live. A full sweep ends with the log (1 + `pace`) ×
/// live above its new floor, so `pace` must be below `trigger` − 1, or the
/// next sweep would begin overdue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Compaction {
    /// Span of the log, in multiples of the live bytes, that starts a sweep
    /// (greater than 1; `f64::INFINITY` turns compaction off).
    pub trigger: f64,
    /// New writes a sweep may take to finish, in multiples of what it sweeps
    /// (greater than 0; smaller means faster sweeps and burstier commits).
    pub pace: f64,
    /// No sweep while the log spans less than this.
    pub min_log_bytes: u64,
    /// Whether a sweep may rewrite only the young records, when that gives back more per byte
    /// copied than a full sweep (`false`: every sweep is full).
    pub generational: bool,
}

impl Default for Compaction {
    fn default() -> Self {
        Self { trigger: 2.0, pace: 0.5, min_log_bytes: 16 << 20, generational: true }
    }
}

/// Bytes of copies the sweep's thread may lag its schedule before a commit sweeps with the writer
/// held: four plans (a full sweep's 4,096 buckets of an MMO world; a young sweep's buckets are
/// sparser, and counting them alike had commits sweep 14–44 ms with the writer held).
const LAG_BYTES: usize = 4 * PLAN_BYTES;
/// The share of its young records a young sweep is expected to copy before one has run.
const FIRST_SURVIVAL: f64 = 0.25;
/// A young sweep is chosen only if it gives back at least this share of the log's dead bytes: the
/// rest lie among the old records (keys rewritten since they were last copied), and as their share
/// grows young sweeps would give back ever less, copying the same share of ever fewer young records.
const YOUNG_SHARE: f64 = 0.25;

impl Compaction {
    /// Never reclaims anything.
    pub fn off() -> Self {
        Self { trigger: f64::INFINITY, ..Self::default() }
    }

    /// Checks the figures make sense.
    pub fn validate(&self) -> Result<()> {
        let sound = self.trigger > 1.0 && self.pace > 0.0 && self.pace.is_finite();
        if !sound {
            return Err(Error::InvalidOption(format!(
                "compaction trigger must exceed 1 and pace must be positive (got trigger {}, pace {})",
                self.trigger, self.pace
            )));
        }
        // A sweep ends with the log (1 + pace) × live above its new floor: at or past the trigger the
        // next sweep begins overdue, and commits sweep a large part of the table with the writer held
        // (MMO zones with pace 1.5 and 2 at trigger 2: single periods of 1.7 and 1.9 s).
        if self.pace >= self.trigger - 1.0 {
            return Err(Error::InvalidOption(format!(
                "compaction pace must be below trigger - 1 (got trigger {}, pace {}): a sweep grows the log by (1 + pace) × the live bytes, so it would end past the trigger and the next would begin overdue",
                self.trigger, self.pace
            )));
        }
        Ok(())
    }

    /// The live bytes the arithmetic uses: small databases are treated as
    /// `min_log_bytes / trigger` so they do not sweep constantly.
    fn live(&self, state: &State) -> f64 {
        (state.live_bytes as f64).max(self.min_log_bytes as f64 / self.trigger).max(1.0)
    }

    /// The young bound of the sweep to begin with the log ending at `end` (`None`: a full sweep). A
    /// young sweep is chosen when it is expected to give back at least [`YOUNG_SHARE`] of the dead
    /// bytes, each for fewer bytes copied than a full sweep (which copies the live bytes to give
    /// back all the dead ones), its copies estimated by the share the last young sweep copied.
    fn young_to_sweep(&self, state: &State, est: &Estimates, end: u64) -> Option<u64> {
        if !self.generational || state.young <= state.floor {
            return None;
        }
        let survival = expected_survival(est);
        let young_dead = (1.0 - survival) * young_span(state, est, state.young, end);
        let live = (state.live_bytes as f64).max(1.0);
        let dead = held(state, est, end) - live;
        let worth = young_dead >= YOUNG_SHARE * dead && survival / (1.0 - survival) < live / dead;
        worth.then_some(state.young)
    }

    /// The young bound of the sweep in progress, or of the one to begin if none is (`None`: a full
    /// sweep).
    pub(crate) fn young_bound(&self, state: &State, est: &Estimates, end: u64) -> Option<u64> {
        match state.sweep_from {
            0 => self.young_to_sweep(state, est, end),
            _ => (state.young != 0).then_some(state.young),
        }
    }

    /// Bytes the sweep bounded by `young` sweeps: the live bytes for a full sweep, the young records'
    /// span for a young one.
    fn swept(&self, state: &State, est: &Estimates, young: Option<u64>, end: u64) -> f64 {
        match young {
            None => self.live(state),
            Some(y) => young_span(state, est, y, end),
        }
    }

    /// Bytes the sweep bounded by `young` is expected to copy: all it sweeps for a full sweep, the
    /// share of the young records the last young sweep copied for a young one.
    fn copies(&self, state: &State, est: &Estimates, young: Option<u64>, end: u64) -> f64 {
        let swept = self.swept(state, est, young, end);
        if young.is_some() { expected_survival(est) * swept } else { swept }
    }

    /// Buckets the sweep's thread may lag its schedule: [`LAG_BYTES`] of expected copies, at most an
    /// eighth of the table (a small table's whole sweep may be due at once).
    pub(crate) fn lag(&self, state: &State, est: &Estimates, young: Option<u64>, end: u64) -> u64 {
        let per_bucket = (self.copies(state, est, young, end) / state.buckets() as f64).max(1.0);
        ((LAG_BYTES as f64 / per_bucket) as u64).min(state.buckets() / 8)
    }

    /// The bucket the sweep should have reached with the log ending at `end`, and the sweep's young
    /// bound: `None` when no sweep is in progress or due. A sweep is on schedule when its share of
    /// buckets done matches the share of its `pace` that new writes have used — the log's growth
    /// since it began less its own copies, so that copies it did not expect do not rush its end — or,
    /// for a full sweep, if the log overshot `trigger` × live (a large commit, a run of splits), its
    /// share of the overshoot, so it catches up. A sweep not begun yet is due that share too (at
    /// least its first bucket), so one the sweep's thread has not got to begin counts as lagging.
    pub(crate) fn due(&self, state: &State, est: &Estimates, end: u64) -> Option<(u64, Option<u64>)> {
        let overshoot = held(state, est, end) - self.trigger * self.live(state);
        let written = match state.sweep_from {
            0 if overshoot <= 0.0 => return None,
            0 => 0.0,
            from => end.saturating_sub(from).saturating_sub(est.copied) as f64,
        };
        let young = self.young_bound(state, est, end);
        let mut fraction = written / (self.pace * self.swept(state, est, young, end)).max(self.min_log_bytes as f64 / self.trigger);
        if young.is_none() {
            // A full sweep also catches up with an overshoot of the log; a young one gives back only
            // young records, and an overshoot of the old is not its to catch up.
            fraction = fraction.max(overshoot / ((1.0 + self.pace) * self.live(state)));
        }
        Some((share_of_keys(state, fraction.min(1.0)).max(1), young))
    }
}

/// Bytes of young records a young sweep bounded by `young` sweeps: up to where it began (or the
/// log's end, if not begun), less the copies the last young sweep left among them.
fn young_span(state: &State, est: &Estimates, young: u64, end: u64) -> f64 {
    let began = if state.sweep_from == 0 { end } else { state.sweep_from };
    began.saturating_sub(young).saturating_sub(est.islands) as f64
}

/// Bytes the log holds with its end at `end`: from the floor, less the holes young sweeps left.
fn held(state: &State, est: &Estimates, end: u64) -> f64 {
    end.saturating_sub(state.floor).saturating_sub(est.freed) as f64
}

/// The share of the young records a young sweep is expected to copy: what the last one copied.
fn expected_survival(est: &Estimates) -> f64 {
    if est.survival > 0.0 { est.survival.clamp(0.02, 0.98) } else { FIRST_SURVIVAL }
}

/// The bucket before which `fraction` of the keys lie, in bucket order.
/// Buckets from the split pointer up to `2^level` are not split yet and
/// hold twice the keys of the others, so a sweep paced by bucket count
/// fell behind there (and chased its own copies for 700 ms in one commit).
fn share_of_keys(state: &State, fraction: f64) -> u64 {
    let (split, half) = (state.split, 1u64 << state.level);
    let weight = ((2 * half) as f64 * fraction).ceil() as u64;
    let bucket = if weight <= split {
        weight
    } else if weight <= 2 * half - split {
        split + (weight - split).div_ceil(2)
    } else {
        weight - half + split
    };
    bucket.min(state.buckets())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweeps_share_of_keys_counts_unsplit_buckets_twice() {
        // 2^2 buckets, the first split: bucket 0 and 4 hold half as many keys as 1, 2 and 3.
        let state = State { level: 2, split: 1, ..State::default() };
        let at = |f: f64| share_of_keys(&state, f);
        assert_eq!([at(0.0), at(0.125), at(0.5), at(0.75), at(0.875), at(1.0)], [0, 1, 3, 4, 4, 5]);
        // Nothing split: buckets in proportion.
        let even = State { level: 3, split: 0, ..State::default() };
        assert_eq!(share_of_keys(&even, 0.5), 4);
    }
}
