//! The database against a model (a BTreeMap), through crashes and reopens.

use stackdb::log::BatchKind;
use stackdb::{Backends, Compaction, Database, Durability, Error, MemBackend, Options};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// The three in-memory files of a database, kept so a test can crash them.
#[derive(Clone)]
struct Disk {
    log: Arc<MemBackend>,
    heads: Arc<MemBackend>,
    doublewrite: Arc<MemBackend>,
    /// Held shared by every change to the files, exclusively by a crash: a power cut is one instant
    /// for all three.
    gate: Arc<RwLock<()>>,
}

impl Disk {
    fn new() -> Disk {
        Disk::of(Arc::new(MemBackend::new()), Arc::new(MemBackend::new()), Arc::new(MemBackend::new()))
    }

    fn of(log: Arc<MemBackend>, heads: Arc<MemBackend>, doublewrite: Arc<MemBackend>) -> Disk {
        Disk { log, heads, doublewrite, gate: Arc::new(RwLock::new(())) }
    }

    /// One of the files as the database sees it, its changes gated; `slow_syncs`: each sync takes
    /// 1 ms and is counted there.
    fn gated(&self, file: &Arc<MemBackend>, slow_syncs: Option<&Arc<Syncs>>) -> Box<Gated> {
        Box::new(Gated { file: Arc::clone(file), gate: Arc::clone(&self.gate), slow_syncs: slow_syncs.cloned() })
    }

    fn open(&self, options: &Options) -> Database {
        self.try_open(options).expect("open")
    }

    fn try_open(&self, options: &Options) -> Result<Database, Error> {
        self.open_with_log_syncs(options, None)
    }

    /// Opens with the log's syncs slow (1 ms) and counted in `slow_syncs`, if given, so commits from
    /// several threads overlap them.
    fn open_with_log_syncs(&self, options: &Options, slow_syncs: Option<&Arc<Syncs>>) -> Result<Database, Error> {
        let backends = Backends {
            log: self.gated(&self.log, slow_syncs),
            heads: self.gated(&self.heads, None),
            doublewrite: self.gated(&self.doublewrite, None),
        };
        Database::open_with(backends, options.clone())
    }

    /// The files as a power cut leaves them: synced bytes plus, of each file's unsynced writes, either a
    /// prefix (a device that writes in order) or any part of each (one that reorders: a later write may
    /// survive an earlier one lost or torn), chosen by `rng`.
    fn crash(&self, rng: &mut Rng) -> Disk {
        let cut = |m: &MemBackend, rng: &mut Rng| {
            let n = m.unsynced_bytes();
            Arc::new(match rng.below(2) {
                0 => m.crash(if n == 0 { 0 } else { rng.below(n + 1) }),
                _ => m.crash_with(|len| match rng.below(3) {
                    0 => 0,
                    1 => len,
                    _ => rng.below(len + 1),
                }),
            })
        };
        // One instant for all three files, though the database's threads may be writing them.
        let _instant = self.gate.write().unwrap_or_else(|e| e.into_inner());
        Disk::of(cut(&self.log, rng), cut(&self.heads, rng), cut(&self.doublewrite, rng))
    }
}

/// A file of a [`Disk`]: writes, syncs and holes wait while the disk is being crashed.
struct Gated {
    file: Arc<MemBackend>,
    gate: Arc<RwLock<()>>,
    /// Syncs take 1 ms and are counted here.
    slow_syncs: Option<Arc<Syncs>>,
}

/// Syncs of a [`Gated`] file: how many, and the most under way at once.
#[derive(Default)]
struct Syncs {
    done: AtomicU64,
    under_way: AtomicU64,
    most_at_once: AtomicU64,
}

impl Gated {
    fn change<T>(&self, f: impl FnOnce(&MemBackend) -> T) -> T {
        let _open = self.gate.read().unwrap_or_else(|e| e.into_inner());
        f(&self.file)
    }
}

impl stackdb::StorageBackend for Gated {
    fn len(&self) -> std::io::Result<u64> {
        self.file.len()
    }
    fn read(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.file.read(offset, buf)
    }
    fn write(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.change(|f| f.write(offset, data))
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.change(|f| f.set_len(len))
    }
    fn sync_data(&self) -> std::io::Result<()> {
        if let Some(syncs) = &self.slow_syncs {
            let now = syncs.under_way.fetch_add(1, Ordering::SeqCst) + 1;
            syncs.most_at_once.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(1));
            syncs.under_way.fetch_sub(1, Ordering::SeqCst);
            syncs.done.fetch_add(1, Ordering::Relaxed);
        }
        self.change(|f| f.sync_data())
    }
    fn discard(&self, offset: u64, len: u64) -> std::io::Result<()> {
        self.change(|f| f.discard(offset, len))
    }
    fn allocated(&self) -> std::io::Result<u64> {
        self.file.allocated()
    }
}

/// xorshift64*: the test's own reproducible randomness.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn small(durability: Durability) -> Options {
    // Four buckets to start, a 16-page cache, eager compaction and a few
    // zeros ahead: splits (sharing stacks two levels deep, then copying),
    // evictions, checkpoints, whole sweeps and steps of zeros all happen
    // within a few hundred keys.
    Options {
        durability,
        ram_budget: 16 * 4096,
        max_load: 2.0,
        shared_splits: 2,
        initial_level: 2,
        checkpoint_every: 64 << 10,
        compaction: Compaction { trigger: 1.5, pace: 0.25, min_log_bytes: 4096, ..Compaction::default() },
        zeros_ahead: 64 << 10,
    }
}

