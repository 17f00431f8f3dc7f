//! `redis://HOST:PORT[/DB]` — Redis (or any RESP2 server), hashes per user;
//! `redis://HOST:PORT,HOST:PORT…` or `redis://HOST:PORT?cluster` — a Redis
//! Cluster, each command sent to the master of its key's slot (`cluster.rs`).
//!
//! `User{n}` is a hash with field `Gold`, `UserItem{n}` a hash with
//! `NumTickets`, as in the mobile workload's DynamoDB items; the `{n}` hash
//! tag keeps a user's two keys in one cluster slot. A transfer is
//! `MULTI; HINCRBY User{n} Gold -5; HINCRBY UserItem{n} NumTickets 1; EXEC`,
//! sent as one pipeline: atomic (on a cluster too: one slot), and one round
//! trip. A connection that breaks is re-opened at most once a second.

mod cluster;
mod connection;
mod mmo;
pub mod resp;
mod scenario;
mod shared;
mod slot;

pub use mmo::RedisMmoConn;
pub use scenario::RedisScenarioConn;

use crate::reconnect::Reconnecting;
use aggro_core::mobile::{INITIAL_GOLD, MobileConn, MobileTarget, UserRow};
use aggro_core::world::{WorldStore, record_key, runs_key};
use aggro_core::{ErrorClass, StoreError};
use connection::Connection;
use resp::{Node, Reply};
use std::io::Write;

/// A Redis database, or a Redis Cluster.
#[derive(Clone, Debug)]
pub struct RedisTarget {
    /// The node, or the cluster nodes to ask for the slot map.
    addrs: Vec<String>,
    db: u32,
    cluster: bool,
    /// What each cluster node did, over every connection of this target.
    nodes: crate::tally::NodeTallies,
}

impl RedisTarget {
    /// A target at `addr`, database `db`.
    pub fn new(addr: String, db: u32) -> Self {
        Self { addrs: vec![addr], db, cluster: false, nodes: crate::tally::NodeTallies::default() }
    }

    /// A cluster whose slot map the first of `seeds` that answers gives.
    pub fn cluster(seeds: Vec<String>) -> Self {
        Self { addrs: seeds, db: 0, cluster: true, nodes: crate::tally::NodeTallies::default() }
    }

    /// Whether this is a cluster.
    pub fn is_cluster(&self) -> bool {
        self.cluster
    }

    async fn open(&self) -> Result<Connection, StoreError> {
        if self.cluster {
            return Ok(Connection::Cluster(Box::new(cluster::Cluster::discover(&self.addrs, self.nodes.clone()).await?)));
        }
        let mut c = Connection::One(Node::connect(&self.addrs[0]).await?);
        if self.db != 0 {
            c.call(&[b"SELECT", self.db.to_string().as_bytes()]).await?;
        }
        Ok(c)
    }
}

/// Formats `User{n}` or `UserItem{n}` into a reused buffer.
fn key<'a>(buf: &'a mut Vec<u8>, prefix: &str, id: u32) -> &'a [u8] {
    buf.clear();
    let _ = write!(buf, "{prefix}{{{id}}}");
    buf
}

/// A connection that is re-opened, at most once a second, after it breaks.
pub(crate) struct Link {
    target: RedisTarget,
    live: Reconnecting<Connection>,
}

impl Link {
    /// A link over a connection just opened.
    pub(crate) async fn open(target: &RedisTarget) -> Result<Self, StoreError> {
        Ok(Self { live: Reconnecting::new(target.open().await?), target: target.clone() })
    }

    /// The connection, re-opened if it broke (no sooner than a second after the last try).
    pub(crate) async fn conn(&mut self) -> Result<&mut Connection, StoreError> {
        let target = &self.target;
        self.live.get(|| target.open()).await
    }

    /// Passes `result` on; a broken connection is dropped so the next request re-opens it.
    pub(crate) fn keep_if_healthy<T>(&mut self, result: Result<T, StoreError>) -> Result<T, StoreError> {
        if result.as_ref().is_err_and(|e| matches!(e.class, ErrorClass::Disconnected | ErrorClass::Protocol)) {
            self.drop_broken();
        }
        result
    }

    /// Drops a connection a failed request left out of step (a cluster's mends itself).
    pub(crate) fn drop_broken(&mut self) {
        self.live.drop_if(Connection::must_drop_after_error);
    }
}

/// One loader's connection.
pub struct RedisConn {
    link: Link,
    user_key: Vec<u8>,
    item_key: Vec<u8>,
}

impl std::fmt::Debug for RedisConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConn").field("connected", &self.link.live.is_live()).finish()
    }
}

