//! Salvage: a store's contents copied into a new one — whole from a swept store, every key the source
//! can read from a damaged one, the rest from its log — never into a place that could pass for a store
//! half-built.

use stackdb::repair::{Salvaged, check, salvage};
use stackdb::{Compaction, Database, Durability, Options};
use std::collections::BTreeMap;
use std::path::Path;

fn options() -> Options {
    Options { initial_level: 3, ..Options::default() }
}

/// Sweeps soon and often: full ones and young ones, whose holes leave copies without their commits.
fn sweeping() -> Options {
    Options {
        durability: Durability::Eventual,
        initial_level: 3,
        checkpoint_every: 256 << 10,
        compaction: Compaction { min_log_bytes: 64 << 10, ..Compaction::default() },
        zeros_ahead: 64 << 10,
        ..Options::default()
    }
}

/// A game's store in miniature: items written once (some later destroyed), players rewritten every
/// round; swept all the while. Returns what it holds.
fn played(dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = loaded(dir);
    let floor = play(dir, 0..1500, &mut model);
    // Space given back above the floor: young sweeps' holes.
    let log = std::fs::metadata(dir.join("log")).unwrap();
    let allocated = std::os::unix::fs::MetadataExt::blocks(&log) * 512;
    assert!(
        floor > 64 && allocated + 200_000 < log.len() - floor,
        "no young sweep gave space back: {allocated} of {} bytes past {floor}",
        log.len() - floor
    );
    model
}

/// The items, loaded and closed: reopened, the load is old, and young sweeps copy only what play
/// writes since.
fn loaded(dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Database::open(dir, sweeping()).unwrap();
    let mut model = BTreeMap::new();
    let mut w = db.begin_write();
    for i in 0..2000u32 {
        let (key, value) = (format!("item-{i}").into_bytes(), format!("item {i} ").repeat(50).into_bytes());
        w.put(&key, &value).unwrap();
        model.insert(key, value);
    }
    w.commit().unwrap();
    db.close().unwrap();
    model
}

/// Plays `rounds` on the store and closes it; returns its floor.
fn play(dir: &Path, rounds: std::ops::Range<u32>, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) -> u64 {
    let db = Database::open(dir, sweeping()).unwrap();
    for round in rounds {
        let mut w = db.begin_write();
        for p in (round % 5..100).step_by(5) {
            let (key, value) = (format!("player-{p}").into_bytes(), format!("player {p} round {round} ").repeat(8).into_bytes());
            w.put(&key, &value).unwrap();
            model.insert(key, value);
        }
        let (key, value) = (format!("item-{}", 2000 + round).into_bytes(), format!("new item {round}").into_bytes());
        w.put(&key, &value).unwrap();
        model.insert(key, value);
        if round % 3 == 0 {
            let gone = format!("item-{}", (round * 7) % 2000).into_bytes();
            w.delete(&gone).unwrap();
            model.remove(&gone);
        }
        w.commit().unwrap();
    }
    let floor = db.stats().unwrap().reclaimed_below;
    db.close().unwrap();
    floor
}

/// Whether `value` is one `played` ever gave `key`.
fn once_held(key: &[u8], value: &[u8]) -> bool {
    let (k, v) = (String::from_utf8_lossy(key), String::from_utf8_lossy(value));
    match k.split_once('-') {
        Some(("player", p)) => v.starts_with(&format!("player {p} round ")),
        Some(("item", i)) => match i.parse::<u32>() {
            Ok(i) if i >= 2000 => v == format!("new item {}", i - 2000),
            _ => v.starts_with(&format!("item {i} ")),
        },
        _ => false,
    }
}

fn contents(dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Database::open_read_only(dir, options()).unwrap();
    db.iter().map(|kv| kv.unwrap()).collect()
}