fn assert_matches(db: &Database, model: &BTreeMap<Vec<u8>, Vec<u8>>, keys: u64, context: &str) {
    for k in 0..keys {
        let key = format!("key-{k}").into_bytes();
        assert_eq!(db.get(&key).unwrap(), model.get(&key).cloned(), "{context}: key-{k}");
    }
    // Read together, every key (present, deleted or never written) gives what it gives alone.
    let names: Vec<Vec<u8>> = (0..keys).map(|k| format!("key-{k}").into_bytes()).collect();
    let together = db.get_many(&names.iter().map(Vec::as_slice).collect::<Vec<_>>()).unwrap();
    for (name, value) in names.iter().zip(together) {
        assert_eq!(value, model.get(name).cloned(), "{context}: get_many of {}", String::from_utf8_lossy(name));
    }
    let mut all: Vec<(Vec<u8>, Vec<u8>)> = db.iter().map(|r| r.unwrap()).collect();
    all.sort();
    let expected: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all.len(), expected.len(), "{context}: iter length");
    assert!(all == expected, "{context}: iter contents differ");
    assert_eq!(db.stats().unwrap().records, model.len() as u64, "{context}: record count");
}

#[test]
fn puts_deletes_and_transactions_behave() {
    let disk = Disk::new();
    let db = disk.open(&small(Durability::Immediate));
    assert_eq!(db.get(b"a").unwrap(), None);
    let mut w = db.begin_write();
    w.put(b"a", b"1").unwrap();
    w.put(b"b", b"2").unwrap();
    w.put(b"a", b"3").unwrap();
    w.commit().unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"3".to_vec()));
    // A dropped transaction leaves nothing behind.
    let mut w = db.begin_write();
    w.put(b"c", b"lost").unwrap();
    w.delete(b"a").unwrap();
    drop(w);
    assert_eq!(db.get(b"c").unwrap(), None);
    assert_eq!(db.get(b"a").unwrap(), Some(b"3".to_vec()));
    let mut w = db.begin_write();
    w.delete(b"a").unwrap();
    w.delete(b"never-was").unwrap();
    w.commit().unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.stats().unwrap().records, 1);
    // A 64 KiB value (the MMO player blob) fits.
    let blob = vec![0xB1u8; 64 * 1024];
    let mut w = db.begin_write();
    w.put(b"player", &blob).unwrap();
    w.commit().unwrap();
    drop(db);
    let db = disk.open(&small(Durability::Immediate));
    assert_eq!(db.get(b"player").unwrap(), Some(blob));
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
}

/// Buckets far fuller than the default load (one bucket to start, 100 keys each before a split):
/// splits, sweeps and reads walk stacks of hundreds of distinct keys, some overwritten, some
/// deleted, and keep each key's newest version.
#[test]
fn crowded_stacks_keep_each_keys_newest_version() {
    let disk = Disk::new();
    let options = Options { max_load: 100.0, initial_level: 0, ..small(Durability::Immediate) };
    let db = disk.open(&options);
    let mut model = BTreeMap::new();
    let mut rng = Rng(7);
    for round in 0..40u64 {
        let mut w = db.begin_write();
        for _ in 0..50 {
            let key = format!("key-{}", rng.below(600)).into_bytes();
            if rng.below(5) == 0 {
                w.delete(&key).unwrap();
                model.remove(&key);
            } else {
                let value = format!("v{round}-{}", rng.below(1000)).into_bytes();
                w.put(&key, &value).unwrap();
                model.insert(key, value);
            }
        }
        w.commit().unwrap();
    }
    assert!(db.stats().unwrap().buckets > 1, "the crowded buckets were split");
    assert_matches(&db, &model, 600, "crowded");
    drop(db);
    assert_matches(&disk.open(&options), &model, 600, "crowded, reopened");
}

