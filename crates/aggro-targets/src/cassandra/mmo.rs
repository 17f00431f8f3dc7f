//! The MMO world on Cassandra. What a change set writes — players' cores and leases, items, quests,
//! guild memberships — lives in **one partition** of one table, `mmo_live`, because Cassandra makes a
//! conditional batch atomic and isolated only within a partition of a table: a change set is one
//! `BEGIN BATCH … APPLY BATCH` whose lease rows carry `IF owner = ?`, so it is written whole, or —
//! when any of its leases went to another writer — not at all (`Locked`). As Redis Cluster's `{mmo}`
//! slot: on a cluster the world gains replicas and failover, not capacity, and every change set and
//! lease is a Paxos round on that partition.
//!
//! | table | key | holds |
//! |---|---|---|
//! | `mmo_live` | `(w = 0, kind, id, sub)` | `core` (id = player), `item` (id = owner, sub = item), `quest` (id = player, sub = quest), `member` (id = guild, sub = player), `lease` (id = player; `owner`, `until`, a TTL) |
//! | `mmo_static` | `((kind, id))` | `account`, `parts`, `guild` (name), `ranks`, `quest_template`, `item_descriptor` |
//! | `mmo_usernames` | `username` | account id |
//! | `mmo_seq` | `k` | the next free id, moved by compare-and-set |
//!
//! LoadPlayer is `INSERT … IF NOT EXISTS USING TTL` on the lease row (Cassandra ends the lease itself,
//! in whole seconds: a lease lasts up to a second past its end), taken again for its full length when
//! the writer already holds it. Logins read and write back the account (two logins of one account at
//! once may count once). Batches of a large change set pass Cassandra's default
//! `batch_size_fail_threshold` (50 KiB): the test cluster allows 4 MiB (docs/CASSANDRA.md).

use super::{CassandraTarget, classify, in_flight, rows_error};
use aggro_core::mmo::codec::*;
use aggro_core::mmo::*;
use aggro_core::{ErrorClass, StoreError};
use scylla::client::session::Session;
use scylla::response::query_result::QueryResult;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlValue, Row};
use std::sync::Arc;

const TABLES: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS mmo_live (w int, kind text, id bigint, sub bigint, data blob, owner bigint, until bigint, PRIMARY KEY (w, kind, id, sub))",
    "CREATE TABLE IF NOT EXISTS mmo_static (kind text, id bigint, data blob, PRIMARY KEY ((kind, id)))",
    "CREATE TABLE IF NOT EXISTS mmo_usernames (username text PRIMARY KEY, id int)",
    "CREATE TABLE IF NOT EXISTS mmo_seq (k int PRIMARY KEY, next bigint)",
];

const PUT_LIVE: &str = "UPDATE mmo_live SET data = ? WHERE w = 0 AND kind = ? AND id = ? AND sub = ?";
const DELETE_LIVE: &str = "DELETE FROM mmo_live WHERE w = 0 AND kind = ? AND id = ? AND sub = ?";
const TAKE_LEASE: &str = "INSERT INTO mmo_live (w, kind, id, sub, owner, until) VALUES (0, 'lease', ?, 0, ?, ?) IF NOT EXISTS USING TTL ?";
const KEEP_LEASE: &str = "UPDATE mmo_live USING TTL ? SET owner = ?, until = ? WHERE w = 0 AND kind = 'lease' AND id = ? AND sub = 0 IF owner = ?";
const DROP_LEASE: &str = "DELETE FROM mmo_live WHERE w = 0 AND kind = 'lease' AND id = ? AND sub = 0 IF owner = ?";
const LOAD_PLAYER: &str = "SELECT kind, sub, data FROM mmo_live WHERE w = 0 AND kind IN ('core', 'item', 'quest') AND id = ?";
const MEMBERS: &str = "SELECT sub FROM mmo_live WHERE w = 0 AND kind = 'member' AND id = ?";
const CORES: &str = "SELECT data FROM mmo_live WHERE w = 0 AND kind = 'core' AND id IN ?";
const PUT_STATIC: &str = "UPDATE mmo_static SET data = ? WHERE kind = ? AND id = ?";
const GET_STATIC: &str = "SELECT data FROM mmo_static WHERE kind = ? AND id = ?";
const PUT_USER: &str = "UPDATE mmo_usernames SET id = ? WHERE username = ?";
const GET_USER: &str = "SELECT id FROM mmo_usernames WHERE username = ?";
const GET_SEQ: &str = "SELECT next FROM mmo_seq WHERE k = 0";
const MOVE_SEQ: &str = "UPDATE mmo_seq SET next = ? WHERE k = 0 IF next = ?";
const INIT_SEQ: &str = "INSERT INTO mmo_seq (k, next) VALUES (0, ?)";

