//! The append-only log: atomic batches, durable commits, and recovery to the
//! end of the last complete commit (`docs/stackdb-format.md`, "The log").

use crate::error::{Error, Result};
use crate::record::{self, HEADER_LEN, Header, Kind};
use crate::storage::StorageBackend;

mod mark;
pub use mark::Marks;
pub(crate) use mark::read as read_marks;
mod zeros;

/// Bytes of the log's own header.
pub const LOG_HEADER_LEN: u64 = 64;
const MAGIC: &[u8; 8] = b"STACKDB\x01";
const VERSION: u32 = 6;
/// The formats before version 6, which it reads the same way: version 5's commit records do not say
/// how far the log was synced (their value is 48 bytes), version 4 has no young sweeps (commit flag
/// 4), version 3 no splits that share stacks (commit flag 3), and each of version 2's split commits
/// covers one bucket (its `buckets` field is 1). Their header is rewritten to 6 at open, before
/// anything is appended, so a build that reads only those refuses the log instead of misreading the
/// batches it will hold.
const UPGRADED_VERSIONS: [u32; 4] = [2, 3, 4, 5];
/// Bytes of a commit record's value: batch start, sequence, record count,
/// change in live keys, change in live bytes, buckets rewritten, and where the log was synced up to
/// when it was written.
const COMMIT_VALUE_LEN: usize = 56;
/// The value of a commit record before version 6, without the synced end.
const OLD_COMMIT_VALUE_LEN: usize = 48;
/// Holes are punched in whole blocks of this size.
const BLOCK: u64 = 4096;
/// Bytes below the floor given back at a time (16 MiB took about 4 ms of
/// ext4 hole punching here; 570 MB at once took 120 ms).
pub const DISCARD_STEP: u64 = 4 << 20;
/// [`Log::read`] reads this much at once: a whole record of a game world's
/// size (16-byte keys, values up to a few hundred bytes) in one call.
const FIRST_READ: usize = 512;
/// Recovery reads the log in chunks of this size.
const READ_CHUNK: usize = 1 << 20;

/// What `commit` promises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Durability {
    /// The batch is on stable storage (`fdatasync`) before `commit` returns:
    /// it survives `kill -9` and power loss.
    #[default]
    Immediate,
    /// The batch is written but not synced: it survives `kill -9` (the OS
    /// holds it) but a power loss may lose it and later commits — never part
    /// of one, and never one without those before it.
    Eventual,
}

/// What a batch does, recorded in its commit record so recovery can replay it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum BatchKind {
    /// The user's puts and deletes.
    User = 0,
    /// The copies of consecutive buckets' live records made by linear-hashing splits.
    Split = 1,
    /// The copies of consecutive buckets' live records made by compaction.
    Rewrite = 2,
    /// Linear-hashing splits of consecutive buckets that share each one's stack with its new sibling
    /// (no records: version 4 on).
    Share = 3,
    /// The copies of the young records of the buckets from the compaction cursor that have any, each
    /// bucket's set on what lies beneath them, and the buckets' new entries (version 5 on).
    Young = 4,
}

impl BatchKind {
    fn from_flags(flags: u8) -> BatchKind {
        match flags {
            1 => BatchKind::Split,
            2 => BatchKind::Rewrite,
            3 => BatchKind::Share,
            4 => BatchKind::Young,
            _ => BatchKind::User,
        }
    }
}

/// What a commit record says about its batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Commit {
    /// Where its batch begins in the log (set by the log, not the writer).
    pub start: u64,
    /// Its sequence number (+1 per commit).
    pub sequence: u64,
    /// What its batch does.
    pub kind: BatchKind,
    /// How many live keys the batch adds (negative: removes), so recovery
    /// keeps the count without looking anything up.
    pub records_delta: i64,
    /// How many bytes of live records the batch adds (negative: removes).
    pub bytes_delta: i64,
    /// For a split: how many buckets, from the split pointer, it splits; for a rewrite: how many, from
    /// the compaction cursor, it covers.
    pub buckets: u64,
}

impl Commit {
    /// A user batch's commit.
    pub fn user(sequence: u64, records_delta: i64, bytes_delta: i64) -> Commit {
        Commit { start: 0, sequence, kind: BatchKind::User, records_delta, bytes_delta, buckets: 0 }
    }

    /// A split's or a rewrite's commit: copies only, no change in live data.
    pub fn copies(sequence: u64, kind: BatchKind, buckets: u64) -> Commit {
        Commit { start: 0, sequence, kind, records_delta: 0, bytes_delta: 0, buckets }
    }
}

/// Records being assembled into one atomic commit.
#[derive(Debug)]
pub struct Batch {
    start: u64,
    buf: Vec<u8>,
    count: u64,
}

impl Batch {
    /// Appends a put and returns the log offset the record will have.
    pub fn put(&mut self, key: &[u8], value: &[u8], prev: u64) -> Result<u64> {
        self.push(Kind::Put, 0, key, value, prev)
    }