/// Random operations against the database and a model, with commits,
/// clean reopens and crashes; under `Immediate` durability every commit
/// survives every crash.
/// Seeds to run: 12 in CI; `STACKDB_SEEDS=N` for a longer hunt.
fn seeds() -> u64 {
    std::env::var("STACKDB_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(12)
}

#[test]
fn the_database_matches_a_model_through_crashes() {
    // Seeds whose database ended with a full sweep behind it, and with young sweeps' holes.
    let (mut full_sweeps, mut young_sweeps) = (0, 0);
    for seed in 1..=seeds() {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        // Each open may share split stacks to another depth (0: every split copies): what a log
        // holds must replay the same whatever the options that read it.
        let options = |shared: u64| Options { shared_splits: shared as u8, ..small(Durability::Immediate) };
        let mut disk = Disk::new();
        let mut db = disk.open(&options(rng.below(3)));
        let mut model = BTreeMap::new();
        let keys = 600;
        for step in 0..40 {
            let mut staged = model.clone();
            let mut w = db.begin_write();
            for _ in 0..rng.below(40) + 1 {
                let key = format!("key-{}", rng.below(keys)).into_bytes();
                if rng.below(5) == 0 {
                    w.delete(&key).unwrap();
                    staged.remove(&key);
                } else {
                    let value = vec![rng.below(256) as u8; rng.below(100) as usize];
                    w.put(&key, &value).unwrap();
                    staged.insert(key, value);
                }
            }
            // Inside the transaction, reads see its own writes over the last commit.
            for _ in 0..5 {
                let key = format!("key-{}", rng.below(keys)).into_bytes();
                assert_eq!(w.get(&key).unwrap(), staged.get(&key).cloned(), "seed {seed} step {step}: txn get");
            }
            if rng.below(8) == 0 {
                drop(w); // abandoned: the model keeps its old state
            } else {
                w.commit().unwrap();
                model = staged;
            }
            match rng.below(10) {
                0 => {
                    drop(db);
                    db = disk.open(&options(rng.below(3)));
                }
                1 => {
                    drop(db);
                    disk = disk.crash(&mut rng);
                    db = disk.open(&options(rng.below(3)));
                }
                2 => db.checkpoint().unwrap(),
                _ => {}
            }
            if step % 10 == 9 {
                assert_matches(&db, &model, keys, &format!("seed {seed} step {step}"));
            }
        }
        let stats = db.stats().unwrap();
        assert!(stats.buckets > 4, "seed {seed}: the table should have grown");
        assert!(stats.reclaimed_below > 64 || stats.reclaimed_above > 0, "seed {seed}: no sweep finished: {stats:?}");
        (full_sweeps, young_sweeps) = (full_sweeps + u64::from(stats.reclaimed_below > 64), young_sweeps + u64::from(stats.reclaimed_above > 0));
        assert_matches(&db, &model, keys, &format!("seed {seed} end"));
    }
    assert!(full_sweeps > 0 && young_sweeps > 0, "both kinds of sweep ran: {full_sweeps} full, {young_sweeps} young");
}

/// Under `Eventual` durability a crash may lose the latest commits, but what
/// survives is exactly the state after some commit, never a mix.
#[test]
fn eventual_durability_loses_a_suffix_of_commits_never_part_of_one() {
    for seed in 1..=seeds() {
        let mut rng = Rng(seed.wrapping_mul(0xD1B5_4A32_D192_ED03));
        let options = small(Durability::Eventual);
        let disk = Disk::new();
        let db = disk.open(&options);
        let mut history = vec![BTreeMap::new()];
        let mut model = BTreeMap::new();
        for _ in 0..30 {
            let mut w = db.begin_write();
            for _ in 0..rng.below(20) + 1 {
                let key = format!("key-{}", rng.below(300)).into_bytes();
                let value = rng.next().to_le_bytes().to_vec();
                w.put(&key, &value).unwrap();
                model.insert(key, value);
            }
            w.commit().unwrap();
            history.push(model.clone());
        }
        drop(db);
        let crashed = disk.crash(&mut rng).open(&options);
        let mut now: Vec<(Vec<u8>, Vec<u8>)> = crashed.iter().map(|r| r.unwrap()).collect();
        now.sort();
        let matches_some = history.iter().any(|h| h.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>() == now);
        assert!(matches_some, "seed {seed}: the state after a crash is no commit's state");
    }
}

#[test]
fn a_transaction_reads_its_own_writes_and_others_do_not() {
    let db = Disk::new().open(&small(Durability::Immediate));
    let mut w = db.begin_write();
    w.put(b"kept", b"old").unwrap();
    w.put(b"gone", b"soon").unwrap();
    w.commit().unwrap();
    let mut w = db.begin_write();
    assert_eq!(w.get(b"kept").unwrap(), Some(b"old".to_vec()));
    w.put(b"kept", b"new").unwrap();
    w.put(b"fresh", &[7; 300]).unwrap();
    w.delete(b"gone").unwrap();
    assert_eq!(w.get(b"kept").unwrap(), Some(b"new".to_vec()));
    assert_eq!(w.get(b"fresh").unwrap(), Some(vec![7; 300]));
    assert_eq!(w.get(b"gone").unwrap(), None);
    assert_eq!(w.get(b"never").unwrap(), None);
    // Readers see the last commit until this one lands.
    assert_eq!(db.get(b"kept").unwrap(), Some(b"old".to_vec()));
    assert_eq!(db.get(b"fresh").unwrap(), None);
    w.commit().unwrap();
    assert_eq!(db.get(b"kept").unwrap(), Some(b"new".to_vec()));
    assert_eq!(db.get(b"gone").unwrap(), None);
    assert_eq!(db.stats().unwrap().records, 2);
}

#[test]
fn a_second_open_of_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    match Database::open(dir.path(), Options::default()) {
        Err(Error::Locked(what)) => assert!(what.contains(dir.path().to_str().unwrap())),
        other => panic!("expected Locked, got {other:?}"),
    }
    drop(db);
    Database::open(dir.path(), Options::default()).unwrap();
}

/// The lock is the directory's own: a LOCK file deleted (or deleted and made again) under a writer lets
/// no second writer in.
#[test]
fn a_deleted_lock_file_lets_no_second_writer_in() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    std::fs::remove_file(dir.path().join("LOCK")).unwrap();
    assert!(matches!(Database::open(dir.path(), Options::default()), Err(Error::Locked(_))));
    assert!(matches!(Database::create(dir.path(), Options::default()), Err(Error::Locked(_))));
    std::fs::write(dir.path().join("LOCK"), b"").unwrap();
    assert!(matches!(Database::open(dir.path(), Options::default()), Err(Error::Locked(_))));
    assert!(matches!(Database::open_read_only(dir.path(), Options::default()), Err(Error::Locked(_))));
    drop(db);
    Database::open(dir.path(), Options::default()).unwrap();
}

