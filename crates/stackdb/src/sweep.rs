//! Compaction by sweeping: when the log holds `trigger` times the live bytes, a sweep starts at the
//! log's end and rewrites buckets' records as fresh stacks, a few buckets after each commit, in bucket
//! order. A full sweep rewrites every live record: when it has passed the last bucket no stack
//! reaches below where it began, and that part of the log is given back. A young sweep rewrites only
//! the records written since the last sweep ended (the young ones) of the buckets that have any, each
//! bucket's set on the old records beneath them: the young records it passed over are then a hole
//! no stack reaches into, given back the same way. The sweep that gives back more per byte it copies
//! is chosen (`docs/stackdb-format.md`, "Space").

use crate::db::{Core, Database, lock};
use crate::error::{Error, Result};
use crate::heads::{Entry, Heads, Hole, State};
use crate::log::{Batch, BatchKind, Record};
use crate::plan::{PLAN_BYTES, Plan, Restack, ToCopy, oldest_first, read_buckets, read_plan};
use crate::stack::{Placed, restack};
use crate::worker::Worker;
use std::sync::Arc;

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

/// The share of its young records a young sweep is expected to copy before one has run.
const FIRST_SURVIVAL: f64 = 0.25;
/// A young sweep is chosen only if it gives back at least this share of the log's dead bytes: the
/// rest lie among the old records (keys rewritten since they were last swept, and the records
/// written during a young sweep, made old at its end), and as their share grows young sweeps would
/// give back ever less, copying the same share of ever fewer young records.
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
    pub(crate) fn young_to_sweep(&self, state: &State, end: u64) -> Option<u64> {
        if !self.generational || state.young <= state.floor {
            return None;
        }
        let survival = expected_survival(state);
        let young_dead = (1.0 - survival) * young_span(state, state.young, end);
        let live = (state.live_bytes as f64).max(1.0);
        let dead = held(state, end) - live;
        let worth = young_dead >= YOUNG_SHARE * dead && survival / (1.0 - survival) < live / dead;
        worth.then_some(state.young)
    }

    /// Bytes the sweep bounded by `young` is expected to copy: the live bytes for a full sweep, the
    /// share of the young records the last young sweep copied for a young one.
    fn copies(&self, state: &State, young: Option<u64>, end: u64) -> f64 {
        match young {
            None => self.live(state),
            Some(y) => expected_survival(state) * young_span(state, y, end),
        }
    }

    /// Buckets the sweep's thread may lag its schedule: [`LAG_BYTES`] of expected copies, at most an
    /// eighth of the table (a small table's whole sweep may be due at once).
    fn lag(&self, state: &State, young: Option<u64>, end: u64) -> u64 {
        let per_bucket = (self.copies(state, young, end) / state.buckets() as f64).max(1.0);
        ((LAG_BYTES as f64 / per_bucket) as u64).min(state.buckets() / 8)
    }

    /// The bucket the sweep should have reached with the log ending at `end`, and the sweep's young
    /// bound: `None` when no sweep is in progress or due. A sweep is on schedule when its share of
    /// buckets done matches the share of its `pace` that new writes have used — the log's growth
    /// since it began less its own copies, so that copies it did not expect do not rush its end — or,
    /// for a full sweep, if the log overshot `trigger` × live (a large commit, a run of splits), its
    /// share of the overshoot, so it catches up. A sweep not begun yet is due that share too (at
    /// least its first bucket), so one the sweep's thread has not got to begin counts as lagging.
    pub(crate) fn due(&self, state: &State, end: u64) -> Option<(u64, Option<u64>)> {
        let overshoot = held(state, end) - self.trigger * self.live(state);
        let (young, written) = match state.sweep_from {
            0 if overshoot <= 0.0 => return None,
            0 => (self.young_to_sweep(state, end), 0.0),
            from => ((state.young != 0).then_some(state.young), end.saturating_sub(from).saturating_sub(state.copied) as f64),
        };
        let swept = match young {
            None => self.live(state),
            Some(y) => young_span(state, y, end),
        };
        let mut fraction = written / (self.pace * swept).max(self.min_log_bytes as f64 / self.trigger);
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
fn young_span(state: &State, young: u64, end: u64) -> f64 {
    let began = if state.sweep_from == 0 { end } else { state.sweep_from };
    began.saturating_sub(young).saturating_sub(state.islands) as f64
}

/// Bytes the log holds with its end at `end`: from the floor, less the holes young sweeps left.
fn held(state: &State, end: u64) -> f64 {
    end.saturating_sub(state.floor).saturating_sub(state.freed) as f64
}

/// The share of the young records a young sweep is expected to copy: what the last one copied.
fn expected_survival(state: &State) -> f64 {
    if state.survival > 0.0 { state.survival.clamp(0.02, 0.98) } else { FIRST_SURVIVAL }
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
/// Bytes of copies the sweep's thread may lag its schedule before a commit sweeps with the writer
/// held: four plans (a full sweep's 4,096 buckets of an MMO world; a young sweep's buckets are
/// sparser, and counting them alike had commits sweep 14–44 ms with the writer held).
const LAG_BYTES: usize = 4 * PLAN_BYTES;

impl Database {
    /// Keeps the sweep on schedule after a commit (writer held) when the log's growth has made buckets
    /// due. With synced commits it wakes the sweep's thread, which copies while they wait for their
    /// syncs with the writer free — unless the thread lags by more than [`LAG_BYTES`] of copies (committing
    /// threads that never let go of the writer starve it): then the commit sweeps here, so the log
    /// keeps its bound whoever gets the writer. Unsynced commits have no sweep's thread and sweep
    /// here: their thread takes the writer straight back, so a second one only adds hand-overs
    /// (no-sync inserts measured 11 % slower with it).
    pub(crate) fn sweep_step(&self) -> Result<()> {
        let state = lock(&self.core.heads).state;
        let end = self.core.log.end();
        let Some((due, young)) = self.core.options.compaction.due(&state, end) else { return Ok(()) };
        let behind = due.saturating_sub(state.sweep_cursor);
        if behind == 0 {
            return Ok(());
        }
        match &self.sweeper {
            Some(sweeper) if behind <= self.core.options.compaction.lag(&state, young, end) => sweeper.wake(),
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

    /// Advances the sweep as far as it is due, until it ends. `on_thread`: on the sweep's thread,
    /// which reads each step's records without the writer (a whole plan, a little ahead of the
    /// schedule) and then takes it for the copies; else the caller holds the writer and reads only
    /// what is due. The sweep's own copies grow the log and so make more buckets due: it follows them
    /// up to [`CHASE`] times the buckets due when called (and [`CHASE_SLACK`] more), leaving the rest
    /// to the next call — with copies near the pace's budget, chasing them all once rewrote a third of
    /// the table in one commit.
    pub(crate) fn sweep(&self, on_thread: bool) -> Result<()> {
        let entry = lock(&self.heads).state;
        let Some((due, _)) = self.options.compaction.due(&entry, self.log.end()) else { return Ok(()) };
        let limit = due + CHASE * due.saturating_sub(entry.sweep_cursor) + CHASE_SLACK;
        loop {
            let state = lock(&self.heads).state;
            // A sweep that ended leaves the log it gave up to the checkpoint thread: the header on
            // disk must stop pointing into it first (the round that does is due at once).
            let ended = state.floor != entry.floor || (state.young != entry.young && state.young != 0);
            let (to, young) = match self.options.compaction.due(&state, self.log.end()) {
                Some((due, young)) if !ended && state.sweep_cursor < due.min(limit) => (due.min(limit), young),
                _ => return Ok(()),
            };
            let plan = match read_plan(&self.log, &self.heads, &state, young, if on_thread { state.buckets() } else { to }) {
                // Read without the writer while a sweep the commits finished gave back the log under it:
                // this sweep is over (the loop ends on what it left).
                Err(Error::Corrupt { offset, .. }) if on_thread && self.log.released(offset) => continue,
                plan => plan?,
            };
            let _writer = on_thread.then(|| lock(&self.writer));
            self.rewrite(plan)?;
            self.checkpoint_step()?;
        }
    }

    /// Copies a plan's records in one commit (writer held). A plan a commit's own sweep overtook, or
    /// read for a kind of sweep no longer due, is dropped; a bucket a commit changed since it was read
    /// is read again.
    fn rewrite(&self, plan: Plan) -> Result<()> {
        let state = lock(&self.heads).state;
        let young = match state.sweep_from {
            0 => self.options.compaction.young_to_sweep(&state, self.log.end()),
            _ => (state.young != 0).then_some(state.young),
        };
        if !plan.fits(&state, young) {
            return Ok(());
        }
        let buckets: Vec<u64> = plan.buckets().collect();
        let mut entries = plan.entries.clone();
        let mut again = Vec::new();
        if state.commit_seq != plan.commit_seq {
            let now = lock(&self.heads).entries(&buckets)?;
            let changed: Vec<usize> = (0..now.len()).filter(|&i| now[i] != plan.entries[i]).collect();
            let (now_changed, owners): (Vec<Entry>, Vec<u64>) = changed.iter().map(|&i| (now[i], buckets[i])).unzip();
            again = changed.iter().copied().zip(read_buckets(&self.log, &now_changed, &owners, &state, young)?).collect();
            entries = now;
        }
        let mut again = again.into_iter().peekable();
        let mut batch = self.log.batch();
        let start = batch.start();
        let (mut placed, mut set) = (Vec::new(), Vec::new());
        for (i, &bucket) in buckets.iter().enumerate() {
            let new = match again.next_if(|(j, _)| *j == i) {
                Some((_, (restack, live))) => copy_stack(&mut batch, entries[i], restack, oldest_first(&live), &mut placed)?,
                None => copy_stack(&mut batch, entries[i], plan.restacks[i], plan.oldest_first(i), &mut placed)?,
            };
            set.extend(new.map(|e| (bucket, e)));
        }
        let covered = buckets.len() as u64;
        if young.is_none() {
            let end = batch.start() + batch.bytes() as u64;
            return self.commit_copies(batch, BatchKind::Rewrite, covered, |heads| apply(heads, start, covered, placed, end));
        }
        batch.put(&[], &encode_entries(&set), 0)?;
        let end = batch.start() + batch.bytes() as u64;
        self.commit_copies(batch, BatchKind::Young, covered, |heads| apply_young(heads, start, covered, &set, end))
    }
}

impl Core {
    /// Makes every record in the log old, if no sweep has run yet (its young records would be the
    /// whole log): a young sweep's batch covering no bucket. A database is first opened after a bulk
    /// load, which later writes rarely make dead, and young sweeps that copied it would gain little.
    pub(crate) fn age_first_records(&self) -> Result<()> {
        let state = lock(&self.heads).state;
        let all_young = state.sweep_from == 0 && state.young <= state.floor && state.young < self.log.end();
        if !self.options.compaction.generational || !all_young {
            return Ok(());
        }
        let _writer = lock(&self.writer);
        let mut batch = self.log.batch();
        batch.put(&[], &[], 0)?;
        let (start, end) = (batch.start(), batch.start() + batch.bytes() as u64);
        self.commit_copies(batch, BatchKind::Young, 0, |heads| apply_young(heads, start, 0, &[], end))
    }
}

/// Appends a bucket's records (oldest first) to `batch` as its new stack, restacked as `restack`
/// says on its entry `entry`, each copy's place added to `placed`; returns its new entry (`None`:
/// kept).
fn copy_stack<'r>(
    batch: &mut Batch,
    entry: Entry,
    restack: Restack,
    records: impl Iterator<Item = ToCopy<'r>>,
    placed: &mut Vec<Placed>,
) -> Result<Option<Entry>> {
    let mut new = match restack {
        Restack::Keep => return Ok(None),
        Restack::Fresh => Entry::default(),
        Restack::Onto(beneath) => Entry::new(beneath, entry.bloom, entry.shared()),
    };
    for (key, value, h) in records {
        let at = batch.copy(key, value, new.head())?;
        new = new.pushed(at, h);
        placed.push((at, h));
    }
    // A stack whose young part is empty (its head a copy) stays as it is.
    Ok((new != entry).then_some(new))
}

/// Bytes of each bucket's new entry in a young sweep's batch: bucket, link word, Bloom word.
const SET_ENTRY: usize = 24;

/// The last record of a young sweep's batch: the value of the record, the buckets it sets and their
/// new entries, as stored in the head table.
fn encode_entries(set: &[(u64, Entry)]) -> Vec<u8> {
    let mut value = Vec::with_capacity(set.len() * SET_ENTRY);
    for (bucket, e) in set {
        for word in [*bucket, e.link(), e.bloom] {
            value.extend_from_slice(&word.to_le_bytes());
        }
    }
    value
}

/// The buckets a young sweep's batch sets and their entries (see [`encode_entries`]).
pub(crate) fn decode_entries(records: &[Record]) -> Result<Vec<(u64, Entry)>> {
    match records.last() {
        Some(r) if r.key.is_empty() && r.value.len().is_multiple_of(SET_ENTRY) => Ok(r
            .value
            .chunks_exact(SET_ENTRY)
            .map(|c| {
                let word = |i: usize| u64::from_le_bytes(c[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
                (word(0), Entry::from_words(word(1), word(2)))
            })
            .collect()),
        _ => Err(Error::Corrupt { what: "a young sweep's batch", offset: records.first().map_or(0, |r| r.offset) }),
    }
}

/// The buckets from the sweep's cursor a rewrite batch that began at `start` covers, checked to lie
/// within the table.
fn covered(state: &State, start: u64, buckets: u64) -> Result<std::ops::Range<u64>> {
    let first = if state.sweep_from == 0 { 0 } else { state.sweep_cursor };
    match first.checked_add(buckets).filter(|l| *l <= state.buckets()) {
        Some(last) => Ok(first..last),
        None => Err(Error::Corrupt { what: "rewrite beyond the table", offset: start }),
    }
}

/// Applies a full sweep's batch that began at log offset `start`, whose last record ends at `end`,
/// and covers `buckets` buckets from the sweep's cursor: the first of a sweep starts it, the one
/// reaching the last bucket ends it, raises the floor, and makes what follows young.
pub(crate) fn apply(heads: &mut Heads, start: u64, buckets: u64, placed: impl IntoIterator<Item = Placed>, end: u64) -> Result<()> {
    let state = heads.state;
    if state.sweep_from != 0 && state.young != 0 {
        return Err(Error::Corrupt { what: "a full sweep's batch within a young sweep", offset: start });
    }
    let range = covered(&state, start, buckets)?;
    restack(heads, range.clone(), placed)?;
    let state = &mut heads.state;
    if state.sweep_from == 0 {
        (state.sweep_from, state.young) = (start, 0);
    }
    state.sweep_cursor = range.end;
    state.copied += end - start;
    if range.end == state.buckets() {
        state.islands = 0;
        state.copied = 0;
        (state.floor, state.young, state.freed) = (state.sweep_from, end, 0);
        (state.sweep_from, state.sweep_cursor) = (0, 0);
    }
    Ok(())
}

/// Applies a young sweep's batch that began at log offset `start`, whose last record ends at `end`,
/// covers `buckets` buckets from the sweep's cursor and sets the entries `set`: the one reaching the
/// last bucket ends the sweep, leaves a hole from where the young records began to where the sweep
/// began, and makes what follows young.
pub(crate) fn apply_young(heads: &mut Heads, start: u64, buckets: u64, set: &[(u64, Entry)], end: u64) -> Result<()> {
    let state = heads.state;
    if state.young == 0 || (buckets == 0 && (state.sweep_from != 0 || !set.is_empty())) {
        return Err(Error::Corrupt { what: "a young sweep's batch within a sweep of another kind", offset: start });
    }
    if buckets == 0 {
        (heads.state.young, heads.state.islands) = (end, 0);
        return Ok(());
    }
    let range = covered(&state, start, buckets)?;
    if set.iter().any(|(b, e)| !range.contains(b) || e.head() >= end) {
        return Err(Error::Corrupt { what: "a young sweep's entry outside its batch", offset: start });
    }
    for &(bucket, e) in set {
        heads.set(bucket, e);
    }
    let state = &mut heads.state;
    state.copied += end - start;
    if state.sweep_from == 0 {
        state.sweep_from = start;
    }
    state.sweep_cursor = range.end;
    if range.end == state.buckets() {
        // The young records it passed over are dead, and so is all the hole holds but the copies
        // the sweep before made (a young sweep's copies stay where they are, old).
        let hole = state.young..state.sweep_from;
        let young_bytes = (hole.end - hole.start).saturating_sub(state.islands);
        state.freed += young_bytes;
        state.survival = (state.copied as f64 / young_bytes.max(1) as f64).min(1.0);
        // What was written while it ran stays young; its own copies are marked as such.
        (state.young, state.sweep_from, state.sweep_cursor) = (state.sweep_from, 0, 0);
        (state.islands, state.copied) = (state.copied, 0);
        heads.holes.push(Hole { range: hole, done_at: end });
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
