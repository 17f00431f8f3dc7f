//! The one write transaction: reads its own writes, then the last commit;
//! its puts and deletes commit together.
//!
//! A put or delete only notes what it does. The committed state of the keys
//! written — needed for the live-key and live-byte counts, and to drop a
//! tombstone for a key that is not there — is looked up for all of them
//! together, their stacks walked side by side so the memory reads overlap
//! (`stack::walk_many`), and the records are encoded at commit, on top of
//! their buckets' stacks.
//!
//! The writer is taken at the transaction's first read of the store or at
//! its commit, whichever comes first: until then it has only written blindly,
//! so it is as if it had begun there. Just before taking it, the keys written
//! so far are looked up without it; once it is held, each of those whose
//! place has changed meanwhile — the bucket its hash addresses (the table
//! grew past it) or that bucket's head entry — is looked up again. So the
//! walks of a large batch of writes keep no other writer waiting, and what
//! the commit finally uses was read under the writer or has not changed
//! since.

use crate::db::Database;
use crate::error::{Error, Result};
use crate::hash::{FastMap, FastSet, hash};
use crate::log::{Commit, Durability};
use crate::page::Entry;
use crate::record::{check_lengths, padded_len};
use crate::stack::newest_many;
use crate::sync::lock;
use std::ops::Range;
use std::sync::MutexGuard;

/// How a key stood at the last commit.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Committed {
    /// No record, or its newest is a tombstone.
    Absent,
    /// Its newest record is a put at this log offset, with a value this long, pushed on the record at
    /// `beneath` (0: none).
    Live { offset: u64, value_len: usize, beneath: u64 },
}

/// Where the table stood when a transaction looked keys up: the last commit, and how many entries
/// had been set ([`RecentSets::mark`](crate::recent::RecentSets::mark)).
#[derive(Clone, Copy, Debug)]
struct Seen {
    commit_seq: u64,
    sets: u64,
}

/// How a key stood at the last commit, and where it was looked up: its bucket and that bucket's
/// head entry then.
#[derive(Clone, Copy, Debug)]
struct Found {
    committed: Committed,
    bucket: u64,
    entry: Entry,
}

/// What this transaction has done to a key so far.
#[derive(Clone, Copy, Debug)]
enum Current {
    /// Nothing: the key is as committed.
    AsCommitted,
    /// Put by operation `n`.
    Written(usize),
    /// Deleted.
    Deleted,
}

/// A key this transaction has read or written.
#[derive(Debug)]
struct KeyState {
    key: Range<usize>,
    hash: u64,
    current: Current,
    /// The next key with the same hash (a 64-bit collision), if any.
    same_hash: Option<usize>,
    /// How it stood at the last commit, once looked up.
    found: Option<Found>,
}

/// A put (with its value's place in the transaction's bytes) or a delete.
#[derive(Debug)]
struct Op {
    key: usize,
    value: Option<Range<usize>>,
}

/// The one write transaction: puts and deletes become visible together at
/// [`WriteTxn::commit`]; dropping it discards them.
pub struct WriteTxn<'db> {
    db: &'db Database,
    /// The writer, once the transaction has read the store or is committing.
    guard: Option<MutexGuard<'db, ()>>,
    /// The keys and values of this transaction, back to back.
    bytes: Vec<u8>,
    keys: Vec<KeyState>,
    /// The first key of each hash.
    by_hash: FastMap<u64, usize>,
    ops: Vec<Op>,
}

impl std::fmt::Debug for WriteTxn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteTxn").field("operations", &self.ops.len()).finish_non_exhaustive()
    }
}

impl<'db> WriteTxn<'db> {
    pub(crate) fn new(db: &'db Database) -> Self {
        WriteTxn { db, guard: None, bytes: Vec::new(), keys: Vec::new(), by_hash: FastMap::default(), ops: Vec::new() }
    }

