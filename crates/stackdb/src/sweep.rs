//! Compaction by sweeping: when the log holds `trigger` times the live
//! bytes, a sweep starts at the log's end and rewrites every bucket's live
//! records as a fresh stack, a few buckets after each commit, in bucket
//! order. When it has passed the last bucket no stack reaches below where it
//! began, so after a checkpoint that part of the log is given back
//! (`docs/stackdb-format.md`, "Space").

use crate::db::{Core, Database, lock};
use crate::error::{Error, Result};
use crate::heads::{Heads, State};
use crate::log::BatchKind;
use crate::plan::{Plan, read_plan};
use crate::stack::{Live, Placed, copy_records, live_records_many, oldest_first, restack};
use crate::worker::Worker;
use std::sync::Arc;

/// When and how fast dead records are reclaimed.
///
/// A sweep starts when the log spans more than `trigger` × the live bytes,
/// and is paced to finish by the time the log has grown by
/// (1 + `pace`) × the live bytes: its own copies plus `pace` × live of new
/// writes. So the log stays under about (`trigger` + 1 + `pace`) × live, and
/// each byte written costs about 1 + 1 / (`trigger` − 1) bytes of log. A sweep
/// ends with the log (1 + `pace`) × live above its new floor, so `pace` must be
/// below `trigger` − 1, or the next sweep would begin overdue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Compaction {
    /// Span of the log, in multiples of the live bytes, that starts a sweep
    /// (greater than 1; `f64::INFINITY` turns compaction off).
    pub trigger: f64,
    /// New writes a sweep may take to finish, in multiples of the live bytes
    /// (greater than 0; smaller means faster sweeps and burstier commits).
    pub pace: f64,
    /// No sweep while the log spans less than this.
    pub min_log_bytes: u64,
}

impl Default for Compaction {
    fn default() -> Self {
        Self { trigger: 2.0, pace: 0.5, min_log_bytes: 16 << 20 }
    }
}

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

    /// The bucket the sweep should have reached with the log ending at
    /// `end`: `None` when no sweep is in progress or due. A sweep is on
    /// schedule when its share of buckets done matches its share of the
    /// (1 + `pace`) × live bytes it may append — or, if the log overshot
    /// `trigger` × live (a large commit, a run of splits), its share of
    /// the overshoot, so it catches up. A sweep not begun yet is due that
    /// share of the overshoot too (at least its first bucket), so one the
    /// sweep's thread has not got to begin counts as lagging.
    fn due(&self, state: &State, end: u64) -> Option<u64> {
        let live = self.live(state);
        let overshoot = end.saturating_sub(state.floor) as f64 - self.trigger * live;
        let appended = match state.sweep_from {
            0 if overshoot <= 0.0 => return None,
            0 => 0.0,
            from => end.saturating_sub(from) as f64,
        };
        let fraction = (appended.max(overshoot) / ((1.0 + self.pace) * live)).min(1.0);
        Some(share_of_keys(state, fraction).max(1))
    }
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

/// How far a sweep step follows the buckets its own copies make due: this many times the buckets due
/// when it began, plus [`CHASE_SLACK`].
const CHASE: u64 = 2;
/// Buckets a sweep step may always follow beyond [`CHASE`] times its own.
const CHASE_SLACK: u64 = 256;
/// Buckets the sweep's thread may lag its schedule before a commit sweeps with the writer held (or an
/// eighth of the table, if less: a small table's whole sweep may be due at once).
const LAG: u64 = 4096;

impl Database {
    /// Keeps the sweep on schedule after a commit (writer held) when the log's growth has made buckets
    /// due. With synced commits it wakes the sweep's thread, which copies while they wait for their
    /// syncs with the writer free — unless the thread lags by more than [`LAG`] buckets (committing
    /// threads that never let go of the writer starve it): then the commit sweeps here, so the log
    /// keeps its bound whoever gets the writer. Unsynced commits have no sweep's thread and sweep
    /// here: their thread takes the writer straight back, so a second one only adds hand-overs
    /// (no-sync inserts measured 11 % slower with it).
    pub(crate) fn sweep_step(&self) -> Result<()> {
        let state = lock(&self.core.heads).state;
        let Some(due) = self.core.options.compaction.due(&state, self.core.log.end()) else { return Ok(()) };
        let behind = due.saturating_sub(state.sweep_cursor);
        if behind == 0 {
            return Ok(());
        }
        match &self.sweeper {
            Some(sweeper) if behind <= LAG.min(state.buckets() / 8) => sweeper.wake(),
            _ => self.core.sweep(false),
        }
    }
}

impl Core {
    /// Starts the sweep's thread: woken by commits that find the sweep behind its schedule, it reads
    /// each step's records without the writer, then takes the writer to copy them.
    pub(crate) fn start_sweeper(core: Arc<Core>) -> std::io::Result<Worker> {
        Worker::start("stackdb-sweep", move || core.sweep(true))
    }

