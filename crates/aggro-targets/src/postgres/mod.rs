//! `postgres://` — PostgreSQL through tokio-postgres, and every store that
//! speaks its wire protocol (CockroachDB, YugabyteDB, Spanner's PG interface).
//!
//! A transaction is `BEGIN; UPDATE …; UPDATE …; COMMIT` with prepared
//! statements, one round trip each — the same statements
//! `bench/mobile-vs-pgbench.sh` gives pgbench. SQLSTATE 40001 (serialization
//! failure) and 40P01 (deadlock) are conflicts, which the workload retries.
//! A connection that breaks is re-opened at most once a second.

mod inline;
mod mmo;
mod scenario;
pub mod wire;

pub use scenario::PgScenarioConn;

pub use mmo::PostgresMmoConn;

use crate::reconnect::Reconnecting;
use crate::sql_schema::{FORGET_RUNS, LOG_RUN, READ_WORLD, RUN_LOG, WORLD_TABLES, WRITE_WORLD, forget_world};
use aggro_core::mobile::{INITIAL_GOLD, MobileConn, MobileTarget, UserRow};
use aggro_core::world::WorldStore;
use aggro_core::{ErrorClass, StoreError};
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};
use wire::Wire;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A PostgreSQL database.
#[derive(Clone, Debug)]
pub struct PostgresTarget {
    url: String,
}

impl PostgresTarget {
    /// A target at `url`.
    pub fn new(url: String) -> Self {
        Self { url }
    }

    async fn client(&self) -> Result<Client, StoreError> {
        let connecting = tokio_postgres::connect(&self.url, NoTls);
        let (client, connection) = tokio::time::timeout(CONNECT_TIMEOUT, connecting)
            .await
            .map_err(|_| StoreError::new(ErrorClass::Connect, format!("no answer from {} within 5 s", self.describe())))?
            .map_err(|e| StoreError::new(ErrorClass::Connect, format!("cannot connect to {}: {}", self.describe(), cause(&e))))?;
        tokio::spawn(async move {
            // Ends when the client is dropped or the server goes away; the
            // client's next request then reports the broken connection.
            let _ = connection.await;
        });
        Ok(client)
    }
}

/// The innermost cause of an error, which is what a person needs to read.
fn cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut inner: &(dyn std::error::Error + 'static) = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    if std::ptr::eq(inner as *const _ as *const u8, e as *const _ as *const u8) { e.to_string() } else { format!("{e}: {inner}") }
}

fn classify(e: tokio_postgres::Error) -> StoreError {
    let class = match e.code() {
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE => ErrorClass::Conflict,
        Some(c) if *c == SqlState::T_R_DEADLOCK_DETECTED => ErrorClass::Deadlock,
        Some(c) if *c == SqlState::LOCK_NOT_AVAILABLE => ErrorClass::Locked,
        Some(c) if *c == SqlState::UNDEFINED_TABLE => {
            return StoreError::new(ErrorClass::Data, format!("{} (populate the workload first)", cause(&e)));
        }
        Some(_) => ErrorClass::Server,
        // No SQLSTATE: the connection itself failed.
        None => ErrorClass::Disconnected,
    };
    StoreError::new(class, cause(&e))
}

/// The mobile workload's statements, prepared on every loader's connection.
const TRANSFER_GOLD: &str = "transfer_gold";
const TRANSFER_TICKET: &str = "transfer_ticket";
const ADD_GOLD: &str = "add_gold";
const READ_GOLD: &str = "read_gold";
const STATEMENTS: [(&str, &str); 4] = [
    (TRANSFER_GOLD, "UPDATE users SET gold = gold - 5 WHERE id = $1"),
    (TRANSFER_TICKET, "UPDATE user_items SET num_tickets = num_tickets + 1 WHERE id = $1"),
    (ADD_GOLD, "UPDATE users SET gold = gold + 5 WHERE id = $1"),
    (READ_GOLD, "SELECT gold FROM users WHERE id = $1"),
];

/// One loader's connection ([`wire::Wire`], the socket in the loader's own
/// future), re-opened if it breaks.
pub struct PostgresConn {
    target: PostgresTarget,
    live: Reconnecting<Wire>,
}

impl std::fmt::Debug for PostgresConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresConn").field("connected", &self.live.is_live()).finish()
    }
}

impl PostgresTarget {
    /// A [`Wire`] connection, authenticated, nothing prepared.
    pub(crate) async fn wire(&self) -> Result<Wire, StoreError> {
        let config: tokio_postgres::Config =
            self.url.parse().map_err(|e| StoreError::new(ErrorClass::Connect, format!("{}: {e}", self.describe())))?;
        let describe = self.describe();
        tokio::time::timeout(CONNECT_TIMEOUT, Wire::connect(&config, &describe))
            .await
            .map_err(|_| StoreError::new(ErrorClass::Connect, format!("no answer from {describe} within 5 s")))?
    }
}

impl PostgresConn {
    async fn open(target: &PostgresTarget) -> Result<Wire, StoreError> {
        let mut wire = target.wire().await?;
        for (name, sql) in STATEMENTS {
            wire.prepare(name, sql, 1).await?;
        }
        Ok(wire)
    }

    async fn live(&mut self) -> Result<&mut Wire, StoreError> {
        self.live.drop_if(|w| w.is_broken());
        let target = &self.target;
        self.live.get(|| Self::open(target)).await
    }