/// A swept store — its log given back below the floor, holes where young sweeps copied — salvages to
/// exactly its contents: every key read as the source reads it, nothing replayed, nothing called damage.
#[test]
fn a_swept_store_salvages_to_the_same_contents() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let model = played(&store);
    assert!(check(&store).unwrap().ok());
    let to = dir.path().join("salvaged");
    let report: Salvaged = salvage(&store, &to).unwrap();
    assert!(report.whole() && report.from_log == 0 && report.read == model.len() as u64, "{report:?}");
    assert!(contents(&to) == model, "the salvaged store differs from the source");
    assert!(check(&to).unwrap().ok());
}

/// A store whose head table is gone salvages from its log alone: past the floor its last header
/// recorded, sweeps' copies kept though space given back around them took their commit records. No key
/// is lost; a destroyed key may come back (a sweep that gave its tombstone's space back left an older
/// version where only a full sweep frees it), and the report says how many keys came from the log.
#[test]
fn a_swept_store_without_its_head_table_salvages_from_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let model = played(&store);
    let mut heads = std::fs::read(store.join("heads")).unwrap();
    heads[4096..].fill(0xa5); // every page of entries; the header (and its floor) kept
    std::fs::write(store.join("heads"), &heads).unwrap();
    let to = dir.path().join("salvaged");
    let report = salvage(&store, &to).unwrap();
    assert!(
        report.floor > 64 && report.skipped.is_empty() && report.read == 0 && report.loose > 0,
        "floor {}, {} skipped, {} read, {} loose",
        report.floor,
        report.skipped.len(),
        report.read,
        report.loose
    );
    let salvaged = contents(&to);
    let lost: Vec<_> = model.iter().filter(|(k, v)| salvaged.get(*k) != Some(*v)).map(|(k, _)| String::from_utf8_lossy(k)).take(5).collect();
    assert!(lost.is_empty(), "keys lost or stale: {lost:?}");
    let back = salvaged.keys().filter(|k| !model.contains_key(*k)).count();
    assert!(back <= 10, "{back} destroyed keys came back");
}

/// A flip in a live record of a swept store: every key the source still reads is in the new store
/// with the value it reads; the damaged bucket's other keys come from the log, each a value it held.
#[test]
fn a_damaged_swept_store_keeps_every_key_its_source_reads() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let model = played(&store);
    let mut log = std::fs::read(store.join("log")).unwrap();
    let newest = model[&b"player-7"[..]].clone();
    let at = log.windows(newest.len()).rposition(|w| w == newest).expect("player-7's newest version");
    log[at + 3] ^= 0x40;
    std::fs::write(store.join("log"), &log).unwrap();
    let source = Database::open_read_only(&store, options()).unwrap();
    let reads: BTreeMap<_, _> = source.iter().filter_map(|kv| kv.ok()).collect();
    drop(source);
    let to = dir.path().join("salvaged");
    let report = salvage(&store, &to).unwrap();
    assert_eq!(report.damaged_buckets.len(), 1, "{report:?}");
    assert!(report.from_log > 0, "{report:?}");
    let salvaged = contents(&to);
    for (k, v) in &reads {
        assert_eq!(salvaged.get(k), Some(v), "{} reads in the source", String::from_utf8_lossy(k));
    }
    for (k, v) in salvaged.iter().filter(|(k, _)| !reads.contains_key(*k)) {
        assert!(
            model.contains_key(k) && once_held(k, v),
            "{} = {}: never held, or destroyed",
            String::from_utf8_lossy(k),
            String::from_utf8_lossy(v)
        );
    }
}

