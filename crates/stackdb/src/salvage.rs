//! A damaged store's contents copied into a new one, every key it can still prove.
//!
//! Two sources, each used where it is exact. The source opened read-only with recovery ending at its
//! first damage (not refusing it): every bucket whose stack then reads whole is copied as it reads —
//! what a swept or compacted store holds, whatever its log's holes. Then the log, from the floor below
//! which every record is dead: every intact record of a bucket the source could not read whole, and of
//! the log past where its recovery stopped, is replayed in log order (a key's newest intact version
//! wins: sweeps' copies lie past what they copy): every complete batch, and of a batch that lost records
//! or its commit record, its sweep's copies (a young sweep's hole takes the commit records of the copies
//! it keeps) — a user's batch is dropped whole, so no transaction is half applied — but nothing past the
//! last intact commit, which no commit covers. Zeros (space sweeps gave back, zeros written
//! ahead of the end) are not damage; other bytes holding no intact record are, and are reported.

use crate::db::{Database, Options};
use crate::error::{Error, Result};
use crate::heads::{HEADER_SLOTS, newest_state};
use crate::log::{ChunkReader, CommitValue, Durability, LOG_HEADER_LEN, Record};
use crate::record::{HEADER_LEN, Kind};
use crate::storage::{FileBackend, StorageBackend};
use crate::txn::WriteTxn;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Records written into the new database per transaction.
const COPY_BATCH: usize = 4096;
/// The block size sweeps give space back in: a damaged stretch holding a whole zero block is a hole's edge.
const BLOCK: u64 = 4096;

/// What [`salvage`] copied, and what it could not.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Salvaged {
    /// Live keys copied as the source reads them (every bucket it reads whole).
    pub read: u64,
    /// The buckets the source could not read whole, each with its error: their keys come from the log.
    pub damaged_buckets: Vec<String>,
    /// Where damage ended the source's own recovery, if it did: the log past it comes from the log.
    pub recovery_stopped: Option<u64>,
    /// Why the source could not be opened at all, if it could not: then every key comes from the log.
    pub unopened: Option<String>,
    /// Where the log was read from: the floor below which nothing is live (the source's; else the
    /// furthest its head table's header or its log's header records).
    pub floor: u64,
    /// Intact records replayed from the log (for keys the source could not read).
    pub from_log: u64,
    /// Of those, sweeps' copies whose batch lost its commit record or other records (space a sweep gave
    /// back around them, or damage): each holds its key's value as it was when copied.
    pub loose: u64,
    /// Records of other batches that lost records or their commit record, dropped with their batch so
    /// that no transaction is half applied (space a sweep gave back: dead records; damage: lost).
    pub dropped: u64,
    /// Complete batches seen in the log, and replayed when they held a key the source could not read.
    pub commits: u64,
    /// Damaged stretches of the log: bytes that are neither zeros nor an intact record, as (offset,
    /// length). What they held is lost unless a later record or a sweep's copy holds it too.
    pub skipped: Vec<(u64, u64)>,
    /// Intact records past the last intact commit: never committed, not copied.
    pub unfinished: u64,
    /// Live keys in the new database.
    pub keys: u64,
}

impl Salvaged {
    /// Notes `from..to` damaged, joined to the stretch before it if they touch.
    fn skip(&mut self, from: u64, to: u64) {
        match self.skipped.last_mut() {
            Some((began, span)) if *began + *span >= from => *span = to - *began,
            _ => self.skipped.push((from, to - from)),
        }
    }

    /// Whether the new store holds everything the source held: it read whole and nothing was skipped.
    pub fn whole(&self) -> bool {
        self.damaged_buckets.is_empty() && self.recovery_stopped.is_none() && self.unopened.is_none() && self.skipped.is_empty()
    }
}

