//! LMDB (Debian's liblmdb through lmdb-rkv): a write transaction per batch,
//! a read transaction per group of reads.

use super::Engine;
use lmdb::{Environment, EnvironmentFlags, RoTransaction, RwTransaction, Transaction, WriteFlags};
use std::path::Path;

pub struct Lmdb {
    // Transactions first: they drop before the environment they borrow.
    write: Option<RwTransaction<'static>>,
    read: Option<RoTransaction<'static>>,
    db: lmdb::Database,
    env: Box<Environment>,
}

impl Lmdb {
    pub fn open(dir: &Path, durable: bool) -> Self {
        let flags = if durable { EnvironmentFlags::empty() } else { EnvironmentFlags::NO_SYNC };
        let env = Environment::new().set_flags(flags).set_map_size(256 << 30).open(dir).expect("open lmdb");
        let db = env.open_db(None).expect("lmdb main db");
        Lmdb { write: None, read: None, db, env: Box::new(env) }
    }

    fn env(&self) -> &'static Environment {
        // SAFETY: boxed, never moved, outlives the transactions (dropped first).
        unsafe { &*(&*self.env as *const Environment) }
    }
}

impl Engine for Lmdb {
    fn put(&mut self, key: &[u8], value: &[u8]) {
        let env = self.env();
        self.read = None;
        let txn = self.write.get_or_insert_with(|| env.begin_rw_txn().expect("begin"));
        txn.put(self.db, &key, &value, WriteFlags::empty()).expect("put");
    }

    fn get(&mut self, key: &[u8]) -> Option<usize> {
        let found = match &self.write {
            Some(txn) => txn.get(self.db, &key),
            None => {
                let env = self.env();
                self.read.get_or_insert_with(|| env.begin_ro_txn().expect("begin read")).get(self.db, &key)
            }
        };
        match found {
            Ok(v) => Some(v.len()),
            Err(lmdb::Error::NotFound) => None,
            Err(e) => panic!("lmdb get: {e}"),
        }
    }

    fn commit(&mut self) {
        self.read = None;
        if let Some(txn) = self.write.take() {
            txn.commit().expect("commit");
        }
    }
}
