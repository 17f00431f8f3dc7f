//! The sweep's reads: a [`Plan`] holds the next buckets' live records, copied out of the log by the
//! sweep's thread without the writer while the committing threads go on, then written back as fresh
//! stacks with it (`docs/stackdb-format.md`, "Space").

use crate::db::lock;
use crate::error::Result;
use crate::heads::{Entry, Heads, State};
use crate::stack::{Live, LogFile, live_records_many};
use std::ops::Range;
use std::sync::Mutex;

/// A plan stops growing past this many bytes of records (a rewrite batch's size).
pub(crate) const PLAN_BYTES: usize = 256 << 10;
/// Buckets read at once, so their stacks' reads overlap.
const WALK_TOGETHER: u64 = 32;

/// The live records of consecutive buckets as their heads stood when read.
pub(crate) struct Plan {
    /// The sweep they belong to (its start), its first bucket, and the last commit when they were read.
    pub(crate) sweep_from: u64,
    pub(crate) first: u64,
    pub(crate) commit_seq: u64,
    /// Each bucket's entry as read: its records are still the bucket's live ones while it is
    /// unchanged (a split that shares the stack changes [`Entry::shared`]).
    pub(crate) entries: Vec<Entry>,
    /// Keys and values back to back.
    bytes: Vec<u8>,
    /// Each record's key and value in `bytes`, and its key's hash; each bucket's newest first.
    records: Vec<(Range<usize>, Range<usize>, u64)>,
    /// Where each bucket's records end in `records`.
    ends: Vec<usize>,
}

impl Plan {
    /// Whether it is the next step of the sweep `state` is in.
    pub(crate) fn fits(&self, state: &State) -> bool {
        (state.sweep_from, state.sweep_cursor) == (self.sweep_from, self.first)
    }

    /// Buckets it covers.
    pub(crate) fn buckets(&self) -> Range<u64> {
        self.first..self.first + self.entries.len() as u64
    }

    /// Bucket `i`'s records (counted from the first), oldest first, as key, value and hash.
    pub(crate) fn oldest_first(&self, i: usize) -> impl Iterator<Item = (&[u8], &[u8], u64)> {
        let from = if i == 0 { 0 } else { self.ends[i - 1] };
        self.records[from..self.ends[i]].iter().rev().map(|(k, v, h)| (&self.bytes[k.clone()], &self.bytes[v.clone()], *h))
    }

    fn push(&mut self, entry: Entry, live: &[Live<'_>]) {
        for (r, h) in live {
            let key = self.bytes.len()..self.bytes.len() + r.key().len();
            self.bytes.extend_from_slice(r.key());
            let value = self.bytes.len()..self.bytes.len() + r.value().len();
            self.bytes.extend_from_slice(r.value());
            self.records.push((key, value, *h));
        }
        self.entries.push(entry);
        self.ends.push(self.records.len());
    }
}

/// Reads the live records of the buckets from `state`'s sweep cursor up to `due`, or fewer once they
/// fill [`PLAN_BYTES`].
pub(crate) fn read_plan(log: &LogFile, heads: &Mutex<Heads>, state: &State, due: u64) -> Result<Plan> {
    let mut plan = Plan {
        sweep_from: state.sweep_from,
        first: state.sweep_cursor,
        commit_seq: state.commit_seq,
        entries: Vec::new(),
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
        let stacks: Vec<u64> = entries.iter().map(Entry::head).collect();
        for (entry, live) in entries.iter().zip(live_records_many(log, &stacks, &group, &now)?) {
            plan.push(*entry, &live);
        }
        bucket += group.len() as u64;
    }
    Ok(plan)
}
