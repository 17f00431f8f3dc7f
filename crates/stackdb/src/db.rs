//! The database: the log (data), the head table (bucket stacks), one writer,
//! many readers (`docs/stackdb-format.md`).

use crate::error::{Error, Result};
use crate::hash::{bloom_bits, hash};
use crate::heads::{Entry, Heads, PAGE, State};
use crate::log::{BatchKind, Commit, Durability, Log, Record};
use crate::record::Kind;
use crate::storage::{FileBackend, StorageBackend};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

/// How a database behaves.
#[derive(Clone, Debug)]
pub struct Options {
    /// What `commit` promises.
    pub durability: Durability,
    /// Bytes of RAM the engine may hold for its head-page cache, whatever
    /// the data's size.
    pub ram_budget: usize,
    /// Live keys per bucket before a bucket is split.
    pub max_load: f64,
    /// A new database starts with `2^initial_level` buckets.
    pub initial_level: u32,
    /// Checkpoint when the log has grown this much since the last one, so
    /// that open replays at most this much.
    pub checkpoint_every: u64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            durability: Durability::Immediate,
            ram_budget: 32 << 20,
            max_load: 2.0,
            initial_level: 8,
            checkpoint_every: 64 << 20,
        }
    }
}

/// The three files' storage.
pub struct Backends {
    /// The log.
    pub log: Box<dyn StorageBackend>,
    /// The head table.
    pub heads: Box<dyn StorageBackend>,
    /// The head table's doublewrite area.
    pub doublewrite: Box<dyn StorageBackend>,
}

impl std::fmt::Debug for Backends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backends").finish_non_exhaustive()
    }
}

/// Figures about a database.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Live keys.
    pub records: u64,
    /// Buckets.
    pub buckets: u64,
    /// Bytes of the log file.
    pub log_bytes: u64,
    /// Bytes of the head-table file.
    pub heads_bytes: u64,
    /// Bytes of RAM held by the head-page cache.
    pub cache_bytes: u64,
    /// Stack records visited per lookup that reached the log, on average.
    pub average_probe_depth: f64,
    /// Lookups answered by the Bloom word alone.
    pub bloom_answers: u64,
}

/// An open database.
pub struct Database {
    log: Log<Box<dyn StorageBackend>>,
    heads: Mutex<Heads>,
    writer: Mutex<()>,
    options: Options,
    lookups: AtomicU64,
    probes: AtomicU64,
    bloom_answers: AtomicU64,
    _lock: Option<FileLock>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("log_end", &self.log.end()).finish_non_exhaustive()
    }
}

/// An exclusive `flock` on the database directory's LOCK file, held for as
/// long as the file stays open.
struct FileLock {
    _held: std::fs::File,
}

impl FileLock {
    fn take(dir: &Path) -> Result<FileLock> {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(dir.join("LOCK"))?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(Error::Locked(dir.display().to_string()));
        }
        Ok(FileLock { _held: file })
    }
}

fn lock(heads: &Mutex<Heads>) -> MutexGuard<'_, Heads> {
    heads.lock().unwrap_or_else(|e| e.into_inner())
}

impl Database {
    /// Opens (creating if needed) the database in directory `path`; another
    /// process holding it open gets [`Error::Locked`].
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Database> {
        let dir = path.as_ref();
        std::fs::create_dir_all(dir)?;
        let file_lock = FileLock::take(dir)?;
        let backends = Backends {
            log: Box::new(FileBackend::open(&dir.join("log"))?),
            heads: Box::new(FileBackend::open(&dir.join("heads"))?),
            doublewrite: Box::new(FileBackend::open(&dir.join("heads.dw"))?),
        };
        let mut db = Self::open_with(backends, options)?;
        db._lock = Some(file_lock);
        Ok(db)
    }

    /// Opens a database on the given storage (tests use crash-simulating memory).
    pub fn open_with(backends: Backends, options: Options) -> Result<Database> {
        let cache_pages = (options.ram_budget / PAGE).max(16);
        let mut log = Log::open(backends.log)?;
        let heads = Heads::open(backends.heads, backends.doublewrite, cache_pages, options.initial_level)?;
        let from = heads.state.log_end;
        let mut heads = heads;
        log.recover(from, |records, commit| replay(&mut heads, records, commit))?;
        Ok(Database {
            log,
            heads: Mutex::new(heads),
            writer: Mutex::new(()),
            options,
            lookups: AtomicU64::new(0),
            probes: AtomicU64::new(0),
            bloom_answers: AtomicU64::new(0),
            _lock: None,
        })
    }

