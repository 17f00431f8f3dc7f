//! The MMO world on Cassandra, one partition per player. Cassandra makes a conditional batch atomic
//! and isolated only within one partition of one table, so a player's core, parts, items, quests and
//! lease share a partition of `mmo_players`, and a change set is written as one `BEGIN BATCH … APPLY
//! BATCH` per player whose lease statement carries `IF owner = ?`: each player's writes land whole
//! or — when its lease went to another writer — not at all (`Locked`). **A change set is atomic per
//! player, not per set** (as on DynamoDB): the players' batches go out together, and a refused one
//! leaves the others written. Items never change owner, so every player's core and items still agree
//! and `verify`'s per-player checks hold. Guild memberships (`mmo_members`, a partition per guild)
//! are written after the players' batches, for the players whose batch applied, without a condition.
//!
//! | table | key | holds |
//! |---|---|---|
//! | `mmo_players` | `(player, kind, sub)` | `core`, `parts`, `item` (sub = item id), `quest` (sub = quest id), `lease` (`owner`, `until`, a TTL) |
//! | `mmo_members` | `(guild, player)` | guild memberships |
//! | `mmo_static` | `((kind, id))` | `account`, `guild` (name), `ranks`, `quest_template`, `item_descriptor` |
//! | `mmo_usernames` | `username` | account id |
//! | `mmo_seq` | `k` | the next free id, moved by compare-and-set |
//!
//! LoadPlayer is `INSERT … IF NOT EXISTS USING TTL` on the lease row (Cassandra ends the lease itself,
//! in whole seconds: a lease lasts up to a second past its end), taken again for its full length when
//! the writer already holds it, then one read of the partition. Logins read and write back the
//! account (two logins of one account at once may count once).

use super::coordinators::{Coordinators, timed};
use super::{CassandraTarget, classify, in_flight, rows_error};
use aggro_core::mmo::codec::*;
use aggro_core::mmo::*;
use aggro_core::{ErrorClass, StoreError};
use futures::StreamExt;
use scylla::client::session::Session;
use scylla::response::query_result::QueryResult;
use scylla::statement::Consistency;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlValue, Row};
use std::sync::Arc;

const TABLES: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS mmo_players (player bigint, kind text, sub bigint, data blob, owner bigint, until bigint, PRIMARY KEY (player, kind, sub))",
    "CREATE TABLE IF NOT EXISTS mmo_members (guild bigint, player bigint, PRIMARY KEY (guild, player))",
    "CREATE TABLE IF NOT EXISTS mmo_static (kind text, id bigint, data blob, PRIMARY KEY ((kind, id)))",
    "CREATE TABLE IF NOT EXISTS mmo_usernames (username text PRIMARY KEY, id int)",
    "CREATE TABLE IF NOT EXISTS mmo_seq (k int PRIMARY KEY, next bigint)",
];

