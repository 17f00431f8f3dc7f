//! Damaged files: random byte flips and truncations of a real database's
//! files give a clear error or the right answer — never a panic, never
//! wrong data.

use stackdb::{Database, Options};
use std::collections::BTreeMap;
use std::path::Path;

fn options() -> Options {
    Options { initial_level: 3, ..Options::default() }
}

/// A checkpointed database of 2,000 keys, and what it holds.
fn pristine(dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Database::open(dir, options()).unwrap();
    let mut model = BTreeMap::new();
    for batch in 0..20u32 {
        let mut w = db.begin_write();
        for i in 0..100u32 {
            let key = format!("cell-{batch}-{i}").into_bytes();
            let value = format!("value-{}", batch * 1000 + i).into_bytes();
            w.put(&key, &value).unwrap();
            model.insert(key, value);
        }
        w.commit().unwrap();
    }
    db.close().unwrap();
    model
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for name in ["log", "heads", "heads.dw"] {
        std::fs::copy(from.join(name), to.join(name)).unwrap();
    }
}

/// Opens the damaged database and reads everything: each answer must be
/// right or an error. Returns how many keys read back correctly.
fn check(dir: &Path, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) -> usize {
    let Ok(db) = Database::open(dir, options()) else { return 0 };
    let mut right = 0;
    for (k, v) in model {
        match db.get(k) {
            Ok(Some(found)) => {
                assert_eq!(&found, v, "{what}: wrong value for {}", String::from_utf8_lossy(k));
                right += 1;
            }
            // Absent is acceptable only if recovery cut the log back, which a
            // checkpointed database with nothing to replay never does.
            Ok(None) => panic!("{what}: {} silently missing", String::from_utf8_lossy(k)),
            Err(_) => {}
        }
    }
    // Errors (damaged buckets) are skipped; the iterator moves past them.
    for (k, v) in db.iter().flatten() {
        assert_eq!(model.get(&k), Some(&v), "{what}: iter returned wrong data");
    }
    right
}

#[test]
fn flipped_bytes_give_errors_or_right_answers() {
    let base = tempfile::tempdir().unwrap();
    let model = pristine(base.path());
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    for round in 0..120 {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(base.path(), dir.path());
        let name = ["log", "heads"][round % 2];
        let path = dir.path().join(name);
        let mut bytes = std::fs::read(&path).unwrap();
        for _ in 0..1 + round % 4 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let at = (seed % bytes.len() as u64) as usize;
            bytes[at] ^= 1 << (seed >> 61);
        }
        std::fs::write(&path, bytes).unwrap();
        check(dir.path(), &model, &format!("round {round}, {name} flipped"));
    }
}

#[test]
fn truncated_files_give_errors_or_right_answers() {
    // Dropped, not closed: the doublewrite file holds the last checkpoint, and is read at open.
    let base = tempfile::tempdir().unwrap();
    let model = dropped_after_a_checkpoint(base.path());
    for name in ["log", "heads", "heads.dw"] {
        let len = std::fs::metadata(base.path().join(name)).unwrap().len();
        assert!(len > 4096, "{name} has {len} bytes to cut");
        for cut in [0, 1, 7, 63, 64, 65, 4095, 4096, len / 3, len / 2, len - 1] {
            let dir = tempfile::tempdir().unwrap();
            copy_dir(base.path(), dir.path());
            let f = std::fs::OpenOptions::new().write(true).open(dir.path().join(name)).unwrap();
            f.set_len(cut.min(len)).unwrap();
            drop(f);
            check(dir.path(), &model, &format!("{name} cut to {cut} of {len}"));
        }
    }
    // The doublewrite file only matters when the pages in place did not reach the disk: losing it with
    // them intact loses nothing.
    let dir = tempfile::tempdir().unwrap();
    copy_dir(base.path(), dir.path());
    std::fs::remove_file(dir.path().join("heads.dw")).unwrap();
    assert_eq!(check(dir.path(), &model, "no doublewrite file"), model.len());
}

