//! The engines under test, behind one small interface: writes go into the
//! current batch, `commit` ends it (synced when durable), reads see the
//! batch's own writes where the engine offers that.

mod kissdb;
mod lmdb;
mod redb;
mod rocksdb;
mod sqlite;
mod stackdb;

use std::path::Path;

/// One engine, open on a directory.
pub trait Engine {
    /// Writes `value` under `key` in the current batch.
    fn put(&mut self, key: &[u8], value: &[u8]);
    /// Reads `key`; returns the value's length if it is there.
    fn get(&mut self, key: &[u8]) -> Option<usize>;
    /// Ends the current batch of writes (durably if asked) or of reads.
    fn commit(&mut self);
    /// Waits for the background work the writes so far left (space not yet given back) before the
    /// files are measured.
    fn catch_up(&mut self) {}
}

/// The engines' names, as `--engine` takes them.
pub const NAMES: &[&str] = &["stackdb", "lmdb", "sqlite", "rocksdb", "redb", "kissdb"];

/// Opens engine `name` on `dir`; `durable` asks for a sync at every commit.
pub fn open(name: &str, dir: &Path, durable: bool) -> Result<Box<dyn Engine>, String> {
    Ok(match name {
        "stackdb" => Box::new(stackdb::Stackdb::open(dir, durable)),
        "lmdb" => Box::new(lmdb::Lmdb::open(dir, durable)),
        "sqlite" => Box::new(sqlite::Sqlite::open(dir, durable)),
        "rocksdb" => Box::new(rocksdb::Rocks::open(dir, durable)),
        "redb" => Box::new(redb::Redb::open(dir, durable)),
        "kissdb" if durable => return Err("kissdb has no sync: run it with --no-sync".into()),
        "kissdb" => Box::new(kissdb::Kissdb::open(dir)),
        other => return Err(format!("unknown engine {other:?}; one of {}", NAMES.join(", "))),
    })
}
