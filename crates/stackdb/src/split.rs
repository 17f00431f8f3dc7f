//! Linear hashing: when live keys exceed `max_load` per bucket, the buckets
//! from the split pointer on are re-appended as two fresh stacks each, as
//! many as the load needs in one commit (`docs/stackdb-format.md`, "The head
//! table").

use crate::db::{Database, lock};
use crate::error::{Error, Result};
use crate::heads::{Heads, State};
use crate::log::BatchKind;
use crate::stack::{Placed, copy_records, live_records_many, oldest_first, restack};

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

    /// Re-appends the live records of the `splits` buckets from the split pointer as two new stacks each.
    fn split(&self, state: State, splits: u64) -> Result<()> {
        let buckets: Vec<u64> = (state.split..state.split + splits).collect();
        let heads = lock(&self.core.heads).stack_heads(&buckets)?;
        let live = live_records_many(&self.core.log, &heads)?;
        let mut batch = self.core.log.batch();
        let mut after = state;
        advance(&mut after, splits);
        let placed = copy_records(&mut batch, live.iter().flat_map(|l| oldest_first(l)), &after)?;
        self.core.commit_copies(batch, BatchKind::Split, splits, |heads| apply(heads, splits, placed))
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

/// Applies a split batch covering `splits` buckets: the buckets from the split pointer and their new
/// siblings get the copies, and the split pointer advances past them.
pub(crate) fn apply(heads: &mut Heads, splits: u64, placed: impl IntoIterator<Item = Placed>) -> Result<()> {
    let state = heads.state;
    let half = 1u64 << state.level;
    if splits == 0 || state.split + splits > half {
        return Err(Error::Corrupt { what: "split beyond the table", offset: state.split });
    }
    advance(&mut heads.state, splits);
    let split = state.split..state.split + splits;
    let siblings = split.start + half..split.end + half;
    restack(heads, split.chain(siblings), placed)
}

/// Moves the split pointer past `splits` buckets (within one level: at its end the level grows).
fn advance(state: &mut State, splits: u64) {
    state.split += splits;
    if state.split == 1u64 << state.level {
        state.level += 1;
        state.split = 0;
    }
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