const PUT_ROW: &str = "UPDATE mmo_players SET data = ? WHERE player = ? AND kind = ? AND sub = ?";
const DELETE_ROW: &str = "DELETE FROM mmo_players WHERE player = ? AND kind = ? AND sub = ?";
const TAKE_LEASE: &str = "INSERT INTO mmo_players (player, kind, sub, owner, until) VALUES (?, 'lease', 0, ?, ?) IF NOT EXISTS USING TTL ?";
const KEEP_LEASE: &str = "UPDATE mmo_players USING TTL ? SET owner = ?, until = ? WHERE player = ? AND kind = 'lease' AND sub = 0 IF owner = ?";
const DROP_LEASE: &str = "DELETE FROM mmo_players WHERE player = ? AND kind = 'lease' AND sub = 0 IF owner = ?";
const LOAD_PLAYER: &str = "SELECT kind, data FROM mmo_players WHERE player = ?";
const CORE: &str = "SELECT data FROM mmo_players WHERE player = ? AND kind = 'core' AND sub = 0";
const JOIN: &str = "INSERT INTO mmo_members (guild, player) VALUES (?, ?)";
const LEAVE: &str = "DELETE FROM mmo_members WHERE guild = ? AND player = ?";
const MEMBERS: &str = "SELECT player FROM mmo_members WHERE guild = ?";
const PUT_STATIC: &str = "UPDATE mmo_static SET data = ? WHERE kind = ? AND id = ?";
const GET_STATIC: &str = "SELECT data FROM mmo_static WHERE kind = ? AND id = ?";
const PUT_USER: &str = "UPDATE mmo_usernames SET id = ? WHERE username = ?";
const GET_USER: &str = "SELECT id FROM mmo_usernames WHERE username = ?";
const GET_SEQ: &str = "SELECT next FROM mmo_seq WHERE k = 0";
const MOVE_SEQ: &str = "UPDATE mmo_seq SET next = ? WHERE k = 0 IF next = ?";
const INIT_SEQ: &str = "INSERT INTO mmo_seq (k, next) VALUES (0, ?)";
const SCAN: &str = "SELECT player, kind, sub, data, until FROM mmo_players";

/// Writes a population or a change set has in flight at once.
const IN_FLIGHT: usize = 32;

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

fn kind(c: &Option<CqlValue>) -> &str {
    match c {
        Some(CqlValue::Text(k)) => k,
        _ => "",
    }
}

/// `statements` with their `values` as one batch of `kind`.
fn batch_of(kind: BatchType, consistency: Consistency, statements: Vec<(&PreparedStatement, Vec<CqlValue>)>) -> (Batch, Vec<Vec<CqlValue>>) {
    let mut batch = Batch::new(kind);
    batch.set_consistency(consistency);
    let mut values = Vec::with_capacity(statements.len());
    for (s, v) in statements {
        batch.append_statement(s.clone());
        values.push(v);
    }
    (batch, values)
}

/// The world's statements, prepared once per connection.
struct Statements {
    put_row: PreparedStatement,
    delete_row: PreparedStatement,
    take_lease: PreparedStatement,
    keep_lease: PreparedStatement,
    drop_lease: PreparedStatement,
    load_player: PreparedStatement,
    core: PreparedStatement,
    join: PreparedStatement,
    leave: PreparedStatement,
    members: PreparedStatement,
    put_static: PreparedStatement,
    get_static: PreparedStatement,
    put_user: PreparedStatement,
    get_user: PreparedStatement,
    get_seq: PreparedStatement,
    move_seq: PreparedStatement,
}

impl Statements {
    /// One player's writes of `set`, as the statements of its batch.
    fn player_batch<'s>(&'s self, set: &ChangeSet, p: &PlayerWrite) -> Vec<(&'s PreparedStatement, Vec<CqlValue>)> {
        let (id, owner) = (p.core.id, big(set.owner as i64));
        let mut out = vec![(&self.put_row, vec![CqlValue::Blob(encode_core(&p.core)), big(id), text("core"), big(0)])];
        out.push(if p.release {
            (&self.drop_lease, vec![big(id), owner])
        } else {
            (&self.keep_lease, vec![ttl(set.now_ms, set.lease_until_ms), owner.clone(), big(set.lease_until_ms as i64), big(id), owner])
        });
        // One batch's statements share a timestamp, where a delete wins: an item put again is not deleted.
        for i in set.delete_items.iter().filter(|d| d.owner == id && !set.put_items.iter().any(|p| p.id == d.id)) {
            out.push((&self.delete_row, vec![big(id), text("item"), big(i.id as i64)]));
        }
        for i in set.put_items.iter().filter(|i| i.owner == id) {
            out.push((&self.put_row, vec![CqlValue::Blob(encode_item(i).to_vec()), big(id), text("item"), big(i.id as i64)]));
        }
        for q in set.new_quests.iter().filter(|q| q.player == id) {
            out.push((&self.put_row, vec![CqlValue::Blob(encode_quest(q)), big(id), text("quest"), big(q.id as i64)]));
        }
        out
    }
}

