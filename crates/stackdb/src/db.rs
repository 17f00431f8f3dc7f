//! The database: the log (data), the head table (bucket stacks), one writer,
//! many readers (`docs/stackdb-format.md`).

use crate::checkpoint::Due;
use crate::checkpointer::Checkpointer;
use crate::compaction::Compaction;
use crate::error::{Error, Result};
use crate::hash::hash;
use crate::heads::Heads;
use crate::iter::Iter;
use crate::log::{Batch, BatchKind, Commit, Durability, Log, OnDamage, Record};
use crate::page::PAGE;
use crate::page::{Entry, MAX_SHARED};
use crate::stack::{LogFile, newest_many, probe, restack};
use crate::storage::{FileBackend, StorageBackend};
use crate::sync::lock;
use crate::txn::WriteTxn;
use crate::worker::Worker;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// How a database behaves.
#[derive(Clone, Debug)]
pub struct Options {
    /// What `commit` promises.
    pub durability: Durability,
    /// Bytes of RAM the engine may hold for head-table entries not yet written, whatever
    /// the data's size.
    pub ram_budget: usize,
    /// Live keys per bucket before a bucket is split.
    pub max_load: f64,
    /// Splits in a row that may leave a bucket's stack shared with its new sibling instead of copying
    /// its live records into two fresh stacks (0: every split copies; at most
    /// [`MAX_SHARED`]). Each halves what growing the table writes, and lengthens
    /// the walks of those stacks until a split or the sweep copies them.
    pub shared_splits: u8,
    /// A new database starts with `2^initial_level` buckets (see [`sized_for`](Self::sized_for)).
    pub initial_level: u32,
    /// Checkpoint when the log has grown half this much since the last one,
    /// a round paced to end as it grows the other half, so that open replays
    /// about this much at most (twice, should the checkpoint thread be held
    /// up: then a commit writes the rest of the round).
    pub checkpoint_every: u64,
    /// When and how fast dead records are reclaimed.
    pub compaction: Compaction,
    /// Bytes of zeros the checkpoint thread keeps written ahead of the log's end once commits are
    /// synced, so a commit's sync records no change of size (`log/zeros.rs`); 0: none.
    pub zeros_ahead: u64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            durability: Durability::Immediate,
            ram_budget: 32 << 20,
            max_load: 2.0,
            shared_splits: 1,
            initial_level: 8,
            checkpoint_every: 64 << 20,
            compaction: Compaction::default(),
            zeros_ahead: 16 << 20,
        }
    }
}

impl Options {
    /// These options, a new database starting with as many buckets as `keys` need at `max_load`,
    /// rounded down to a power of two: a bulk load then splits each bucket at most once, and such a
    /// split shares its stack (`shared_splits` ≥ 1), so the load writes each record once — growing from
    /// a small table re-appends every record about 0.7 times, leaving as many dead copies for the sweep.
    /// An existing database keeps its table.
    pub fn sized_for(self, keys: u64) -> Self {
        let buckets = (keys as f64 / self.max_load.max(1.0)) as u64;
        let level = buckets.checked_ilog2().unwrap_or(0).min(MAX_INITIAL_LEVEL);
        Options { initial_level: self.initial_level.max(level), ..self }
    }