    /// Appends a tombstone and returns the log offset the record will have.
    pub fn delete(&mut self, key: &[u8], prev: u64) -> Result<u64> {
        self.push(Kind::Delete, 0, key, &[], prev)
    }

    /// Appends a sweep's copy of a put (`value`) or a tombstone (`None`) and returns the log offset
    /// the record will have.
    pub fn copy(&mut self, key: &[u8], value: Option<&[u8]>, prev: u64) -> Result<u64> {
        match value {
            Some(value) => self.push(Kind::Put, record::COPY, key, value, prev),
            None => self.push(Kind::Delete, record::COPY, key, &[], prev),
        }
    }

    /// Makes room at once for `bytes` more of records and the commit record after them (a transaction
    /// knows its records' lengths before encoding them; grown by doubling instead, a game push's
    /// 150 KiB batch was copied eight times over).
    pub fn reserve(&mut self, bytes: usize) {
        self.buf.reserve(bytes + record::padded_len(0, COMMIT_VALUE_LEN));
    }

    fn push(&mut self, kind: Kind, flags: u8, key: &[u8], value: &[u8], prev: u64) -> Result<u64> {
        let offset = self.start + self.buf.len() as u64;
        record::encode_flagged(&mut self.buf, kind, flags, key, value, prev)?;
        self.count += 1;
        Ok(offset)
    }

    /// The value of the put record this batch holds at log offset `offset`
    /// (as returned by [`Batch::put`]).
    pub fn value_at(&self, offset: u64) -> Option<&[u8]> {
        let at = usize::try_from(offset.checked_sub(self.start)?).ok()?;
        let header = Header::decode(self.buf.get(at..at + HEADER_LEN)?.try_into().ok()?, offset).ok()?;
        let value = at + HEADER_LEN + header.key_len;
        (header.kind == Kind::Put).then(|| self.buf.get(value..value + header.value_len)).flatten()
    }

    /// The log offset of the batch's first record.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Bytes of the records so far.
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }

    /// The log offset just past its records so far: where its commit record will begin.
    pub fn end(&self) -> u64 {
        self.start + self.buf.len() as u64
    }

    /// Records in the batch.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether the batch holds no records.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// One record as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its offset in the log.
    pub offset: u64,
    /// Its header.
    pub header: Header,
    /// Key bytes.
    pub key: Vec<u8>,
    /// Value bytes.
    pub value: Vec<u8>,
}

/// One record as it lies in the log: borrowed from the log's map when the
/// log is a file, else read into a buffer.
#[derive(Debug)]
pub struct RecordView<'a> {
    /// Its offset in the log.
    pub offset: u64,
    /// Its header.
    pub header: Header,
    /// The header, key and value bytes.
    bytes: std::borrow::Cow<'a, [u8]>,
}

impl RecordView<'_> {
    /// Key bytes.
    pub fn key(&self) -> &[u8] {
        &self.bytes[HEADER_LEN..HEADER_LEN + self.header.key_len]
    }

    /// Value bytes.
    pub fn value(&self) -> &[u8] {
        &self.bytes[HEADER_LEN + self.header.key_len..]
    }

    /// Its value if it is a put (`None`: a tombstone).
    pub fn put_value(&self) -> Option<&[u8]> {
        (self.header.kind == Kind::Put).then(|| self.value())
    }

    /// An owned copy.
    pub fn to_record(&self) -> Record {
        Record { offset: self.offset, header: self.header, key: self.key().to_vec(), value: self.value().to_vec() }
    }
}

/// What recovery found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// Complete commits replayed.
    pub commits: u64,
    /// Sequence number of the last one (None if there were none after `from`).
    pub last_sequence: Option<u64>,
    /// Bytes cut off the end (an incomplete or damaged tail).
    pub truncated: u64,
    /// The furthest offset the log can prove was synced: the last checkpoint's, or the furthest that
    /// an intact commit record says a finished sync had covered when it was written. Only the log
    /// past it may be cut as a torn tail.
    pub synced: u64,
    /// The log's end after recovery.
    pub end: u64,
    /// Where damage before the synced end ended a salvage's reading of the log (never set otherwise:
    /// such damage is refused).
    pub damaged: Option<u64>,
}

/// What recovery does with damage before the log's synced end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnDamage {
    /// Refuse to open ([`Error::Damaged`]): the damage may hold acknowledged commits.
    Refuse,
    /// End the log there, as if it were a torn tail: for a salvage, which reads the rest itself.
    Stop,
}