/// One game server's handle on the shared session; its requests are tallied per coordinating node.
pub struct CassandraMmoConn {
    session: Arc<Session>,
    s: Arc<Statements>,
    consistency: Consistency,
    nodes: Coordinators,
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
            put_row: p(PUT_ROW).await?,
            delete_row: p(DELETE_ROW).await?,
            take_lease: p(TAKE_LEASE).await?,
            keep_lease: p(KEEP_LEASE).await?,
            drop_lease: p(DROP_LEASE).await?,
            load_player: p(LOAD_PLAYER).await?,
            core: p(CORE).await?,
            join: p(JOIN).await?,
            leave: p(LEAVE).await?,
            members: p(MEMBERS).await?,
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
    /// Runs `statement` with `values`, tallied under its coordinator.
    async fn run(&mut self, statement: &PreparedStatement, values: Vec<CqlValue>) -> Result<QueryResult, StoreError> {
        self.nodes.run(self.session.execute_unpaged(statement, values)).await
    }

    /// Runs `statement` for a population (concurrently, so untallied: a population is not a measured run).
    async fn populating(&self, statement: &PreparedStatement, values: Vec<CqlValue>) -> Result<(), StoreError> {
        self.session.execute_unpaged(statement, values).await.map(drop).map_err(classify)
    }

    async fn get_static(&mut self, kind: &str, id: u32) -> Result<Option<Vec<u8>>, StoreError> {
        let s = Arc::clone(&self.s);
        let r = rows(self.run(&s.get_static, vec![text(kind), big(id)]).await?)?;
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
        Ok(CassandraMmoConn { session, s, consistency: self.consistency, nodes: Coordinators::new(self.tallies.clone()) })
    }

    async fn create(&self, world: &WorldSpec) -> Result<(), StoreError> {
        let session = self.session().await?;
        for cql in ["DELETE FROM aggro_world WHERE workload = 'mmo'", "DELETE FROM aggro_runs WHERE workload = 'mmo'"] {
            session.query_unpaged(cql, ()).await.map_err(classify)?;
        }
        for table in TABLES {
            session.query_unpaged(*table, ()).await.map_err(classify)?;
        }
        for table in ["mmo_players", "mmo_members", "mmo_static", "mmo_usernames", "mmo_seq"] {
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
        in_flight(0..rows.len(), IN_FLIGHT, |i| {
            let (c, (kind, id, data)) = (&c, &rows[i]);
            async move { c.populating(&c.s.put_static, vec![CqlValue::Blob(data.clone()), text(kind), big(*id)]).await }
        })
        .await
    }

    async fn scan(&self) -> Result<WorldScan, StoreError> {
        let mut scan = WorldScan::default();
        let mut leases = std::collections::HashMap::new();
        self.each_page(SCAN, |page| {
            for row in rows(page)? {
                let c = &row.columns;
                let player = int(&c[0]).unwrap_or(-1) as u32;
                match kind(&c[1]) {
                    "core" => {
                        let core = blob(&c[3]).and_then(decode_core).ok_or_else(|| corrupt("a player"))?;
                        scan.players.push(PlayerCheck { id: core.id, item_count: core.item_count, lease_until_ms: None });
                    }
                    "item" => scan.items.push((int(&c[2]).unwrap_or(-1) as u64, player)),
                    "lease" => {
                        leases.insert(player, int(&c[4]).map(|u| u as u64));
                    }
                    _ => {}
                }
            }
            Ok(())
        })
        .await?;
        for p in &mut scan.players {
            p.lease_until_ms = leases.get(&p.id).copied().flatten();
        }
        Ok(scan)
    }
}

impl aggro_core::mmo::MmoConn for CassandraMmoConn {
    async fn insert(&mut self, accounts: &[AccountGraph]) -> Result<(), StoreError> {
        let this = &*self;
        in_flight(0..accounts.len(), IN_FLIGHT, |i| async move {
            let g = &accounts[i];
            let a = &g.account;
            this.populating(&this.s.put_static, vec![CqlValue::Blob(encode_account(a)), text("account"), big(a.id)]).await?;
            this.populating(&this.s.put_user, vec![CqlValue::Int(a.id as i32), text(&a.username)]).await?;
            for p in &g.players {
                let id = p.core.id;
                this.populating(&this.s.join, vec![big(p.core.guild), big(id)]).await?;
                // The player's rows share its partition: one unlogged batch is one write there.
                let mut rows = vec![
                    (&this.s.put_row, vec![CqlValue::Blob(encode_core(&p.core)), big(id), text("core"), big(0)]),
                    (&this.s.put_row, vec![CqlValue::Blob(encode_parts(&p.parts)), big(id), text("parts"), big(0)]),
                ];
                rows.extend(
                    p.items
                        .iter()
                        .map(|it| (&this.s.put_row, vec![CqlValue::Blob(encode_item(it).to_vec()), big(id), text("item"), big(it.id as i64)])),
                );
                let (batch, values) = batch_of(BatchType::Unlogged, this.consistency, rows);
                this.session.batch(&batch, values).await.map_err(classify)?;
            }
            Ok(())
        })
        .await
    }

