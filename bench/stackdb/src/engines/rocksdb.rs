//! RocksDB (Debian's librocksdb) with a Bloom filter: a write batch per
//! commit (synced WAL when durable); reads see the last commit.

use super::Engine;
use rocksdb::{BlockBasedOptions, DB, Options, WriteBatch, WriteOptions};
use std::path::Path;

pub struct Rocks {
    db: DB,
    batch: WriteBatch,
    write: WriteOptions,
}

impl Rocks {
    pub fn open(dir: &Path, durable: bool) -> Self {
        let mut table = BlockBasedOptions::default();
        table.set_bloom_filter(10.0, false);
        let mut options = Options::default();
        options.create_if_missing(true);
        options.set_block_based_table_factory(&table);
        let db = DB::open(&options, dir).expect("open rocksdb");
        let mut write = WriteOptions::default();
        write.set_sync(durable);
        Rocks { db, batch: WriteBatch::default(), write }
    }
}

impl Engine for Rocks {
    fn put(&mut self, key: &[u8], value: &[u8]) {
        self.batch.put(key, value);
    }

    fn get(&mut self, key: &[u8]) -> Option<usize> {
        self.db.get_pinned(key).expect("get").map(|v| v.len())
    }

    fn commit(&mut self) {
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            self.db.write_opt(batch, &self.write).expect("commit");
        }
    }
}