    /// The value of `key` as of the last commit.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let h = hash(key);
        let entry = {
            let mut heads = lock(&self.heads);
            let bucket = heads.state.address(h);
            heads.entry(bucket)?
        };
        self.lookups.fetch_add(1, Relaxed);
        match probe(&self.log, entry, key, h)? {
            None => {
                self.bloom_answers.fetch_add(1, Relaxed);
                Ok(None)
            }
            Some((found, depth)) => {
                self.probes.fetch_add(depth, Relaxed);
                Ok(live_value(found))
            }
        }
    }

    /// Starts the one write transaction; others wait until it commits or drops.
    pub fn begin_write(&self) -> WriteTxn<'_> {
        WriteTxn {
            guard: self.writer.lock().unwrap_or_else(|e| e.into_inner()),
            batch: self.log.batch(),
            touched: HashMap::new(),
            known: HashMap::new(),
            records_delta: 0,
            db: self,
        }
    }

    /// Writes the head table as of the last commit, so the next open replays
    /// nothing. Also done automatically as the log grows.
    pub fn checkpoint(&self) -> Result<()> {
        let _writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        self.checkpoint_locked()
    }

    fn checkpoint_locked(&self) -> Result<()> {
        self.log.sync()?;
        lock(&self.heads).checkpoint(self.log.end())
    }

    /// Figures about the database.
    pub fn stats(&self) -> Result<Stats> {
        let heads = lock(&self.heads);
        let reached_log = self.lookups.load(Relaxed) - self.bloom_answers.load(Relaxed);
        Ok(Stats {
            records: heads.state.records,
            buckets: heads.state.buckets(),
            log_bytes: self.log.end(),
            heads_bytes: heads.file_bytes()?,
            cache_bytes: (heads.cached_pages() * PAGE) as u64,
            average_probe_depth: if reached_log == 0 { 0.0 } else { self.probes.load(Relaxed) as f64 / reached_log as f64 },
            bloom_answers: self.bloom_answers.load(Relaxed),
        })
    }

    /// Every live key and value as of the moment each bucket is visited, in
    /// bucket order. Holds one bucket's records in RAM at a time.
    pub fn iter(&self) -> Iter<'_> {
        Iter { db: self, bucket: 0, pending: Vec::new() }
    }

    /// Checkpoints and closes (dropping without closing is safe too: the
    /// next open replays the log since the last checkpoint).
    pub fn close(self) -> Result<()> {
        self.checkpoint()
    }

    /// Splits buckets while the load exceeds `max_load` (writer held).
    fn grow(&self) -> Result<()> {
        loop {
            let state = lock(&self.heads).state;
            if (state.records as f64) <= self.options.max_load * state.buckets() as f64 {
                return Ok(());
            }
            self.split(state)?;
        }
    }

    /// Re-appends bucket `split`'s live records as two new stacks.
    fn split(&self, state: State) -> Result<()> {
        let bucket = state.split;
        let head = lock(&self.heads).entry(bucket)?.head;
        let live = live_records(&self.log, head)?;
        let mut batch = self.log.batch();
        let mut stacks = [Entry::default(); 2];
        // Oldest first, so the newest ends on top of its new stack.
        for r in live.iter().rev() {
            let h = hash(&r.key);
            let side = ((h >> state.level) & 1) as usize;
            let offset = batch.put(&r.key, &r.value, stacks[side].head)?;
            stacks[side] = Entry { head: offset, bloom: stacks[side].bloom | bloom_bits(h) };
        }
        let sequence = state.commit_seq + 1;
        let commit = Commit { sequence, kind: BatchKind::Split, records_delta: 0 };
        // No sync of its own: recovery keeps a prefix of the commits, so the
        // next synced commit makes this split durable too, and a split lost
        // in a crash only leaves a bucket unsplit — nothing acknowledged.
        self.log.commit(batch, commit, Durability::Eventual)?;
        let mut heads = lock(&self.heads);
        heads.set(bucket, stacks[0])?;
        heads.set(bucket + (1u64 << state.level), stacks[1])?;
        advance_split(&mut heads.state);
        heads.state.commit_seq = sequence;
        Ok(())
    }
}

fn advance_split(state: &mut State) {
    state.split += 1;
    if state.split == 1u64 << state.level {
        state.level += 1;
        state.split = 0;
    }
}

/// What the stack `entry` heads says of `key`: `None` when its Bloom word
/// alone rules the key out, else the key's newest record (if any) and how
/// many records were read to find it.
fn probe(log: &Log<Box<dyn StorageBackend>>, entry: Entry, key: &[u8], h: u64) -> Result<Option<(Option<Record>, u64)>> {
    let bits = bloom_bits(h);
    if entry.head == 0 || entry.bloom & bits != bits {
        return Ok(None);
    }
    find(log, entry.head, key).map(Some)
}

/// The value a record gives its key: a put's value; a tombstone or no record, none.
fn live_value(found: Option<Record>) -> Option<Vec<u8>> {
    found.filter(|r| r.header.kind == Kind::Put).map(|r| r.value)
}

/// Walks a stack from `head` to the newest record of `key`; returns it and
/// the number of records visited.
fn find(log: &Log<Box<dyn StorageBackend>>, head: u64, key: &[u8]) -> Result<(Option<Record>, u64)> {
    let mut offset = head;
    let mut depth = 0;
    while offset != 0 {
        let r = log.read(offset)?;
        depth += 1;
        if r.key == key {
            return Ok((Some(r), depth));
        }
        if r.header.prev >= offset {
            return Err(Error::Corrupt { what: "stack link", offset });
        }
        offset = r.header.prev;
    }
    Ok((None, depth))
}