    /// Runs `statements` (each updating exactly one row of user `id`) as one transaction.
    async fn transact(&mut self, statements: &[&str], id: u32) -> Result<(), StoreError> {
        let wire = self.live().await?;
        let id = i64::from(id);
        wire.simple("BEGIN").await?;
        let result = async {
            for name in statements {
                if wire.execute(name, &[id]).await?.rows != 1 {
                    return Err(StoreError::new(ErrorClass::Data, format!("user {id} is not in the database")));
                }
            }
            wire.simple("COMMIT").await
        }
        .await;
        if result.is_err() && !wire.is_broken() {
            let _ = wire.simple("ROLLBACK").await;
        }
        result
    }
}

const MOBILE_SCHEMA: &str = "DROP TABLE IF EXISTS users; DROP TABLE IF EXISTS user_items;
     CREATE TABLE users (id BIGINT PRIMARY KEY, gold BIGINT NOT NULL);
     CREATE TABLE user_items (id BIGINT PRIMARY KEY, num_tickets BIGINT NOT NULL);";

/// Creates the world records' tables if they are missing. Two populations
/// starting at once (the mobile users and an MMO world in one database)
/// may both try: PostgreSQL's `IF NOT EXISTS` then fails one of them on the
/// catalog's unique index, which here means the table is there.
pub(crate) async fn create_world_tables(client: &Client) -> Result<(), StoreError> {
    for table in WORLD_TABLES {
        match client.batch_execute(table).await {
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) || e.code() == Some(&SqlState::DUPLICATE_TABLE) => {}
            other => other.map_err(classify)?,
        }
    }
    Ok(())
}

impl WorldStore for PostgresTarget {
    async fn read_world(&self, workload: &str) -> Result<Option<String>, StoreError> {
        let client = self.client().await?;
        match client.query_opt(READ_WORLD, &[&workload]).await {
            Ok(row) => Ok(row.map(|r| r.get(0))),
            Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => Ok(None),
            Err(e) => Err(classify(e)),
        }
    }

    async fn write_world(&self, workload: &str, record: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        create_world_tables(&client).await?;
        client.execute(WRITE_WORLD, &[&workload, &record]).await.map_err(classify).map(drop)
    }

    async fn log_run(&self, workload: &str, id: &str, entry: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        create_world_tables(&client).await?;
        client.execute(LOG_RUN, &[&workload, &id, &entry]).await.map_err(classify).map(drop)
    }

    async fn run_log(&self, workload: &str) -> Result<Vec<String>, StoreError> {
        let client = self.client().await?;
        match client.query(RUN_LOG, &[&workload]).await {
            Ok(rows) => Ok(rows.iter().map(|r| r.get(0)).collect()),
            Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => Ok(Vec::new()),
            Err(e) => Err(classify(e)),
        }
    }

    async fn forget_runs(&self, workload: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        match client.execute(FORGET_RUNS, &[&workload]).await {
            Err(e) if e.code() != Some(&SqlState::UNDEFINED_TABLE) => Err(classify(e)),
            _ => Ok(()),
        }
    }
}

impl MobileTarget for PostgresTarget {
    type Conn = PostgresConn;

    fn describe(&self) -> String {
        // Never print a password.
        match self.url.split_once('@') {
            Some((scheme_user, host)) => match scheme_user.rsplit_once(':') {
                Some((su, _pw)) if su.contains("//") && !su.ends_with('/') => format!("{su}:***@{host}"),
                _ => self.url.clone(),
            },
            None => self.url.clone(),
        }
    }

    async fn connect(&self) -> Result<PostgresConn, StoreError> {
        let live = PostgresConn::open(self).await?;
        Ok(PostgresConn { target: self.clone(), live: Reconnecting::new(live) })
    }

    async fn populate(&self, ids: &[u32], progress: &(dyn Fn(u64) + Sync)) -> Result<(), StoreError> {
        let client = self.client().await?;
        create_world_tables(&client).await?;
        client.batch_execute(&(forget_world("mobile") + MOBILE_SCHEMA)).await.map_err(classify)?;
        let users = client.prepare("INSERT INTO users SELECT unnest($1::bigint[]), $2").await.map_err(classify)?;
        let items = client.prepare("INSERT INTO user_items SELECT unnest($1::bigint[]), 0").await.map_err(classify)?;
        let mut done = 0;
        for chunk in ids.chunks(20_000) {
            let chunk: Vec<i64> = chunk.iter().map(|&i| i64::from(i)).collect();
            client.execute(&users, &[&chunk, &INITIAL_GOLD]).await.map_err(classify)?;
            client.execute(&items, &[&chunk]).await.map_err(classify)?;
            done += chunk.len() as u64;
            progress(done);
        }
        client.batch_execute("ANALYZE users; ANALYZE user_items").await.map_err(classify)?;
        Ok(())
    }

    async fn scan(&self) -> Result<Vec<UserRow>, StoreError> {
        let client = self.client().await?;
        let rows =
            client.query("SELECT u.id, u.gold, i.num_tickets FROM users u LEFT JOIN user_items i ON i.id = u.id", &[]).await.map_err(classify)?;
        Ok(rows.iter().map(|r| UserRow { id: r.get::<_, i64>(0) as u32, gold: r.get(1), tickets: r.get(2) }).collect())
    }
}

impl MobileConn for PostgresConn {
    async fn transfer(&mut self, id: u32) -> Result<(), StoreError> {
        self.transact(&[TRANSFER_GOLD, TRANSFER_TICKET], id).await
    }

    async fn add_gold(&mut self, id: u32) -> Result<(), StoreError> {
        self.transact(&[ADD_GOLD], id).await
    }

    async fn read_gold(&mut self, id: u32) -> Result<i64, StoreError> {
        let wire = self.live().await?;
        wire.execute(READ_GOLD, &[i64::from(id)])
            .await?
            .first
            .ok_or_else(|| StoreError::new(ErrorClass::Data, format!("user {id} is not in the database")))
    }
}