/// Accounts whose rows are written at once while populating.
const INSERT_IN_FLIGHT: usize = 32;

fn missing(what: String) -> StoreError {
    StoreError::new(ErrorClass::Data, format!("{what} is not in the database (run `aggro mmo populate` first)"))
}

fn corrupt(what: &str) -> StoreError {
    StoreError::new(ErrorClass::Data, format!("cassandra: {what} does not decode"))
}

fn big(id: impl Into<i64>) -> CqlValue {
    CqlValue::BigInt(id.into())
}

fn text(s: &str) -> CqlValue {
    CqlValue::Text(s.to_string())
}

/// Seconds a lease lasts, rounded up: Cassandra's TTLs are whole seconds.
fn ttl(now_ms: u64, until_ms: u64) -> CqlValue {
    CqlValue::Int(until_ms.saturating_sub(now_ms).div_ceil(1000).clamp(1, i32::MAX as u64) as i32)
}

/// A lightweight transaction's outcome: whether it was applied, and (when not) the `owner` the row
/// holds, as Cassandra returns the row that refused the condition.
fn lwt(r: QueryResult) -> Result<(bool, Option<i64>), StoreError> {
    let r = r.into_rows_result().map_err(rows_error)?;
    let owner_at = r.column_specs().get_by_name("owner").map(|(i, _)| i);
    let Some(row) = r.maybe_first_row::<Row>().map_err(rows_error)? else { return Ok((false, None)) };
    let applied = matches!(row.columns.first(), Some(Some(CqlValue::Boolean(true))));
    Ok((applied, owner_at.and_then(|i| int(&row.columns[i]))))
}

/// The rows of a result, each a list of its columns.
fn rows(r: QueryResult) -> Result<Vec<Row>, StoreError> {
    let rows = r.into_rows_result().map_err(rows_error)?;
    rows.rows::<Row>().map_err(rows_error)?.collect::<Result<_, _>>().map_err(rows_error)
}

fn blob(c: &Option<CqlValue>) -> Option<&[u8]> {
    match c {
        Some(CqlValue::Blob(b)) => Some(b),
        _ => None,
    }
}

fn int(c: &Option<CqlValue>) -> Option<i64> {
    match c {
        Some(CqlValue::BigInt(i)) => Some(*i),
        Some(CqlValue::Int(i)) => Some((*i).into()),
        _ => None,
    }
}

/// The world's statements, prepared once per connection.
struct Statements {
    put_live: PreparedStatement,
    delete_live: PreparedStatement,
    take_lease: PreparedStatement,
    keep_lease: PreparedStatement,
    drop_lease: PreparedStatement,
    load_player: PreparedStatement,
    members: PreparedStatement,
    cores: PreparedStatement,
    put_static: PreparedStatement,
    get_static: PreparedStatement,
    put_user: PreparedStatement,
    get_user: PreparedStatement,
    get_seq: PreparedStatement,
    move_seq: PreparedStatement,
}

/// One game server's handle on the shared session.
pub struct CassandraMmoConn {
    session: Arc<Session>,
    s: Arc<Statements>,
    consistency: scylla::statement::Consistency,
}

impl std::fmt::Debug for CassandraMmoConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CassandraMmoConn").finish_non_exhaustive()
    }
}

impl CassandraTarget {
    /// The world's statements prepared (its tables are made by `create`).
    async fn mmo_statements(&self, session: &Session) -> Result<Statements, StoreError> {
        let p = |cql: &'static str| async move {
            self.prepare(session, cql).await.map_err(|e| StoreError::new(e.class, format!("{} (run `aggro mmo populate` first)", e.message)))
        };
        Ok(Statements {
            put_live: p(PUT_LIVE).await?,
            delete_live: p(DELETE_LIVE).await?,
            take_lease: p(TAKE_LEASE).await?,
            keep_lease: p(KEEP_LEASE).await?,
            drop_lease: p(DROP_LEASE).await?,
            load_player: p(LOAD_PLAYER).await?,
            members: p(MEMBERS).await?,
            cores: p(CORES).await?,
            put_static: p(PUT_STATIC).await?,
            get_static: p(GET_STATIC).await?,
            put_user: p(PUT_USER).await?,
            get_user: p(GET_USER).await?,
            get_seq: p(GET_SEQ).await?,
            move_seq: p(MOVE_SEQ).await?,
        })
    }
}