/// Copies what the database in `from` can prove into a new database in `to` (a directory that does
/// not exist yet, or an empty one); the original is only read. The new database is built beside `to`
/// under a hidden name and renamed to `to` only once complete: a salvage killed half-way leaves nothing
/// at `to` that could pass for a store (and the next salvage starts its hidden one afresh).
pub fn salvage(from: &Path, to: &Path) -> Result<Salvaged> {
    if std::fs::read_dir(to).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(Error::Format(format!("{} is not empty: salvage writes into a new directory", to.display())));
    }
    let building = hidden_beside(to)?;
    let mut out = Salvaged::default();
    // Damage is what salvage is for; another process writing, or no store at all, is not.
    let source = match Database::open_to_salvage(from) {
        Ok((db, stopped)) => {
            out.recovery_stopped = stopped;
            Some(db)
        }
        Err(e @ (Error::Damaged { .. } | Error::Cut { .. } | Error::Stale { .. } | Error::Corrupt { .. })) => {
            out.unopened = Some(e.to_string());
            None
        }
        Err(e) => return Err(e),
    };
    let new = Database::create(&building, Options { durability: Durability::Eventual, ..Options::default() })?;
    let readable = match &source {
        Some(db) => Some(copy_what_reads(db, &new, &mut out)?),
        None => None,
    };
    out.floor = match &source {
        Some(db) => db.floor(),
        None => checkpointed_floor(&from.join("heads")).unwrap_or(LOG_HEADER_LEN).max(marked_floor(&from.join("log"))),
    };
    let wanted = |r: &Record| match (&source, &readable) {
        (Some(db), Some(readable)) => readable.lacks(db, r),
        _ => true,
    };
    replay_log(&from.join("log"), &new, wanted, &mut out)?;
    out.keys = new.stats()?.records;
    new.close()?;
    std::fs::rename(&building, to)?;
    if let Some(parent) = to.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::File::open(parent)?.sync_all()?;
    }
    Ok(out)
}

/// What the source read whole, for the log's replay to leave alone.
struct Readable {
    /// The log's end as the source's recovery left it: records past it are newer than what it read.
    seen_to: u64,
    /// Buckets it could not read whole.
    damaged: HashSet<u64>,
}

impl Readable {
    /// Whether the log's record `r` holds what the source could not read: it lies past what the source
    /// read, or in a bucket it could not read whole.
    fn lacks(&self, db: &Database, r: &Record) -> bool {
        r.offset >= self.seen_to || (!self.damaged.is_empty() && self.damaged.contains(&db.bucket_of(&r.key)))
    }
}

/// Writes into the new database in transactions of [`COPY_BATCH`] records (the whole salvage is renamed
/// into place at once, so nothing smaller needs to be atomic).
struct Copier<'db> {
    txn: WriteTxn<'db>,
    in_txn: usize,
}

impl<'db> Copier<'db> {
    fn new(db: &'db Database) -> Self {
        Copier { txn: db.begin_write(), in_txn: 0 }
    }

    /// Writes `r` as the new database's version of its key (a tombstone deletes it).
    fn write(&mut self, db: &'db Database, r: &Record) -> Result<()> {
        match r.header.kind {
            Kind::Put => self.txn.put(&r.key, &r.value)?,
            _ => self.txn.delete(&r.key)?,
        }
        self.in_txn += 1;
        if self.in_txn >= COPY_BATCH {
            std::mem::replace(&mut self.txn, db.begin_write()).commit()?;
            self.in_txn = 0;
        }
        Ok(())
    }

    fn finish(self) -> Result<()> {
        self.txn.commit()
    }
}

/// Copies every bucket the source reads whole into `new`, as it reads; notes the others.
fn copy_what_reads(db: &Database, new: &Database, out: &mut Salvaged) -> Result<Readable> {
    let mut readable = Readable { seen_to: db.core.log.end(), damaged: HashSet::new() };
    let mut copier = Copier::new(new);
    for bucket in 0..db.buckets() {
        match db.bucket_live(bucket) {
            Ok(live) => {
                for r in &live {
                    copier.write(new, r)?;
                }
                out.read += live.len() as u64;
            }
            Err(e) => {
                readable.damaged.insert(bucket);
                out.damaged_buckets.push(format!("bucket {bucket}: {e}"));
            }
        }
    }
    copier.finish()?;
    Ok(readable)
}