    async fn login(&mut self, username: &str, now_ms: u64) -> Result<Account, StoreError> {
        let s = Arc::clone(&self.s);
        let r = rows(self.run(&s.get_user, vec![text(username)]).await?)?;
        let id = r.first().and_then(|r| int(&r.columns[0])).ok_or_else(|| missing(format!("user {username:?}")))? as u32;
        let data = self.get_static("account", id).await?.ok_or_else(|| missing(format!("account {id}")))?;
        let mut account = decode_account(&data).ok_or_else(|| corrupt("an account"))?;
        account.login_count += 1;
        account.last_login_ms = now_ms;
        self.run(&s.put_static, vec![CqlValue::Blob(encode_account(&account)), text("account"), big(id)]).await?;
        Ok(account)
    }

    async fn load_player(&mut self, id: u32, lease: Lease) -> Result<PlayerGraph, StoreError> {
        let s = Arc::clone(&self.s);
        let (owner, until) = (big(lease.owner as i64), big(lease.until_ms as i64));
        let (taken, holder) = lwt(self.run(&s.take_lease, vec![big(id), owner.clone(), until.clone(), ttl(lease.now_ms, lease.until_ms)]).await?)?;
        if !taken {
            // Already ours (a reload) is fine: taken again for the full length.
            let mine = holder == Some(lease.owner as i64)
                && lwt(self.run(&s.keep_lease, vec![ttl(lease.now_ms, lease.until_ms), owner.clone(), until, big(id), owner]).await?)?.0;
            if !mine {
                let who = holder.map_or("another writer".into(), |h| format!("{h:#x}"));
                return Err(StoreError::new(ErrorClass::Locked, format!("player {id} is leased to {who}")));
            }
        }
        let (mut core, mut parts, mut items, mut quests) = (None, None, Vec::new(), Vec::new());
        for row in rows(self.run(&s.load_player, vec![big(id)]).await?)? {
            let Some(data) = blob(&row.columns[1]) else { continue }; // the lease row holds none
            match kind(&row.columns[0]) {
                "core" => core = Some(decode_core(data).ok_or_else(|| corrupt("a player"))?),
                "parts" => parts = Some(decode_parts(data).ok_or_else(|| corrupt("a player's parts"))?),
                "item" => items.push(decode_item(data).ok_or_else(|| corrupt("an item"))?),
                _ => quests.push(decode_quest(data).ok_or_else(|| corrupt("a quest"))?),
            }
        }
        let (core, parts) = (core.ok_or_else(|| missing(format!("player {id}")))?, parts.ok_or_else(|| missing(format!("player {id}'s parts")))?);
        quests.sort_by_key(|q: &Quest| q.seq);
        Ok(PlayerGraph { core, parts, items, quests })
    }