/// The log over a storage backend.
pub struct Log<B: StorageBackend> {
    backend: B,
    /// The file mapped for reads, when the storage is a file.
    map: Option<crate::map::FileMap>,
    /// Written only by the one writer; read by any reader without a lock.
    end: std::sync::atomic::AtomicU64,
    /// Nothing below this offset is referenced any more (it may be a hole).
    floor: std::sync::atomic::AtomicU64,
    /// Zeros are written up to here (the file's length): a commit ending
    /// below it grows nothing (`zeros.rs`). Raised only under `zeroing`.
    prepared: std::sync::atomic::AtomicU64,
    /// Held by a step of zeros ahead and by an append reaching past them.
    zeroing: std::sync::Mutex<()>,
    /// Whether synced commits have begun, so zeros ahead are worth writing.
    zeros_wanted: std::sync::atomic::AtomicBool,
    /// Bytes of zeros to keep ahead of the end.
    zeros_ahead: u64,
    /// The space below this offset has been given back; from here to the
    /// floor it is given back a step at a time. Raised only under `discarding`.
    discarded: std::sync::atomic::AtomicU64,
    /// Held by the one step of giving space back under way ([`Log::discard_step`]).
    discarding: std::sync::Mutex<()>,
    /// Ranges above the floor no longer referenced but for the copies in them (young sweeps' holes,
    /// [`Log::give_back`]), with where the next step of giving each back begins.
    holes: std::sync::RwLock<Vec<(std::ops::Range<u64>, u64)>>,
    /// Everything below this offset is synced. Raised only under `syncs`.
    synced: std::sync::atomic::AtomicU64,
    /// The synced end the header records (`mark.rs`): read at open, raised as syncs write it.
    marked: std::sync::atomic::AtomicU64,
    /// What the header recorded at open.
    marks_at_open: Marks,
    /// The syncs under way ([`Log::sync_to`]): the end of the log each covers.
    syncs: std::sync::Mutex<Vec<u64>>,
    /// Told when a sync ends.
    sync_ended: std::sync::Condvar,
    /// The write or sync error after which the log refuses to write ([`Log::poison`]).
    failed: std::sync::OnceLock<String>,
}

/// Syncs of the log that may be under way at once. A commit that no sync under way covers starts its
/// own beside the others rather than waiting for them to end: on this VM two threads each writing
/// 4 KiB and calling `fdatasync` made 8,759–9,569 syncs a second together against 5,726–6,493 alone,
/// each sync taking 209–228 µs instead of 154–175 (one at a time, a commit arriving during another's
/// sync waited for it and then for its own). Beyond this many, commits wait and the next sync covers
/// them all.
const SYNCS_AT_ONCE: usize = 2;

impl<B: StorageBackend> std::fmt::Debug for Log<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log").field("end", &self.end()).finish_non_exhaustive()
    }
}

impl<B: StorageBackend> Log<B> {
    /// Opens the log, writing a header if the storage is empty. The end is
    /// not trusted until [`Log::recover`] has run.
    pub fn open(backend: B) -> Result<Self> {
        let len = backend.len()?;
        let mut marks = Marks::default();
        if len == 0 {
            let mut header = vec![0u8; LOG_HEADER_LEN as usize];
            header[..8].copy_from_slice(MAGIC);
            header[8..12].copy_from_slice(&VERSION.to_le_bytes());
            backend.write(0, &header)?;
            backend.sync_data()?;
        } else {
            let mut header = [0u8; LOG_HEADER_LEN as usize];
            if len < LOG_HEADER_LEN {
                return Err(Error::Format(format!("the log is {len} bytes, shorter than its header")));
            }
            backend.read(0, &mut header)?;
            if &header[..8] != MAGIC {
                return Err(Error::Format("bad magic in the log header".into()));
            }
            let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
            marks = mark::read(&header);
            match version {
                VERSION => {}
                old if UPGRADED_VERSIONS.contains(&old) => {
                    backend.write(8, &VERSION.to_le_bytes())?;
                    backend.sync_data()?;
                }
                _ => {
                    let [a, b, c, d] = UPGRADED_VERSIONS;
                    return Err(Error::Format(format!("log format version {version}; this build reads {a}, {b}, {c}, {d} and {VERSION}")));
                }
            }
        }
        let map = backend.file().map(crate::map::FileMap::new).transpose()?;
        let end = len.max(LOG_HEADER_LEN);
        Ok(Self {
            backend,
            map,
            end: end.into(),
            floor: LOG_HEADER_LEN.into(),
            prepared: end.into(),
            zeroing: std::sync::Mutex::new(()),
            zeros_wanted: false.into(),
            zeros_ahead: zeros::DEFAULT_AHEAD,
            discarded: LOG_HEADER_LEN.into(),
            discarding: std::sync::Mutex::new(()),
            holes: std::sync::RwLock::new(Vec::new()),
            synced: 0.into(),
            marked: marks.synced.into(),
            marks_at_open: marks,
            syncs: std::sync::Mutex::new(Vec::with_capacity(SYNCS_AT_ONCE)),
            sync_ended: std::sync::Condvar::new(),
            failed: std::sync::OnceLock::new(),
        })
    }

