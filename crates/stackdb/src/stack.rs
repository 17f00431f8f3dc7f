//! A bucket's stack in the log: walking it from its head through `prev`
//! links, and building fresh stacks from copies of live records.

use crate::error::{Error, Result};
use crate::hash::{bloom_bits, hash};
use crate::heads::{Entry, Heads, State};
use crate::log::{Batch, Log, Record};
use crate::record::Kind;
use crate::storage::StorageBackend;
use std::collections::{HashMap, HashSet};

/// The database's log.
pub(crate) type LogFile = Log<Box<dyn StorageBackend>>;

/// What the stack `entry` heads says of `key`: `None` when its Bloom word
/// alone rules the key out, else the key's value (none if it has no record
/// or its newest is a tombstone) and how many records were read to find it.
pub(crate) fn probe(log: &LogFile, entry: Entry, key: &[u8], h: u64) -> Result<Option<(Option<Vec<u8>>, u64)>> {
    let bits = bloom_bits(h);
    if entry.head == 0 || entry.bloom & bits != bits {
        return Ok(None);
    }
    find(log, entry.head, key).map(Some)
}

/// Walks a stack from `head` to the newest record of `key`; returns the
/// value it gives the key (a put's value; a tombstone or no record, none)
/// and the number of records visited. Only that value is copied.
fn find(log: &LogFile, head: u64, key: &[u8]) -> Result<(Option<Vec<u8>>, u64)> {
    let mut offset = head;
    let mut depth = 0;
    while offset != 0 {
        let r = log.view(offset)?;
        depth += 1;
        if r.key() == key {
            return Ok(((r.header.kind == Kind::Put).then(|| r.value().to_vec()), depth));
        }
        offset = below(r.offset, r.header.prev)?;
    }
    Ok((None, depth))
}

/// The offset `prev` of the record beneath the one at `offset`, checked to
/// go down the log.
fn below(offset: u64, prev: u64) -> Result<u64> {
    if prev >= offset {
        return Err(Error::Corrupt { what: "stack link", offset });
    }
    Ok(prev)
}

/// The newest version of every key in a stack, tombstones dropped; newest first.
pub(crate) fn live_records(log: &LogFile, head: u64) -> Result<Vec<Record>> {
    let mut seen = HashSet::new();
    let mut live = Vec::new();
    let mut offset = head;
    while offset != 0 {
        let r = log.view(offset)?;
        offset = below(r.offset, r.header.prev)?;
        if !seen.contains(r.key()) {
            seen.insert(r.key().to_vec());
            if r.header.kind == Kind::Put {
                live.push(r.to_record());
            }
        }
    }
    Ok(live)
}

/// A copy's place: its log offset and its key's hash.
pub(crate) type Placed = (u64, u64);

/// Appends copies of `records` (each bucket's oldest first) to `batch` as
/// fresh stacks of the buckets `state` addresses them to; returns where
/// each copy went, in order.
pub(crate) fn copy_records<'r>(
    batch: &mut Batch,
    records: impl IntoIterator<Item = &'r Record>,
    state: &State,
) -> Result<Vec<Placed>> {
    let mut tops: HashMap<u64, u64> = HashMap::new();
    let mut placed = Vec::new();
    for r in records {
        let h = hash(&r.key);
        let top = tops.entry(state.address(h)).or_insert(0);
        *top = batch.put(&r.key, &r.value, *top)?;
        placed.push((*top, h));
    }
    Ok(placed)
}

/// Empties the buckets `cleared`, then pushes each placed record, in
/// order, onto the bucket its hash addresses: the head-table side of a
/// split or a rewrite (the same for the writer and for recovery), and with
/// nothing cleared, the replay of a user batch.
pub(crate) fn restack(heads: &mut Heads, cleared: impl IntoIterator<Item = u64>, placed: impl IntoIterator<Item = Placed>) -> Result<()> {
    for bucket in cleared {
        heads.set(bucket, Entry::default())?;
    }
    for (offset, h) in placed {
        let bucket = heads.state.address(h);
        let e = heads.entry(bucket)?;
        heads.set(bucket, Entry { head: offset, bloom: e.bloom | bloom_bits(h) })?;
    }
    Ok(())
}
