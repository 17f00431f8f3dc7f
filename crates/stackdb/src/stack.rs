//! A bucket's stack in the log: walking it from its head through `prev`
//! links, and building fresh stacks from copies of live records.

use crate::error::{Error, Result};
use crate::hash::FastMap;
use crate::hash::hash;
use crate::heads::{Heads, State};
use crate::log::{Batch, Log, RecordView};
use crate::page::Entry;
use crate::record::Kind;
use crate::storage::StorageBackend;

/// The database's log.
pub(crate) type LogFile = Log<Box<dyn StorageBackend>>;

/// What the stack `entry` heads says of `key`: `None` when its Bloom word
/// alone rules the key out, else the key's newest put (none if it has no
/// record or its newest is a tombstone) and how many records were read to
/// find it.
pub(crate) fn probe<'l>(log: &'l LogFile, entry: Entry, key: &[u8], h: u64) -> Result<Option<(Option<RecordView<'l>>, u64)>> {
    if !entry.may_hold(h) {
        return Ok(None);
    }
    find(log, entry.head(), key).map(Some)
}

/// Walks a stack from `head` to the newest record of `key`; returns it if
/// it is a put, and the number of records visited.
fn find<'l>(log: &'l LogFile, head: u64, key: &[u8]) -> Result<(Option<RecordView<'l>>, u64)> {
    let mut offset = head;
    let mut depth = 0;
    while offset != 0 {
        let r = log.view(offset)?;
        depth += 1;
        if r.key() == key {
            return Ok(((r.header.kind == Kind::Put).then_some(r), depth));
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

/// What a walk does after visiting a record.
pub(crate) enum Step {
    /// Go on to the record beneath.
    Down,
    /// This stack's walk is over.
    Stop,
}

/// Walks the stacks headed by `heads` (0: empty) together, one record of
/// each in turn, calling `visit(i, record)` from the top of stack `i` down
/// until it says [`Step::Stop`] or the stack ends. Each step asks for the
/// record beneath to be loaded before visiting the other stacks, so the
/// walks' memory reads overlap instead of waiting for each other.
pub(crate) fn walk_many<'l>(log: &'l LogFile, heads: &[u64], mut visit: impl FnMut(usize, RecordView<'l>) -> Result<Step>) -> Result<()> {
    let mut walkers: Vec<(usize, u64)> = heads.iter().copied().enumerate().filter(|&(_, head)| head != 0).collect();
    walkers.iter().for_each(|&(_, head)| log.prefetch(head));
    while !walkers.is_empty() {
        let mut kept = 0;
        for w in 0..walkers.len() {
            let (i, offset) = walkers[w];
            let r = log.view(offset)?;
            let next = below(r.offset, r.header.prev)?;
            if matches!(visit(i, r)?, Step::Down) && next != 0 {
                log.prefetch(next);
                walkers[kept] = (i, next);
                kept += 1;
            }
        }
        walkers.truncate(kept);
    }
    Ok(())
}

/// The newest records of many keys, their stacks walked together ([`walk_many`]): key `i`
/// (`key_of(state, i)`) is looked for in the stack headed by `tops[i]` (0: none to walk), and
/// `found(state, i, record)` is told its newest record if that is a put (a tombstone or no record
/// says nothing). Returns how many records were read.
pub(crate) fn newest_many<'l, 'k, S>(
    log: &'l LogFile,
    tops: &[u64],
    state: &mut S,
    key_of: impl Fn(&S, usize) -> &'k [u8],
    mut found: impl FnMut(&mut S, usize, RecordView<'l>),
) -> Result<u64> {
    let mut depth = 0;
    walk_many(log, tops, |i, r| {
        depth += 1;
        if r.key() != key_of(state, i) {
            return Ok(Step::Down);
        }
        if r.header.kind == Kind::Put {
            found(state, i, r);
        }
        Ok(Step::Stop)
    })?;
    Ok(depth)
}

/// A live record and its key's hash.
pub(crate) type Live<'l> = (RecordView<'l>, u64);

/// The newest version of every key of bucket `buckets[i]` in the stack headed by `heads[i]`, for
/// each `i`, as the table `state` addresses keys: tombstones dropped, newest first, each with its key's
/// hash. A stack a split left shared holds other buckets' records too, which are passed over.
pub(crate) fn live_records_many<'l>(log: &'l LogFile, heads: &[u64], buckets: &[u64], state: &State) -> Result<Vec<Vec<Live<'l>>>> {
    debug_assert_eq!(heads.len(), buckets.len());
    let mut newest: Vec<Newest<'l>> = heads.iter().map(|_| Newest::default()).collect();
    walk_many(log, heads, |i, r| {
        let h = hash(r.key());
        if state.address(h) == buckets[i] {
            newest[i].offer(r, h);
        }
        Ok(Step::Down)
    })?;
    Ok(newest
        .into_iter()
        .map(|n| {
            let mut live = n.records;
            live.retain(|(r, _)| r.header.kind == Kind::Put);
            live
        })
        .collect())
}

/// The young part of each stack headed by `heads[i]` (each at or past `young`; a stack a split left
/// shared is not asked for): the newest version of every key among its records from the top down to
/// the first that lies below `young` or is a sweep's copy, newest first, tombstones kept — they hide
/// older versions beneath — and the offset of that first old record (0: none). Beneath a copy all is
/// old: a young sweep sets its copies on old records.
pub(crate) fn young_records_many<'l>(log: &'l LogFile, heads: &[u64], young: u64) -> Result<Vec<(Vec<Live<'l>>, u64)>> {
    let mut newest: Vec<Newest<'l>> = heads.iter().map(|_| Newest::default()).collect();
    let mut beneath = vec![0u64; heads.len()];
    walk_many(log, heads, |i, r| {
        if r.offset < young || r.header.is_copy() {
            beneath[i] = r.offset;
            return Ok(Step::Stop);
        }
        let h = hash(r.key());
        newest[i].offer(r, h);
        Ok(Step::Down)
    })?;
    Ok(newest.into_iter().map(|n| n.records).zip(beneath).collect())
}