impl CassandraMmoConn {
    async fn run(&self, statement: &PreparedStatement, values: Vec<CqlValue>) -> Result<QueryResult, StoreError> {
        self.session.execute_unpaged(statement, values).await.map_err(classify)
    }

    /// Runs `statements` with their `values` as one batch of `kind`.
    async fn batch(&self, kind: BatchType, statements: Vec<(&PreparedStatement, Vec<CqlValue>)>) -> Result<QueryResult, StoreError> {
        let mut batch = Batch::new(kind);
        batch.set_consistency(self.consistency);
        let mut values = Vec::with_capacity(statements.len());
        for (s, v) in statements {
            batch.append_statement(s.clone());
            values.push(v);
        }
        self.session.batch(&batch, values).await.map_err(classify)
    }

    async fn get_static(&self, kind: &str, id: u32) -> Result<Option<Vec<u8>>, StoreError> {
        let r = rows(self.run(&self.s.get_static, vec![text(kind), big(id)]).await?)?;
        Ok(r.first().and_then(|r| blob(&r.columns[0]).map(<[u8]>::to_vec)))
    }
}

impl aggro_core::mmo::MmoTarget for CassandraTarget {
    type Conn = CassandraMmoConn;

    fn describe(&self) -> String {
        self.url()
    }

    async fn connect(&self) -> Result<CassandraMmoConn, StoreError> {
        let session = self.session().await?;
        let s = Arc::new(self.mmo_statements(&session).await?);
        Ok(CassandraMmoConn { session, s, consistency: self.consistency })
    }

    async fn create(&self, world: &WorldSpec) -> Result<(), StoreError> {
        let session = self.session().await?;
        let ks = &self.keyspace;
        for cql in [format!("DELETE FROM {ks}.aggro_world WHERE workload = 'mmo'"), format!("DELETE FROM {ks}.aggro_runs WHERE workload = 'mmo'")] {
            session.query_unpaged(cql, ()).await.map_err(classify)?;
        }
        for table in TABLES {
            session.query_unpaged(*table, ()).await.map_err(classify)?;
        }
        for table in ["mmo_live", "mmo_static", "mmo_usernames", "mmo_seq"] {
            session.query_unpaged(format!("TRUNCATE {table}"), ()).await.map_err(classify)?;
        }
        session.query_unpaged(INIT_SEQ, (world.first_free_id() as i64,)).await.map_err(classify)?;
        let c = self.connect().await?;
        let mut rows: Vec<(&str, u32, Vec<u8>)> = Vec::new();
        rows.extend((0..world.quest_templates()).map(|t| ("quest_template", t, template(1, t))));
        rows.extend((0..world.item_descriptors).map(|d| ("item_descriptor", d, template(2, d))));
        let mut ranks = Writer::default();
        for r in guild_ranks(world.ranks_per_guild) {
            ranks.blob(&encode_rank(&r));
        }
        for g in 0..world.guilds() {
            rows.push(("guild", g, guild_name(g).into_bytes()));
            rows.push(("ranks", g, ranks.0.clone()));
        }
        in_flight(0..rows.len(), INSERT_IN_FLIGHT, |i| {
            let (c, (kind, id, data)) = (&c, &rows[i]);
            async move { c.run(&c.s.put_static, vec![CqlValue::Blob(data.clone()), text(kind), big(*id)]).await.map(drop) }
        })
        .await
    }

