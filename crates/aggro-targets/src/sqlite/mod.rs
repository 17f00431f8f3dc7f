//! `sqlite:PATH` — SQLite through rusqlite, in WAL mode.
//!
//! Tables `users(id, gold)` and `user_items(id, num_tickets)` (the DynamoDB/Spanner tool's
//! Spanner schema). Each loader has its own connection; a transaction runs
//! entirely inside one call (`BEGIN IMMEDIATE … COMMIT`), so no lock is ever
//! held across an await. `SQLITE_BUSY` after the busy timeout is a conflict.

mod mmo;
mod scenario;

pub use mmo::SqliteMmoConn;
pub use scenario::SqliteScenarioConn;

use crate::sql_schema::{FORGET_RUNS, LOG_RUN, READ_WORLD, RUN_LOG, WORLD_TABLES, WRITE_WORLD, forget_world};
use aggro_core::mobile::{GOLD_STEP, INITIAL_GOLD, MobileConn, MobileTarget, UserRow};
use aggro_core::world::WorldStore;
use aggro_core::{ErrorClass, StoreError};
use rusqlite::{Connection, ErrorCode, params};
use std::path::PathBuf;

/// A SQLite database file.
#[derive(Clone, Debug)]
pub struct SqliteTarget {
    path: PathBuf,
    sync: String,
}

impl SqliteTarget {
    /// A target on `path` with `PRAGMA synchronous = sync`.
    pub fn new(path: PathBuf, sync: String) -> Self {
        Self { path, sync }
    }

    fn open(&self) -> Result<Connection, StoreError> {
        let conn =
            Connection::open(&self.path).map_err(|e| StoreError::new(ErrorClass::Connect, format!("cannot open {}: {e}", self.path.display())))?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(classify)?;
        conn.pragma_update(None, "journal_mode", "wal").map_err(classify)?;
        conn.pragma_update(None, "synchronous", &self.sync).map_err(classify)?;
        Ok(conn)
    }
}

fn classify(e: rusqlite::Error) -> StoreError {
    let class = match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => ErrorClass::Conflict,
        Some(ErrorCode::CannotOpen | ErrorCode::NotADatabase | ErrorCode::PermissionDenied) => ErrorClass::Connect,
        Some(_) => ErrorClass::Server,
        None => ErrorClass::Data,
    };
    StoreError::new(class, e.to_string())
}

/// Whether `e` says a table is missing (SQLite has no code of its own for it).
fn no_such_table(e: &rusqlite::Error) -> bool {
    e.to_string().contains("no such table")
}

fn schema_error(e: rusqlite::Error) -> StoreError {
    if no_such_table(&e) {
        return StoreError::new(ErrorClass::Data, format!("{} (populate the workload first)", classify(e).message));
    }
    classify(e)
}

/// One loader's SQLite connection.
pub struct SqliteConn {
    conn: Connection,
}

impl std::fmt::Debug for SqliteConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteConn").finish_non_exhaustive()
    }
}

impl SqliteConn {
    /// Runs `statements` (each updating exactly one row of user `id`) as one transaction.
    fn transact(&mut self, statements: &[&str], id: u32) -> Result<(), StoreError> {
        let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(classify)?;
        for sql in statements {
            let changed = tx.prepare_cached(sql).map_err(schema_error)?.execute(params![id]).map_err(schema_error)?;
            if changed != 1 {
                return Err(StoreError::new(ErrorClass::Data, format!("user {id} is not in the database")));
            }
        }
        tx.commit().map_err(classify)
    }
}

const TRANSFER: [&str; 2] = ["UPDATE users SET gold = gold - 5 WHERE id = ?1", "UPDATE user_items SET num_tickets = num_tickets + 1 WHERE id = ?1"];
const ADD_GOLD: [&str; 1] = ["UPDATE users SET gold = gold + 5 WHERE id = ?1"];
const _: () = assert!(GOLD_STEP == 5, "the SQL above hard-codes the step");

const MOBILE_SCHEMA: &str = "DROP TABLE IF EXISTS users; DROP TABLE IF EXISTS user_items;
     CREATE TABLE users (id INTEGER PRIMARY KEY, gold INTEGER NOT NULL);
     CREATE TABLE user_items (id INTEGER PRIMARY KEY, num_tickets INTEGER NOT NULL);";

