//! Linear hashing: when live keys exceed `max_load` per bucket, the bucket
//! at the split pointer is re-appended as two fresh stacks
//! (`docs/stackdb-format.md`, "The head table").

use crate::db::{Database, lock};
use crate::error::{Error, Result};
use crate::heads::{Heads, State};
use crate::log::BatchKind;
use crate::stack::{Placed, copy_records, live_records, oldest_first, restack};

impl Database {
    /// Splits buckets while the load exceeds `max_load` (writer held).
    pub(crate) fn grow(&self) -> Result<()> {
        loop {
            let state = lock(&self.heads).state;
            if (state.records as f64) <= self.options.max_load * state.buckets() as f64 {
                return Ok(());
            }
            self.split(state)?;
        }
    }

    /// Re-appends bucket `split`'s live records as two new stacks.
    fn split(&self, state: State) -> Result<()> {
        let head = lock(&self.heads).entry(state.split)?.head;
        let live = live_records(&self.log, head)?;
        let mut batch = self.log.batch();
        let mut after = state;
        advance(&mut after);
        let placed = copy_records(&mut batch, oldest_first(&live), &after)?;
        self.commit_copies(batch, BatchKind::Split, 1, |heads| apply(heads, placed))
    }
}

/// Applies a split batch: the bucket at the split pointer and its new
/// sibling get the copies, and the split pointer advances.
pub(crate) fn apply(heads: &mut Heads, placed: impl IntoIterator<Item = Placed>) -> Result<()> {
    let state = heads.state;
    if state.split >= 1u64 << state.level {
        return Err(Error::Corrupt { what: "split beyond the table", offset: state.split });
    }
    advance(&mut heads.state);
    restack(heads, [state.split, state.split + (1u64 << state.level)], placed)
}

fn advance(state: &mut State) {
    state.split += 1;
    if state.split == 1u64 << state.level {
        state.level += 1;
        state.split = 0;
    }
}
