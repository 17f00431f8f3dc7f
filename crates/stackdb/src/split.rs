//! Linear hashing: when live keys exceed `max_load` per bucket, the buckets
//! from the split pointer on are split, as many as the load needs in one
//! commit. A split either shares the bucket's stack with its new sibling —
//! no copies: each walk for one bucket passes over the other's records — or,
//! once `shared_splits` splits in a row have shared it, re-appends its live
//! records as two fresh stacks (`docs/stackdb-format.md`, "The head table").

use crate::db::{Database, lock};
use crate::error::{Error, Result};
use crate::heads::{Entry, Heads, MAX_SHARED, State};
use crate::log::{BatchKind, Record};
use crate::page::{self, ENTRY};
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
        batch.put(&[], &encode_shared(shared), 0)?;
        self.core.commit_copies(batch, BatchKind::Share, shared.len() as u64, |heads| share(heads, shared))
    }

    /// Splits `buckets`, from the split pointer, whose entries are `entries`, re-appending their live
    /// records as two fresh stacks each.
    fn copy_run(&self, state: State, buckets: &[u64], entries: &[Entry]) -> Result<()> {
        let splits = buckets.len() as u64;
        let heads: Vec<u64> = entries.iter().map(Entry::head).collect();
        let live = live_records_many(&self.core.log, &heads, buckets, &state)?;
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
    let (split, siblings) = split_range(heads, splits)?;
    restack(heads, split.chain(siblings), placed)
}

/// Applies a sharing split of the buckets from the split pointer, whose entries were `shared` when it
/// was made: each bucket and its new sibling both head the bucket's stack, shared once more, and the
/// split pointer advances past them. An empty bucket's count goes up too, though it shares nothing: so
/// a level's buckets keep one count and consecutive splits go one way, in long runs. The entries come
/// from the batch, not the table: recovery may find a bucket's page newer than the split (written by a
/// later checkpoint round), and its stack then no longer the one shared.
pub(crate) fn share(heads: &mut Heads, shared: &[Entry]) -> Result<()> {
    if let Some(e) = shared.iter().find(|e| e.shared() >= MAX_SHARED) {
        return Err(Error::Corrupt { what: "a stack shared by too many splits", offset: e.head() });
    }
    let (split, siblings) = split_range(heads, shared.len() as u64)?;
    for ((bucket, sibling), e) in split.zip(siblings).zip(shared) {
        let both = Entry::new(e.head(), e.bloom, e.shared() + 1);
        heads.set(bucket, both);
        heads.set(sibling, both);
    }
    Ok(())
}

/// A sharing split's batch record: the value of its one record, the entries it shares, as stored in
/// the head table.
fn encode_shared(entries: &[Entry]) -> Vec<u8> {
    let mut value = vec![0u8; entries.len() * ENTRY];
    for (slot, e) in entries.iter().enumerate() {
        page::write_entry(&mut value, slot, *e);
    }
    value
}

/// The entries a sharing split's batch shares (see [`encode_shared`]), checked to number `buckets`.
pub(crate) fn decode_shared(records: &[Record], buckets: u64) -> Result<Vec<Entry>> {
    match records {
        [r] if r.key.is_empty() && r.value.len() as u64 == buckets * ENTRY as u64 => {
            Ok((0..buckets as usize).map(|slot| page::read_entry(&r.value, slot)).collect())
        }
        _ => Err(Error::Corrupt { what: "a sharing split's batch", offset: records.first().map_or(0, |r| r.offset) }),
    }
}

/// Checks `splits` buckets from the split pointer lie within its level, moves the pointer past them,
/// and returns them and their new siblings.
fn split_range(heads: &mut Heads, splits: u64) -> Result<(std::ops::Range<u64>, std::ops::Range<u64>)> {
    let state = heads.state;
    let half = 1u64 << state.level;
    if splits == 0 || state.split + splits > half {
        return Err(Error::Corrupt { what: "split beyond the table", offset: state.split });
    }
    advance(&mut heads.state, splits);
    let split = state.split..state.split + splits;
    Ok((split.clone(), split.start + half..split.end + half))
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
    use crate::record::{Header, Kind};
    use crate::storage::MemBackend;

    /// A sharing split's batch, as recovery reads it back.
    fn batch_record(entries: &[Entry]) -> Record {
        let value = encode_shared(entries);
        let header = Header { crc: 0, kind: Kind::Put, key_len: 0, value_len: value.len(), prev: 0, flags: 0 };
        Record { offset: 64, header, key: Vec::new(), value }
    }

    #[test]
    fn a_sharing_split_gives_bucket_and_sibling_the_recorded_stack_shared_once_more() {
        let backend = |_| Box::new(MemBackend::new()) as Box<dyn crate::storage::StorageBackend>;
        let mut heads = Heads::open(backend(0), backend(1), 1 << 20, 2).unwrap();
        heads.state.records = 20;
        heads.set(0, Entry::new(800, 0b11, 0));
        heads.set(1, Entry::new(1600, 0b101, 1));
        // What the split recorded wins over the table's newer entries (a page written after it).
        let recorded = [Entry::new(808, 0b11, 0), Entry::new(1600, 0b101, 1), Entry::default()];
        let record = batch_record(&recorded);
        assert!(decode_shared(std::slice::from_ref(&record), 2).is_err(), "a batch of the wrong size is refused");
        share(&mut heads, &decode_shared(&[record], 3).unwrap()).unwrap();
        assert_eq!((heads.state.level, heads.state.split), (2, 3));
        assert_eq!(heads.entry(0).unwrap(), Entry::new(808, 0b11, 1));
        assert_eq!(heads.entry(4).unwrap(), Entry::new(808, 0b11, 1));
        assert_eq!((heads.entry(1).unwrap(), heads.entry(5).unwrap()), (Entry::new(1600, 0b101, 2), Entry::new(1600, 0b101, 2)));
        assert_eq!((heads.entry(2).unwrap(), heads.entry(6).unwrap()), (Entry::new(0, 0, 1), Entry::new(0, 0, 1)), "empty, counted");
        // A stack shared as often as an entry can count is corrupt, and nothing is applied.
        let before = heads.state;
        assert!(share(&mut heads, &[Entry::new(8, 1, MAX_SHARED)]).is_err());
        assert_eq!(heads.state, before);
    }

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