impl WorldStore for SqliteTarget {
    async fn read_world(&self, workload: &str) -> Result<Option<String>, StoreError> {
        let conn = self.open()?;
        match conn.query_row(READ_WORLD, params![workload], |r| r.get(0)) {
            Ok(record) => Ok(Some(record)),
            Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
            Err(e) if no_such_table(&e) => Ok(None),
            Err(e) => Err(classify(e)),
        }
    }

    async fn write_world(&self, workload: &str, record: &str) -> Result<(), StoreError> {
        let conn = self.open()?;
        conn.execute_batch(&WORLD_TABLES.join(";")).map_err(classify)?;
        conn.execute(WRITE_WORLD, params![workload, record]).map_err(classify).map(drop)
    }

    async fn log_run(&self, workload: &str, id: &str, entry: &str) -> Result<(), StoreError> {
        let conn = self.open()?;
        conn.execute_batch(&WORLD_TABLES.join(";")).map_err(classify)?;
        conn.execute(LOG_RUN, params![workload, id, entry]).map_err(classify).map(drop)
    }

    async fn run_log(&self, workload: &str) -> Result<Vec<String>, StoreError> {
        let conn = self.open()?;
        let mut stmt = match conn.prepare(RUN_LOG) {
            Err(e) if no_such_table(&e) => return Ok(Vec::new()),
            other => other.map_err(classify)?,
        };
        let rows = stmt.query_map(params![workload], |r| r.get(0)).map_err(classify)?;
        rows.collect::<Result<Vec<String>, _>>().map_err(classify)
    }

    async fn forget_runs(&self, workload: &str) -> Result<(), StoreError> {
        match self.open()?.execute(FORGET_RUNS, params![workload]) {
            Err(e) if no_such_table(&e) => Ok(()),
            other => other.map(drop).map_err(classify),
        }
    }
}

impl MobileTarget for SqliteTarget {
    type Conn = SqliteConn;

    fn describe(&self) -> String {
        format!("sqlite:{} (WAL, synchronous={})", self.path.display(), self.sync)
    }

    fn blocking(&self) -> bool {
        true
    }

    async fn connect(&self) -> Result<SqliteConn, StoreError> {
        Ok(SqliteConn { conn: self.open()? })
    }

    async fn populate(&self, ids: &[u32], progress: &(dyn Fn(u64) + Sync)) -> Result<(), StoreError> {
        let mut conn = self.open()?;
        conn.execute_batch(&(forget_world("mobile") + MOBILE_SCHEMA)).map_err(classify)?;
        for (done, chunk) in ids.chunks(50_000).enumerate() {
            let tx = conn.transaction().map_err(classify)?;
            {
                let mut users = tx.prepare_cached("INSERT INTO users VALUES (?1, ?2)").map_err(classify)?;
                let mut items = tx.prepare_cached("INSERT INTO user_items VALUES (?1, 0)").map_err(classify)?;
                for id in chunk {
                    users.execute(params![id, INITIAL_GOLD]).map_err(classify)?;
                    items.execute(params![id]).map_err(classify)?;
                }
            }
            tx.commit().map_err(classify)?;
            progress((done * 50_000 + chunk.len()) as u64);
        }
        Ok(())
    }

    async fn scan(&self) -> Result<Vec<UserRow>, StoreError> {
        let conn = self.open()?;
        let mut stmt = conn.prepare("SELECT u.id, u.gold, i.num_tickets FROM users u LEFT JOIN user_items i ON i.id = u.id").map_err(schema_error)?;
        let rows = stmt.query_map([], |r| Ok(UserRow { id: r.get::<_, i64>(0)? as u32, gold: r.get(1)?, tickets: r.get(2)? })).map_err(classify)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(classify)
    }
}

impl MobileConn for SqliteConn {
    async fn transfer(&mut self, id: u32) -> Result<(), StoreError> {
        self.transact(&TRANSFER, id)
    }

    async fn add_gold(&mut self, id: u32) -> Result<(), StoreError> {
        self.transact(&ADD_GOLD, id)
    }

    async fn read_gold(&mut self, id: u32) -> Result<i64, StoreError> {
        let mut stmt = self.conn.prepare_cached("SELECT gold FROM users WHERE id = ?1").map_err(schema_error)?;
        stmt.query_row(params![id], |r| r.get(0)).map_err(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => StoreError::new(ErrorClass::Data, format!("user {id} is not in the database")),
            e => classify(e),
        })
    }
}
