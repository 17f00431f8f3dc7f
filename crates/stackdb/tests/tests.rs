//! The log's crash behaviour, through the in-memory backend that can tear
//! writes and fail them at any byte, and through real files.

use stackdb::log::{Commit, LOG_HEADER_LEN, Record};
use stackdb::{Durability, Error, Log, MemBackend, StorageBackend};

/// Commits `n` batches of `size` puts each; batch i holds keys "b{i}-k{j}".
fn commit_batches<B: StorageBackend>(log: &mut Log<B>, first: u64, n: u64, size: u64, durability: Durability) {
    for i in first..first + n {
        let mut batch = log.batch();
        for j in 0..size {
            let value = vec![(i * 31 + j) as u8; (j * 7 % 50) as usize];
            batch.put(format!("b{i}-k{j}").as_bytes(), &value, 0).unwrap();
        }
        log.commit(batch, Commit::user(i, size as i64, 0), durability).unwrap();
    }
}

/// Replays everything and returns (sequence, keys) per batch.
fn replay<B: StorageBackend>(log: &mut Log<B>, from: u64) -> Vec<(u64, Vec<String>)> {
    let mut seen = Vec::new();
    log.recover(from, |records: &[Record], commit| {
        seen.push((commit.sequence, records.iter().map(|r| String::from_utf8(r.key.clone()).unwrap()).collect()));
        Ok(())
    })
    .unwrap();
    seen
}

fn expected(batches: std::ops::Range<u64>, size: u64) -> Vec<(u64, Vec<String>)> {
    batches.map(|i| (i, (0..size).map(|j| format!("b{i}-k{j}")).collect())).collect()
}

#[test]
fn a_commit_torn_at_any_byte_is_all_or_nothing() {
    let mem = MemBackend::new();
    let mut log = Log::open(mem).unwrap();
    commit_batches(&mut log, 1, 2, 5, Durability::Immediate);
    let durable_end = log.end();
    // A third batch, written but not synced: a crash may keep any prefix of it.
    commit_batches(&mut log, 3, 1, 4, Durability::Eventual);
    let full_end = log.end();
    let mem = into_backend(log);
    let unsynced = mem.unsynced_bytes();
    assert_eq!(unsynced, full_end - durable_end);
    // Synced commits keep zeros written ahead of the log's end, so a torn
    // tail whose missing bytes are zeros anyway is the whole commit, intact.
    let mut tail = vec![0u8; unsynced as usize];
    mem.read(durable_end, &mut tail).unwrap();
    let needed = tail.iter().rposition(|&b| b != 0).map_or(0, |i| i as u64 + 1);
    for survive in 0..=unsynced {
        let mut recovered = Log::open(mem.crash(survive)).unwrap();
        let batches = replay(&mut recovered, 0);
        if survive >= needed {
            assert_eq!(batches, expected(1..4, 5).into_iter().take(2).chain(expected(3..4, 4)).collect::<Vec<_>>());
            assert_eq!(recovered.end(), full_end);
        } else {
            assert_eq!(batches, expected(1..3, 5), "torn after {survive} bytes");
            assert_eq!(recovered.end(), durable_end, "torn after {survive} bytes");
        }
        // The log keeps working after recovery: the next commit lands at the new end.
        commit_batches(&mut recovered, 9, 1, 1, Durability::Immediate);
        let again = replay(&mut Log::open(into_backend(recovered)).unwrap(), 0);
        assert_eq!(again.last().unwrap().0, 9);
    }
}

#[test]
fn a_write_failing_at_any_byte_leaves_the_earlier_commits() {
    let probe = {
        let mut log = Log::open(MemBackend::new()).unwrap();
        commit_batches(&mut log, 1, 1, 3, Durability::Immediate);
        let before = log.end();
        commit_batches(&mut log, 2, 1, 3, Durability::Immediate);
        log.end() - before
    };
    for fail_at in 0..probe {
        let mut log = Log::open(MemBackend::new()).unwrap();
        commit_batches(&mut log, 1, 1, 3, Durability::Immediate);
        let end = log.end();
        let mem = into_backend(log);
        mem.fail_after(fail_at);
        let mut log = Log::open(mem).unwrap();
        // Reopened without recovery the end is the file length; recover first.
        replay(&mut log, 0);
        let mut batch = log.batch();
        for j in 0..3 {
            batch.put(format!("b2-k{j}").as_bytes(), &vec![0; (j * 7 % 50) as usize], 0).unwrap();
        }
        assert!(log.commit(batch, Commit::user(2, 3, 0), Durability::Immediate).is_err(), "fail at {fail_at}");
        assert_eq!(log.end(), end);
        let mem = into_backend(log);
        let everything = mem.unsynced_bytes();
        let mut recovered = Log::open(mem.crash(everything)).unwrap();
        assert_eq!(replay(&mut recovered, 0), expected(1..2, 3), "fail at {fail_at}");
    }
}