/// Found by the fuzz target: a doublewrite file whose page count is huge
/// (an overflow) is ignored as torn, not trusted.
#[test]
fn a_doublewrite_file_with_an_absurd_page_count_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let model = pristine(dir.path());
    let mut dw = b"STACKDW1".to_vec();
    dw.extend_from_slice(&[0; 8]);
    dw.extend_from_slice(&u64::MAX.to_le_bytes());
    dw.extend_from_slice(&[0; 96]);
    std::fs::write(dir.path().join("heads.dw"), dw).unwrap();
    let db = Database::open(dir.path(), options()).unwrap();
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
}

/// A database dropped without closing: the doublewrite file still holds the last checkpoint, whose pages
/// in place may not have reached the disk. Returns what it holds.
fn dropped_after_a_checkpoint(dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let model = pristine(dir);
    let db = Database::open(dir, options()).unwrap();
    let mut w = db.begin_write();
    w.put(b"late", b"after the close").unwrap();
    w.commit().unwrap();
    db.checkpoint().unwrap();
    drop(db);
    let mut model = model;
    model.insert(b"late".to_vec(), b"after the close".to_vec());
    model
}

#[test]
fn pages_lost_in_place_are_copied_back_from_the_doublewrite_file() {
    let dir = tempfile::tempdir().unwrap();
    let model = dropped_after_a_checkpoint(dir.path());
    let dw = std::fs::read(dir.path().join("heads.dw")).unwrap();
    let count = u64::from_le_bytes(dw[16..24].try_into().unwrap());
    assert!(count > 0, "the checkpoint wrote pages");
    // Every page the checkpoint wrote is zeroed in place, as if the disk never got them.
    let heads_path = dir.path().join("heads");
    let mut heads = std::fs::read(&heads_path).unwrap();
    for i in 0..count as usize {
        let at = 120 + i * (8 + 4096);
        let page_no = u64::from_le_bytes(dw[at..at + 8].try_into().unwrap()) as usize;
        heads[page_no * 4096..(page_no + 1) * 4096].fill(0);
    }
    std::fs::write(&heads_path, heads).unwrap();
    assert_eq!(check(dir.path(), &model, "pages lost in place"), model.len());
}

#[test]
fn a_doublewrite_file_naming_a_page_past_the_table_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    dropped_after_a_checkpoint(dir.path());
    let path = dir.path().join("heads.dw");
    let mut dw = std::fs::read(&path).unwrap();
    dw[120..128].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    let count = u64::from_le_bytes(dw[16..24].try_into().unwrap()) as usize;
    let crc = crc32fast::hash(&dw[16..120 + count * (8 + 4096)]);
    dw[8..12].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, dw).unwrap();
    assert!(Database::open(dir.path(), options()).is_err());
}

