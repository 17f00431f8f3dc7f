//! `stackdb:DIR[?sync=immediate|eventual]` — aggro's embedded engine.
//!
//! `User<n>` holds Gold and `UserItem<n>` holds NumTickets, each as an
//! 8-byte little-endian integer. A transaction is one stackdb write
//! transaction (the engine has one writer at a time, so reading the two
//! values and writing them back inside it is atomic). Every loader shares
//! one open database; its calls block, so loaders get threads of their own.

mod mmo;
mod scenario;

pub use mmo::StackDbMmoConn;
pub use scenario::StackDbScenarioConn;

use aggro_core::mobile::{GOLD_STEP, INITIAL_GOLD, MobileConn, MobileTarget, UserRow};
use aggro_core::world::{WorldStore, record_key, runs_key};
use aggro_core::{ErrorClass, StoreError};
use stackdb::{Database, Durability, Options};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// Log bytes between head-table checkpoints.
const CHECKPOINT_EVERY: u64 = 256 << 20;

/// A stackdb directory.
#[derive(Debug)]
pub struct StackDbTarget {
    path: PathBuf,
    immediate: bool,
    /// Open read-only ([`WorldStore::only_read`]).
    read_only: std::sync::atomic::AtomicBool,
    db: OnceLock<Arc<Database>>,
}

impl StackDbTarget {
    /// A target on `path`; `immediate` syncs every commit.
    pub fn new(path: PathBuf, immediate: bool) -> Self {
        Self { path, immediate, read_only: false.into(), db: OnceLock::new() }
    }

    fn options(&self) -> Options {
        Options {
            durability: if self.immediate { Durability::Immediate } else { Durability::Eventual },
            // A game world dirties head-table pages all over: each checkpoint
            // writes most of the table whatever its interval, so checkpoint
            // four times less often than the library's default (the Versant
            // paper's advice for its logs too). Open replays at most this
            // much log.
            checkpoint_every: CHECKPOINT_EVERY,
            ..Options::default()
        }
    }

    /// Whether there is a database to read (open, or on disk): reading a
    /// world record must not create an empty one.
    fn exists(&self) -> bool {
        self.db.get().is_some() || self.path.join("log").exists()
    }

    fn open(&self) -> Result<Arc<Database>, StoreError> {
        self.open_with(self.options())
    }

    fn open_with(&self, options: Options) -> Result<Arc<Database>, StoreError> {
        if let Some(db) = self.db.get() {
            return Ok(Arc::clone(db));
        }
        let db = if self.read_only.load(std::sync::atomic::Ordering::Relaxed) {
            Database::open_read_only(&self.path, options)
        } else {
            Database::open(&self.path, options)
        };
        let db = db.map_err(|e| classify(&e, &self.path))?;
        Ok(Arc::clone(self.db.get_or_init(|| Arc::new(db))))
    }

    /// A fresh database (any old one removed) whose head table starts sized for the `keys` a
    /// population is about to write: the load then copies no record to grow it.
    /// Only once stackdb holds the directory's lock does it remove the old files: a store another
    /// process has open is refused and left as it is.
    fn create_for(&self, keys: u64) -> Result<Arc<Database>, StoreError> {
        if self.db.get().is_some() {
            return Err(StoreError::new(ErrorClass::Other, "stackdb: cannot recreate a database that is open".to_string()));
        }
        let db = Database::create(&self.path, self.options().sized_for(keys)).map_err(|e| classify(&e, &self.path))?;
        Ok(Arc::clone(self.db.get_or_init(|| Arc::new(db))))
    }
}

/// A command's end closes the database cleanly: its head table checkpointed, so the next open
/// replays nothing (the checkpoint moves with every run, not only with populations).
impl Drop for StackDbTarget {
    fn drop(&mut self) {
        let Some(db) = self.db.take().and_then(Arc::into_inner) else { return };
        if self.read_only.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        if let Err(e) = db.close() {
            eprintln!("aggro: {}: closing the database: {e} (the next open replays its log)", self.path.display());
        }
    }
}