    /// Gives the storage back (tests reopen it as a crash would leave it).
    pub fn into_backend(self) -> B {
        self.backend
    }

    /// Offset just past the last record.
    pub fn end(&self) -> u64 {
        self.end.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The offset below which nothing is read any more.
    pub fn floor(&self) -> u64 {
        self.floor.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Declares everything below `floor` unreferenced and gives its space
    /// back in whole blocks (the block holding the log header stays). The
    /// caller has made durable a head table that no longer points below it.
    pub fn release_below(&self, floor: u64) -> Result<()> {
        self.raise_floor(floor);
        self.discard_step(u64::MAX).map(|_| ())
    }

    /// Declares everything below `floor` unreferenced, as
    /// [`Log::release_below`] does, but gives its space back a step at a
    /// time ([`Log::discard_step`]), so that no append waits for the file
    /// system to free hundreds of megabytes at once.
    pub fn raise_floor(&self, floor: u64) {
        self.floor.fetch_max(floor, std::sync::atomic::Ordering::AcqRel);
    }

    /// Declares `hole`, above the floor and starting on a record, unreferenced but for the sweeps'
    /// copies in it: the whole blocks around them are given back a step at a time after the space
    /// below the floor. The caller has made durable a head table that points into it only at copies,
    /// and a reader still walking elsewhere in it finds [`Log::released`] says so.
    pub fn give_back(&self, hole: std::ops::Range<u64>) {
        let mut holes = self.holes.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        holes.retain(|(h, _)| h.end > self.floor());
        if !hole.is_empty() {
            holes.push((hole.clone(), hole.start));
        }
    }

    /// Whether the record at `offset` may have been given back: below the floor or in a hole. A
    /// reader that found damage there walked a stack a sweep has since moved: it reads its head again.
    pub fn released(&self, offset: u64) -> bool {
        offset < self.floor() || self.holes.read().unwrap_or_else(std::sync::PoisonError::into_inner).iter().any(|(h, _)| h.contains(&offset))
    }

    /// Gives back up to `max` bytes of the space below the floor not given
    /// back yet (a database's checkpoint thread calls it with
    /// [`DISCARD_STEP`] until none is left); returns whether some is left.
    pub fn discard_step(&self, max: u64) -> Result<bool> {
        use std::sync::atomic::Ordering::{Acquire, Release};
        let _one = crate::sync::lock(&self.discarding);
        let from = self.discarded.load(Acquire).max(BLOCK) / BLOCK * BLOCK;
        let below = self.floor() / BLOCK * BLOCK;
        let to = below.min(from.saturating_add(max));
        if to > from {
            self.backend.discard(from, to - from)?;
            self.discarded.store(to, Release);
            return Ok(true);
        }
        self.discard_hole_step(max)
    }

    /// Gives back the whole blocks of up to `max` bytes of a hole not given back yet, but for the
    /// sweeps' copies it holds, which stay where they are (its records are read in order to find
    /// them); returns whether some is left (holes below the floor are left to the floor's step).
    fn discard_hole_step(&self, max: u64) -> Result<bool> {
        let mut holes = self.holes.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let floor = self.floor();
        let Some((hole, next)) = holes.iter_mut().find(|(h, next)| h.end > floor && *next < h.end) else {
            return Ok(false);
        };
        let mut at = (*next).max(floor);
        let stop = hole.end.min(at.saturating_add(max));
        // The start of the records that may go since the last copy.
        let mut run = at;
        while at < stop {
            let Ok(header) = self.view(at).map(|r| r.header) else {
                // Not a record (the log was damaged since): what follows cannot be told from copies,
                // so the rest of the hole stays as it is.
                self.discard_blocks(run, at)?;
                *next = hole.end;
                return Ok(true);
            };
            if header.is_copy() {
                self.discard_blocks(run, at)?;
                run = at + header.padded_len() as u64;
            }
            at += header.padded_len() as u64;
        }
        self.discard_blocks(run, at.min(hole.end))?;
        *next = at;
        Ok(true)
    }

    /// Gives back the whole blocks between `from` and `to`.
    fn discard_blocks(&self, from: u64, to: u64) -> Result<()> {
        let (from, to) = (from.div_ceil(BLOCK) * BLOCK, to / BLOCK * BLOCK);
        if to > from {
            self.backend.discard(from, to - from)?;
        }
        Ok(())
    }

    /// Bytes of storage the log occupies (holes excluded).
    pub fn allocated(&self) -> Result<u64> {
        Ok(self.backend.allocated()?)
    }

    /// A new batch that will start at the current end.
    pub fn batch(&self) -> Batch {
        Batch { start: self.end(), buf: Vec::new(), count: 0 }
    }

    /// Writes `batch` and its commit record in one write and, with [`Durability::Immediate`], waits until
    /// it is synced ([`Log::sync_to`]). Returns the new end. See [`Log::append`] for errors.
    pub fn commit(&self, batch: Batch, commit: Commit, durability: Durability) -> Result<u64> {
        let end = self.append(batch, commit, durability)?;
        if durability == Durability::Immediate {
            self.sync_to(end)?;
        }
        Ok(end)
    }

    /// Writes `batch` and its commit record in one write, not synced; with [`Durability::Immediate`] it
    /// lands on zeros written ahead, so the sync to come is cheap (`zeros.rs`). Returns the new end.
    /// On an error the log's end is unchanged and whatever reached the storage is not a complete
    /// commit, so recovery will cut it off. One writer at a time: the caller serializes appends.
    pub fn append(&self, mut batch: Batch, commit: Commit, durability: Durability) -> Result<u64> {
        self.writable()?;
        if batch.start != self.end() {
            return Err(Error::Format("a batch must be committed where it began (one writer at a time)".into()));
        }
        let mut value = [0u8; COMMIT_VALUE_LEN];
        value[..8].copy_from_slice(&batch.start.to_le_bytes());
        value[8..16].copy_from_slice(&commit.sequence.to_le_bytes());
        value[16..24].copy_from_slice(&batch.count.to_le_bytes());
        value[24..32].copy_from_slice(&commit.records_delta.to_le_bytes());
        value[32..40].copy_from_slice(&commit.bytes_delta.to_le_bytes());
        value[40..48].copy_from_slice(&commit.buckets.to_le_bytes());
        // Recovery's proof of how far the log was durable: damage below it is corruption, not a torn tail.
        value[48..56].copy_from_slice(&self.synced.load(std::sync::atomic::Ordering::Acquire).to_le_bytes());
        record::encode_flagged(&mut batch.buf, Kind::Commit, commit.kind as u8, &[], &value, 0)?;
        let end = self.poisoning(self.write_at_end(batch.start, &batch.buf, durability == Durability::Immediate))?;
        self.end.store(end, std::sync::atomic::Ordering::Release);
        Ok(end)
    }

    /// Refuses every write from now on, naming `cause`. After a failed write or sync the OS may have
    /// dropped pages it had not written (PostgreSQL's lesson from fsync errors): a later sync that
    /// succeeds proves nothing about them, so only a reopen, which reads what the file holds, may write
    /// again.
    pub fn poison(&self, cause: &dyn std::fmt::Display) {
        let _ = self.failed.set(cause.to_string());
        self.sync_ended.notify_all();
    }

    /// Whether the log still takes writes: [`Error::Poisoned`] once one failed.
    pub fn writable(&self) -> Result<()> {
        match self.failed.get() {
            Some(cause) => Err(Error::Poisoned(cause.clone())),
            None => Ok(()),
        }
    }

    /// `outcome`, having poisoned the log if it is an error.
    pub(crate) fn poisoning<T>(&self, outcome: Result<T>) -> Result<T> {
        if let Err(e) = &outcome {
            self.poison(e);
        }
        outcome
    }

    /// Makes every commit below `end` durable. Group commit: a sync covers every commit appended by the
    /// time it starts, so a commit that such a sync (under way or done) covers waits for it instead of
    /// syncing, and commits waiting together for a turn share the next one; up to `SYNCS_AT_ONCE`
    /// syncs run side by side. Each `fdatasync` makes durable everything written before it began,
    /// whatever the others do, so the synced offset is the furthest any finished sync covered.
    pub fn sync_to(&self, end: u64) -> Result<()> {
        use std::sync::atomic::Ordering::{Acquire, Release};
        if self.synced.load(Acquire) >= end {
            return Ok(());
        }
        let mut under_way = crate::sync::lock(&self.syncs);
        loop {
            if self.synced.load(Acquire) >= end {
                return Ok(());
            }
            self.writable()?;
            let covered = under_way.iter().any(|&c| c >= end);
            if !covered && under_way.len() < SYNCS_AT_ONCE {
                break;
            }
            under_way = self.sync_ended.wait(under_way).unwrap_or_else(|e| e.into_inner());
        }
        let covers = self.end();
        under_way.push(covers);
        drop(under_way);
        let outcome = self.poisoning(self.backend.sync_data().map_err(Error::from));
        let mut under_way = crate::sync::lock(&self.syncs);
        let ours = under_way.iter().position(|&c| c == covers).expect("a sync under way is listed");
        under_way.swap_remove(ours);
        if outcome.is_ok() {
            let synced = self.synced.fetch_max(covers, Release).max(covers);
            self.mark_synced(synced);
        }
        drop(under_way);
        // Whoever waited on this sync finds the log poisoned if it failed.
        self.sync_ended.notify_all();
        outcome
    }

    /// Whether the log holds nothing past its header but zeros: no record was ever written.
    pub fn is_blank(&self) -> Result<bool> {
        let len = self.backend.len()?;
        Ok(len <= LOG_HEADER_LEN || self.only_zeros(LOG_HEADER_LEN, len)?)
    }

    /// Whether `from..to` holds nothing but zeros.
    fn only_zeros(&self, from: u64, to: u64) -> Result<bool> {
        let mut buf = vec![0u8; READ_CHUNK.min((to - from) as usize)];
        let mut at = from;
        while at < to {
            let n = buf.len().min((to - at) as usize);
            self.backend.read(at, &mut buf[..n])?;
            if buf[..n].iter().any(|&b| b != 0) {
                return Ok(false);
            }
            at += n as u64;
        }
        Ok(true)
    }

    /// Makes every commit so far durable (nothing to do if the last one was synced).
    pub fn sync(&self) -> Result<()> {
        self.sync_to(self.end())
    }

    /// Reads the record at `offset`, checking its checksum.
    pub fn read(&self, offset: u64) -> Result<Record> {
        self.view(offset).map(|v| v.to_record())
    }

    /// Starts loading the header of the record at `offset` into the CPU's
    /// cache, when the log is mapped (a hint for walks of many stacks).
    pub fn prefetch(&self, offset: u64) {
        if let Some(map) = &self.map
            && offset < self.end()
        {
            map.prefetch(offset);
        }
    }

    /// The record at `offset`, checksum checked, without copying it when
    /// the log is mapped.
    pub fn view(&self, offset: u64) -> Result<RecordView<'_>> {
        let corrupt = || Error::Corrupt { what: "log record", offset };
        // Offsets come from head entries and `prev` links, which a damaged
        // file could set to anything: check before any arithmetic can overflow.
        let end = self.end();
        let fits = |len: usize| offset.checked_add(len as u64).is_some_and(|e| e <= end);
        if offset < self.floor() || !offset.is_multiple_of(8) || !fits(HEADER_LEN) {
            return Err(corrupt());
        }
        // The bytes of header, key and value, once the header says the
        // whole record lies before the end.
        let body_of = |header: &Header| {
            let body = HEADER_LEN + header.key_len + header.value_len;
            if fits(header.padded_len()) { Ok(body) } else { Err(corrupt()) }
        };
        let (header, bytes) = match &self.map {
            Some(map) => {
                let header = Header::decode(map.bytes(offset, HEADER_LEN)?.try_into().expect("a header"), offset)?;
                (header, std::borrow::Cow::Borrowed(map.bytes(offset, body_of(&header)?)?))
            }
            None => {
                let (header, bytes) = self.read_unmapped(offset, end, body_of)?;
                (header, std::borrow::Cow::Owned(bytes))
            }
        };
        if !record::checksum_holds(&header, &bytes) {
            return Err(corrupt());
        }
        Ok(RecordView { offset, header, bytes })
    }

    /// A record's header and bytes read with one pread for a game-sized
    /// record (a second only past 512 bytes), for storage that is not a file.
    fn read_unmapped(&self, offset: u64, end: u64, body_of: impl Fn(&Header) -> Result<usize>) -> Result<(Header, Vec<u8>)> {
        let first = FIRST_READ.min((end - offset) as usize);
        let mut whole = vec![0u8; first];
        self.backend.read(offset, &mut whole)?;
        let header = Header::decode(whole[..HEADER_LEN].try_into().expect("a header"), offset)?;
        let body = body_of(&header)?;
        if body > first {
            whole.resize(body, 0);
            self.backend.read(offset + first as u64, &mut whole[first..])?;
        }
        whole.truncate(body);
        Ok((header, whole))
    }

    /// Scans from `from` (the end of a commit, or the log header; synced), calls `apply` with every
    /// complete batch (its put/delete records, in order, and its commit), and cuts the log after the
    /// last complete commit. Only a tail the log cannot prove was synced is cut: a damaged record
    /// before the furthest synced end an intact commit record states (after the damage included)
    /// is corruption, reported as [`Error::Damaged`] with nothing changed. An incomplete tail is never
    /// applied. An error from `apply` stops recovery and is returned.
    pub fn recover(&mut self, from: u64, apply: impl FnMut(&[Record], Commit) -> Result<()>) -> Result<Recovered> {
        self.recover_with(from, OnDamage::Refuse, apply)
    }

    /// [`Log::recover`], where damage before the synced end refuses (`OnDamage::Refuse`) or, for a
    /// salvage's reading, ends the log like a torn tail (`OnDamage::Stop`: [`Recovered::damaged`] says
    /// where; a log shorter than the checkpoint is read as far as it goes).
    pub(crate) fn recover_with(
        &mut self,
        from: u64,
        on_damage: OnDamage,
        mut apply: impl FnMut(&[Record], Commit) -> Result<()>,
    ) -> Result<Recovered> {
        let len = self.backend.len()?;
        if from > len && on_damage == OnDamage::Refuse {
            // The head table points past the end of the log: the log lost
            // data it had when the table was checkpointed.
            return Err(Error::Corrupt { what: "log (shorter than the last checkpoint)", offset: len });
        }
        let from = from.min(len);
        let mut reader = ChunkReader::new(&self.backend, len);
        let mut pos = from.max(LOG_HEADER_LEN);
        let mut good_end = pos;
        let mut pending: Vec<Record> = Vec::new();
        let mut recovered = Recovered { commits: 0, last_sequence: None, truncated: 0, synced: pos, end: 0, damaged: None };
        while let Some(rec) = reader.record_at(pos)? {
            pos += rec.header.padded_len() as u64;
            match rec.header.kind {
                Kind::Put | Kind::Delete => pending.push(rec),
                Kind::Commit => {
                    let batch_start = pending.first().map_or(rec.offset, |r| r.offset);
                    let Some(commit) = CommitValue::parse(&rec, batch_start, pending.len()) else { break };
                    apply(&pending, commit.commit)?;
                    pending.clear();
                    recovered.commits += 1;
                    recovered.last_sequence = Some(commit.commit.sequence);
                    recovered.synced = recovered.synced.max(commit.synced);
                    good_end = pos;
                }
            }
        }
        // The header's mark proves syncs too, whatever was lost of the commits stating them.
        let marked = self.marked.load(std::sync::atomic::Ordering::Relaxed);
        recovered.synced = recovered.synced.max(marked);
        // Zeros written ahead of the end are not a damaged tail.
        if len > good_end && !self.only_zeros(good_end, len)? {
            let beyond = reader.commits_beyond(good_end)?;
            recovered.synced = recovered.synced.max(beyond.synced);
            if good_end < recovered.synced {
                if on_damage == OnDamage::Refuse {
                    return Err(Error::Damaged { file: "log", offset: good_end, synced: recovered.synced, later_commits: beyond.commits });
                }
                recovered.damaged = Some(good_end);
            }
            recovered.truncated = len - good_end;
        } else if good_end < marked {
            // The log ends cleanly, before what its header says it had synced: cut short.
            if on_damage == OnDamage::Refuse {
                return Err(Error::Cut { file: "log", end: good_end, synced: marked });
            }
            recovered.damaged = Some(good_end);
        }
        if len > good_end {
            self.backend.set_len(good_end)?;
        }
        if good_end > from.max(LOG_HEADER_LEN) || len > good_end {
            // What was replayed may be only in the OS's cache (a killed process's commits): once synced,
            // later commits can state it as their proof.
            self.backend.sync_data()?;
        }
        self.synced.store(good_end, std::sync::atomic::Ordering::Release);
        self.end.store(good_end, std::sync::atomic::Ordering::Release);
        self.prepared.store(good_end, std::sync::atomic::Ordering::Release);
        recovered.end = good_end;
        Ok(recovered)
    }
}

/// A commit record's value, checked against the batch before it.
pub(crate) struct CommitValue {
    pub(crate) commit: Commit,
    /// How far the log was synced when it was written (0 before version 6).
    synced: u64,
}

impl CommitValue {
    /// The commit `rec` makes of the `count` records from `batch_start`, if it is sound.
    pub(crate) fn parse(rec: &Record, batch_start: u64, count: usize) -> Option<CommitValue> {
        let v = &rec.value;
        let field = |i: usize| u64::from_le_bytes(v[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let sound = (v.len() == COMMIT_VALUE_LEN || v.len() == OLD_COMMIT_VALUE_LEN) && field(0) == batch_start && field(2) == count as u64;
        sound.then(|| CommitValue {
            commit: Commit {
                start: batch_start,
                sequence: field(1),
                kind: BatchKind::from_flags(rec.header.flags),
                records_delta: field(3) as i64,
                bytes_delta: field(4) as i64,
                buckets: field(5),
            },
            synced: if v.len() == COMMIT_VALUE_LEN { field(6) } else { 0 },
        })
    }
}

/// Intact commit records found past a damaged record.
struct Beyond {
    commits: u64,
    /// The furthest synced end they state.
    synced: u64,
}

/// Sequential reads in large chunks, for recovery (and salvage).
pub(crate) struct ChunkReader<'a, B: StorageBackend> {
    backend: &'a B,
    len: u64,
    start: u64,
    buf: Vec<u8>,
}

impl<'a, B: StorageBackend> ChunkReader<'a, B> {
    /// A reader of the first `len` bytes of `backend`.
    pub(crate) fn new(backend: &'a B, len: u64) -> Self {
        ChunkReader { backend, len, start: 0, buf: Vec::new() }
    }