/// Replays into `new`, in log order, what `wanted` picks of the log from `out.floor`: every complete
/// batch that some intact commit record ends, and of the batches that lost records or their commit
/// record, the sweeps' copies alone (a user's batch is dropped whole, so no transaction is half
/// applied; a sweep's copies each hold a key's value as it was). Nothing past the last intact commit.
fn replay_log(path: &Path, new: &Database, wanted: impl Fn(&Record) -> bool, out: &mut Salvaged) -> Result<()> {
    let file = FileBackend::reading(std::fs::File::open(path)?);
    let len = file.len()?;
    let mut log = ChunkReader::new(&file, len);
    // The batch under way, and the broken ones since the last intact commit (which will prove them
    // written).
    let mut pending: Vec<Record> = Vec::new();
    let mut broken = Broken::default();
    let mut copier = Copier::new(new);
    let mut gap = Gap::default();
    let mut pos = out.floor.max(LOG_HEADER_LEN);
    while pos + HEADER_LEN as u64 <= len {
        let Some(rec) = log.record_at(pos)? else {
            if pos.is_multiple_of(BLOCK) && log.bytes(pos, BLOCK as usize)?.is_some_and(|b| b.iter().all(|&x| x == 0)) {
                gap.note(pos, BLOCK, true);
                pos += BLOCK;
            } else {
                let zero = log.bytes(pos, 8)?.is_some_and(|w| w == [0; 8]);
                gap.note(pos, 8, zero);
                pos += 8;
            }
            continue;
        };
        if let Some((from, to)) = gap.damage(pos) {
            out.skip(from, to);
        }
        // Records are contiguous within a batch: a gap after one means the batch lost what lay there.
        if gap.from.is_some() {
            broken.take(&mut pending, &wanted);
        }
        gap = Gap::default();
        pos += rec.header.padded_len() as u64;
        if rec.header.kind != Kind::Commit {
            pending.push(rec);
            continue;
        }
        let batch_start = pending.first().map_or(rec.offset, |r| r.offset);
        let complete = CommitValue::parse(&rec, batch_start, pending.len()).is_some();
        if !complete {
            broken.take(&mut pending, &wanted);
        }
        out.commits += u64::from(complete);
        for r in broken.copies.drain(..).chain(pending.drain(..)).filter(|r| !r.key.is_empty() && wanted(r)) {
            copier.write(new, &r)?;
            out.from_log += 1;
            out.loose += u64::from(r.header.is_copy() && !complete);
        }
        out.dropped += std::mem::take(&mut broken.others);
    }
    if let Some((from, to)) = gap.damage(len) {
        out.skip(from, to);
    }
    out.unfinished = (pending.len() + broken.copies.len()) as u64 + broken.others;
    copier.finish()
}

/// What broken batches left since the last intact commit: sweeps' copies to replay, and how many
/// other records are dropped with their batch.
#[derive(Default)]
struct Broken {
    copies: Vec<Record>,
    others: u64,
}

impl Broken {
    /// Takes a broken batch's records (counting those `wanted` picks among the dropped).
    fn take(&mut self, batch: &mut Vec<Record>, wanted: &impl Fn(&Record) -> bool) {
        for r in batch.drain(..) {
            if r.header.is_copy() {
                self.copies.push(r);
            } else {
                self.others += u64::from(!r.key.is_empty() && wanted(&r));
            }
        }
    }
}

/// Bytes between two intact records: zeros, a hole's edge or damage.
#[derive(Default)]
struct Gap {
    /// Where it began.
    from: Option<u64>,
    /// Whether any of it is not zeros.
    nonzero: bool,
    /// Whether it holds a whole zero block (space given back: the non-zero bytes beside it are what
    /// was left of records cut at the block's edge).
    hole: bool,
}

impl Gap {
    /// Notes `len` bytes at `pos` that held no record, zeros or not.
    fn note(&mut self, pos: u64, len: u64, zero: bool) {
        self.from.get_or_insert(pos);
        self.nonzero |= !zero;
        self.hole |= zero && len == BLOCK;
    }

    /// The damaged stretch the gap was, ending at `pos`, if it was one.
    fn damage(&self, pos: u64) -> Option<(u64, u64)> {
        self.from.filter(|_| self.nonzero && !self.hole).map(|from| (from, pos))
    }
}

/// The floor the newest intact header of the head table at `path` records, if one can be read.
fn checkpointed_floor(path: &Path) -> Option<u64> {
    let mut slots = vec![0u8; HEADER_SLOTS];
    std::fs::File::open(path).ok().and_then(|f| std::os::unix::fs::FileExt::read_exact_at(&f, &mut slots, 0).ok())?;
    newest_state(&slots).map(|s| s.floor)
}

/// The floor the log's header records (0: none).
fn marked_floor(path: &Path) -> u64 {
    let mut header = [0u8; LOG_HEADER_LEN as usize];
    let read = std::fs::File::open(path).and_then(|f| std::os::unix::fs::FileExt::read_exact_at(&f, &mut header, 0));
    if read.is_ok() { crate::log::read_marks(&header).floor } else { 0 }
}

/// Where a salvage into `to` builds its database: `.NAME.salvaging` beside it, emptied of what a killed
/// salvage left (only stackdb's own files; anything else there is refused).
fn hidden_beside(to: &Path) -> Result<PathBuf> {
    let name = to.file_name().ok_or_else(|| Error::Format(format!("{} names no directory to salvage into", to.display())))?;
    let building = to.with_file_name(format!(".{}.salvaging", name.to_string_lossy()));
    if let Ok(entries) = std::fs::read_dir(&building) {
        for entry in entries {
            let entry = entry?;
            if !["LOCK", "log", "heads", "heads.dw"].contains(&entry.file_name().to_string_lossy().as_ref()) {
                return Err(Error::Format(format!("{} holds files a salvage did not make: remove it first", building.display())));
            }
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(building)
}
