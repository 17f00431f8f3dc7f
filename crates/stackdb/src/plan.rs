//! The sweep's reads: a [`Plan`] holds the next buckets' records to copy, read out of the log by the
//! sweep's thread without the writer while the committing threads go on, then written back with it
//! (`docs/stackdb-format.md`, "Space").

use crate::error::Result;
use crate::heads::{Heads, State};
use crate::page::Entry;
use crate::stack::{Live, LogFile, live_records_many, young_records_many};
use crate::sync::lock;
use std::ops::Range;
use std::sync::Mutex;

/// A plan stops growing past this many bytes of records (a rewrite batch's size).
pub(crate) const PLAN_BYTES: usize = 256 << 10;
/// Buckets read at once, so their stacks' reads overlap.
const WALK_TOGETHER: u64 = 32;

/// What a sweep does with one bucket's stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Restack {
    /// Leaves it: a young sweep's bucket with no young record.
    Keep,
    /// Replaces it with a fresh stack of its live records.
    Fresh,
    /// Replaces its young part with the newest version of each key in it (tombstones kept), set on
    /// the record at this offset beneath them (0: none).
    Onto(u64),
}

/// What a sweep copies of one bucket: its restack and its records, newest first.
pub(crate) type Bucket<'l> = (Restack, Vec<Live<'l>>);

/// What the sweep bounded by `young` (a young sweep's; `None`: a full one) copies of each of
/// `buckets`, whose entries are `entries`. A young sweep rewrites a stack a split left shared whole
/// (its young part may hold only a sibling's records, which leave no copy to set on what lies
/// beneath).
pub(crate) fn read_buckets<'l>(log: &'l LogFile, entries: &[Entry], buckets: &[u64], state: &State, young: Option<u64>) -> Result<Vec<Bucket<'l>>> {
    let restack = |e: &Entry| match young {
        None => Restack::Fresh,
        Some(y) if e.head() < y => Restack::Keep,
        Some(_) if e.shared() > 0 => Restack::Fresh,
        Some(_) => Restack::Onto(0),
    };
    let mut out: Vec<Bucket<'l>> = entries.iter().map(|e| (restack(e), Vec::new())).collect();
    let fresh: Vec<usize> = (0..out.len()).filter(|&i| out[i].0 == Restack::Fresh).collect();
    let heads: Vec<u64> = fresh.iter().map(|&i| entries[i].head()).collect();
    let owners: Vec<u64> = fresh.iter().map(|&i| buckets[i]).collect();
    for (i, live) in fresh.into_iter().zip(live_records_many(log, &heads, &owners, state)?) {
        out[i].1 = live;
    }
    if let Some(y) = young {
        let onto: Vec<usize> = (0..out.len()).filter(|&i| matches!(out[i].0, Restack::Onto(_))).collect();
        let heads: Vec<u64> = onto.iter().map(|&i| entries[i].head()).collect();
        for (i, (records, beneath)) in onto.into_iter().zip(young_records_many(log, &heads, y)?) {
            out[i] = (Restack::Onto(beneath), records);
        }
    }
    Ok(out)
}

/// The records of consecutive buckets to copy, as their heads stood when read.
pub(crate) struct Plan {
    /// The sweep they belong to (its start; 0: one not begun), its young bound (`None`: a full
    /// sweep), its first bucket, and the last commit when they were read.
    pub(crate) sweep_from: u64,
    pub(crate) young: Option<u64>,
    pub(crate) first: u64,
    pub(crate) commit_seq: u64,
    /// Each bucket's entry as read: what it says to copy holds while the entry is unchanged (a split
    /// that shares the stack changes [`Entry::shared`]).
    pub(crate) entries: Vec<Entry>,
    pub(crate) restacks: Vec<Restack>,
    /// Keys and values back to back.
    bytes: Vec<u8>,
    /// Each record's key and value (`None`: a tombstone) in `bytes`, and its key's hash; each
    /// bucket's newest first.
    records: Vec<(Range<usize>, Option<Range<usize>>, u64)>,
    /// Where each bucket's records end in `records`.
    ends: Vec<usize>,
}

/// A record to copy: key, value (`None`: a tombstone) and key hash.
pub(crate) type ToCopy<'r> = (&'r [u8], Option<&'r [u8]>, u64);

impl Plan {
    /// Where the sweep `state` is in (or would begin; `young`: the bound of the sweep due) takes up
    /// this plan: the index of its first bucket the sweep has not passed. `None`: the plan belongs to
    /// another sweep, or a commit's own sweep passed all of it.
    pub(crate) fn resume_at(&self, state: &State, young: Option<u64>) -> Option<usize> {
        let same_sweep = (state.sweep_from, young) == (self.sweep_from, self.young);
        let ahead = state.sweep_cursor.checked_sub(self.first).filter(|&k| k < self.entries.len() as u64);
        ahead.filter(|_| same_sweep).map(|k| k as usize)
    }

    /// Buckets it covers.
    pub(crate) fn buckets(&self) -> Range<u64> {
        self.first..self.first + self.entries.len() as u64
    }

    /// Bucket `i`'s records (counted from the first), oldest first.
    pub(crate) fn oldest_first(&self, i: usize) -> impl Iterator<Item = ToCopy<'_>> {
        let from = if i == 0 { 0 } else { self.ends[i - 1] };
        self.records[from..self.ends[i]].iter().rev().map(|(k, v, h)| (&self.bytes[k.clone()], v.clone().map(|v| &self.bytes[v]), *h))
    }

    fn push(&mut self, entry: Entry, (restack, live): &Bucket<'_>) {
        for (r, h) in live {
            let key = self.bytes.len()..self.bytes.len() + r.key().len();
            self.bytes.extend_from_slice(r.key());
            let value = r.put_value().map(|v| {
                self.bytes.extend_from_slice(v);
                self.bytes.len() - v.len()..self.bytes.len()
            });
            self.records.push((key, value, *h));
        }
        self.entries.push(entry);
        self.restacks.push(*restack);
        self.ends.push(self.records.len());
    }
}

/// A bucket's records (newest first, as [`read_buckets`] gives them) oldest first, to copy.
pub(crate) fn oldest_first<'r>(live: &'r [Live<'_>]) -> impl Iterator<Item = ToCopy<'r>> {
    live.iter().rev().map(|(r, h)| (r.key(), r.put_value(), *h))
}

/// Reads what the sweep bounded by `young` copies of the buckets from `state`'s sweep cursor up to
/// `due`, or fewer once their records fill [`PLAN_BYTES`].
pub(crate) fn read_plan(log: &LogFile, heads: &Mutex<Heads>, state: &State, young: Option<u64>, due: u64) -> Result<Plan> {
    let mut plan = Plan {
        sweep_from: state.sweep_from,
        young,
        first: state.sweep_cursor,
        commit_seq: state.commit_seq,
        entries: Vec::new(),
        restacks: Vec::new(),
        bytes: Vec::new(),
        records: Vec::new(),
        ends: Vec::new(),
    };
    let mut bucket = state.sweep_cursor;
    let last = due.min(state.buckets());
    while bucket < last && plan.bytes.len() < PLAN_BYTES {
        let group: Vec<u64> = (bucket..last.min(bucket + WALK_TOGETHER)).collect();
        // The table as these entries were read addresses their keys, whatever commits came since.
        let (entries, now) = {
            let mut heads = lock(heads);
            (heads.entries(&group)?, heads.state)
        };
        for (entry, read) in entries.iter().zip(read_buckets(log, &entries, &group, &now, young)?) {
            plan.push(*entry, &read);
        }
        bucket += group.len() as u64;
    }
    Ok(plan)
}