/// A store damaged in the middle of its log: `check` names it without changing a byte, and `salvage`
/// copies every intact commit into a new directory — all but the damaged one, dropped whole so that no
/// transaction is half applied — leaving the original as it was.
#[test]
fn check_finds_damage_and_salvage_keeps_every_intact_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let db = Database::open(&store, options()).unwrap();
    let mut ends = Vec::new();
    for c in 0..30u32 {
        let mut w = db.begin_write();
        for j in 0..5u32 {
            w.put(format!("c{c}-k{j}").as_bytes(), format!("value {c}.{j}").as_bytes()).unwrap();
        }
        w.put(b"counter", c.to_string().as_bytes()).unwrap();
        w.commit().unwrap();
        ends.push(std::fs::read(store.join("log")).unwrap().iter().rposition(|&b| b != 0).unwrap());
    }
    drop(db); // not closed: the commits stay in the replayed log
    assert!(check(&store).unwrap().ok(), "a whole store checks ok");
    let mut log = std::fs::read(store.join("log")).unwrap();
    log[ends[14] + 40] ^= 0x20; // inside commit 15's batch
    std::fs::write(store.join("log"), &log).unwrap();
    let before = ["log", "heads", "heads.dw"].map(|f| std::fs::read(store.join(f)).unwrap());
    match check(&store) {
        Err(stackdb::Error::Damaged { later_commits, .. }) => assert!(later_commits >= 14, "{later_commits}"),
        other => panic!("the damage was not found: {other:?}"),
    }
    let to = dir.path().join("salvaged");
    let report = salvage(&store, &to).unwrap();
    assert!(report.commits >= 29, "{report:?}");
    assert_eq!(report.skipped.len(), 1, "one damaged stretch: {report:?}");
    assert!(report.recovery_stopped.is_some() && report.dropped == 5 && report.loose == 0, "the rest of commit 15's batch: {report:?}");
    assert!(report.keys > 29 * 5, "{report:?}");
    assert!(before == ["log", "heads", "heads.dw"].map(|f| std::fs::read(store.join(f)).unwrap()), "the original changed");
    let salvaged = Database::open(&to, options()).unwrap();
    // Commit 15's own records are lost; a later split may have copied some of them, intact, forward.
    for c in (0..30u32).filter(|&c| c != 15) {
        for j in 0..5u32 {
            let found = salvaged.get(format!("c{c}-k{j}").as_bytes()).unwrap();
            assert_eq!(found, Some(format!("value {c}.{j}").into_bytes()), "commit {c}");
        }
    }
    assert_eq!(salvaged.get(b"counter").unwrap().as_deref(), Some(&b"29"[..]));
    assert!(salvage(&store, &to).is_err(), "never into a directory holding a database");
    assert!(!dir.path().join(".salvaged.salvaging").exists(), "the store was built aside and renamed");
}

/// A salvage killed half-way leaves its store under a hidden name beside the target, never at the target:
/// nothing there can pass a check, and the next salvage starts afresh.
#[test]
fn a_salvage_killed_half_way_leaves_nothing_that_passes_for_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let db = Database::open(&store, options()).unwrap();
    let mut w = db.begin_write();
    w.put(b"kept", b"yes").unwrap();
    w.commit().unwrap();
    db.close().unwrap();
    // What a killed salvage leaves: a half-built store under the hidden name, nothing at the target.
    let half = Database::open(dir.path().join(".to.salvaging"), options()).unwrap();
    let mut w = half.begin_write();
    w.put(b"half", b"built").unwrap();
    w.commit().unwrap();
    drop(half);
    let to = dir.path().join("to");
    assert!(!to.exists());
    salvage(&store, &to).unwrap();
    let salvaged = Database::open(&to, options()).unwrap();
    assert_eq!(salvaged.get(b"kept").unwrap().as_deref(), Some(&b"yes"[..]));
    assert_eq!(salvaged.get(b"half").unwrap(), None, "the half-built store was not kept");
    // An empty directory made for it is fine; a non-empty one is refused.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    salvage(&store, &empty).unwrap();
    assert!(salvage(&store, &empty).is_err());
}

