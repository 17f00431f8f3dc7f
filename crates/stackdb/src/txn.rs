//! The one write transaction: reads its own writes, then the last commit;
//! its puts and deletes commit together.

use crate::db::{Database, lock};
use crate::error::Result;
use crate::hash::{bloom_bits, hash};
use crate::heads::Entry;
use crate::log::{Batch, Commit};
use crate::record::padded_len;
use crate::stack::probe;
use crate::hash::FastMap;
use std::sync::MutexGuard;

/// What a write transaction knows of a key.
enum Known {
    /// Not there: never was, or deleted (by the last commit or this transaction).
    Absent,
    /// The committed value, as this transaction read it.
    Committed(Vec<u8>),
    /// Written by this transaction: its record's offset in the batch.
    Written(u64),
}

/// The one write transaction: puts and deletes become visible together at
/// [`WriteTxn::commit`]; dropping it discards them.
pub struct WriteTxn<'db> {
    db: &'db Database,
    guard: MutexGuard<'db, ()>,
    batch: Batch,
    /// New heads of the buckets this batch pushed onto.
    touched: FastMap<u64, Entry>,
    /// What this transaction knows of each key it has read or written.
    known: FastMap<Vec<u8>, Known>,
    records_delta: i64,
    bytes_delta: i64,
}

impl std::fmt::Debug for WriteTxn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteTxn").field("records", &self.batch.len()).finish_non_exhaustive()
    }
}

impl<'db> WriteTxn<'db> {
    pub(crate) fn new(db: &'db Database, guard: MutexGuard<'db, ()>) -> Self {
        WriteTxn {
            db,
            guard,
            batch: db.log.batch(),
            touched: FastMap::default(),
            known: FastMap::default(),
            records_delta: 0,
            bytes_delta: 0,
        }
    }

    /// The bucket of hash `h`, the top of its stack including this batch's
    /// records (the `prev` of the next record), and its committed entry.
    fn top_of(&self, h: u64) -> Result<(u64, Entry, Entry)> {
        let mut heads = lock(&self.db.heads);
        let bucket = heads.state.address(h);
        let committed = heads.entry(bucket)?;
        Ok((bucket, self.touched.get(&bucket).copied().unwrap_or(committed), committed))
    }

    /// What `key` is as of this transaction so far, looked up once: a key
    /// this transaction read or wrote is answered from `known`; any other
    /// can only be in the committed stack (the batch's own records are not
    /// in the log yet).
    fn known(&mut self, key: &[u8], committed: Entry, h: u64) -> Result<&Known> {
        if !self.known.contains_key(key) {
            let known = match probe(&self.db.log, committed, key, h)?.and_then(|(value, _)| value) {
                Some(value) => Known::Committed(value),
                None => Known::Absent,
            };
            self.known.insert(key.to_vec(), known);
        }
        Ok(&self.known[key])
    }

    /// Bytes the live record of `key` occupies now, or `None` if it is
    /// absent; looked up as [`WriteTxn::known`] does.
    fn live_bytes(&mut self, key: &[u8], committed: Entry, h: u64) -> Result<Option<i64>> {
        let value_len = match self.known(key, committed, h)? {
            Known::Absent => return Ok(None),
            Known::Committed(value) => value.len(),
            Known::Written(offset) => {
                let offset = *offset;
                self.batch.value_at(offset).map_or(0, <[u8]>::len)
            }
        };
        Ok(Some(padded_len(key.len(), value_len) as i64))
    }

    /// The value of `key` as this transaction sees it: its own puts and
    /// deletes first, then the last commit.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let h = hash(key);
        let (_, _, committed) = self.top_of(h)?;
        Ok(match self.known(key, committed, h)? {
            Known::Absent => None,
            Known::Committed(value) => Some(value.clone()),
            Known::Written(offset) => {
                let offset = *offset;
                self.batch.value_at(offset).map(<[u8]>::to_vec)
            }
        })
    }

    /// Sets `key` to `value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let h = hash(key);
        let (bucket, top, committed) = self.top_of(h)?;
        let old = self.live_bytes(key, committed, h)?;
        let offset = self.batch.put(key, value, top.head)?;
        self.touched.insert(bucket, Entry { head: offset, bloom: top.bloom | bloom_bits(h) });
        self.records_delta += i64::from(old.is_none());
        self.bytes_delta += padded_len(key.len(), value.len()) as i64 - old.unwrap_or(0);
        self.known.insert(key.to_vec(), Known::Written(offset));
        Ok(())
    }

    /// Deletes `key` (nothing happens if it does not exist).
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        let h = hash(key);
        let (bucket, top, committed) = self.top_of(h)?;
        let Some(old_bytes) = self.live_bytes(key, committed, h)? else {
            return Ok(());
        };
        let offset = self.batch.delete(key, top.head)?;
        self.touched.insert(bucket, Entry { head: offset, bloom: top.bloom | bloom_bits(h) });
        self.records_delta -= 1;
        self.bytes_delta -= old_bytes;
        self.known.insert(key.to_vec(), Known::Absent);
        Ok(())
    }

    /// Makes every put and delete of this transaction durable (as the
    /// options' durability says) and visible, all at once.
    pub fn commit(self) -> Result<()> {
        let db = self.db;
        if self.batch.is_empty() {
            return Ok(());
        }
        let sequence = lock(&db.heads).state.commit_seq + 1;
        let commit = Commit::user(sequence, self.records_delta, self.bytes_delta);
        db.checkpoint_if_due(self.touched.len())?;
        db.log.commit(self.batch, commit, db.options.durability)?;
        {
            let mut heads = lock(&db.heads);
            for (bucket, entry) in &self.touched {
                heads.set(*bucket, *entry)?;
            }
            let state = &mut heads.state;
            state.records = state.records.saturating_add_signed(self.records_delta);
            state.live_bytes = state.live_bytes.saturating_add_signed(self.bytes_delta);
            state.commit_seq = sequence;
        }
        db.grow()?;
        db.compact()?;
        db.checkpoint_if_due(0)?;
        drop(self.guard);
        Ok(())
    }
}