    /// The index of `key`'s state, made on first use.
    fn slot(&mut self, key: &[u8]) -> usize {
        let h = hash(key);
        let mut at = self.by_hash.get(&h).copied();
        let mut last = None;
        while let Some(i) = at {
            if &self.bytes[self.keys[i].key.clone()] == key {
                return i;
            }
            last = Some(i);
            at = self.keys[i].same_hash;
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(key);
        let i = self.keys.len();
        self.keys.push(KeyState { key: start..self.bytes.len(), hash: h, current: Current::AsCommitted, same_hash: None, found: None });
        match last {
            Some(l) => self.keys[l].same_hash = Some(i),
            None => {
                self.by_hash.insert(h, i);
            }
        }
        i
    }

    /// Takes the writer if the transaction does not hold it yet, the keys written so far looked up
    /// just before and, once it is held, looked up again where their places changed meanwhile.
    fn take_writer(&mut self) -> Result<()> {
        if self.guard.is_some() {
            return Ok(());
        }
        let seen_at = self.look_ahead();
        self.guard = Some(lock(&self.db.core.writer));
        seen_at.map_or(Ok(()), |seen_at| self.confirm(seen_at))
    }

    /// The length of `op`'s record in the log.
    fn op_len(&self, op: &Op) -> usize {
        padded_len(self.keys[op.key].key.len(), op.value.as_ref().map_or(0, |v| v.len()))
    }

    /// The keys not looked up yet.
    fn unknown(&self) -> Vec<usize> {
        (0..self.keys.len()).filter(|&i| self.keys[i].found.is_none()).collect()
    }

    /// Looks up, all together, how the keys `unknown` stood at the last commit: their buckets' head
    /// entries, then their stacks walked side by side. Returns where the table stood as it read the
    /// entries.
    fn look_up(&mut self, unknown: &[usize]) -> Result<Seen> {
        let (seen, places) = {
            let mut heads = lock(&self.db.core.heads);
            let seen = Seen { commit_seq: heads.state.commit_seq, sets: heads.recent.mark() };
            (seen, heads.places(unknown.iter().map(|&i| self.keys[i].hash))?)
        };
        let mut tops = Vec::with_capacity(unknown.len());
        for (&i, &(bucket, entry)) in unknown.iter().zip(&places) {
            let k = &mut self.keys[i];
            // Absent unless a walk meets the key.
            k.found = Some(Found { committed: Committed::Absent, bucket, entry });
            tops.push(if entry.may_hold(k.hash) { entry.head() } else { 0 });
        }
        let bytes = &self.bytes;
        newest_many(
            &self.db.core.log,
            &tops,
            &mut self.keys,
            |keys, n| &bytes[keys[unknown[n]].key.clone()],
            |keys, n, r| {
                if let Some(found) = &mut keys[unknown[n]].found {
                    found.committed = Committed::Live { offset: r.offset, value_len: r.header.value_len, beneath: r.header.prev };
                }
            },
        )?;
        Ok(seen)
    }

    /// Looks up the keys not yet known without the writer; returns where the table stood as it saw
    /// them. A walk that meets the log freed under it leaves them all to be looked up with the writer.
    fn look_ahead(&mut self) -> Option<Seen> {
        let unknown = self.unknown();
        match self.look_up(&unknown) {
            Ok(seen) => Some(seen),
            Err(_) => {
                for &i in &unknown {
                    self.keys[i].found = None;
                }
                None
            }
        }
    }

    /// With the writer just taken: forgets what [`look_ahead`](Self::look_ahead) found for each
    /// key whose place has changed since — the bucket its hash addresses now (a split moved it) or
    /// that bucket's head entry. A key's records all lie in its bucket's stack, so a commit that
    /// left both as they were left the key as it was; splits of other buckets do not matter. With
    /// no commit since (every change of an entry is one), nothing has changed. The buckets set
    /// since are asked of the table's recent sets, so a key none of them addresses is not read
    /// again; when they are no longer kept, or outnumber the keys, every key's entry is read again.
    fn confirm(&mut self, seen_at: Seen) -> Result<()> {
        let seen: Vec<(usize, Found)> = self.keys.iter().enumerate().filter_map(|(i, k)| k.found.map(|f| (i, f))).collect();
        if seen.is_empty() {
            return Ok(());
        }
        let mut heads = lock(&self.db.core.heads);
        if heads.state.commit_seq == seen_at.commit_seq {
            return Ok(());
        }
        let moved: Vec<bool> = match heads.recent.since(seen_at.sets).filter(|set| set.len() <= 4 * seen.len()) {
            Some(set) => {
                let set: FastSet<u64> = set.iter().copied().collect();
                seen.iter()
                    .map(|&(i, f)| {
                        let bucket = heads.state.address(self.keys[i].hash);
                        bucket != f.bucket || set.contains(&bucket)
                    })
                    .collect()
            }
            None => {
                let now = heads.places(seen.iter().map(|&(i, _)| self.keys[i].hash))?;
                seen.iter().zip(now).map(|(&(_, f), place)| place != (f.bucket, f.entry)).collect()
            }
        };
        drop(heads);
        for (&(i, _), moved) in seen.iter().zip(moved) {
            if moved {
                self.keys[i].found = None;
            }
        }
        Ok(())
    }

    /// How key `i` stood at the last commit, looked up now (writer held) if not yet.
    fn committed(&mut self, i: usize) -> Result<Committed> {
        self.take_writer()?;
        if self.keys[i].found.is_none() {
            self.look_up(&[i])?;
        }
        Ok(self.keys[i].found.expect("looked up").committed)
    }

    /// The value of `key` as this transaction sees it: its own puts and
    /// deletes first, then the last commit.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let i = self.slot(key);
        match self.keys[i].current {
            Current::Written(op) => Ok(self.ops[op].value.clone().map(|v| self.bytes[v].to_vec())),
            Current::Deleted => Ok(None),
            Current::AsCommitted => match self.committed(i)? {
                Committed::Live { offset, .. } => Ok(Some(self.db.core.log.view(offset)?.value().to_vec())),
                _ => Ok(None),
            },
        }
    }