    /// `len` bytes at `offset`, or None if the log ends first.
    pub(crate) fn bytes(&mut self, offset: u64, len: usize) -> Result<Option<&[u8]>> {
        if offset + len as u64 > self.len {
            return Ok(None);
        }
        let in_buffer = offset >= self.start && offset + len as u64 <= self.start + self.buf.len() as u64;
        if !in_buffer {
            let want = len.max(READ_CHUNK).min((self.len - offset) as usize);
            self.buf.resize(want, 0);
            self.backend.read(offset, &mut self.buf)?;
            self.start = offset;
        }
        let at = (offset - self.start) as usize;
        Ok(Some(&self.buf[at..at + len]))
    }

    /// The intact commit records from `offset` to the end: every 8-byte boundary is tried, and an
    /// intact record is stepped over whole.
    fn commits_beyond(&mut self, mut offset: u64) -> Result<Beyond> {
        let mut beyond = Beyond { commits: 0, synced: 0 };
        while offset + HEADER_LEN as u64 <= self.len {
            match self.record_at(offset)? {
                Some(rec) => {
                    if rec.header.kind == Kind::Commit && rec.value.len() == COMMIT_VALUE_LEN {
                        beyond.commits += 1;
                        beyond.synced = beyond.synced.max(u64::from_le_bytes(rec.value[48..56].try_into().expect("8 bytes")));
                    }
                    offset += rec.header.padded_len() as u64;
                }
                None => offset += 8,
            }
        }
        Ok(beyond)
    }

