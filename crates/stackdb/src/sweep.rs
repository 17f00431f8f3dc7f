//! Compaction by sweeping: when the log holds `trigger` times the live bytes, a sweep starts at the
//! log's end and rewrites buckets' records as fresh stacks, a few buckets after each commit, in bucket
//! order. A full sweep rewrites every live record: when it has passed the last bucket no stack
//! reaches below where it began, and that part of the log is given back. A young sweep rewrites only
//! the records written since the last sweep ended (the young ones) of the buckets that have any, each
//! bucket's set on the old records beneath them: the young records it passed over are then a hole
//! no stack reaches into, given back the same way. The sweep that gives back more per byte it copies
//! is chosen (`docs/stackdb-format.md`, "Space").

use crate::apply;
use crate::db::{Core, Database};
use crate::error::{Error, Result};
use crate::log::{Batch, BatchKind};
use crate::page::Entry;
use crate::plan::{Plan, Restack, ToCopy, oldest_first, read_buckets, read_plan};
use crate::stack::Placed;
use crate::sync::lock;
use crate::worker::Worker;
use std::sync::Arc;

/// How far a sweep step follows the buckets its own copies make due: this many times the buckets due
/// when it began, plus [`CHASE_SLACK`].
const CHASE: u64 = 2;
/// Buckets a sweep step may always follow beyond [`CHASE`] times its own.
const CHASE_SLACK: u64 = 256;

impl Database {
    /// Keeps the sweep on schedule after a commit (writer held) when the log's growth has made buckets
    /// due. With synced commits it wakes the sweep's thread, which copies while they wait for their
    /// syncs with the writer free. The thread may lag its schedule by a bound (`Compaction::lag`: 1 MiB
    /// of copies, shrinking to nothing as the schedule nears the table's end, so that the sweep ends
    /// when due); past it — committing threads that never let go of the writer starve the thread — the
    /// commit sweeps here what lies beyond the bound, no more, so one commit never pays for the whole
    /// lag. (Sweeping all that was due held one commit of two game zones 232 ms.) The thread takes up
    /// a plan such a commit overtook where the commit stopped. Unsynced commits have no sweep's thread
    /// and sweep here all that is due: their thread takes the writer straight back, so a second one
    /// only adds hand-overs (no-sync inserts measured 11 % slower with it).
    pub(crate) fn sweep_step(&self) -> Result<()> {
        let (state, est) = lock(&self.core.heads).with_estimates();
        let end = self.core.log.end();
        let Some((due, young)) = self.core.options.compaction.due(&state, &est, end) else { return Ok(()) };
        let behind = due.saturating_sub(state.sweep_cursor);
        if behind == 0 {
            return Ok(());
        }
        let Some(sweeper) = &self.sweeper else { return self.core.sweep(false, None) };
        let lag = self.core.options.compaction.lag(&state, &est, young, end).min(state.buckets().saturating_sub(due));
        sweeper.wake()?;
        if behind > lag { self.core.sweep(false, Some(due - lag)) } else { Ok(()) }
    }
}

impl Core {
    /// Starts the sweep's thread: woken by commits that find the sweep behind its schedule, it reads
    /// each step's records without the writer, then takes the writer to copy them.
    pub(crate) fn start_sweeper(core: Arc<Core>) -> std::io::Result<Worker> {
        Worker::start("stackdb-sweep", move || core.sweep(true, None))
    }

    /// Advances the sweep as far as it is due (or to bucket `upto`, if that comes first), until it
    /// ends. `on_thread`: on the sweep's thread, which reads each step's records without the writer
    /// (a whole plan, a little ahead of the schedule) and then takes it for the copies; else the
    /// caller holds the writer and reads only what is due. The sweep's own copies grow the log and so
    /// make more buckets due: it follows them up to [`CHASE`] times the buckets due when called (and
    /// [`CHASE_SLACK`] more), leaving the rest to the next call — with copies near the pace's budget,
    /// chasing them all once rewrote a third of the table in one commit.
    pub(crate) fn sweep(&self, on_thread: bool, upto: Option<u64>) -> Result<()> {
        let (entry, est) = lock(&self.heads).with_estimates();
        let Some((due, _)) = self.options.compaction.due(&entry, &est, self.log.end()) else { return Ok(()) };
        let limit = upto.unwrap_or(due + CHASE * due.saturating_sub(entry.sweep_cursor) + CHASE_SLACK);
        loop {
            let (state, est) = lock(&self.heads).with_estimates();
            // A sweep that ended leaves the log it gave up to the checkpoint thread: the header on
            // disk must stop pointing into it first (the round that does is due at once).
            let ended = state.floor != entry.floor || (state.young != entry.young && state.young != 0);
            let (to, young) = match self.options.compaction.due(&state, &est, self.log.end()) {
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

    /// Copies a plan's records in one commit (writer held), from the first bucket the sweep has not
    /// passed (a commit's own sweep may have overtaken part of it). A plan read for a sweep no longer
    /// under way or due is dropped; a bucket a commit changed since it was read is read again.
    fn rewrite(&self, plan: Plan) -> Result<()> {
        let (state, est) = lock(&self.heads).with_estimates();
        let young = self.options.compaction.young_bound(&state, &est, self.log.end());
        let Some(from) = plan.resume_at(&state, young) else { return Ok(()) };
        let buckets: Vec<u64> = plan.buckets().skip(from).collect();
        let mut again = Vec::new();
        let now;
        let entries = if state.commit_seq == plan.commit_seq {
            &plan.entries[from..]
        } else {
            now = lock(&self.heads).entries(&buckets)?;
            let changed: Vec<usize> = (0..now.len()).filter(|&i| now[i] != plan.entries[from + i]).collect();
            let (now_changed, owners): (Vec<Entry>, Vec<u64>) = changed.iter().map(|&i| (now[i], buckets[i])).unzip();
            again = changed.iter().copied().zip(read_buckets(&self.log, &now_changed, &owners, &state, young)?).collect();
            &now
        };
        let mut again = again.into_iter().peekable();
        let mut batch = self.log.batch();
        let start = batch.start();
        let (mut placed, mut set) = (Vec::new(), Vec::new());
        for (i, &bucket) in buckets.iter().enumerate() {
            let new = match again.next_if(|(j, _)| *j == i) {
                Some((_, (restack, live))) => copy_stack(&mut batch, entries[i], restack, oldest_first(&live), &mut placed)?,
                None => copy_stack(&mut batch, entries[i], plan.restacks[from + i], plan.oldest_first(from + i), &mut placed)?,
            };
            set.extend(new.map(|e| (bucket, e)));
        }
        let covered = buckets.len() as u64;
        if young.is_none() {
            let end = batch.end();
            return self.commit_copies(batch, BatchKind::Rewrite, covered, |heads| apply::sweep(heads, start, covered, placed, end));
        }
        batch.put(&[], &apply::encode_entries(&set), 0)?;
        let end = batch.end();
        self.commit_copies(batch, BatchKind::Young, covered, |heads| apply::young(heads, start, covered, &set, end))
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
        let (start, end) = (batch.start(), batch.end());
        self.commit_copies(batch, BatchKind::Young, 0, |heads| apply::young(heads, start, 0, &[], end))
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