/// Create removes only stackdb's own files: a directory holding a `log` it did not write is refused,
/// the file left as it was.
#[test]
fn create_refuses_files_stackdb_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("log"), b"my own notes").unwrap();
    match Database::create(dir.path(), Options::default()) {
        Err(Error::Format(why)) => assert!(why.contains("stackdb did not write"), "{why}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(std::fs::read(dir.path().join("log")).unwrap(), b"my own notes");
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("heads"), b"x").unwrap();
    assert!(matches!(Database::create(other.path(), Options::default()), Err(Error::Format(_))), "a heads with no stackdb log beside it");
    // A store stackdb made is made afresh.
    let ours = tempfile::tempdir().unwrap();
    let db = Database::open(ours.path(), Options::default()).unwrap();
    db.close().unwrap();
    Database::create(ours.path(), Options::default()).unwrap();
}

#[test]
fn create_removes_nothing_another_handle_holds_open() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let mut w = db.begin_write();
    w.put(b"kept", b"yes").unwrap();
    w.commit().unwrap();
    assert!(matches!(Database::create(dir.path(), Options::default()), Err(Error::Locked(_))));
    assert_eq!(db.get(b"kept").unwrap().as_deref(), Some(&b"yes"[..]), "the open handle still reads its data");
    drop(db);
    assert_eq!(Database::open(dir.path(), Options::default()).unwrap().get(b"kept").unwrap().as_deref(), Some(&b"yes"[..]));
    let fresh = Database::create(dir.path(), Options::default()).unwrap();
    assert_eq!(fresh.get(b"kept").unwrap(), None, "create starts empty once it holds the lock");
}

#[test]
fn a_read_only_open_changes_no_byte_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options { initial_level: 2, ..Options::default() }).unwrap();
    for batch in 0..30 {
        let mut w = db.begin_write();
        for i in 0..40 {
            w.put(format!("k-{batch}-{i}").as_bytes(), format!("v{batch}").as_bytes()).unwrap();
        }
        w.commit().unwrap();
    }
    assert!(matches!(Database::open_read_only(dir.path(), Options::default()), Err(Error::Locked(_))), "not while a writer has it");
    drop(db); // not closed: the next open replays the log and cuts the zeros written ahead of its end
    // A torn tail as a crash leaves one: half a record past the last commit.
    let mut log = std::fs::OpenOptions::new().append(true).open(dir.path().join("log")).unwrap();
    std::io::Write::write_all(&mut log, &[0x5A; 100]).unwrap();
    drop(log);
    let files = |d: &std::path::Path| ["log", "heads", "heads.dw"].map(|f| std::fs::read(d.join(f)).unwrap());
    let before = files(dir.path());
    let reader = Database::open_read_only(dir.path(), Options::default()).unwrap();
    let second = Database::open_read_only(dir.path(), Options::default()).unwrap();
    assert!(matches!(Database::open(dir.path(), Options::default()), Err(Error::Locked(_))), "no writer while readers have it");
    assert_eq!(reader.get(b"k-29-39").unwrap().as_deref(), Some(&b"v29"[..]));
    assert_eq!(second.iter().count(), 30 * 40);
    let mut w = reader.begin_write();
    w.put(b"new", b"refused").unwrap();
    assert!(matches!(w.commit(), Err(Error::Poisoned(why)) if why.contains("read-only")));
    reader.close().unwrap();
    drop(second);
    assert!(before == files(dir.path()), "a read-only open changed the files");
    assert!(matches!(Database::open_read_only(dir.path().join("nothing"), Options::default()), Err(Error::Format(_))));
}

#[test]
fn a_real_directory_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), Options { initial_level: 2, ..Options::default() }).unwrap();
        for batch in 0..20 {
            let mut w = db.begin_write();
            for i in 0..50 {
                w.put(format!("cell-{batch}-{i}").as_bytes(), format!("v{batch}").as_bytes()).unwrap();
            }
            w.commit().unwrap();
        }
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), Options { initial_level: 2, ..Options::default() }).unwrap();
    assert_eq!(db.stats().unwrap().records, 1000);
    assert_eq!(db.get(b"cell-7-33").unwrap(), Some(b"v7".to_vec()));
    assert_eq!(db.get(b"cell-99-0").unwrap(), None);
}

/// Options that cannot work are refused by name before anything is opened.
#[test]
fn impossible_options_are_refused() {
    let refused = |options: Options| match Disk::new().try_open(&options) {
        Err(Error::InvalidOption(message)) => message,
        other => panic!("opened with {options:?}: {:?}", other.map(|_| ())),
    };
    let too_shared = refused(Options { shared_splits: 8, ..small(Durability::Immediate) });
    assert!(too_shared.contains("shared_splits is at most 7"), "{too_shared}");
    let no_trigger = refused(Options { compaction: Compaction { trigger: 1.0, ..Compaction::default() }, ..small(Durability::Immediate) });
    assert!(no_trigger.contains("trigger"), "{no_trigger}");
    // A sweep that grows the log past the trigger before it ends leaves the next one overdue.
    let too_slow = refused(Options {
        compaction: Compaction { trigger: 2.0, pace: 1.0, min_log_bytes: 4096, ..Compaction::default() },
        ..small(Durability::Immediate)
    });
    assert!(too_slow.contains("pace must be below trigger - 1"), "{too_slow}");
}