    /// Notes that the transaction will read `key`: it is looked up with the keys written so far, before
    /// the writer is taken, so that its [`get`](Self::get) under the writer walks no stack unless a
    /// commit moved the key meanwhile. (A game push checks its players' leases after its blind writes:
    /// noted, those checks no longer hold the writer for a walk each.)
    pub fn will_read(&mut self, key: &[u8]) {
        self.slot(key);
    }

    /// Sets `key` to `value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        check_lengths(key, value)?;
        let i = self.slot(key);
        let start = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.keys[i].current = Current::Written(self.ops.len());
        self.ops.push(Op { key: i, value: Some(start..self.bytes.len()) });
        Ok(())
    }

    /// Deletes `key` (nothing happens if it does not exist).
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        let i = self.slot(key);
        let absent = match self.keys[i].current {
            Current::Deleted => true,
            Current::AsCommitted => self.keys[i].found.is_some_and(|f| f.committed == Committed::Absent),
            Current::Written(_) => false,
        };
        if !absent {
            self.keys[i].current = Current::Deleted;
            self.ops.push(Op { key: i, value: None });
        }
        Ok(())
    }

    /// With the writer held: looks up, all together, how every key not yet
    /// known stood at the last commit.
    fn resolve(&mut self) -> Result<()> {
        let unknown = self.unknown();
        if !unknown.is_empty() {
            self.look_up(&unknown)?;
        }
        Ok(())
    }

    /// Makes every put and delete of this transaction durable (as the
    /// options' durability says) and visible, all at once.
    pub fn commit(mut self) -> Result<()> {
        let db = self.db;
        if self.ops.is_empty() {
            return Ok(());
        }
        self.take_writer()?;
        self.resolve()?;
        let found = |k: &KeyState| k.found.expect("every key looked up");
        // Each key's live record length as the operations go, from the committed one.
        let mut live: Vec<Option<usize>> = self
            .keys
            .iter()
            .map(|k| match found(k).committed {
                Committed::Live { value_len, .. } => Some(padded_len(k.key.len(), value_len)),
                Committed::Absent => None,
            })
            .collect();
        let mut batch = db.core.log.batch();
        batch.reserve(self.ops.iter().map(|op| self.op_len(op)).sum());
        let mut touched: FastMap<u64, Entry> = FastMap::with_capacity_and_hasher(self.keys.len(), Default::default());
        let (mut records_delta, mut bytes_delta) = (0i64, 0i64);
        for op in &self.ops {
            let k = &self.keys[op.key];
            let Found { committed, bucket, entry } = found(k);
            let top = touched.get(&bucket).copied().unwrap_or(entry);
            let under = beneath_new_version(committed, top);
            let key = &self.bytes[k.key.clone()];
            let old = live[op.key];
            let offset = match &op.value {
                Some(value) => {
                    let new = padded_len(key.len(), value.len());
                    records_delta += i64::from(old.is_none());
                    bytes_delta += new as i64 - old.unwrap_or(0) as i64;
                    live[op.key] = Some(new);
                    batch.put(key, &self.bytes[value.clone()], under)?
                }
                None => {
                    let Some(old) = old else { continue };
                    records_delta -= 1;
                    bytes_delta -= old as i64;
                    live[op.key] = None;
                    batch.delete(key, under)?
                }
            };
            touched.insert(bucket, top.pushed(offset, k.hash));
        }
        if batch.is_empty() {
            return Ok(());
        }
        let sequence = lock(&db.core.heads).state.commit_seq + 1;
        let commit = Commit::user(sequence, records_delta, bytes_delta);
        db.core.log.poisoning(db.core.checkpoint_if_full(touched.len()))?;
        let end = db.core.log.append(batch, commit, db.core.options.durability)?;
        {
            let mut heads = lock(&db.core.heads);
            for (bucket, entry) in &touched {
                heads.set(*bucket, *entry);
            }
            let state = &mut heads.state;
            state.records = state.records.saturating_add_signed(records_delta);
            state.live_bytes = state.live_bytes.saturating_add_signed(bytes_delta);
            state.commit_seq = sequence;
        }
        // Visible from here on: an error now does not undo the commit.
        let housekeeping = db.grow().and_then(|()| db.sweep_step()).and_then(|()| db.core.checkpoint_step());
        // Durable once synced: the next commit may take the writer meanwhile and share this one's
        // sync, or find it covered by one that started later (group commit). The sweep's copies are
        // synced with the next commit.
        drop(self.guard.take());
        let synced = match db.core.options.durability {
            Durability::Immediate => db.core.log.sync_to(end),
            Durability::Eventual => Ok(()),
        };
        match (housekeeping, synced) {
            (_, Err(e)) => Err(Error::InDoubt(e.to_string())),
            // The commit stands (as durable as promised); the work it left undone failed, and what
            // failed may have left the OS's pages unwritten: later writes are refused.
            (Err(e), Ok(())) => {
                db.core.log.poison(&e);
                Ok(())
            }
            (Ok(()), Ok(())) => Ok(()),
        }
    }
}

/// The record a key's new version goes on, in a bucket whose head entry is `top` (this batch's last push
/// on it, if any: at or past the log's end, so never a committed record). Normally the top itself; but
/// when the key's committed version *is* the top, what lay beneath it — the replaced version leaves the stack at once
/// instead of staying in every later walk until the sweep. A hot key rewritten every game period so
/// keeps one record in its stack, not one per write: the walks of its bucket's other keys, the sweep's
/// and a copying split's pass no dead versions of it. Readers already on the old top still walk on from
/// it: records are never changed, only no longer linked from the head.
fn beneath_new_version(committed: Committed, top: Entry) -> u64 {
    match committed {
        Committed::Live { offset, beneath, .. } if offset == top.head() => beneath,
        _ => top.head(),
    }
}