    async fn roster(&mut self, guild: u32) -> Result<Roster, StoreError> {
        let s = Arc::clone(&self.s);
        let name = self.get_static("guild", guild).await?.ok_or_else(|| missing(format!("guild {guild}")))?;
        let ranks_blob = self.get_static("ranks", guild).await?.unwrap_or_default();
        let mut reader = Reader::new(&ranks_blob);
        let mut ranks = Vec::new();
        while !reader.done() {
            ranks.push(reader.blob().and_then(decode_rank).ok_or_else(|| corrupt("a guild rank"))?);
        }
        let ids: Vec<i64> = rows(self.run(&s.members, vec![big(guild)]).await?)?.iter().filter_map(|r| int(&r.columns[0])).collect();
        // Each member's core, from its own partition, all at once (by index: a closure over borrowed
        // items would need to be general over their lifetime).
        let reads: Vec<_> = futures::stream::iter(0..ids.len())
            .map(|i| timed(self.session.execute_unpaged(&s.core, vec![big(ids[i])])))
            .buffer_unordered(IN_FLIGHT)
            .collect()
            .await;
        let mut members = Vec::with_capacity(ids.len());
        for (result, took) in reads {
            for r in rows(self.nodes.note(result, took)?)? {
                let core = blob(&r.columns[0]).and_then(decode_core).ok_or_else(|| corrupt("a member"))?;
                members.push(Member { player: core.id, name: core.name, rank: core.rank });
            }
        }
        members.sort_by_key(|m| m.player);
        Ok(Roster { guild, name: String::from_utf8_lossy(&name).into_owned(), ranks, members })
    }

    async fn write(&mut self, set: &ChangeSet) -> Result<(), StoreError> {
        let s = Arc::clone(&self.s);
        let consistency = self.consistency;
        // One conditional batch per player, all at once.
        let sent: Vec<_> = futures::stream::iter(0..set.players.len())
            .map(|i| {
                let p = &set.players[i];
                let (batch, values) = batch_of(BatchType::Logged, consistency, s.player_batch(set, p));
                let session = &self.session;
                async move { (p.core.id, timed(session.batch(&batch, values)).await) }
            })
            .buffer_unordered(IN_FLIGHT)
            .collect()
            .await;
        let (mut applied, mut refused, mut failed) = (Vec::new(), Vec::new(), None);
        for (player, (result, took)) in sent {
            match self.nodes.note(result, took).and_then(lwt) {
                Ok((true, _)) => applied.push(player),
                Ok((false, _)) => refused.push(player),
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        for m in set.guild_moves.iter().filter(|m| applied.contains(&m.player)) {
            self.run(&s.leave, vec![big(m.from), big(m.player)]).await?;
            self.run(&s.join, vec![big(m.to), big(m.player)]).await?;
        }
        if let Some(e) = failed {
            return Err(e);
        }
        match refused.first() {
            None => Ok(()),
            Some(p) => Err(StoreError::new(
                ErrorClass::Locked,
                format!(
                    "player {p} is not leased to this writer ({:#x}) any more ({} of {} players written)",
                    set.owner,
                    applied.len(),
                    set.players.len()
                ),
            )),
        }
    }

    async fn reserve_ids(&mut self, n: u64) -> Result<u64, StoreError> {
        let s = Arc::clone(&self.s);
        loop {
            let r = rows(self.run(&s.get_seq, Vec::new()).await?)?;
            let next = r.first().and_then(|r| int(&r.columns[0])).ok_or_else(|| missing("the id sequence".into()))?;
            if lwt(self.run(&s.move_seq, vec![big(next + n as i64), big(next)]).await?)?.0 {
                return Ok(next as u64);
            }
        }
    }
}