/// A growing table splits consecutive buckets the same way (sharing, or copying once shared), so a
/// commit's splits take a commit or two, not one per short run: an empty bucket's count once fell
/// back to 0 while its neighbours' rose, and a 5 M insert made 352,000 split commits for 2.5 M splits.
#[test]
fn a_growing_table_splits_in_long_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (commits, keys) = (100u64, 1000u64);
    let options = Options { initial_level: 2, durability: Durability::Eventual, compaction: Compaction::off(), ..Options::default() };
    {
        let db = Database::open(dir.path(), options.clone()).unwrap();
        for c in 0..commits {
            let mut w = db.begin_write();
            for i in 0..keys {
                w.put(format!("key-{c}-{i}").as_bytes(), b"value").unwrap();
            }
            w.commit().unwrap();
        }
        db.close().unwrap();
    }
    let mut log = stackdb::Log::open(stackdb::FileBackend::open(&dir.path().join("log")).unwrap()).unwrap();
    let (mut split_commits, mut splits, mut shared) = (0u64, 0u64, 0u64);
    log.recover(0, |_, commit| {
        if matches!(commit.kind, BatchKind::Split | BatchKind::Share) {
            split_commits += 1;
            splits += commit.buckets;
            shared += if commit.kind == BatchKind::Share { commit.buckets } else { 0 };
        }
        Ok(())
    })
    .unwrap();
    let db = Database::open(dir.path(), options).unwrap();
    assert_eq!(splits, db.stats().unwrap().buckets - 4);
    assert!(shared > splits / 4 && shared < splits * 3 / 4, "{shared} of {splits} splits shared");
    assert!(split_commits <= 3 * commits, "{split_commits} commits for {splits} splits in {commits} user commits");
}

/// A key rewritten on top of its own committed version replaces it in the stack: a walk for another
/// key of the bucket passes one record of it, not one per write — before, a hot key rewritten every
/// game period left every version in its bucket's stack until the sweep. The values stay right after
/// a reopen (replay), and after a delete on top.
#[test]
fn a_key_rewritten_on_top_of_its_stack_leaves_no_dead_version_in_it() {
    let disk = Disk::new();
    // One bucket, never split, no sweep: every key shares one stack, and only its links change.
    let options = Options { max_load: 1e9, initial_level: 0, compaction: Compaction::off(), ..small(Durability::Eventual) };
    let db = disk.open(&options);
    let mut w = db.begin_write();
    w.put(b"cold", b"c").unwrap();
    w.commit().unwrap();
    for n in 0..500u32 {
        let mut w = db.begin_write();
        w.put(b"hot", &n.to_le_bytes()).unwrap();
        w.commit().unwrap();
    }
    assert_eq!(db.get(b"cold").unwrap().as_deref(), Some(&b"c"[..]));
    assert_eq!(db.stats().unwrap().average_probe_depth, 2.0, "the walk to cold passed dead versions of hot");
    // Beneath another key's newer record, a version stays until the sweep: only the top is replaced.
    let mut w = db.begin_write();
    w.put(b"cold", b"c2").unwrap();
    w.commit().unwrap();
    let mut w = db.begin_write();
    w.put(b"hot", b"last").unwrap();
    w.delete(b"cold").unwrap();
    w.commit().unwrap();
    assert_eq!(db.get(b"hot").unwrap().as_deref(), Some(&b"last"[..]));
    assert_eq!(db.get(b"cold").unwrap(), None);
    drop(db);
    let db = disk.open(&options);
    assert_eq!(db.get(b"hot").unwrap().as_deref(), Some(&b"last"[..]));
    assert_eq!(db.get(b"cold").unwrap(), None);
    assert_eq!(db.stats().unwrap().records, 1);
}

/// A database made for a bulk load of n keys starts with the buckets they need (rounded down to a
/// power of two), so the load copies nothing to grow the table; one that exists keeps its table.
#[test]
fn a_database_sized_for_its_keys_starts_with_their_buckets() {
    assert_eq!(Options::default().sized_for(2_000_000).initial_level, 19, "2 M keys at 2 a bucket: 2^19 buckets");
    assert_eq!(Options::default().sized_for(10).initial_level, Options::default().initial_level, "never below the default");
    let refused = Disk::new().try_open(&Options { initial_level: 33, ..small(Durability::Immediate) });
    assert!(matches!(refused, Err(Error::InvalidOption(m)) if m.contains("initial_level is at most 32")));
    let disk = Disk::new();
    let options = Options { max_load: 2.0, ..small(Durability::Immediate) }.sized_for(4096);
    let db = disk.open(&options);
    assert_eq!(db.stats().unwrap().buckets, 2048);
    let mut w = db.begin_write();
    for k in 0..4096u32 {
        w.put(format!("key-{k}").as_bytes(), b"v").unwrap();
    }
    w.commit().unwrap();
    let stats = db.stats().unwrap();
    assert_eq!(stats.buckets, 2048, "no split for the keys it was sized for");
    drop(db);
    let db = disk.open(&small(Durability::Immediate).sized_for(1 << 20));
    assert_eq!(db.stats().unwrap().buckets, 2048, "an existing table is kept");
    assert_eq!(db.get(b"key-4095").unwrap().as_deref(), Some(&b"v"[..]));
    // A table of several creation chunks (2^17 buckets: 515 pages, 256 a chunk): every page is sealed
    // with its own number, so it opens again, and a page's bucket holds what was put there.
    let big = Disk::new();
    let options = Options { initial_level: 17, ..small(Durability::Immediate) };
    let db = big.open(&options);
    let mut w = db.begin_write();
    w.put(b"somewhere", b"here").unwrap();
    w.commit().unwrap();
    drop(db);
    let db = big.open(&options);
    assert_eq!(db.stats().unwrap().buckets, 1 << 17);
    assert_eq!(db.get(b"somewhere").unwrap().as_deref(), Some(&b"here"[..]));
    assert_eq!(db.get(b"nowhere").unwrap(), None);
    assert_eq!(db.iter().collect::<Result<Vec<_>, _>>().unwrap().len(), 1, "a scan reads every page");
}

