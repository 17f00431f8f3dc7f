//! stackdb: reads inside a batch go through the write transaction, which
//! sees its own writes; other reads need no transaction.

use super::Engine;
use stackdb::{Database, Durability, Options, WriteTxn};
use std::path::Path;

pub struct Stackdb {
    // Declared first so it drops before the database it borrows.
    txn: Option<WriteTxn<'static>>,
    db: Box<Database>,
}

impl Stackdb {
    pub fn open(dir: &Path, durable: bool) -> Self {
        let durability = if durable { Durability::Immediate } else { Durability::Eventual };
        let db = Box::new(Database::open(dir, Options { durability, ..Options::default() }).expect("open stackdb"));
        Stackdb { txn: None, db }
    }

    fn db(&self) -> &'static Database {
        // SAFETY: the database is boxed (it never moves) and outlives the
        // transaction, which is dropped first (field order, and `commit`).
        unsafe { &*(&*self.db as *const Database) }
    }
}

impl Engine for Stackdb {
    fn put(&mut self, key: &[u8], value: &[u8]) {
        let db = self.db();
        self.txn.get_or_insert_with(|| db.begin_write()).put(key, value).expect("put");
    }

    fn get(&mut self, key: &[u8]) -> Option<usize> {
        match &mut self.txn {
            Some(txn) => txn.get(key).expect("get").map(|v| v.len()),
            None => self.db.get(key).expect("get").map(|v| v.len()),
        }
    }

    fn commit(&mut self) {
        if let Some(txn) = self.txn.take() {
            txn.commit().expect("commit");
        }
    }

    /// The checkpoint thread gives the log below a finished sweep back a step at a time.
    fn catch_up(&mut self) {
        self.commit();
        self.db.catch_up().expect("catch up");
    }
}