#[test]
fn a_flipped_bit_past_the_proven_synced_end_cuts_the_log_back_to_the_last_good_commit() {
    let mut log = Log::open(MemBackend::new()).unwrap();
    commit_batches(&mut log, 1, 2, 4, Durability::Immediate);
    let second_end = log.end();
    commit_batches(&mut log, 3, 1, 4, Durability::Immediate);
    let mem = into_backend(log);
    // A key byte of batch 3's first record: no intact commit says the log was synced past batch 2.
    mem.corrupt(second_end + 26, 0x10);
    let mut recovered = Log::open(mem).unwrap();
    let mut batches = Vec::new();
    let report = recovered
        .recover(0, |r: &[Record], c| {
            batches.push((c.sequence, r.len()));
            Ok(())
        })
        .unwrap();
    assert_eq!(batches, vec![(1, 4), (2, 4)]);
    assert_eq!(report.end, second_end);
    assert!(report.truncated > 0);
}

#[test]
fn a_flipped_bit_before_a_later_commits_synced_end_is_refused_and_nothing_cut() {
    let mut log = Log::open(MemBackend::new()).unwrap();
    commit_batches(&mut log, 1, 1, 4, Durability::Immediate);
    let first_end = log.end();
    commit_batches(&mut log, 2, 3, 4, Durability::Immediate);
    let end = log.end();
    let mem = into_backend(log);
    mem.corrupt(first_end + 26, 0x10); // a key byte of batch 2's first record, synced before batch 3
    let before = mem.len().unwrap();
    let mut recovered = Log::open(mem).unwrap();
    match recovered.recover(0, |_: &[Record], _| Ok(())) {
        Err(Error::Damaged { offset, synced, later_commits, .. }) => {
            assert_eq!(offset, first_end);
            assert!(synced > first_end && synced <= end, "{synced}");
            assert_eq!(later_commits, 3, "batch 2's own commit record and batches 3 and 4 are intact after the damage");
        }
        other => panic!("the damage was not refused: {other:?}"),
    }
    assert_eq!(into_backend(recovered).len().unwrap(), before, "nothing was cut");
}

#[test]
fn recovery_can_start_at_a_checkpoint() {
    let mut log = Log::open(MemBackend::new()).unwrap();
    commit_batches(&mut log, 1, 1, 2, Durability::Immediate);
    let checkpoint = log.end();
    commit_batches(&mut log, 2, 2, 2, Durability::Immediate);
    let mut reopened = Log::open(into_backend(log)).unwrap();
    assert_eq!(replay(&mut reopened, checkpoint), expected(2..4, 2));
}

#[test]
fn records_read_back_by_offset_and_bad_offsets_are_errors() {
    let log = Log::open(MemBackend::new()).unwrap();
    let mut batch = log.batch();
    let a = batch.put(b"alpha", b"one", 0).unwrap();
    let b = batch.delete(b"alpha", a).unwrap();
    let big = batch.put(b"blob", &vec![9u8; 64 * 1024], b).unwrap();
    log.commit(batch, Commit::user(1, 1, 0), Durability::Immediate).unwrap();
    let r = log.read(b).unwrap();
    assert_eq!((r.key.as_slice(), r.header.prev), (&b"alpha"[..], a));
    assert_eq!(log.read(a).unwrap().value, b"one");
    assert_eq!(log.read(big).unwrap().value.len(), 64 * 1024);
    for bad in [0, a + 8, a + 1, log.end(), u64::MAX - 7] {
        assert!(matches!(log.read(bad), Err(Error::Corrupt { .. })), "offset {bad}");
    }
}