    async fn scan(&self) -> Result<WorldScan, StoreError> {
        let session = self.session().await?;
        let mut all =
            self.prepare(&session, "SELECT kind, id, sub, data, until FROM mmo_live WHERE w = 0 AND kind IN ('core', 'item', 'lease')").await?;
        all.set_page_size(5_000);
        let mut scan = WorldScan::default();
        let mut leases = std::collections::HashMap::new();
        let mut paging = scylla::response::PagingState::start();
        loop {
            let (page, next) = session.execute_single_page(&all, (), paging).await.map_err(classify)?;
            for row in rows(page)? {
                let c = &row.columns;
                let (kind, id) = (
                    match &c[0] {
                        Some(CqlValue::Text(k)) => k.as_str(),
                        _ => "",
                    },
                    int(&c[1]).unwrap_or(-1),
                );
                match kind {
                    "core" => {
                        let core = blob(&c[3]).and_then(decode_core).ok_or_else(|| corrupt("a player"))?;
                        scan.players.push(PlayerCheck { id: core.id, item_count: core.item_count, lease_until_ms: None });
                    }
                    "item" => scan.items.push((int(&c[2]).unwrap_or(-1) as u64, id as u32)),
                    _ => {
                        leases.insert(id as u32, int(&c[4]).map(|u| u as u64));
                    }
                }
            }
            match next.into_paging_control_flow() {
                std::ops::ControlFlow::Continue(p) => paging = p,
                std::ops::ControlFlow::Break(()) => break,
            }
        }
        for p in &mut scan.players {
            p.lease_until_ms = leases.get(&p.id).copied().flatten();
        }
        Ok(scan)
    }
}

impl aggro_core::mmo::MmoConn for CassandraMmoConn {
    async fn insert(&mut self, accounts: &[AccountGraph]) -> Result<(), StoreError> {
        let this = &*self;
        in_flight(0..accounts.len(), INSERT_IN_FLIGHT, |i| async move {
            let g = &accounts[i];
            let a = &g.account;
            this.run(&this.s.put_static, vec![CqlValue::Blob(encode_account(a)), text("account"), big(a.id)]).await?;
            this.run(&this.s.put_user, vec![CqlValue::Int(a.id as i32), text(&a.username)]).await?;
            for p in &g.players {
                let id = p.core.id;
                this.run(&this.s.put_static, vec![CqlValue::Blob(encode_parts(&p.parts)), text("parts"), big(id)]).await?;
                // The player's live rows share the world's partition: one unlogged batch is one write there.
                let mut live = vec![(&this.s.put_live, vec![CqlValue::Blob(encode_core(&p.core)), text("core"), big(id), big(0)])];
                live.push((&this.s.put_live, vec![CqlValue::Blob(Vec::new()), text("member"), big(p.core.guild), big(id)]));
                live.extend(
                    p.items
                        .iter()
                        .map(|it| (&this.s.put_live, vec![CqlValue::Blob(encode_item(it).to_vec()), text("item"), big(id), big(it.id as i64)])),
                );
                this.batch(BatchType::Unlogged, live).await?;
            }
            Ok(())
        })
        .await
    }

    async fn login(&mut self, username: &str, now_ms: u64) -> Result<Account, StoreError> {
        let r = rows(self.run(&self.s.get_user, vec![text(username)]).await?)?;
        let id = r.first().and_then(|r| int(&r.columns[0])).ok_or_else(|| missing(format!("user {username:?}")))? as u32;
        let data = self.get_static("account", id).await?.ok_or_else(|| missing(format!("account {id}")))?;
        let mut account = decode_account(&data).ok_or_else(|| corrupt("an account"))?;
        account.login_count += 1;
        account.last_login_ms = now_ms;
        self.run(&self.s.put_static, vec![CqlValue::Blob(encode_account(&account)), text("account"), big(id)]).await?;
        Ok(account)
    }

    async fn load_player(&mut self, id: u32, lease: Lease) -> Result<PlayerGraph, StoreError> {
        let (owner, until) = (big(lease.owner as i64), big(lease.until_ms as i64));
        let (taken, holder) =
            lwt(self.run(&self.s.take_lease, vec![big(id), owner.clone(), until.clone(), ttl(lease.now_ms, lease.until_ms)]).await?)?;
        if !taken {
            // Already ours (a reload) is fine: taken again for the full length.
            let mine = holder == Some(lease.owner as i64)
                && lwt(self.run(&self.s.keep_lease, vec![ttl(lease.now_ms, lease.until_ms), owner.clone(), until, big(id), owner]).await?)?.0;
            if !mine {
                return Err(StoreError::new(
                    ErrorClass::Locked,
                    format!("player {id} is leased to {}", holder.map_or("another writer".into(), |h| format!("{h:#x}"))),
                ));
            }
        }
        let parts = self.get_static("parts", id).await?.ok_or_else(|| missing(format!("player {id}")))?;
        let parts = decode_parts(&parts).ok_or_else(|| corrupt("a player's parts"))?;
        let (mut core, mut items, mut quests) = (None, Vec::new(), Vec::new());
        for row in rows(self.run(&self.s.load_player, vec![big(id)]).await?)? {
            let data = blob(&row.columns[2]).ok_or_else(|| corrupt("a player's row"))?;
            match &row.columns[0] {
                Some(CqlValue::Text(k)) if k == "core" => core = Some(decode_core(data).ok_or_else(|| corrupt("a player"))?),
                Some(CqlValue::Text(k)) if k == "item" => items.push(decode_item(data).ok_or_else(|| corrupt("an item"))?),
                _ => quests.push(decode_quest(data).ok_or_else(|| corrupt("a quest"))?),
            }
        }
        let core = core.ok_or_else(|| missing(format!("player {id}")))?;
        quests.sort_by_key(|q: &Quest| q.seq);
        Ok(PlayerGraph { core, parts, items, quests })
    }