    /// Checks the figures make sense.
    pub fn validate(&self) -> Result<()> {
        if self.initial_level > MAX_INITIAL_LEVEL {
            return Err(Error::InvalidOption(format!("initial_level is at most {MAX_INITIAL_LEVEL} (got {})", self.initial_level)));
        }
        if self.shared_splits > MAX_SHARED {
            return Err(Error::InvalidOption(format!("shared_splits is at most {MAX_SHARED} (got {})", self.shared_splits)));
        }
        self.compaction.validate()
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
    /// Bytes of storage the log occupies (reclaimed parts excluded).
    pub log_bytes: u64,
    /// Bytes of the live records: the newest version of every live key.
    pub live_bytes: u64,
    /// Bytes from the oldest record still referenced to the log's end, less
    /// the holes young sweeps left, divided by the live bytes.
    pub space_amplification: f64,
    /// Log offset below which compaction has reclaimed everything (the
    /// log header's end while nothing has been).
    pub reclaimed_below: u64,
    /// Bytes above `reclaimed_below` that young sweeps have given back as
    /// holes since the last full sweep (estimated from the space the log
    /// occupies at open).
    pub reclaimed_above: u64,
    /// Bytes of the head-table file.
    pub heads_bytes: u64,
    /// Bytes of RAM held by head-table entries waiting to be written.
    pub cache_bytes: u64,
    /// Stack records visited per lookup that reached the log, on average.
    pub average_probe_depth: f64,
    /// Lookups answered by the Bloom word alone.
    pub bloom_answers: u64,
}

/// An open database.
pub struct Database {
    /// Sweeps on a thread of its own (none when compaction is off or commits are not synced);
    /// stopped first, as it holds the core too.
    pub(crate) sweeper: Option<Worker>,
    pub(crate) core: Arc<Core>,
    lookups: AtomicU64,
    probes: AtomicU64,
    bloom_answers: AtomicU64,
    _lock: Option<FileLock>,
}

/// What the committing threads and the sweep's thread share: the files, the one writer, the
/// checkpoint thread.
pub(crate) struct Core {
    pub(crate) log: Arc<LogFile>,
    pub(crate) heads: Arc<Mutex<Heads>>,
    pub(crate) writer: Mutex<()>,
    /// Writes the head table's checkpoint slices on a thread of its own.
    checkpointer: Checkpointer,
    pub(crate) options: Options,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("log_end", &self.core.log.end()).finish_non_exhaustive()
    }
}

/// The database directory's lock, held for as long as its descriptors stay open: a `flock` on the
/// directory itself — which no deleted or re-created file can release, so no second writer ever opens a
/// store a writer holds — and one on its `LOCK` file, which builds before the directory's lock still honour.
struct FileLock {
    _dir: std::fs::File,
    _file: Option<std::fs::File>,
}

impl FileLock {
    /// The lock a writer holds: no other process may hold any.
    fn take(dir: &Path) -> Result<FileLock> {
        let held = Self::hold(dir, Self::directory(dir)?, libc::LOCK_EX)?;
        let file =
            std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(dir.join("LOCK")).map_err(|e| named(&dir.join("LOCK"), e))?;
        Ok(FileLock { _file: Some(Self::hold(dir, file, libc::LOCK_EX)?), _dir: held })
    }

    /// The lock readers share: no writer may hold it meanwhile (a missing `LOCK` file is no matter:
    /// the directory's lock is the one that counts).
    fn share(dir: &Path) -> Result<FileLock> {
        let held = Self::hold(dir, Self::directory(dir)?, libc::LOCK_SH)?;
        let file = match std::fs::File::open(dir.join("LOCK")) {
            Ok(file) => Some(Self::hold(dir, file, libc::LOCK_SH)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(named(&dir.join("LOCK"), e)),
        };
        Ok(FileLock { _dir: held, _file: file })
    }

    /// The directory, opened to be locked.
    fn directory(dir: &Path) -> Result<std::fs::File> {
        std::fs::File::open(dir).map_err(|e| named(dir, e))
    }

    fn hold(dir: &Path, file: std::fs::File, how: libc::c_int) -> Result<std::fs::File> {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) } != 0 {
            return Err(Error::Locked(dir.display().to_string()));
        }
        Ok(file)
    }
}