impl RedisConn {
    /// MULTI, one HINCRBY per `(key, field, by)`, EXEC — one round trip.
    async fn increment(&mut self, id: u32, changes: &[(&str, &[u8], &[u8])]) -> Result<(), StoreError> {
        let mut keys = [std::mem::take(&mut self.user_key), std::mem::take(&mut self.item_key)];
        let result = async {
            let c = self.link.conn().await?;
            c.push(&[b"MULTI"]);
            for (i, (prefix, field, by)) in changes.iter().enumerate() {
                let k = key(&mut keys[i], prefix, id);
                c.push(&[b"HINCRBY", k, field, by]);
            }
            c.push(&[b"EXEC"]);
            c.flush().await?;
            // Every reply is read, so the connection stays in step; the first error is the request's.
            let mut failed = None;
            for _ in 0..=changes.len() {
                if let Reply::Error(e) = c.read().await? {
                    failed.get_or_insert(e);
                }
            }
            match (c.read().await?, failed) {
                (Reply::Array(Some(r)), None) if r.len() == changes.len() => Ok(()),
                (Reply::Array(None), None) => Err(StoreError::new(ErrorClass::Conflict, "EXEC aborted")),
                (_, Some(e)) | (Reply::Error(e), None) => Err(StoreError::new(ErrorClass::Server, e)),
                (other, None) => Err(StoreError::new(ErrorClass::Protocol, format!("unexpected EXEC reply {other:?}"))),
            }
        }
        .await;
        [self.user_key, self.item_key] = keys;
        self.link.keep_if_healthy(result)
    }
}

/// Removes `workload`'s world record and run log (a population's first step).
pub(crate) async fn forget_world(c: &mut Connection, workload: &str) -> Result<(), StoreError> {
    // One key each: on a cluster the two are in different slots.
    c.call(&[b"UNLINK", record_key(workload).as_bytes()]).await?;
    c.call(&[b"UNLINK", runs_key(workload).as_bytes()]).await.map(drop)
}

impl WorldStore for RedisTarget {
    fn nodes(&self) -> serde_json::Value {
        self.nodes.to_json()
    }

    async fn holds_data(&self) -> Result<bool, StoreError> {
        for node in self.open().await?.masters().await? {
            match node.call(&[b"DBSIZE"]).await? {
                Reply::Int(0) => {}
                Reply::Int(_) => return Ok(true),
                _ => return Err(StoreError::new(ErrorClass::Protocol, "unexpected DBSIZE reply")),
            }
        }
        Ok(false)
    }

    async fn read_world(&self, workload: &str) -> Result<Option<String>, StoreError> {
        match self.open().await?.call(&[b"GET", record_key(workload).as_bytes()]).await? {
            Reply::Bulk(None) => Ok(None),
            Reply::Bulk(Some(text)) => {
                String::from_utf8(text).map(Some).map_err(|_| StoreError::new(ErrorClass::Data, format!("{} is not text", record_key(workload))))
            }
            _ => Err(StoreError::new(ErrorClass::Protocol, "unexpected GET reply")),
        }
    }

    async fn write_world(&self, workload: &str, record: &str) -> Result<(), StoreError> {
        self.open().await?.call(&[b"SET", record_key(workload).as_bytes(), record.as_bytes()]).await.map(drop)
    }

    async fn log_run(&self, workload: &str, _id: &str, entry: &str) -> Result<(), StoreError> {
        self.open().await?.call(&[b"RPUSH", runs_key(workload).as_bytes(), entry.as_bytes()]).await.map(drop)
    }

    async fn run_log(&self, workload: &str) -> Result<Vec<String>, StoreError> {
        match self.open().await?.call(&[b"LRANGE", runs_key(workload).as_bytes(), b"0", b"-1"]).await? {
            Reply::Array(Some(items)) => Ok(items
                .into_iter()
                .filter_map(|i| match i {
                    Reply::Bulk(Some(b)) => String::from_utf8(b).ok(),
                    _ => None,
                })
                .collect()),
            _ => Err(StoreError::new(ErrorClass::Protocol, "unexpected LRANGE reply")),
        }
    }

    async fn forget_runs(&self, workload: &str) -> Result<(), StoreError> {
        self.open().await?.call(&[b"DEL", runs_key(workload).as_bytes()]).await.map(drop)
    }
}

impl MobileTarget for RedisTarget {
    type Conn = RedisConn;

    fn describe(&self) -> String {
        if self.cluster { format!("redis://{} (cluster)", self.addrs.join(",")) } else { format!("redis://{}/{}", self.addrs[0], self.db) }
    }

    async fn connect(&self) -> Result<RedisConn, StoreError> {
        Ok(RedisConn { link: Link::open(self).await?, user_key: Vec::with_capacity(24), item_key: Vec::with_capacity(24) })
    }