/// A game session rewriting the same players: the log stays within the
/// space bound and the data stays right, in memory and in a real file
/// (where the freed part becomes a hole).
#[test]
fn rewriting_the_same_keys_keeps_the_log_bounded() {
    let options = Options { compaction: Compaction { min_log_bytes: 64 << 10, ..Compaction::default() }, ..small(Durability::Eventual) };
    let bound = options.compaction.trigger + 1.0 + options.compaction.pace;
    let dir = tempfile::tempdir().unwrap();
    let mem = Disk::new();
    for db in [Database::open(dir.path(), options.clone()).unwrap(), mem.open(&options)] {
        let value = |round: u32, k: u32| format!("player-{k}-round-{round}-").repeat(40).into_bytes();
        let mut worst: f64 = 0.0;
        for round in 0..200u32 {
            let mut w = db.begin_write();
            for k in 0..100 {
                w.put(format!("player-{k}").as_bytes(), &value(round, k)).unwrap();
            }
            w.commit().unwrap();
            // The log below a finished sweep is given back once the checkpoint round after it has
            // ended, both on the checkpoint thread: wait for them.
            db.catch_up().unwrap();
            let stats = db.stats().unwrap();
            worst = worst.max(stats.space_amplification);
            // The header block, and one partly freed block, on top of the bound.
            assert!(stats.log_bytes as f64 <= bound * stats.live_bytes as f64 + 8192.0, "round {round}: {stats:?}");
        }
        let stats = db.stats().unwrap();
        assert_eq!(stats.records, 100);
        assert!(worst <= bound * 1.1, "space amplification reached {worst}, bound {bound}");
        // 200 rounds wrote 200x the live data; all but a few times it was given back.
        assert!(stats.log_bytes as f64 <= bound * stats.live_bytes as f64 + 8192.0, "{stats:?}");
        for k in 0..100 {
            assert_eq!(db.get(format!("player-{k}").as_bytes()).unwrap(), Some(value(199, k)));
        }
    }
    // And reopening the compacted file finds everything.
    let db = Database::open(dir.path(), options).unwrap();
    assert_eq!(db.iter().count(), 100);
    assert_eq!(db.get(b"player-42").unwrap().unwrap(), "player-42-round-199-".repeat(40).into_bytes());
}

/// A bulk load, then a session rewriting a few hot keys and adding some: young sweeps give back
/// the dead young records as holes and never copy the load, which the open after it made old; the
/// log stays small, and every key reads right, before and after reopening a real file.
#[test]
fn young_sweeps_give_back_rewrites_without_copying_the_load() {
    let options = Options { compaction: Compaction { min_log_bytes: 64 << 10, ..Compaction::default() }, ..small(Durability::Eventual) };
    let dir = tempfile::tempdir().unwrap();
    let value = |round: u32, k: u32| format!("key-{k}-round-{round}-").repeat(10).into_bytes();
    let mut model = BTreeMap::new();
    {
        let db = Database::open(dir.path(), options.clone()).unwrap();
        let mut w = db.begin_write();
        for k in 0..3000 {
            w.put(format!("key-{k}").as_bytes(), &value(0, k)).unwrap();
            model.insert(format!("key-{k}").into_bytes(), value(0, k));
        }
        w.commit().unwrap();
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), options.clone()).unwrap();
    let loaded = db.stats().unwrap();
    for round in 1..=400u32 {
        let mut w = db.begin_write();
        // 30 hot keys rewritten every round, 2 new keys added.
        for k in (0..30).chain([3000 + 2 * round, 3001 + 2 * round]) {
            w.put(format!("key-{k}").as_bytes(), &value(round, k)).unwrap();
            model.insert(format!("key-{k}").into_bytes(), value(round, k));
        }
        w.commit().unwrap();
    }
    db.catch_up().unwrap();
    let stats = db.stats().unwrap();
    // 400 rounds wrote ~4x the load; young sweeps gave most of it back, and no full sweep was needed.
    assert_eq!(stats.reclaimed_below, loaded.reclaimed_below, "a full sweep ran: {stats:?}");
    assert!(stats.reclaimed_above > 2 * loaded.live_bytes, "young sweeps gave back too little: {stats:?}");
    assert!(stats.space_amplification < options.compaction.trigger + 1.0 + options.compaction.pace, "{stats:?}");
    assert!(stats.log_bytes < 4 * stats.live_bytes, "holes were not given back: {stats:?}");
    let check = |db: &Database| {
        for (k, v) in &model {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{}", String::from_utf8_lossy(k));
        }
        assert_eq!(db.iter().count(), model.len());
    };
    check(&db);
    // Closing gives back the holes still waiting, so the reopened log is as small.
    db.close().unwrap();
    let db = Database::open(dir.path(), options).unwrap();
    let reopened = db.stats().unwrap();
    assert!(reopened.log_bytes < 4 * reopened.live_bytes && reopened.reclaimed_above > 0, "{reopened:?}");
    check(&db);
}

/// Readers on other threads never see an error or a wrong value while the
/// sweeps free the log under them — the committing thread's (unsynced
/// commits) or the sweep's thread's (synced ones), which back-to-back
/// commits may starve of the writer.
#[test]
fn readers_are_unaffected_by_compaction() {
    for durability in [Durability::Eventual, Durability::Immediate] {
        readers_are_unaffected_by_compaction_with(durability);
    }
}