/// An I/O error that names the file it happened on (permission denied on which file, say).
fn named(path: &Path, e: std::io::Error) -> Error {
    Error::Io(std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// Refuses a directory whose `log`, `heads` or `heads.dw` stackdb did not write: [`Database::create`]
/// removes only its own files (a `log` that begins with stackdb's magic, and the head table beside it).
fn only_ours(dir: &Path) -> Result<()> {
    let log = dir.join("log");
    let ours = match std::fs::File::open(&log) {
        Ok(mut f) => {
            let mut magic = [0u8; 7];
            use std::io::Read;
            f.read_exact(&mut magic).is_ok() && &magic == b"STACKDB"
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => !FILES[1..].iter().any(|f| dir.join(f).exists()),
        Err(e) => return Err(named(&log, e)),
    };
    if !ours && FILES.iter().any(|f| dir.join(f).exists()) {
        return Err(Error::Format(format!(
            "{} holds files named {} that stackdb did not write: nothing was removed (use an empty directory, or one stackdb made)",
            dir.display(),
            FILES.join(", ")
        )));
    }
    Ok(())
}

/// RAM of the budget kept for what is not a waiting head-table entry: a checkpoint slice (1 MiB, 2 MiB
/// for a whole round), the sweep's plan and batch (~256 KiB each), recovery's 1 MiB read chunk (at
/// open only). (With the page cache this replaced and 2 MiB kept, the whole engine measured 32.4 MiB
/// at 20 M records.)
const RESERVED_RAM: usize = 3 << 20;

/// A database directory's files besides `LOCK`: the log, the head table, its doublewrite area.
const FILES: [&str; 3] = ["log", "heads", "heads.dw"];

/// The largest `initial_level`: 2^32 buckets, a 64 GiB head table.
const MAX_INITIAL_LEVEL: u32 = 32;

/// Bytes of RAM a commit's entry may take at most when it starts waiting to be written: its own 16
/// bytes with its vector's spare room, and a page of its own.
const INCOMING_ENTRY_BYTES: usize = 32 + crate::page::WAITING_PAGE_BYTES;

/// Lookups retry this many times when the compaction freed the log under
/// them (between reading a head and reading its records).
const STALE_HEAD_RETRIES: u32 = 3;

impl Core {
    /// Commits a batch of copies (a split's or a rewrite's) and applies it
    /// to the head table with `apply` (writer held). No sync of its own:
    /// recovery keeps a prefix of the commits, so the next synced commit
    /// makes it durable too, and copies lost in a crash only leave a bucket
    /// unsplit or unswept — nothing acknowledged is lost.
    pub(crate) fn commit_copies(&self, batch: Batch, kind: BatchKind, buckets: u64, apply: impl FnOnce(&mut Heads) -> Result<()>) -> Result<()> {
        let sequence = lock(&self.heads).state.commit_seq + 1;
        self.log.commit(batch, Commit::copies(sequence, kind, buckets), Durability::Eventual)?;
        let mut heads = lock(&self.heads);
        apply(&mut heads)?;
        heads.state.commit_seq = sequence;
        Ok(())
    }

    /// Writes the whole head table now, before a commit that would set `incoming` entries, if they might
    /// not fit in RAM beside the ones waiting to be written (writer held). Checkpoint rounds are paced to
    /// end long before that ([`Core::checkpoint_step`]); a commit touching more buckets than the
    /// budget holds meets it.
    pub(crate) fn checkpoint_if_full(&self, incoming: usize) -> Result<()> {
        let full = {
            let heads = lock(&self.heads);
            heads.waiting_bytes() + incoming * INCOMING_ENTRY_BYTES > heads.budget()
        };
        if full {
            self.checkpointer.whole_round()?;
        }
        Ok(())
    }

    /// Takes the next step of checkpointing after a commit (writer held): paces the round under way
    /// (beginning one if due) and wakes the checkpoint thread if a slice is due or the zeros written
    /// ahead of the log's end run short — or, should the log
    /// have outgrown the round twice its pace, writes the rest itself. A round's end lets the log
    /// below its floor go (its header no longer points below it): the thread gives it back, a step at
    /// a time.
    pub(crate) fn checkpoint_step(&self) -> Result<()> {
        let due = lock(&self.heads).checkpoint_step(self.log.end(), self.options.checkpoint_every);
        match due {
            Due::Nothing if self.log.zeros_short() => self.checkpointer.wake(),
            Due::Nothing => Ok(()),
            Due::Slice => self.checkpointer.wake(),
            Due::Overdue => self.checkpointer.rest_of_round(),
        }
    }
}

impl Database {
    /// Opens (creating if needed) the database in directory `path`; another
    /// process holding it open gets [`Error::Locked`].
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Database> {
        let dir = path.as_ref();
        std::fs::create_dir_all(dir)?;
        let file_lock = FileLock::take(dir)?;
        Self::open_locked(dir, file_lock, options)
    }

    /// Creates an empty database in directory `path`, removing the one there first — only once it
    /// holds the directory's lock, and only stackdb's own files: another process holding it open gets
    /// [`Error::Locked`] and its files are left as they are.
    pub fn create(path: impl AsRef<Path>, options: Options) -> Result<Database> {
        let dir = path.as_ref();
        std::fs::create_dir_all(dir)?;
        let file_lock = FileLock::take(dir)?;
        only_ours(dir)?;
        for file in FILES {
            match std::fs::remove_file(dir.join(file)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            }
        }
        Self::open_locked(dir, file_lock, options)
    }

    /// Opens the database in directory `path` to read only: beside other readers, never while a
    /// writer has it open ([`Error::Locked`]), and without changing a byte of its files — what opening
    /// repairs (a torn tail cut, a checkpoint redone from the doublewrite file, the log replayed into
    /// the head table) is done in RAM. Commits are refused; no sweep runs.
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Database> {
        Self::read_only(path.as_ref(), options, OnDamage::Refuse).map(|(db, _)| db)
    }

    /// Opens the database in `dir` to read only for a salvage: damage before the log's synced end ends
    /// recovery there instead of refusing, and a log shorter than its checkpoint is read as far as it
    /// goes. Returns where damage ended recovery, if it did (the log past it is the salvage's to read).
    pub(crate) fn open_to_salvage(dir: &Path) -> Result<(Database, Option<u64>)> {
        Self::read_only(dir, Options::default(), OnDamage::Stop)
    }

    fn read_only(dir: &Path, options: Options, on_damage: OnDamage) -> Result<(Database, Option<u64>)> {
        match std::fs::metadata(dir.join("log")) {
            Ok(m) if m.is_file() => {}
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(named(&dir.join("log"), e)),
            _ => return Err(Error::Format(format!("{} holds no stackdb database (no log file)", dir.display()))),
        }
        let file_lock = FileLock::share(dir)?;
        let [log, heads, doublewrite] = FILES.map(|file| crate::overlay::Overlay::over_file(&dir.join(file)));
        let backends = Backends { log: Box::new(log?), heads: Box::new(heads?), doublewrite: Box::new(doublewrite?) };
        let compaction = Compaction { trigger: f64::INFINITY, generational: false, ..options.compaction };
        let (mut db, damaged) = Self::open_recovering(backends, Options { compaction, zeros_ahead: 0, ..options }, on_damage)?;
        db.core.log.poison(&"it was opened read-only");
        db._lock = Some(file_lock);
        Ok((db, damaged))
    }

    fn open_locked(dir: &Path, file_lock: FileLock, options: Options) -> Result<Database> {
        let [log, heads, doublewrite] = FILES.map(|file| FileBackend::open(&dir.join(file)));
        let backends = Backends { log: Box::new(log?), heads: Box::new(heads?), doublewrite: Box::new(doublewrite?) };
        let mut db = Self::open_with(backends, options)?;
        db._lock = Some(file_lock);
        Ok(db)
    }

    /// Opens a database on the given storage (tests use crash-simulating memory).
    pub fn open_with(backends: Backends, options: Options) -> Result<Database> {
        Self::open_recovering(backends, options, OnDamage::Refuse).map(|(db, _)| db)
    }

    fn open_recovering(backends: Backends, options: Options, on_damage: OnDamage) -> Result<(Database, Option<u64>)> {
        options.validate()?;
        // The budget less what the writer needs besides the waiting entries
        // (`RESERVED_RAM`).
        let ram = options.ram_budget.saturating_sub(RESERVED_RAM).max(16 * PAGE);
        let mut log = Log::open(backends.log)?.with_zeros_ahead(options.zeros_ahead);
        let mut heads = Heads::open_beside(backends.heads, backends.doublewrite, ram, options.initial_level, || log.is_blank())?;
        let marks = log.marks();
        if heads.state.floor < marks.floor {
            return Err(Error::Stale { checkpoint: heads.state.checkpoint, heads_floor: heads.state.floor, log_floor: marks.floor });
        }
        // The checkpointed table points at nothing below its floor; a crash
        // may have come between that checkpoint and freeing the space.
        log.release_below(heads.state.floor)?;
        let from = heads.state.log_end;
        let damaged = log.recover_with(from, on_damage, |records, commit| replay(&mut heads, records, commit))?.damaged;
        // Young sweeps' holes are not recorded: the space the log occupies tells roughly how much.
        heads.estimates.freed = log.end().saturating_sub(heads.state.floor).saturating_sub(log.allocated()?);
        let (log, heads) = (Arc::new(log), Arc::new(Mutex::new(heads)));
        let checkpointer = Checkpointer::start(Arc::clone(&log), Arc::clone(&heads))?;
        // The replay may have left more entries waiting than the budget holds.
        let over_budget = {
            let heads = lock(&heads);
            heads.waiting_bytes() > heads.budget()
        };
        if over_budget {
            checkpointer.whole_round()?;
        }
        // Only synced commits leave the writer free long enough for a thread of its own to sweep.
        let sweeps = options.compaction.trigger.is_finite() && options.durability == Durability::Immediate;
        let core = Arc::new(Core { log, heads, writer: Mutex::new(()), checkpointer, options });
        core.age_first_records()?;
        let sweeper = sweeps.then(|| Core::start_sweeper(Arc::clone(&core))).transpose()?;
        let db = Database { sweeper, core, lookups: AtomicU64::new(0), probes: AtomicU64::new(0), bloom_answers: AtomicU64::new(0), _lock: None };
        Ok((db, damaged))
    }

    /// The value of `key` as of the last commit.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let h = hash(key);
        let found = self.read_stack(
            |heads| heads.state.address(h),
            |entry| Ok(probe(&self.core.log, entry, key, h)?.map(|(put, depth)| (put.map(|r| r.value().to_vec()), depth))),
        )?;
        self.lookups.fetch_add(1, Relaxed);
        match found {
            None => {
                self.bloom_answers.fetch_add(1, Relaxed);
                Ok(None)
            }
            Some((value, depth)) => {
                self.probes.fetch_add(depth, Relaxed);
                Ok(value)
            }
        }
    }

    /// The values of `keys` as of the last commit, as [`get`](Self::get) gives them one by one, read
    /// together: every key's head entry is asked of the CPU's cache before the first is read, then the
    /// stacks are walked a record of each in turn, so the memory reads overlap instead of waiting for
    /// each other (a player's items, a guild's members).
    pub fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let hashes: Vec<u64> = keys.iter().map(|k| hash(k)).collect();
        let places = lock(&self.core.heads).places(hashes.iter().copied())?;
        // A key its bucket's Bloom word rules out needs no walk.
        let tops: Vec<u64> = places.iter().zip(&hashes).map(|(&(_, e), &h)| if e.may_hold(h) { e.head() } else { 0 }).collect();
        let mut values: Vec<Option<Vec<u8>>> = vec![None; keys.len()];
        let walked = newest_many(&self.core.log, &tops, &mut values, |_, i| keys[i], |values, i, r| values[i] = Some(r.value().to_vec()));
        match walked {
            // A sweep finished and freed the log under a head read before it: one by one, each read again.
            Err(Error::Corrupt { offset, .. }) if self.core.log.released(offset) => keys.iter().map(|k| self.get(k)).collect(),
            Err(e) => Err(e),
            Ok(depth) => {
                self.lookups.fetch_add(keys.len() as u64, Relaxed);
                self.bloom_answers.fetch_add(tops.iter().filter(|&&t| t == 0).count() as u64, Relaxed);
                self.probes.fetch_add(depth, Relaxed);
                Ok(values)
            }
        }
    }

    /// Reads the head of the bucket `bucket_of` names and walks its stack
    /// with `walk`. A reader races the writer only in one way: a sweep may
    /// finish and free the log between the two steps, which `walk` reports
    /// as damage below the new floor; then the head is read again.
    pub(crate) fn read_stack<T>(&self, bucket_of: impl Fn(&Heads) -> u64, walk: impl Fn(Entry) -> Result<T>) -> Result<T> {
        let mut retries = 0;
        loop {
            let entry = {
                let mut heads = lock(&self.core.heads);
                let bucket = bucket_of(&heads);
                heads.entry(bucket)?
            };
            match walk(entry) {
                Err(Error::Corrupt { offset, .. }) if self.core.log.released(offset) && retries < STALE_HEAD_RETRIES => retries += 1,
                done => return done,
            }
        }
    }

    /// Buckets in use now.
    pub(crate) fn buckets(&self) -> u64 {
        lock(&self.core.heads).state.buckets()
    }

    /// The bucket `key` lives in now.
    pub(crate) fn bucket_of(&self, key: &[u8]) -> u64 {
        lock(&self.core.heads).state.address(hash(key))
    }

    /// The live records of `bucket` (as its stack reads now, each checksum-checked), newest first.
    pub(crate) fn bucket_live(&self, bucket: u64) -> Result<Vec<Record>> {
        // The table as the entry was read addresses its keys (a shared stack holds others' too).
        let state = std::cell::Cell::new(crate::heads::State::default());
        self.read_stack(
            |heads| {
                state.set(heads.state);
                bucket
            },
            |entry| {
                let live = crate::stack::live_records(&self.core.log, entry.head(), bucket, &state.get())?;
                Ok(live.iter().map(|(r, _)| r.to_record()).collect())
            },
        )
    }

    /// No stack reaches below this log offset: the log beneath is dead, given back or not.
    pub(crate) fn floor(&self) -> u64 {
        lock(&self.core.heads).state.floor
    }

    /// Starts the one write transaction. It takes the writer at its first read of the store or at
    /// its commit, whichever comes first, and holds it until it commits or drops; other transactions
    /// then wait for it.
    pub fn begin_write(&self) -> WriteTxn<'_> {
        WriteTxn::new(self)
    }

    /// Writes the head table as of the last commit, so the next open replays
    /// nothing. Also done automatically as the log grows.
    pub fn checkpoint(&self) -> Result<()> {
        let _writer = lock(&self.core.writer);
        self.core.checkpointer.whole_round()
    }

    /// Waits until the work the commits so far left to the background is done — the sweep as far as
    /// it is due, the head table's slices due written, and the log below a finished sweep given back,
    /// which takes the round after the sweep — doing here what the background threads have not got
    /// to (the writer held). [`Database::stats`] then shows the space the log settles at.
    pub fn catch_up(&self) -> Result<()> {
        let _writer = lock(&self.core.writer);
        self.core.sweep(false, None)?;
        loop {
            lock(&self.core.heads).checkpoint_step(self.core.log.end(), self.core.options.checkpoint_every);
            self.core.checkpointer.catch_up()?;
            let heads = lock(&self.core.heads);
            if heads.state.floor <= heads.written.floor && heads.holes.is_empty() {
                return Ok(());
            }
        }
    }

    /// Figures about the database.
    pub fn stats(&self) -> Result<Stats> {
        let heads = lock(&self.core.heads);
        let reached_log = self.lookups.load(Relaxed) - self.bloom_answers.load(Relaxed);
        let live_bytes = heads.state.live_bytes;
        let span = self.core.log.end().saturating_sub(heads.state.floor).saturating_sub(heads.estimates.freed);
        Ok(Stats {
            records: heads.state.records,
            buckets: heads.state.buckets(),
            log_bytes: self.core.log.allocated()?,
            live_bytes,
            space_amplification: if live_bytes == 0 { 0.0 } else { span as f64 / live_bytes as f64 },
            reclaimed_below: heads.state.floor,
            reclaimed_above: heads.estimates.freed,
            heads_bytes: heads.file_bytes()?,
            cache_bytes: heads.waiting_bytes() as u64,
            average_probe_depth: if reached_log == 0 { 0.0 } else { self.probes.load(Relaxed) as f64 / reached_log as f64 },
            bloom_answers: self.bloom_answers.load(Relaxed),
        })
    }

    /// Every live key and value as of the moment each bucket is visited, in
    /// bucket order. Holds one bucket's records in RAM at a time.
    pub fn iter(&self) -> Iter<'_> {
        Iter::new(self)
    }

    /// Checkpoints, waits for the table to reach the disk and closes (dropping without closing is safe
    /// too: the next open checks the last checkpoint's pages against the doublewrite file and replays
    /// the log since that checkpoint).
    pub fn close(mut self) -> Result<()> {
        // A sweep's copies after the last checkpoint would be replayed at the next open.
        if let Some(sweeper) = self.sweeper.take() {
            sweeper.stop()?;
        }
        self.checkpoint()?;
        // The holes young sweeps left are not recorded: given back now, or they would stay allocated
        // until a full sweep (and the next open would count them as the log's).
        while self.core.log.discard_step(u64::MAX)? {}
        self.core.checkpointer.quiet(|| lock(&self.core.heads).settle())
    }
}

/// Applies one recovered commit to the head table, as the writer did.
fn replay(heads: &mut Heads, records: &[Record], commit: Commit) -> Result<()> {
    let placed = records.iter().map(|r| (r.offset, hash(&r.key)));
    // Where the batch's commit record begins.
    let end = records.last().map_or(commit.start, |r| r.offset + r.header.padded_len() as u64);
    match commit.kind {
        // A user batch's records go on top of their buckets' stacks.
        BatchKind::User => restack(heads, [], placed)?,
        BatchKind::Split => crate::apply::split(heads, commit.buckets, placed)?,
        BatchKind::Share => crate::apply::share(heads, &crate::apply::decode_shared(records, commit.buckets)?)?,
        BatchKind::Rewrite => crate::apply::sweep(heads, commit.start, commit.buckets, placed, end)?,
        BatchKind::Young => crate::apply::young(heads, commit.start, commit.buckets, &crate::apply::decode_entries(records)?, end)?,
    }
    let state = &mut heads.state;
    state.records = state.records.saturating_add_signed(commit.records_delta);
    state.live_bytes = state.live_bytes.saturating_add_signed(commit.bytes_delta);
    state.commit_seq = commit.sequence;
    Ok(())
}