#[test]
fn garbage_and_short_files_are_refused_not_panicked_on() {
    let mem = MemBackend::new();
    mem.write(0, b"definitely not a database, just some text that is long enough").unwrap();
    mem.write(64, &[0xAB; 100]).unwrap();
    assert!(matches!(Log::open(mem), Err(Error::Format(_))));
    let short = MemBackend::new();
    short.write(0, b"STACKDB").unwrap();
    assert!(matches!(Log::open(short), Err(Error::Format(_))));
    // A valid header followed by garbage recovers to an empty log.
    let mut log = Log::open(MemBackend::new()).unwrap();
    let mem = into_backend_after(&mut log, |m| m.write(LOG_HEADER_LEN, &[0x5A; 333]).unwrap());
    let mut log = Log::open(mem).unwrap();
    assert_eq!(replay(&mut log, 0), vec![]);
    assert_eq!(log.end(), LOG_HEADER_LEN);
}

/// Version-2 to 5 logs (each of 2's split commits one bucket; 2 and 3 share no stacks; 2 to 4 have
/// no young sweeps; none states its synced end) open, their header rewritten to version 6 first; an
/// unknown version is refused by name.
#[test]
fn older_logs_are_upgraded_and_an_unknown_version_refused() {
    let version = |m: &MemBackend| {
        let mut v = [0u8; 4];
        m.read(8, &mut v).unwrap();
        u32::from_le_bytes(v)
    };
    for old in [2u32, 3, 4, 5] {
        let mut log = Log::open(MemBackend::new()).unwrap();
        replay(&mut log, 0);
        commit_batches(&mut log, 1, 2, 5, Durability::Immediate);
        let mem = into_backend_after(&mut log, |m| m.write(8, &old.to_le_bytes()).unwrap());
        let mut log = Log::open(mem).unwrap();
        assert_eq!(replay(&mut log, 0), expected(1..3, 5));
        let mem = into_backend_after(&mut log, |m| assert_eq!(version(m), 6, "version {old} upgraded at open"));
        mem.write(8, &7u32.to_le_bytes()).unwrap();
        match Log::open(mem) {
            Err(Error::Format(message)) => assert!(message.contains("version 7"), "{message}"),
            other => panic!("version 7 opened: {other:?}"),
        }
    }
}

#[test]
fn a_real_file_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    {
        let mut log = Log::open(stackdb::FileBackend::open(&path).unwrap()).unwrap();
        replay(&mut log, 0);
        commit_batches(&mut log, 1, 3, 10, Durability::Immediate);
    }
    let mut log = Log::open(stackdb::FileBackend::open(&path).unwrap()).unwrap();
    assert_eq!(replay(&mut log, 0), expected(1..4, 10));
}

fn into_backend<B: StorageBackend>(log: Log<B>) -> B {
    log.into_backend()
}

fn into_backend_after(log: &mut Log<MemBackend>, f: impl FnOnce(&MemBackend)) -> MemBackend {
    let log = std::mem::replace(log, Log::open(MemBackend::new()).unwrap());
    let mem = log.into_backend();
    f(&mem);
    mem
}

/// Synced and unsynced commits of ~85 KB (the latter as a sweep's copies go) race a thread writing
/// zeros ahead of the end, over several of its steps; every commit replays intact.
#[test]
fn zeros_written_ahead_on_another_thread_never_overwrite_a_commit() {
    let log = Log::open(MemBackend::new()).unwrap();
    let (batches, size) = (400u64, 400u64);
    let done = std::sync::atomic::AtomicBool::new(false);
    let steps = std::thread::scope(|s| {
        let zeroing = s.spawn(|| {
            let mut steps = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                steps += u32::from(log.zeros_step().unwrap());
            }
            steps
        });
        for i in 1..=batches {
            let mut batch = log.batch();
            for j in 0..size {
                batch.put(format!("b{i}-k{j}").as_bytes(), &[i as u8; 200], 0).unwrap();
            }
            let durability = if i % 3 == 0 { Durability::Eventual } else { Durability::Immediate };
            log.commit(batch, Commit::user(i, size as i64, 0), durability).unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        zeroing.join().unwrap()
    });
    assert!(steps >= 2, "the zeros were written ahead in {steps} steps");
    let end = log.end();
    let mem = into_backend(log);
    assert!(mem.len().unwrap() > end, "zeros lie ahead of the end ({end})");
    let mut reopened = Log::open(mem).unwrap();
    assert_eq!(replay(&mut reopened, 0), expected(1..batches + 1, size));
}