/// The newest version of every key in a stack, tombstones dropped; newest first.
fn live_records(log: &Log<Box<dyn StorageBackend>>, head: u64) -> Result<Vec<Record>> {
    let mut seen = HashSet::new();
    let mut live = Vec::new();
    let mut offset = head;
    while offset != 0 {
        let r = log.read(offset)?;
        if r.header.prev >= offset {
            return Err(Error::Corrupt { what: "stack link", offset });
        }
        offset = r.header.prev;
        if seen.insert(r.key.clone()) && r.header.kind == Kind::Put {
            live.push(r);
        }
    }
    Ok(live)
}

/// Applies one recovered commit to the head table, as the writer did.
fn replay(heads: &mut Heads, records: &[Record], commit: Commit) -> Result<()> {
    match commit.kind {
        BatchKind::User => {
            for r in records {
                let h = hash(&r.key);
                let bucket = heads.state.address(h);
                let e = heads.entry(bucket)?;
                heads.set(bucket, Entry { head: r.offset, bloom: e.bloom | bloom_bits(h) })?;
            }
        }
        BatchKind::Split => {
            let state = heads.state;
            let mut stacks = [Entry::default(); 2];
            for r in records {
                let h = hash(&r.key);
                let side = ((h >> state.level) & 1) as usize;
                stacks[side] = Entry { head: r.offset, bloom: stacks[side].bloom | bloom_bits(h) };
            }
            heads.set(state.split, stacks[0])?;
            heads.set(state.split + (1u64 << state.level), stacks[1])?;
            advance_split(&mut heads.state);
        }
    }
    heads.state.records = heads.state.records.saturating_add_signed(commit.records_delta);
    heads.state.commit_seq = commit.sequence;
    Ok(())
}

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
    batch: crate::log::Batch,
    /// New heads of the buckets this batch pushed onto.
    touched: HashMap<u64, Entry>,
    /// What this transaction knows of each key it has read or written.
    known: HashMap<Vec<u8>, Known>,
    records_delta: i64,
}

impl std::fmt::Debug for WriteTxn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteTxn").field("records", &self.batch.len()).finish_non_exhaustive()
    }
}

impl WriteTxn<'_> {
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
            let known = match probe(&self.db.log, committed, key, h)?.and_then(|(found, _)| live_value(found)) {
                Some(value) => Known::Committed(value),
                None => Known::Absent,
            };
            self.known.insert(key.to_vec(), known);
        }
        Ok(&self.known[key])
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
        let existed = !matches!(self.known(key, committed, h)?, Known::Absent);
        let offset = self.batch.put(key, value, top.head)?;
        self.touched.insert(bucket, Entry { head: offset, bloom: top.bloom | bloom_bits(h) });
        if !existed {
            self.records_delta += 1;
        }
        self.known.insert(key.to_vec(), Known::Written(offset));
        Ok(())
    }

    /// Deletes `key` (nothing happens if it does not exist).
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        let h = hash(key);
        let (bucket, top, committed) = self.top_of(h)?;
        if matches!(self.known(key, committed, h)?, Known::Absent) {
            return Ok(());
        }
        let offset = self.batch.delete(key, top.head)?;
        self.touched.insert(bucket, Entry { head: offset, bloom: top.bloom | bloom_bits(h) });
        self.records_delta -= 1;
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
        db.log.commit(self.batch, Commit::user(sequence, self.records_delta), db.options.durability)?;
        {
            let mut heads = lock(&db.heads);
            for (bucket, entry) in &self.touched {
                heads.set(*bucket, *entry)?;
            }
            heads.state.records = heads.state.records.saturating_add_signed(self.records_delta);
            heads.state.commit_seq = sequence;
        }
        db.grow()?;
        let (dirty, capacity, since) = {
            let heads = lock(&db.heads);
            (heads.dirty_pages(), heads.capacity(), db.log.end() - heads.state.log_end)
        };
        if dirty * 2 >= capacity || since >= db.options.checkpoint_every {
            db.checkpoint_locked()?;
        }
        drop(self.guard);
        Ok(())
    }
}

/// Iterator over every live key and value.
pub struct Iter<'db> {
    db: &'db Database,
    bucket: u64,
    pending: Vec<Record>,
}

impl std::fmt::Debug for Iter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iter").field("bucket", &self.bucket).finish_non_exhaustive()
    }
}

impl Iterator for Iter<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.pending.pop() {
                return Some(Ok((r.key, r.value)));
            }
            let bucket = self.bucket;
            let entry = {
                let mut heads = lock(&self.db.heads);
                if bucket >= heads.state.buckets() {
                    return None;
                }
                heads.entry(bucket)
            };
            // Move on whatever happened, so a damaged bucket is reported once
            // and the rest are still visited.
            self.bucket += 1;
            let head = match entry {
                Ok(e) => e.head,
                Err(e) => return Some(Err(e)),
            };
            match live_records(&self.db.log, head) {
                Ok(live) => self.pending = live,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