/// One bit flipped anywhere in a store whose last commits open must replay: open refuses (the damage
/// lies before a synced end an intact commit states), or every read agrees with the store as some
/// commit left it — the last, or the one before, whose successor no later commit proved synced. Never a
/// panic, never a silent loss of an earlier commit. `STACKDB_FLIP_STRIDE` (default 1: every byte) thins
/// the flips for a quicker run.
#[test]
fn a_flip_anywhere_in_the_log_is_refused_or_loses_at_most_the_unproven_last_commit() {
    use stackdb::{Backends, MemBackend, StorageBackend};
    use std::sync::Arc;
    let stride: usize = std::env::var("STACKDB_FLIP_STRIDE").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let opts = || Options { initial_level: 3, checkpoint_every: 1 << 40, zeros_ahead: 0, ..Options::default() };
    let backends = |log: &Arc<MemBackend>, heads: &Arc<MemBackend>, dw: &Arc<MemBackend>| Backends {
        log: Box::new(Arc::clone(log)),
        heads: Box::new(Arc::clone(heads)),
        doublewrite: Box::new(Arc::clone(dw)),
    };
    let (log, heads, dw) = (Arc::new(MemBackend::new()), Arc::new(MemBackend::new()), Arc::new(MemBackend::new()));
    let db = Database::open_with(backends(&log, &heads, &dw), opts()).unwrap();
    let mut model = BTreeMap::new();
    let mut w = db.begin_write();
    for i in 0..40u32 {
        let (k, v) = (format!("base-{i}").into_bytes(), format!("v{i}").into_bytes());
        w.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    w.commit().unwrap();
    db.checkpoint().unwrap();
    let checkpointed = log.len().unwrap();
    // Commits open replays: each adds a key and rewrites one of the base keys.
    let mut snapshots = vec![model.clone()];
    for c in 0..24u32 {
        let mut w = db.begin_write();
        let (k, v) = (format!("late-{c}").into_bytes(), format!("commit {c}").into_bytes());
        w.put(&k, &v).unwrap();
        model.insert(k, v);
        let (k, v) = (format!("base-{}", c % 40).into_bytes(), format!("rewritten by {c}").into_bytes());
        w.put(&k, &v).unwrap();
        model.insert(k, v);
        w.commit().unwrap();
        snapshots.push(model.clone());
    }
    drop(db);
    let end = log.len().unwrap();
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    let (mut refused, mut cut, mut whole) = (0, 0, 0);
    for offset in (64..end).step_by(stride) {
        let bit = 1u8 << (offset % 8);
        let copies = [log.crash(u64::MAX), heads.crash(u64::MAX), dw.crash(u64::MAX)].map(Arc::new);
        copies[0].corrupt(offset, bit);
        let Ok(db) = Database::open_with(backends(&copies[0], &copies[1], &copies[2]), opts()) else {
            refused += 1;
            continue;
        };
        let answers: Vec<Option<Option<Vec<u8>>>> = keys.iter().map(|k| db.get(k).ok()).collect();
        let agrees = |snapshot: &BTreeMap<Vec<u8>, Vec<u8>>| {
            keys.iter().zip(&answers).all(|(k, a)| a.as_ref().is_none_or(|found| found.as_ref() == snapshot.get(k)))
        };
        let last = snapshots.len() - 1;
        match (agrees(&snapshots[last]), agrees(&snapshots[last - 1])) {
            (true, _) => whole += 1,
            (false, true) => cut += 1,
            _ => panic!("a flip at {offset} (bit {bit:#x}; checkpoint at {checkpointed}, end {end}) lost more than the last commit"),
        }
    }
    eprintln!("{} flips: {refused} refused, {cut} cut back one commit, {whole} read whole", refused + cut + whole);
    assert!(refused > 0 && whole > 0, "flips in the replayed log are refused; flips in checkpointed data read as errors");
}

/// A log cut cleanly at a commit's end, before what its header records it had synced, is refused
/// as cut — not read as an older store — and salvage says so.
#[test]
fn a_log_cut_before_its_synced_end_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // No zeros ahead: the file's length is where its commits end.
    let options = Options { initial_level: 3, checkpoint_every: 64 << 20, zeros_ahead: 0, ..Options::default() };
    let db = Database::open(&store, options.clone()).unwrap();
    let mut ends = Vec::new();
    for c in 0..400u32 {
        let mut w = db.begin_write();
        w.put(format!("key-{c}").as_bytes(), &[b'v'; 500]).unwrap();
        w.commit().unwrap();
        ends.push(std::fs::metadata(store.join("log")).unwrap().len() as usize);
    }
    drop(db); // not closed: the commits stay past the last checkpoint
    let log = std::fs::read(store.join("log")).unwrap();
    let marked = u64::from_le_bytes(log[16..24].try_into().unwrap()) as usize;
    assert!(marked > ends[100], "the syncs recorded the synced end: {marked}");
    let cut = *ends.iter().filter(|&&e| e < marked).nth_back(1).unwrap();
    std::fs::OpenOptions::new().write(true).open(store.join("log")).unwrap().set_len(cut as u64).unwrap();
    match Database::open(&store, options.clone()) {
        Err(stackdb::Error::Cut { end, synced, .. }) => assert!(end == cut as u64 && synced == marked as u64, "{end} {synced}"),
        other => panic!("a cut log was not refused: {other:?}"),
    }
    assert!(matches!(stackdb::repair::check(&store), Err(stackdb::Error::Cut { .. })));
    let report = stackdb::repair::salvage(&store, &dir.path().join("salvaged")).unwrap();
    assert_eq!(report.recovery_stopped, Some(cut as u64));
    assert!(!report.whole());
}