/// Distinct keys a stack's walk compares one by one before it indexes them by hash: a bucket holds
/// `max_load` keys on average (2), and a map per stack cost more than the comparisons (a split of 512
/// buckets spent a fifth of its time building one).
const SCAN_KEYS: usize = 32;

/// The first (newest) record of each key met in one stack's walk, newest first.
#[derive(Default)]
struct Newest<'l> {
    records: Vec<Live<'l>>,
    /// Where the first key of each hash is in `records`, once it holds more than [`SCAN_KEYS`].
    by_hash: Option<FastMap<u64, usize>>,
}

impl<'l> Newest<'l> {
    /// Keeps `r`, of key hash `h`, if it is the first record of its key met.
    fn offer(&mut self, r: RecordView<'l>, h: u64) {
        let scan = || self.records.iter().any(|(s, sh)| *sh == h && s.key() == r.key());
        let known = match &self.by_hash {
            None => scan(),
            // A second key with the same hash is looked for among every record kept.
            Some(by_hash) => by_hash.get(&h).is_some_and(|&j| self.records[j].0.key() == r.key() || scan()),
        };
        if known {
            return;
        }
        self.records.push((r, h));
        if let Some(by_hash) = &mut self.by_hash {
            by_hash.entry(h).or_insert(self.records.len() - 1);
        } else if self.records.len() > SCAN_KEYS {
            self.by_hash = Some(self.records.iter().enumerate().rev().map(|(j, (_, h))| (*h, j)).collect());
        }
    }
}

/// The newest version of every key of `bucket` in the stack headed by `head`, tombstones dropped;
/// newest first.
pub(crate) fn live_records<'l>(log: &'l LogFile, head: u64, bucket: u64, state: &State) -> Result<Vec<Live<'l>>> {
    Ok(live_records_many(log, &[head], &[bucket], state)?.pop().unwrap_or_default())
}

/// Live records (newest first, as [`live_records_many`] gives them) oldest first, as key, value and
/// key hash: what [`copy_records`] takes, so the newest ends on top of its new stack.
pub(crate) fn oldest_first<'r>(live: &'r [Live<'_>]) -> impl Iterator<Item = (&'r [u8], &'r [u8], u64)> {
    live.iter().rev().map(|(r, h)| (r.key(), r.value(), *h))
}

/// A copy's place: its log offset and its key's hash.
pub(crate) type Placed = (u64, u64);

/// Appends copies of `records` (each bucket's oldest first, as key, value
/// and key hash) to `batch` as fresh stacks of the buckets `state`
/// addresses them to; returns where each copy went, in order.
pub(crate) fn copy_records<'r>(
    batch: &mut Batch,
    records: impl IntoIterator<Item = (&'r [u8], &'r [u8], u64)>,
    state: &State,
) -> Result<Vec<Placed>> {
    let mut tops: FastMap<u64, u64> = FastMap::default();
    let mut placed = Vec::new();
    for (key, value, h) in records {
        let top = tops.entry(state.address(h)).or_insert(0);
        *top = batch.put(key, value, *top)?;
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
        heads.set(bucket, Entry::default());
    }
    for (offset, h) in placed {
        let bucket = heads.state.address(h);
        let e = heads.entry(bucket)?;
        heads.set(bucket, e.pushed(offset, h));
    }
    Ok(())
}
