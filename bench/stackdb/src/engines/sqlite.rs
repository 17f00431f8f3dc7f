//! SQLite (Debian's libsqlite3) in WAL mode: a transaction per batch,
//! `synchronous=FULL` when durable and `OFF` when not, prepared statements.

use super::Engine;
use rusqlite::{Connection, OptionalExtension};
use std::path::Path;

pub struct Sqlite {
    conn: Connection,
    open: bool,
}

impl Sqlite {
    pub fn open(dir: &Path, durable: bool) -> Self {
        let conn = Connection::open(dir.join("db.sqlite")).expect("open sqlite");
        let sync = if durable { "FULL" } else { "OFF" };
        conn.execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous={sync};
             CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID;"
        ))
        .expect("set up sqlite");
        Sqlite { conn, open: false }
    }

    fn begin(&mut self) {
        if !self.open {
            self.conn.execute_batch("BEGIN").expect("begin");
            self.open = true;
        }
    }
}

impl Engine for Sqlite {
    fn put(&mut self, key: &[u8], value: &[u8]) {
        self.begin();
        let mut st = self.conn.prepare_cached("INSERT OR REPLACE INTO kv (k, v) VALUES (?1, ?2)").expect("prepare");
        st.execute((key, value)).expect("put");
    }

    fn get(&mut self, key: &[u8]) -> Option<usize> {
        self.begin();
        let mut st = self.conn.prepare_cached("SELECT length(v) FROM kv WHERE k = ?1").expect("prepare");
        st.query_row([key], |r| r.get::<_, i64>(0)).optional().expect("get").map(|n| n as usize)
    }

    fn commit(&mut self) {
        if self.open {
            self.conn.execute_batch("COMMIT").expect("commit");
            self.open = false;
        }
    }
}