    /// The intact record at `offset`, or None at the end of the valid log.
    pub(crate) fn record_at(&mut self, offset: u64) -> Result<Option<Record>> {
        let Some(head) = self.bytes(offset, HEADER_LEN)? else { return Ok(None) };
        let head: [u8; HEADER_LEN] = head.try_into().expect("header length");
        let Ok(header) = Header::decode(&head, offset) else { return Ok(None) };
        let body = HEADER_LEN + header.key_len + header.value_len;
        if offset + header.padded_len() as u64 > self.len {
            return Ok(None);
        }
        let Some(whole) = self.bytes(offset, body)? else { return Ok(None) };
        if !record::checksum_holds(&header, whole) {
            return Ok(None);
        }
        Ok(Some(Record {
            offset,
            header,
            key: whole[HEADER_LEN..HEADER_LEN + header.key_len].to_vec(),
            value: whole[HEADER_LEN + header.key_len..].to_vec(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemBackend;

    /// A raised floor is given back a step at a time; `release_below` (at open) gives it all back.
    #[test]
    fn space_below_the_floor_is_given_back_a_step_at_a_time() {
        let log = Log::open(MemBackend::new()).unwrap();
        let mut batch = log.batch();
        for k in 0..4u8 {
            batch.put(&[k], &vec![7; 10 << 20], 0).unwrap();
        }
        let end = log.commit(batch, Commit::user(1, 4, 0), Durability::Eventual).unwrap();
        let full = log.allocated().unwrap();
        log.raise_floor(end);
        assert_eq!(log.allocated().unwrap(), full, "raising the floor frees nothing by itself");
        assert!(log.discard_step(DISCARD_STEP).unwrap(), "more is left");
        assert_eq!(log.allocated().unwrap(), full - DISCARD_STEP);
        log.discard_step(DISCARD_STEP).unwrap();
        log.release_below(end).unwrap();
        assert!(log.allocated().unwrap() < full - (40 << 20) + 2 * BLOCK, "{}", log.allocated().unwrap());
    }

    /// A hole is given back around the copies in it; past a record damaged since, nothing is, for
    /// the copies beyond it can no longer be found.
    #[test]
    fn a_hole_keeps_its_copies_and_all_past_damage() {
        let log = Log::open(MemBackend::new()).unwrap();
        let mut batch = log.batch();
        let big = vec![7; 64 << 10];
        let first = batch.put(b"a", &big, 0).unwrap();
        let copy = batch.copy(b"c", Some(b"kept"), 0).unwrap();
        batch.put(b"b", &big, 0).unwrap();
        let damaged = batch.put(b"x", &big, 0).unwrap();
        batch.put(b"d", &big, 0).unwrap();
        let copy_past = batch.copy(b"e", Some(b"kept too"), 0).unwrap();
        let hole = first..batch.end();
        log.commit(batch, Commit::user(1, 6, 0), Durability::Eventual).unwrap();
        log.backend.write(damaged, &[0xFF; HEADER_LEN]).unwrap();
        let full = log.allocated().unwrap();
        log.give_back(hole);
        while log.discard_step(DISCARD_STEP).unwrap() {}
        assert_eq!(log.view(copy).unwrap().value(), b"kept");
        assert_eq!(log.view(copy_past).unwrap().value(), b"kept too");
        let freed = full - log.allocated().unwrap();
        // "a" and "b" (all but the blocks they share with the copy and the damage), not "d".
        assert!((2 * (64 << 10) - 4 * BLOCK..=2 * (64 << 10) + 2 * BLOCK).contains(&freed), "{freed}");
    }
}