fn readers_are_unaffected_by_compaction_with(durability: Durability) {
    let options = Options { compaction: Compaction { trigger: 1.2, pace: 0.1, min_log_bytes: 4096, ..Compaction::default() }, ..small(durability) };
    let db = Disk::new().open(&options);
    let keys = 200u64;
    let value = |k: u64, round: u64| [k.to_le_bytes(), round.to_le_bytes()].concat();
    let mut w = db.begin_write();
    for k in 0..keys {
        w.put(&k.to_le_bytes(), &value(k, 0)).unwrap();
    }
    w.commit().unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (db, done) = (&db, &done);
            s.spawn(move || {
                let mut rng = Rng(t + 7);
                let mut reads = 0u64;
                while !done.load(std::sync::atomic::Ordering::Relaxed) || reads < 1000 {
                    // One thread reads a key at a time, the other sixteen together.
                    let ks: Vec<[u8; 8]> = (0..if t == 0 { 1 } else { 16 }).map(|_| rng.below(keys).to_le_bytes()).collect();
                    let got = match ks.len() {
                        1 => vec![db.get(&ks[0]).expect("a read during compaction")],
                        _ => db.get_many(&ks.iter().map(|k| &k[..]).collect::<Vec<_>>()).expect("reads during compaction"),
                    };
                    for (k, got) in ks.iter().zip(got) {
                        let got = got.expect("every key exists");
                        assert_eq!(&got[..8], k, "a value of another key");
                    }
                    reads += 1;
                }
            });
        }
        for round in 1..300u64 {
            let mut w = db.begin_write();
            for k in 0..keys {
                w.put(&k.to_le_bytes(), &value(k, round)).unwrap();
            }
            w.commit().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let stats = db.stats().unwrap();
    assert!(stats.space_amplification < 3.0, "{durability:?}: {stats:?}");
}

#[test]
fn head_table_changes_stay_within_the_ram_budget_however_many_pages_commits_touch() {
    // A 64 KiB budget; every commit sets up to 8 entries on as many pages; thousands of buckets, so
    // nearly every entry a commit sets is one that was not waiting to be written.
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options { ram_budget: 16 * 4096, initial_level: 12, ..small(Durability::Eventual) }).unwrap();
    let mut most = 0;
    for batch in 0..400u64 {
        let mut w = db.begin_write();
        for k in 0..8 {
            w.put(format!("key-{}", batch * 8 + k).as_bytes(), b"value").unwrap();
        }
        w.commit().unwrap();
        most = most.max(db.stats().unwrap().cache_bytes);
    }
    assert!(most <= 16 * 4096, "waiting head-table entries held {most} bytes");
    assert_eq!(db.stats().unwrap().records, 3200);
}

/// A transaction's puts and deletes are only noted until commit: the counts
/// still follow every key's last state, and deleting what is not there
/// writes nothing.
#[test]
fn a_transaction_counts_each_keys_last_state() {
    let db = Disk::new().open(&small(Durability::Eventual));
    let mut w = db.begin_write();
    w.put(b"kept", b"12345678").unwrap();
    w.put(b"gone", b"x").unwrap();
    w.commit().unwrap();
    let before = db.stats().unwrap();
    assert_eq!(before.records, 2);

    let mut w = db.begin_write();
    w.delete(b"never-there").unwrap();
    w.commit().unwrap();
    assert_eq!(db.stats().unwrap(), before, "a delete of an absent key commits nothing");

    let mut w = db.begin_write();
    w.put(b"new", b"a").unwrap();
    w.delete(b"new").unwrap(); // put then deleted: no live key
    w.put(b"kept", b"1234").unwrap(); // shorter
    w.delete(b"gone").unwrap();
    w.put(b"gone", b"back").unwrap(); // deleted then put: live again
    w.delete(b"never-there").unwrap();
    assert_eq!(w.get(b"kept").unwrap(), Some(b"1234".to_vec()));
    assert_eq!(w.get(b"new").unwrap(), None);
    assert_eq!(w.get(b"gone").unwrap(), Some(b"back".to_vec()));
    w.commit().unwrap();
    let after = db.stats().unwrap();
    assert_eq!(after.records, 2);
    assert_eq!(db.get(b"kept").unwrap(), Some(b"1234".to_vec()));
    assert_eq!(db.get(b"gone").unwrap(), Some(b"back".to_vec()));
    assert_eq!(db.get(b"new").unwrap(), None);
    // "kept" 24 + 4 + 4 bytes → 32, "gone" 24 + 4 + 4 → 32: the live bytes are the newest versions'.
    assert_eq!(after.live_bytes, 64);
}