    async fn roster(&mut self, guild: u32) -> Result<Roster, StoreError> {
        let name = self.get_static("guild", guild).await?.ok_or_else(|| missing(format!("guild {guild}")))?;
        let ranks_blob = self.get_static("ranks", guild).await?.unwrap_or_default();
        let mut reader = Reader(&ranks_blob);
        let mut ranks = Vec::new();
        while !reader.done() {
            ranks.push(reader.blob().and_then(decode_rank).ok_or_else(|| corrupt("a guild rank"))?);
        }
        let ids: Vec<CqlValue> =
            rows(self.run(&self.s.members, vec![big(guild)]).await?)?.iter().filter_map(|r| int(&r.columns[0]).map(big)).collect();
        let members = if ids.is_empty() {
            Vec::new()
        } else {
            rows(self.run(&self.s.cores, vec![CqlValue::List(ids)]).await?)?
                .iter()
                .map(|r| {
                    let core = blob(&r.columns[0]).and_then(decode_core).ok_or_else(|| corrupt("a member"))?;
                    Ok(Member { player: core.id, name: core.name, rank: core.rank })
                })
                .collect::<Result<_, StoreError>>()?
        };
        Ok(Roster { guild, name: String::from_utf8_lossy(&name).into_owned(), ranks, members })
    }

    async fn write(&mut self, set: &ChangeSet) -> Result<(), StoreError> {
        let s = &*self.s;
        let owner = big(set.owner as i64);
        let mut batch = Vec::new();
        for p in &set.players {
            let id = big(p.core.id);
            batch.push((&s.put_live, vec![CqlValue::Blob(encode_core(&p.core)), text("core"), id.clone(), big(0)]));
            batch.push(if p.release {
                (&s.drop_lease, vec![id, owner.clone()])
            } else {
                (&s.keep_lease, vec![ttl(set.now_ms, set.lease_until_ms), owner.clone(), big(set.lease_until_ms as i64), id, owner.clone()])
            });
        }
        // One batch's statements share a timestamp, where a delete wins: an item put again is not deleted.
        for i in set.delete_items.iter().filter(|d| !set.put_items.iter().any(|p| p.id == d.id)) {
            batch.push((&s.delete_live, vec![text("item"), big(i.owner), big(i.id as i64)]));
        }
        for i in &set.put_items {
            batch.push((&s.put_live, vec![CqlValue::Blob(encode_item(i).to_vec()), text("item"), big(i.owner), big(i.id as i64)]));
        }
        for q in &set.new_quests {
            batch.push((&s.put_live, vec![CqlValue::Blob(encode_quest(q)), text("quest"), big(q.player), big(q.id as i64)]));
        }
        for m in &set.guild_moves {
            batch.push((&s.delete_live, vec![text("member"), big(m.from), big(m.player)]));
            batch.push((&s.put_live, vec![CqlValue::Blob(Vec::new()), text("member"), big(m.to), big(m.player)]));
        }
        match lwt(self.batch(BatchType::Logged, batch).await?)? {
            (true, _) => Ok(()),
            (false, _) => Err(StoreError::new(
                ErrorClass::Locked,
                format!("a player of this change set is not leased to its writer ({:#x}) any more", set.owner),
            )),
        }
    }

    async fn reserve_ids(&mut self, n: u64) -> Result<u64, StoreError> {
        loop {
            let r = rows(self.run(&self.s.get_seq, Vec::new()).await?)?;
            let next = r.first().and_then(|r| int(&r.columns[0])).ok_or_else(|| missing("the id sequence".into()))?;
            if lwt(self.run(&self.s.move_seq, vec![big(next + n as i64), big(next)]).await?)?.0 {
                return Ok(next as u64);
            }
        }
    }
}