    /// Advances the sweep as far as it is due, and gives back the log below a finished sweep.
    /// `on_thread`: on the sweep's thread, which reads each step's records without the writer (a whole
    /// plan, a little ahead of the schedule) and then takes it for the copies; else the caller holds
    /// the writer and reads only what is due. The sweep's own copies grow the log and so make more
    /// buckets due: it follows them up to [`CHASE`] times the buckets due when called (and
    /// [`CHASE_SLACK`] more), leaving the rest to the next call — with copies near the pace's
    /// budget, chasing them all once rewrote a third of the table in one commit.
    pub(crate) fn sweep(&self, on_thread: bool) -> Result<()> {
        let entry = lock(&self.heads).state;
        let Some(due) = self.options.compaction.due(&entry, self.log.end()) else { return Ok(()) };
        let limit = due + CHASE * due.saturating_sub(entry.sweep_cursor) + CHASE_SLACK;
        loop {
            let state = lock(&self.heads).state;
            let to = match self.options.compaction.due(&state, self.log.end()) {
                Some(due) if state.floor == entry.floor && state.sweep_cursor < due.min(limit) => due.min(limit),
                _ => return Ok(()),
            };
            let plan = match read_plan(&self.log, &self.heads, &state, if on_thread { state.buckets() } else { to }) {
                // Read without the writer while a sweep the commits finished gave back the log under it:
                // this sweep is over (the loop ends on the new floor).
                Err(Error::Corrupt { offset, .. }) if on_thread && offset < self.log.floor() => continue,
                plan => plan?,
            };
            let _writer = on_thread.then(|| lock(&self.writer));
            self.rewrite(plan)?;
            self.checkpoint_step()?;
            if lock(&self.heads).state.floor > entry.floor {
                // The sweep is done. The header on disk must stop pointing below the new floor before
                // that part of the log can go: the step above made the round under way due at once
                // (or began one), the checkpoint thread writes it and, once a round holding the new
                // floor ends, gives the log below back.
                return Ok(());
            }
        }
    }

    /// Copies a plan's records as fresh stacks in one commit (writer held). A plan a commit's own sweep
    /// overtook is dropped; a bucket a commit changed since it was read is read again.
    fn rewrite(&self, plan: Plan) -> Result<()> {
        let state = lock(&self.heads).state;
        if !plan.fits(&state) {
            return Ok(());
        }
        let buckets: Vec<u64> = plan.buckets().collect();
        let mut fresh: Vec<Option<Vec<Live<'_>>>> = buckets.iter().map(|_| None).collect();
        if state.commit_seq != plan.commit_seq {
            let now = lock(&self.heads).entries(&buckets)?;
            let changed: Vec<usize> = (0..now.len()).filter(|&i| now[i] != plan.entries[i]).collect();
            let heads: Vec<u64> = changed.iter().map(|&i| now[i].head()).collect();
            let owners: Vec<u64> = changed.iter().map(|&i| buckets[i]).collect();
            for (i, live) in changed.into_iter().zip(live_records_many(&self.log, &heads, &owners, &state)?) {
                fresh[i] = Some(live);
            }
        }
        let mut batch = self.log.batch();
        let start = batch.start();
        let mut placed = Vec::new();
        for (i, fresh) in fresh.iter().enumerate() {
            let copied = match fresh {
                Some(live) => copy_records(&mut batch, oldest_first(live), &state)?,
                None => copy_records(&mut batch, plan.oldest_first(i), &state)?,
            };
            placed.extend(copied);
        }
        let covered = buckets.len() as u64;
        self.commit_copies(batch, BatchKind::Rewrite, covered, |heads| apply(heads, start, covered, placed))
    }
}

/// Applies a rewrite batch that began at log offset `start` and covers
/// `buckets` buckets from the sweep's cursor: the first of a sweep starts
/// it, the one reaching the last bucket ends it and raises the floor.
pub(crate) fn apply(heads: &mut Heads, start: u64, buckets: u64, placed: impl IntoIterator<Item = Placed>) -> Result<()> {
    if heads.state.sweep_from == 0 {
        heads.state.sweep_from = start;
        heads.state.sweep_cursor = 0;
    }
    let first = heads.state.sweep_cursor;
    let Some(last) = first.checked_add(buckets).filter(|l| *l <= heads.state.buckets()) else {
        return Err(Error::Corrupt { what: "rewrite beyond the table", offset: start });
    };
    restack(heads, first..last, placed)?;
    let state = &mut heads.state;
    state.sweep_cursor = last;
    if last == state.buckets() {
        state.floor = state.sweep_from;
        state.sweep_from = 0;
        state.sweep_cursor = 0;
    }
    Ok(())
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