/// Group commit: four threads each add to one counter, read and written back inside their
/// transactions, and commit durably. No update is lost, every batch is whole, the threads' commits
/// share syncs (fewer syncs than commits) and run two side by side (never more), and all of it is there
/// after a power cut.
#[test]
fn concurrent_writers_share_syncs_and_lose_no_update() {
    const THREADS: u64 = 4;
    const COMMITS: u64 = 60;
    let disk = Disk::new();
    let syncs = Arc::new(Syncs::default());
    // No zeros written ahead: every sync of the log is a commit's (or a checkpoint slice's).
    let options = Options { zeros_ahead: 0, ..small(Durability::Immediate) };
    let db = disk.open_with_log_syncs(&options, Some(&syncs)).unwrap();
    let before = syncs.done.load(Ordering::Relaxed);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let db = &db;
            s.spawn(move || {
                for i in 0..COMMITS {
                    let mut w = db.begin_write();
                    let n = w.get(b"counter").unwrap().map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
                    w.put(b"counter", &(n + 1).to_le_bytes()).unwrap();
                    w.put(format!("key-{}", t * COMMITS + i).as_bytes(), format!("thread {t} commit {i}").as_bytes()).unwrap();
                    w.commit().unwrap();
                }
            });
        }
    });
    let commits = THREADS * COMMITS;
    let synced = syncs.done.load(Ordering::Relaxed) - before;
    assert!(synced < commits, "{synced} syncs for {commits} commits: none shared");
    assert_eq!(syncs.most_at_once.load(Ordering::SeqCst), 2, "syncs side by side ({synced} syncs)");
    let mut model = BTreeMap::new();
    model.insert(b"counter".to_vec(), commits.to_le_bytes().to_vec());
    for t in 0..THREADS {
        for i in 0..COMMITS {
            model.insert(format!("key-{}", t * COMMITS + i).into_bytes(), format!("thread {t} commit {i}").into_bytes());
        }
    }
    assert_eq!(db.get(b"counter").unwrap(), Some(commits.to_le_bytes().to_vec()), "an update was lost");
    let cut = disk.crash(&mut Rng(7));
    drop(db);
    let reopened = cut.open(&small(Durability::Immediate));
    assert_eq!(reopened.get(b"counter").unwrap(), Some(commits.to_le_bytes().to_vec()), "after the power cut");
    assert_matches(&reopened, &model, commits, "after the power cut");
}

/// A key a transaction said it will read is looked up before the writer, with its blind writes; a
/// commit that changes it while the transaction waits for the writer is seen: the read gives the new
/// value, not the one looked up ahead.
#[test]
fn a_read_noted_ahead_sees_a_commit_made_while_it_waited_for_the_writer() {
    let disk = Disk::new();
    let db = disk.open(&small(Durability::Immediate));
    let mut w = db.begin_write();
    w.put(b"lease", b"zone a").unwrap();
    w.commit().unwrap();
    // Another zone holds the writer (its first read took it).
    let mut other = db.begin_write();
    assert_eq!(other.get(b"lease").unwrap(), Some(b"zone a".to_vec()));
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut w = db.begin_write();
            w.put(b"core", b"state").unwrap();
            w.will_read(b"lease");
            // Looks "core" and "lease" up, then waits for the writer.
            let lease = w.get(b"lease").unwrap();
            w.commit().unwrap();
            lease
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        other.put(b"lease", b"zone b").unwrap();
        other.commit().unwrap();
        assert_eq!(reader.join().unwrap(), Some(b"zone b".to_vec()), "the lease as committed when the writer was taken");
    });
    assert_eq!(db.get(b"core").unwrap(), Some(b"state".to_vec()));
    assert_eq!(db.stats().unwrap().records, 2);
}

/// Transactions that write blindly look their keys up before they take the writer: three threads
/// put and delete the same hundred keys in blind batches (some ending with a read of a counter, which
/// takes the writer midway) while the table splits and the sweep copies. Whatever another commit,
/// a split or a sweep changed between the look-up and the writer is looked up again: the live-key
/// and live-byte counts match the keys there, no counter update is lost, and all of it survives a
/// power cut.
#[test]
fn blind_writes_looked_up_before_the_writer_keep_the_counts_exact() {
    const THREADS: u64 = 3;
    const COMMITS: u64 = 150;
    const KEYS: u64 = 100;
    let disk = Disk::new();
    let db = disk.open(&small(Durability::Immediate));
    let counted = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (db, counted) = (&db, &counted);
            s.spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t + 1));
                for i in 0..COMMITS {
                    let mut w = db.begin_write();
                    for _ in 0..1 + rng.below(12) {
                        let key = format!("key-{}", rng.below(KEYS)).into_bytes();
                        match rng.below(3) {
                            0 => w.delete(&key).unwrap(),
                            _ => w.put(&key, &vec![b'a' + t as u8; 1 + rng.below(40) as usize]).unwrap(),
                        }
                    }
                    if i % 3 == 0 {
                        let n = w.get(b"counter").unwrap().map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
                        w.put(b"counter", &(n + 1).to_le_bytes()).unwrap();
                        counted.fetch_add(1, Ordering::Relaxed);
                    }
                    w.commit().unwrap();
                }
            });
        }
    });
    let check = |db: &Database, context: &str| {
        let all: Vec<(Vec<u8>, Vec<u8>)> = db.iter().map(|r| r.unwrap()).collect();
        let stats = db.stats().unwrap();
        assert_eq!(stats.records, all.len() as u64, "{context}: live keys counted");
        let bytes: usize = all.iter().map(|(k, v)| stackdb::record::padded_len(k.len(), v.len())).sum();
        assert_eq!(stats.live_bytes, bytes as u64, "{context}: live bytes counted");
        let counter = db.get(b"counter").unwrap().map(|v| u64::from_le_bytes(v.try_into().unwrap()));
        assert_eq!(counter, Some(counted.load(Ordering::Relaxed)), "{context}: a counter update was lost");
        for (k, v) in &all {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{context}: {}", String::from_utf8_lossy(k));
        }
    };
    check(&db, "running");
    assert!(db.stats().unwrap().buckets > 4, "the table split");
    assert!(db.stats().unwrap().reclaimed_below > 0, "the sweep reclaimed log");
    let cut = disk.crash(&mut Rng(11));
    drop(db);
    check(&cut.open(&small(Durability::Immediate)), "after the power cut");
}