fn classify(e: &stackdb::Error, path: &std::path::Path) -> StoreError {
    let class = match e {
        stackdb::Error::Locked(_) => ErrorClass::Locked,
        stackdb::Error::Corrupt { .. }
        | stackdb::Error::Damaged { .. }
        | stackdb::Error::Cut { .. }
        | stackdb::Error::Stale { .. }
        | stackdb::Error::Format(_) => ErrorClass::Data,
        stackdb::Error::InDoubt(_) => ErrorClass::InDoubt,
        stackdb::Error::Poisoned(_) => ErrorClass::Server,
        stackdb::Error::Io(_) => ErrorClass::Server,
        _ => ErrorClass::Other,
    };
    StoreError::new(class, format!("stackdb:{}: {e}", path.display()))
}

fn user_key(id: u32) -> Vec<u8> {
    format!("User{id}").into_bytes()
}

fn item_key(id: u32) -> Vec<u8> {
    format!("UserItem{id}").into_bytes()
}

fn number(bytes: Option<Vec<u8>>, what: &str, id: u32) -> Result<i64, StoreError> {
    let bytes =
        bytes.ok_or_else(|| StoreError::new(ErrorClass::Data, format!("{what}{id} is not in the database (run `aggro mobile populate` first)")))?;
    let array: [u8; 8] =
        bytes.as_slice().try_into().map_err(|_| StoreError::new(ErrorClass::Data, format!("{what}{id} does not hold an 8-byte number")))?;
    Ok(i64::from_le_bytes(array))
}

/// One loader's handle on the shared database.
#[derive(Debug)]
pub struct StackDbConn {
    db: Arc<Database>,
    path: PathBuf,
}

impl StackDbConn {
    /// Adds `gold` to user `id`'s Gold and `tickets` to its NumTickets, in one transaction.
    fn change(&self, id: u32, gold: i64, tickets: i64) -> Result<(), StoreError> {
        let err = |e: stackdb::Error| classify(&e, &self.path);
        let mut txn = self.db.begin_write();
        // Inside the write transaction nobody else can write: read-modify-write
        // is atomic, and the transaction remembers what it read, so the put
        // does not walk the stack again.
        let (user, item) = (user_key(id), item_key(id));
        let g = number(txn.get(&user).map_err(err)?, "User", id)?;
        txn.put(&user, &(g + gold).to_le_bytes()).map_err(err)?;
        if tickets != 0 {
            let t = number(txn.get(&item).map_err(err)?, "UserItem", id)?;
            txn.put(&item, &(t + tickets).to_le_bytes()).map_err(err)?;
        }
        txn.commit().map_err(err)
    }
}

/// World records are keys `aggro:world:<workload>`, run logs keys
/// `aggro:runs:<workload>` (a line per run); a population resets the whole
/// database, which so forgets them first.
impl WorldStore for StackDbTarget {
    fn only_read(&self) {
        self.read_only.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    async fn holds_data(&self) -> Result<bool, StoreError> {
        if !self.exists() {
            return Ok(false);
        }
        Ok(self.open()?.stats().map_err(|e| classify(&e, &self.path))?.records > 0)
    }

    async fn read_world(&self, workload: &str) -> Result<Option<String>, StoreError> {
        if !self.exists() {
            return Ok(None);
        }
        let text = self.open()?.get(record_key(workload).as_bytes()).map_err(|e| classify(&e, &self.path))?;
        text.map(|t| String::from_utf8(t).map_err(|_| StoreError::new(ErrorClass::Data, format!("the {workload} world record is not text"))))
            .transpose()
    }

    async fn write_world(&self, workload: &str, record: &str) -> Result<(), StoreError> {
        let db = self.open()?;
        let err = |e: stackdb::Error| classify(&e, &self.path);
        let mut txn = db.begin_write();
        txn.put(record_key(workload).as_bytes(), record.as_bytes()).map_err(err)?;
        txn.commit().map_err(err)?;
        db.checkpoint().map_err(err)
    }

    async fn log_run(&self, workload: &str, _id: &str, entry: &str) -> Result<(), StoreError> {
        let db = self.open()?;
        let err = |e: stackdb::Error| classify(&e, &self.path);
        // One key per workload, entries a line each: the one writer makes
        // the read and the write back atomic.
        let key = runs_key(workload).into_bytes();
        let mut txn = db.begin_write();
        let mut log = txn.get(&key).map_err(err)?.unwrap_or_default();
        log.extend_from_slice(entry.as_bytes());
        log.push(b'\n');
        txn.put(&key, &log).map_err(err)?;
        txn.commit().map_err(err)
    }

    async fn run_log(&self, workload: &str) -> Result<Vec<String>, StoreError> {
        if !self.exists() {
            return Ok(Vec::new());
        }
        let log = self.open()?.get(runs_key(workload).as_bytes()).map_err(|e| classify(&e, &self.path))?.unwrap_or_default();
        Ok(String::from_utf8_lossy(&log).lines().map(str::to_string).collect())
    }

    async fn forget_runs(&self, workload: &str) -> Result<(), StoreError> {
        if !self.exists() {
            return Ok(());
        }
        let db = self.open()?;
        let err = |e: stackdb::Error| classify(&e, &self.path);
        let mut txn = db.begin_write();
        txn.delete(runs_key(workload).as_bytes()).map_err(err)?;
        txn.commit().map_err(err)
    }
}

impl MobileTarget for StackDbTarget {
    type Conn = StackDbConn;

