//! A real writer process killed with SIGKILL at random moments: after every
//! reopen, each commit it acknowledged is there and no batch is partial.
//!
//! The test re-runs its own executable as the child (filtered to
//! `child_writer`, with `STACKDB_KILL_CHILD` naming the directory). Kills per
//! run: `STACKDB_KILLS` (default 30; `scripts/stackdb-kill.sh` runs 500).

use stackdb::{Compaction, Database, Options};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

const KEYS_PER_BATCH: u64 = 5;

/// Small tables, eager compaction and few zeros ahead, so kills land in splits, sweeps, the freeing
/// of the log and the zeros' steps as well as in commits.
fn options() -> Options {
    Options {
        initial_level: 2,
        compaction: Compaction { trigger: 1.1, pace: 0.05, min_log_bytes: 64 << 10, ..Compaction::default() },
        zeros_ahead: 256 << 10,
        ..Options::default()
    }
}

fn counter(db: &Database) -> Option<u64> {
    db.get(b"counter").unwrap().map(|v| u64::from_le_bytes(v.try_into().unwrap()))
}

/// The child: two threads commit batch after batch, each taking the next batch number from the
/// counter inside its transaction, printing `ack N` after each commit returns (so kills land while one
/// thread's commit syncs or sweeps without the writer and the other's writes).
#[test]
fn child_writer() {
    let Ok(dir) = std::env::var("STACKDB_KILL_CHILD") else { return };
    let db = Database::open(&dir, options()).unwrap();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let mut w = db.begin_write();
                    let next = w.get(b"counter").unwrap().map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()) + 1);
                    for j in 0..KEYS_PER_BATCH {
                        // A value of a few hundred bytes, so batches span pages and a kill lands mid-write.
                        w.put(format!("k{next}-{j}").as_bytes(), &vec![(next % 251) as u8; 300]).unwrap();
                    }
                    w.put(b"counter", &next.to_le_bytes()).unwrap();
                    w.commit().unwrap();
                    println!("ack {next}");
                }
            });
        }
    });
}

#[test]
fn acknowledged_commits_survive_sigkill_and_no_batch_is_partial() {
    let kills: u64 = std::env::var("STACKDB_KILLS").ok().and_then(|s| s.parse().ok()).unwrap_or(30);
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut seed = 0x1234_5678_9ABC_DEF1u64;
    let mut last_counter: Option<u64> = None;
    for round in 0..kills {
        let mut child = Command::new(&exe)
            .args(["child_writer", "--exact", "--nocapture", "--test-threads=1"])
            .env("STACKDB_KILL_CHILD", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(10 + seed % 60));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let acked = BufReader::new(child.stdout.take().unwrap())
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| l.strip_prefix("ack ").and_then(|n| n.parse::<u64>().ok()))
            .max();

        let db = Database::open(dir.path(), options()).unwrap_or_else(|e| panic!("round {round}: reopening after SIGKILL failed: {e}"));
        let c = counter(&db);
        if let Some(a) = acked {
            assert!(c.is_some_and(|c| c >= a), "round {round}: acknowledged commit {a} lost (counter {c:?})");
        }
        if let Some(c) = c {
            assert!(last_counter.is_none_or(|l| c >= l), "round {round}: counter went back");
            // Every batch is complete (compaction lost none of the old
            // ones), the next one is absent entirely.
            for i in 0..=c {
                for j in 0..KEYS_PER_BATCH {
                    let v = db.get(format!("k{i}-{j}").as_bytes()).unwrap();
                    assert_eq!(v, Some(vec![(i % 251) as u8; 300]), "round {round}: batch {i} is partial");
                }
            }
            for j in 0..KEYS_PER_BATCH {
                assert_eq!(db.get(format!("k{}-{j}", c + 1).as_bytes()).unwrap(), None, "round {round}: uncommitted key visible");
            }
            assert_eq!(db.stats().unwrap().records, (c + 1) * KEYS_PER_BATCH + 1, "round {round}: record count");
        }
        last_counter = c.or(last_counter);
        drop(db);
    }
    assert!(last_counter.is_some_and(|c| c > 0), "the child never committed anything");
    let stats = Database::open(dir.path(), options()).unwrap().stats().unwrap();
    assert!(stats.reclaimed_below > 64 || stats.reclaimed_above > 0, "no sweep finished: {stats:?}");
    eprintln!("{kills} SIGKILLs survived; {} batches committed in all; {stats:?}", last_counter.unwrap_or(0) + 1);
}
