//! redb: a write transaction per batch (`Durability::Immediate` or
//! `None`); a read transaction per group of reads. Writes wait in a map
//! until the commit, and reads look there first.

use super::Engine;
use redb::{Database, Durability, ReadOnlyTable, TableDefinition};
use std::collections::HashMap;
use std::path::Path;

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kv");

pub struct Redb {
    db: Database,
    durability: Durability,
    pending: HashMap<Vec<u8>, Vec<u8>>,
    read: Option<ReadOnlyTable<&'static [u8], &'static [u8]>>,
}

impl Redb {
    pub fn open(dir: &Path, durable: bool) -> Self {
        let db = Database::create(dir.join("db.redb")).expect("open redb");
        let txn = db.begin_write().expect("begin");
        txn.open_table(TABLE).expect("create table");
        txn.commit().expect("commit");
        let durability = if durable { Durability::Immediate } else { Durability::None };
        Redb { db, durability, pending: HashMap::new(), read: None }
    }
}

impl Engine for Redb {
    fn put(&mut self, key: &[u8], value: &[u8]) {
        self.pending.insert(key.to_vec(), value.to_vec());
    }

    fn get(&mut self, key: &[u8]) -> Option<usize> {
        if let Some(v) = self.pending.get(key) {
            return Some(v.len());
        }
        let db = &self.db;
        let table = self.read.get_or_insert_with(|| db.begin_read().expect("begin read").open_table(TABLE).expect("table"));
        table.get(key).expect("get").map(|v| v.value().len())
    }

    fn commit(&mut self) {
        self.read = None;
        if self.pending.is_empty() {
            return;
        }
        let mut txn = self.db.begin_write().expect("begin");
        txn.set_durability(self.durability);
        {
            let mut table = txn.open_table(TABLE).expect("table");
            for (k, v) in self.pending.drain() {
                table.insert(k.as_slice(), v.as_slice()).expect("put");
            }
        }
        txn.commit().expect("commit");
    }
}