    fn describe(&self) -> String {
        format!("stackdb:{} ({} commits)", self.path.display(), if self.immediate { "synced" } else { "eventual" })
    }

    fn blocking(&self) -> bool {
        true
    }

    async fn connect(&self) -> Result<StackDbConn, StoreError> {
        Ok(StackDbConn { db: self.open()?, path: self.path.clone() })
    }

    async fn populate(&self, ids: &[u32], progress: &(dyn Fn(u64) + Sync)) -> Result<(), StoreError> {
        // Two keys per user.
        let db = self.create_for(2 * ids.len() as u64)?;
        let err = |e: stackdb::Error| classify(&e, &self.path);
        let gold = INITIAL_GOLD.to_le_bytes();
        let zero = 0i64.to_le_bytes();
        for (i, chunk) in ids.chunks(10_000).enumerate() {
            let mut txn = db.begin_write();
            for &id in chunk {
                txn.put(&user_key(id), &gold).map_err(err)?;
                txn.put(&item_key(id), &zero).map_err(err)?;
            }
            txn.commit().map_err(err)?;
            progress((i * 10_000 + chunk.len()) as u64);
        }
        db.checkpoint().map_err(err)
    }

    async fn scan(&self) -> Result<Vec<UserRow>, StoreError> {
        let db = self.open()?;
        let mut gold = std::collections::HashMap::new();
        let mut tickets = std::collections::HashMap::new();
        for item in db.iter() {
            let (k, v) = item.map_err(|e| classify(&e, &self.path))?;
            let key = String::from_utf8_lossy(&k);
            let value = v.as_slice().try_into().ok().map(i64::from_le_bytes);
            if let Some(id) = key.strip_prefix("UserItem").and_then(|n| n.parse::<u32>().ok()) {
                tickets.insert(id, value);
            } else if let Some(id) = key.strip_prefix("User").and_then(|n| n.parse::<u32>().ok()) {
                gold.insert(id, value);
            }
        }
        aggro_core::mobile::join_rows(gold, &tickets)
    }
}

impl MobileConn for StackDbConn {
    async fn transfer(&mut self, id: u32) -> Result<(), StoreError> {
        self.change(id, -GOLD_STEP, 1)
    }

    async fn add_gold(&mut self, id: u32) -> Result<(), StoreError> {
        self.change(id, GOLD_STEP, 0)
    }

    async fn read_gold(&mut self, id: u32) -> Result<i64, StoreError> {
        let value = self.db.get(&user_key(id)).map_err(|e| classify(&e, &self.path))?;
        number(value, "User", id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A population starts the new table with the buckets its keys need, so growing it copies no
    /// record: the log holds each record once (grown from the default 256 buckets, the splits' copies
    /// and their commits made it 2.3× the live bytes here).
    #[tokio::test]
    async fn a_population_writes_each_record_once() {
        let dir = tempfile::tempdir().unwrap();
        let target = StackDbTarget::new(dir.path().to_path_buf(), false);
        let ids: Vec<u32> = (0..50_000).collect();
        target.populate(&ids, &|_| {}).await.unwrap();
        let stats = target.open().unwrap().stats().unwrap();
        assert_eq!(stats.records, 100_000);
        assert!(stats.space_amplification < 1.2, "{stats:?}");
    }
}
