//! Opens a database from arbitrary files and uses it: open, every read, a
//! full scan, a write and a reopen may fail with an error, never panic,
//! hang or read out of bounds. Input: the log's length and the head
//! table's length (u32 each, little-endian), then the log, the head table
//! and the doublewrite file (`examples/fuzz_seed.rs` writes real ones).
#![no_main]

use libfuzzer_sys::fuzz_target;
use stackdb::{Backends, Database, MemBackend, Options, StorageBackend};
use std::sync::Arc;

fn file(bytes: &[u8]) -> Arc<MemBackend> {
    let m = Arc::new(MemBackend::new());
    m.write(0, bytes).expect("memory");
    m.sync_data().expect("memory");
    m
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let rest = &data[8..];
    let log_len = (u32::from_le_bytes(data[..4].try_into().unwrap()) as usize).min(rest.len());
    let heads_len = (u32::from_le_bytes(data[4..8].try_into().unwrap()) as usize).min(rest.len() - log_len);
    let (log, rest) = rest.split_at(log_len);
    let (heads, doublewrite) = rest.split_at(heads_len);
    let files = [file(log), file(heads), file(doublewrite)];
    let options = Options { ram_budget: 64 << 10, initial_level: 2, ..Options::default() };
    let open = |files: &[Arc<MemBackend>; 3]| {
        Database::open_with(
            Backends {
                log: Box::new(Arc::clone(&files[0])),
                heads: Box::new(Arc::clone(&files[1])),
                doublewrite: Box::new(Arc::clone(&files[2])),
            },
            options.clone(),
        )
    };
    let Ok(db) = open(&files) else { return };
    let mut keys = Vec::new();
    for item in db.iter().take(10_000) {
        if let Ok((key, _)) = item {
            keys.push(key);
        }
    }
    for key in keys.iter().take(100) {
        let _ = db.get(key);
    }
    let _ = db.get(b"absent");
    let _ = db.stats();
    let mut w = db.begin_write();
    let written = w.put(b"fuzz", b"value").and_then(|()| w.commit());
    drop(db);
    // What was written must be there after a reopen.
    if written.is_ok() {
        if let Ok(db) = open(&files) {
            assert_eq!(db.get(b"fuzz").ok().flatten().as_deref(), Some(&b"value"[..]));
        }
    }
});
