//! The appliers a commit and recovery's replay share: what a split's, a sharing split's, a full
//! sweep's or a young sweep's batch does to the head table, and the batch records that carry a
//! sharing split's and a young sweep's entries. A commit applies its batch through these once the
//! log holds it; replay applies the same batch the same way, so the two cannot drift apart.

use crate::error::{Error, Result};
use crate::heads::{Estimates, Heads, Hole, State};
use crate::log::Record;
use crate::page::{self, ENTRY};
use crate::page::{Entry, MAX_SHARED};
use crate::stack::{Placed, restack};

/// Applies a split batch covering `splits` buckets: the buckets from the split pointer and their new
/// siblings get the copies, and the split pointer advances past them.
pub(crate) fn split(heads: &mut Heads, splits: u64, placed: impl IntoIterator<Item = Placed>) -> Result<()> {
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
pub(crate) fn encode_shared(entries: &[Entry]) -> Vec<u8> {
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
pub(crate) fn advance(state: &mut State, splits: u64) {
    state.split += splits;
    if state.split == 1u64 << state.level {
        state.level += 1;
        state.split = 0;
    }
}

/// Bytes of each bucket's new entry in a young sweep's batch: bucket, link word, Bloom word.
const SET_ENTRY: usize = 24;

/// The last record of a young sweep's batch: the value of the record, the buckets it sets and their
/// new entries, as stored in the head table.
pub(crate) fn encode_entries(set: &[(u64, Entry)]) -> Vec<u8> {
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
pub(crate) fn sweep(heads: &mut Heads, start: u64, buckets: u64, placed: impl IntoIterator<Item = Placed>, end: u64) -> Result<()> {
    let state = heads.state;
    if state.sweep_from != 0 && state.young != 0 {
        return Err(Error::Corrupt { what: "a full sweep's batch within a young sweep", offset: start });
    }
    let range = covered(&state, start, buckets)?;
    restack(heads, range.clone(), placed)?;
    let (state, est) = (&mut heads.state, &mut heads.estimates);
    if state.sweep_from == 0 {
        (state.sweep_from, state.young) = (start, 0);
    }
    state.sweep_cursor = range.end;
    est.copied += end - start;
    if range.end == state.buckets() {
        (state.floor, state.young) = (state.sweep_from, end);
        (state.sweep_from, state.sweep_cursor) = (0, 0);
        *est = Estimates { survival: est.survival, ..Estimates::default() };
    }
    Ok(())
}

/// Applies a young sweep's batch that began at log offset `start`, whose last record ends at `end`,
/// covers `buckets` buckets from the sweep's cursor and sets the entries `set`: the one reaching the
/// last bucket ends the sweep, leaves a hole from where the young records began to where the sweep
/// began, and makes what follows young.
pub(crate) fn young(heads: &mut Heads, start: u64, buckets: u64, set: &[(u64, Entry)], end: u64) -> Result<()> {
    let state = heads.state;
    if state.young == 0 || (buckets == 0 && (state.sweep_from != 0 || !set.is_empty())) {
        return Err(Error::Corrupt { what: "a young sweep's batch within a sweep of another kind", offset: start });
    }
    if buckets == 0 {
        (heads.state.young, heads.estimates.islands) = (end, 0);
        return Ok(());
    }
    let range = covered(&state, start, buckets)?;
    if set.iter().any(|(b, e)| !range.contains(b) || e.head() >= end) {
        return Err(Error::Corrupt { what: "a young sweep's entry outside its batch", offset: start });
    }
    for &(bucket, e) in set {
        heads.set(bucket, e);
    }
    let (state, est) = (&mut heads.state, &mut heads.estimates);
    est.copied += end - start;
    if state.sweep_from == 0 {
        state.sweep_from = start;
    }
    state.sweep_cursor = range.end;
    if range.end == state.buckets() {
        // The young records it passed over are dead, and so is all the hole holds but the copies
        // the sweep before made (a young sweep's copies stay where they are, old).
        let hole = state.young..state.sweep_from;
        let young_bytes = (hole.end - hole.start).saturating_sub(est.islands);
        est.freed += young_bytes;
        est.survival = (est.copied as f64 / young_bytes.max(1) as f64).min(1.0);
        // What was written while it ran stays young; its own copies are marked as such.
        (state.young, state.sweep_from, state.sweep_cursor) = (state.sweep_from, 0, 0);
        (est.islands, est.copied) = (est.copied, 0);
        heads.holes.push(Hole { range: hole, done_at: end });
    }
    Ok(())
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
}