/// Fifty damaged copies of a swept store — flipped bytes and zeroed blocks of its log, logs cut short,
/// flipped bytes of its head table: every key the damaged store reads is in the salvaged one with the
/// value it reads, and every other key there holds a value it once held.
#[test]
fn fifty_damaged_stores_keep_every_key_their_source_reads() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = dir.path().join("pristine");
    let model = played(&pristine);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let (mut from_log, mut back) = (0, 0);
    for case in 0..50 {
        let store = dir.path().join(format!("damaged-{case}"));
        std::fs::create_dir(&store).unwrap();
        for f in ["log", "heads", "heads.dw"] {
            std::fs::copy(pristine.join(f), store.join(f)).unwrap();
        }
        let mut log = std::fs::read(store.join("log")).unwrap();
        let data_end = log.iter().rposition(|&b| b != 0).unwrap();
        match case % 4 {
            0 => log[64 + next(data_end - 64)] ^= 1 << next(8),
            1 => {
                let (block, len) = (next(data_end / 4096).max(1) * 4096, log.len());
                log[block..(block + 4096).min(len)].fill(0);
            }
            2 => log.truncate(64 + next(data_end - 64)),
            _ => {
                let mut heads = std::fs::read(store.join("heads")).unwrap();
                let at = next(heads.len());
                heads[at] ^= 1 << next(8);
                std::fs::write(store.join("heads"), &heads).unwrap();
            }
        }
        std::fs::write(store.join("log"), &log).unwrap();
        let reads: BTreeMap<_, _> = match Database::open_read_only(&store, options()) {
            Ok(db) => db.iter().filter_map(|kv| kv.ok()).collect(),
            Err(_) => BTreeMap::new(),
        };
        let to = dir.path().join(format!("salvaged-{case}"));
        let report = salvage(&store, &to).unwrap_or_else(|e| panic!("case {case}: {e}"));
        from_log += report.from_log;
        let salvaged = contents(&to);
        for (k, v) in &reads {
            assert_eq!(salvaged.get(k), Some(v), "case {case}: {} reads in the source", String::from_utf8_lossy(k));
        }
        for (k, v) in salvaged.iter().filter(|(k, _)| !reads.contains_key(*k)) {
            assert!(once_held(k, v), "case {case}: {} = {} was never held", String::from_utf8_lossy(k), String::from_utf8_lossy(v));
            back += usize::from(!model.contains_key(k));
        }
    }
    eprintln!("50 damaged stores: {from_log} records from the log, {back} destroyed keys back");
}

/// A head table from an earlier time, put back beside a log swept since: refused as older than its
/// log (not as a damaged log), nothing changed; salvage rebuilds from the log alone, from the floor
/// the log's header records, losing nothing.
#[test]
fn a_head_table_older_than_its_log_is_refused_as_stale() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let mut model = loaded(&store);
    play(&store, 0..200, &mut model);
    let old = ["heads", "heads.dw"].map(|f| std::fs::read(store.join(f)).unwrap());
    let floor = play(&store, 200..1500, &mut model);
    for (f, bytes) in ["heads", "heads.dw"].iter().zip(&old) {
        std::fs::write(store.join(f), bytes).unwrap();
    }
    let log = std::fs::read(store.join("log")).unwrap();
    match Database::open(&store, sweeping()) {
        Err(stackdb::Error::Stale { log_floor, heads_floor, .. }) => {
            assert!(heads_floor < log_floor && log_floor <= floor, "{heads_floor} {log_floor} {floor}")
        }
        other => panic!("a stale head table was not refused: {other:?}"),
    }
    assert!(matches!(check(&store), Err(stackdb::Error::Stale { .. })));
    assert!(std::fs::read(store.join("log")).unwrap() == log, "the refused open changed the log");
    let report = salvage(&store, &dir.path().join("salvaged")).unwrap();
    assert!(report.unopened.is_some() && report.floor > 64, "{:?} from {}", report.unopened, report.floor);
    let salvaged = contents(&dir.path().join("salvaged"));
    let lost: Vec<_> = model.iter().filter(|(k, v)| salvaged.get(*k) != Some(*v)).map(|(k, _)| String::from_utf8_lossy(k)).take(5).collect();
    assert!(lost.is_empty(), "keys lost or stale: {lost:?}");
}
