//! I/O errors at every write, as SQLite's I/O-error tests inject them: for a mixed workload, the k-th
//! operation that changes one of a database's files (a write, a size change, a sync) fails with ENOSPC
//! or EIO, for every k. The storage is then crashed — only what was synced survives, and a failed sync
//! made nothing durable — reopened, and compared with the model: every acknowledged commit is there,
//! nothing unacknowledged is, but the one commit reported in doubt may be. `STACKDB_FAULT_COMMITS`
//! (default 30) lengthens the workload for a long run; `STACKDB_FAULT_STRIDE` (default 1: every
//! operation) thins the faults for a quicker one.

use stackdb::{Backends, Database, Error, MemBackend, Options, StorageBackend};
use std::collections::BTreeMap;
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Commits in the workload.
fn commits() -> u32 {
    std::env::var("STACKDB_FAULT_COMMITS").ok().and_then(|s| s.parse().ok()).unwrap_or(30)
}

fn options() -> Options {
    Options { initial_level: 1, zeros_ahead: 0, ..Options::default() }
}

struct Files([Arc<MemBackend>; 3]);

impl Files {
    fn new() -> Files {
        Files([(); 3].map(|()| Arc::new(MemBackend::new())))
    }

    fn backends(&self) -> Backends {
        let [log, heads, doublewrite] = self.0.clone().map(|f| Box::new(f) as Box<dyn StorageBackend>);
        Backends { log, heads, doublewrite }
    }

    /// What a crash now leaves: the synced bytes only.
    fn crashed(&self) -> Files {
        Files(self.0.clone().map(|f| Arc::new(f.crash(0))))
    }
}

/// Commit `i`'s puts and deletes, over a small key space so that keys are rewritten and deleted.
fn changes(i: u32) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut out: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..3)
        .map(|j| {
            (format!("key-{}", (i * 7 + j * 13) % 50).into_bytes(), Some(format!("value {i}.{j} {}", "x".repeat((i * j % 40) as usize)).into_bytes()))
        })
        .collect();
    if i % 3 == 2 {
        out.push((format!("key-{}", (i * 11) % 50).into_bytes(), None));
    }
    out
}

fn applied(model: &Model, i: u32) -> Model {
    let mut next = model.clone();
    for (k, v) in changes(i) {
        match v {
            Some(v) => next.insert(k, v),
            None => next.remove(&k),
        };
    }
    next
}

/// What the workload left: the model of every acknowledged commit, and the model with the commit in
/// doubt applied too, if one was.
struct Outcome {
    acknowledged: Model,
    in_doubt: Option<Model>,
}

/// Runs the workload on `files`, two checkpoints along the way; errors are expected anywhere.
fn workload(files: &Files) -> Outcome {
    let mut out = Outcome { acknowledged: Model::new(), in_doubt: None };
    let Ok(db) = Database::open_with(files.backends(), options()) else { return out };
    for i in 0..commits() {
        let mut w = db.begin_write();
        for (k, v) in changes(i) {
            match v {
                Some(v) => w.put(&k, &v).unwrap(),
                None => w.delete(&k).unwrap(),
            }
        }
        match w.commit() {
            Ok(()) => out.acknowledged = applied(&out.acknowledged, i),
            Err(Error::InDoubt(_)) => {
                assert!(out.in_doubt.is_none(), "a second commit in doubt: the first should have stopped writes");
                out.in_doubt = Some(applied(&out.acknowledged, i));
            }
            Err(_) => {}
        }
        if i % 10 == 9 {
            let _ = db.checkpoint();
        }
    }
    out
}

/// Reopens what a crash left and checks it against the outcome.
fn check(files: &Files, outcome: &Outcome, what: &str) {
    let db = Database::open_with(files.backends(), options()).unwrap_or_else(|e| panic!("{what}: reopening failed: {e}"));
    let found: Model = db.iter().map(|r| r.unwrap_or_else(|e| panic!("{what}: reading failed: {e}"))).collect();
    let matches_doubt = outcome.in_doubt.as_ref() == Some(&found);
    assert!(
        found == outcome.acknowledged || matches_doubt,
        "{what}: the store holds {} keys, not what was acknowledged ({} keys){}",
        found.len(),
        outcome.acknowledged.len(),
        if outcome.in_doubt.is_some() { " nor with the commit in doubt" } else { "" }
    );
}

#[test]
fn an_error_at_any_write_or_sync_loses_no_acknowledged_commit() {
    let stride: u64 = std::env::var("STACKDB_FAULT_STRIDE").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let clean = Files::new();
    let full = workload(&clean);
    assert_eq!(full.acknowledged, (0..commits()).fold(Model::new(), |m, i| applied(&m, i)), "without faults every commit is acknowledged");
    check(&clean.crashed(), &full, "no fault");
    let (mut cases, mut commits_checked, mut in_doubt) = (0u64, 0u64, 0u64);
    for (f, name) in ["log", "heads", "heads.dw"].into_iter().enumerate() {
        let ops = clean.0[f].ops();
        for k in (0..ops).step_by(stride as usize) {
            for (errno, error) in [(libc::ENOSPC, "ENOSPC"), (libc::EIO, "EIO")] {
                let files = Files::new();
                files.0[f].fail_op(k, errno);
                let outcome = workload(&files);
                check(&files.crashed(), &outcome, &format!("{error} at {name} operation {k} of {ops}"));
                cases += 1;
                commits_checked += outcome.acknowledged.len() as u64;
                in_doubt += u64::from(outcome.in_doubt.is_some());
            }
        }
    }
    eprintln!("{cases} faults injected, {in_doubt} commits reported in doubt, {commits_checked} acknowledged keys checked, 0 lost");
    assert!(in_doubt > 0, "a failed sync reports its commit in doubt");
}
