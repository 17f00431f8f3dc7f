//! Linear hashing: when live keys exceed `max_load` per bucket, the buckets
//! from the split pointer on are split, as many as the load needs in one
//! commit. A split either shares the bucket's stack with its new sibling —
//! no copies: each walk for one bucket passes over the other's records — or,
//! once `shared_splits` splits in a row have shared it, re-appends its live
//! records as two fresh stacks (`docs/stackdb-format.md`, "The head table").

use crate::apply;
use crate::db::Database;
use crate::error::Result;
use crate::heads::State;
use crate::log::BatchKind;
use crate::page::Entry;
use crate::stack::{copy_records, live_records_many, oldest_first};
use crate::sync::lock;

/// Buckets split in one commit at most: an insert of 1,000 keys needs ~500 splits, and one commit for
/// them all walks their stacks side by side and writes once (a commit per split was 44 % of the
/// inserting thread's time at 5 M keys); the copies of ~512 buckets are ~170 KiB.
const SPLITS_PER_COMMIT: u64 = 512;

impl Database {
    /// Splits buckets while the load exceeds `max_load` (writer held).
    pub(crate) fn grow(&self) -> Result<()> {
        loop {
            let state = lock(&self.core.heads).state;
            let splits = splits_due(&state, self.core.options.max_load);
            if splits == 0 {
                return Ok(());
            }
            self.split(state, splits)?;
        }
    }

    /// Splits the `splits` buckets from the split pointer: each run of them that splits the same way
    /// (sharing their stacks or copying them) in one commit, their entries read once.
    fn split(&self, state: State, splits: u64) -> Result<()> {
        let buckets: Vec<u64> = (state.split..state.split + splits).collect();
        let entries = lock(&self.core.heads).entries(&buckets)?;
        let shares = |e: &Entry| e.shared() < self.core.options.shared_splits;
        let mut done = 0;
        while done < entries.len() {
            let sharing = shares(&entries[done]);
            let run = done..done + entries[done..].iter().take_while(|e| shares(e) == sharing).count();
            if sharing {
                self.share_run(&entries[run.clone()])?;
            } else {
                // The table as it stands before these splits addresses their buckets' keys.
                let state = lock(&self.core.heads).state;
                self.copy_run(state, &buckets[run.clone()], &entries[run.clone()])?;
            }
            done = run.end;
        }
        Ok(())
    }

    /// Splits the buckets from the split pointer, whose entries are `shared`, sharing their stacks.
    fn share_run(&self, shared: &[Entry]) -> Result<()> {
        let mut batch = self.core.log.batch();
        batch.put(&[], &apply::encode_shared(shared), 0)?;
        self.core.commit_copies(batch, BatchKind::Share, shared.len() as u64, |heads| apply::share(heads, shared))
    }

    /// Splits `buckets`, from the split pointer, whose entries are `entries`, re-appending their live
    /// records as two fresh stacks each.
    fn copy_run(&self, state: State, buckets: &[u64], entries: &[Entry]) -> Result<()> {
        let splits = buckets.len() as u64;
        let heads: Vec<u64> = entries.iter().map(Entry::head).collect();
        let live = live_records_many(&self.core.log, &heads, buckets, &state)?;
        let mut batch = self.core.log.batch();
        let mut after = state;
        apply::advance(&mut after, splits);
        let placed = copy_records(&mut batch, live.iter().flat_map(|l| oldest_first(l)), &after)?;
        self.core.commit_copies(batch, BatchKind::Split, splits, |heads| apply::split(heads, splits, placed))
    }
}

/// How many buckets to split now: enough to bring the load to `max_load`, at most
/// [`SPLITS_PER_COMMIT`], and none past the level's end (a bucket split twice in one commit would
/// need its own copies copied again).
fn splits_due(state: &State, max_load: f64) -> u64 {
    let (records, buckets) = (state.records as f64, state.buckets());
    if records <= max_load * buckets as f64 {
        return 0;
    }
    let needed = ((records / max_load).ceil() as u64).saturating_sub(buckets).max(1);
    needed.min(SPLITS_PER_COMMIT).min((1u64 << state.level) - state.split)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_bring_the_load_down_within_one_level() {
        let state = |level, split, records| State { level, split, records, ..State::default() };
        // 2^4 buckets at load 2 hold 32 keys: 33 need one split, 40 need four.
        assert_eq!(splits_due(&state(4, 0, 32), 2.0), 0);
        assert_eq!(splits_due(&state(4, 0, 33), 2.0), 1);
        assert_eq!(splits_due(&state(4, 0, 40), 2.0), 4);
        // Never past the level's end, nor more than a commit's worth.
        assert_eq!(splits_due(&state(4, 14, 70), 2.0), 2);
        assert_eq!(splits_due(&state(20, 0, 1 << 22), 2.0), SPLITS_PER_COMMIT);
    }
}