    async fn populate(&self, ids: &[u32], progress: &(dyn Fn(u64) + Sync)) -> Result<(), StoreError> {
        let mut c = self.open().await?;
        forget_world(&mut c, "mobile").await?;
        delete_matching(&mut c, "User*").await?;
        let gold = INITIAL_GOLD.to_string();
        let mut buf = Vec::new();
        for (i, chunk) in ids.chunks(5_000).enumerate() {
            for &id in chunk {
                c.push(&[b"HSET", key(&mut buf, "User", id), b"Gold", gold.as_bytes()]);
                c.push(&[b"HSET", key(&mut buf, "UserItem", id), b"NumTickets", b"0"]);
            }
            c.flush().await?;
            for _ in 0..chunk.len() * 2 {
                if let Reply::Error(e) = c.read().await? {
                    return Err(StoreError::new(ErrorClass::Server, e));
                }
            }
            progress((i * 5_000 + chunk.len()) as u64);
        }
        Ok(())
    }

    async fn scan(&self) -> Result<Vec<UserRow>, StoreError> {
        let mut c = self.open().await?;
        let ids: Vec<u32> = scan_keys(&mut c, "User{[0-9]*}")
            .await?
            .iter()
            .filter_map(|k| k.strip_prefix(b"User{")?.strip_suffix(b"}").and_then(|n| std::str::from_utf8(n).ok()?.parse().ok()))
            .collect();
        let mut rows = Vec::with_capacity(ids.len());
        let mut buf = Vec::new();
        for chunk in ids.chunks(5_000) {
            for &id in chunk {
                c.push(&[b"HGET", key(&mut buf, "User", id), b"Gold"]);
                c.push(&[b"HGET", key(&mut buf, "UserItem", id), b"NumTickets"]);
            }
            c.flush().await?;
            for &id in chunk {
                let gold = c.read().await?.as_i64();
                let tickets = c.read().await?.as_i64();
                let gold = gold.ok_or_else(|| StoreError::new(ErrorClass::Data, format!("User{id} has no numeric Gold")))?;
                rows.push(UserRow { id, gold, tickets });
            }
        }
        Ok(rows)
    }
}

/// Every key matching `pattern`, by SCAN (never KEYS, which blocks the server) on every master.
async fn scan_keys(c: &mut Connection, pattern: &str) -> Result<Vec<Vec<u8>>, StoreError> {
    let mut keys = Vec::new();
    for node in c.masters().await? {
        scan_node(node, pattern, &mut keys).await?;
    }
    Ok(keys)
}

async fn scan_node(c: &mut Node, pattern: &str, keys: &mut Vec<Vec<u8>>) -> Result<(), StoreError> {
    let mut cursor = b"0".to_vec();
    loop {
        let reply = c.call(&[b"SCAN", &cursor, b"MATCH", pattern.as_bytes(), b"COUNT", b"5000"]).await?;
        let Reply::Array(Some(mut parts)) = reply else {
            return Err(StoreError::new(ErrorClass::Protocol, "unexpected SCAN reply"));
        };
        let (Some(Reply::Array(Some(batch))), Some(Reply::Bulk(Some(next)))) = (parts.pop(), parts.pop()) else {
            return Err(StoreError::new(ErrorClass::Protocol, "unexpected SCAN reply"));
        };
        keys.extend(batch.into_iter().filter_map(|k| match k {
            Reply::Bulk(Some(k)) => Some(k),
            _ => None,
        }));
        if next == b"0" {
            return Ok(());
        }
        cursor = next;
    }
}

/// Deletes the workload's keys (and only them: a shared Redis keeps the rest), one `UNLINK` each,
/// pipelined (a cluster's keys are in many slots).
async fn delete_matching(c: &mut Connection, pattern: &str) -> Result<(), StoreError> {
    for chunk in scan_keys(c, pattern).await?.chunks(1_000) {
        for k in chunk {
            c.push(&[b"UNLINK", k]);
        }
        c.flush().await?;
        for _ in chunk {
            if let Reply::Error(e) = c.read().await? {
                return Err(StoreError::new(ErrorClass::Server, e));
            }
        }
    }
    Ok(())
}

impl MobileConn for RedisConn {
    async fn transfer(&mut self, id: u32) -> Result<(), StoreError> {
        self.increment(id, &[("User", b"Gold", b"-5"), ("UserItem", b"NumTickets", b"1")]).await
    }

    async fn add_gold(&mut self, id: u32) -> Result<(), StoreError> {
        self.increment(id, &[("User", b"Gold", b"5")]).await
    }

    async fn read_gold(&mut self, id: u32) -> Result<i64, StoreError> {
        let mut k = std::mem::take(&mut self.user_key);
        let result = async {
            let c = self.link.conn().await?;
            c.push(&[b"HGET", key(&mut k, "User", id), b"Gold"]);
            c.flush().await?;
            match c.read().await? {
                Reply::Bulk(None) => Err(StoreError::new(ErrorClass::Data, format!("User{id} is not in the database"))),
                Reply::Error(e) => Err(StoreError::new(ErrorClass::Server, e)),
                r => r.as_i64().ok_or_else(|| StoreError::new(ErrorClass::Data, format!("User{id} has no numeric Gold"))),
            }
        }
        .await;
        self.user_key = k;
        self.link.keep_if_healthy(result)
    }
}
