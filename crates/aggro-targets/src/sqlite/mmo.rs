//! The MMO world in SQLite: the shared schema of [`crate::sql_schema`], one
//! row per object. Every lease take, login and change set is a
//! `BEGIN IMMEDIATE` transaction on the loader's own connection; the lease is
//! a conditional `UPDATE … WHERE lease_owner …` and every player row a
//! change set writes is fenced the same way (0 rows changed: `Locked`, the
//! whole set rolled back).

use super::{SqliteTarget, classify, schema_error};
use crate::sql_schema::*;
use aggro_core::mmo::*;
use aggro_core::{ErrorClass, StoreError};
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

/// One game server's SQLite connection.
pub struct SqliteMmoConn {
    conn: Connection,
}

fn missing(what: String) -> StoreError {
    StoreError::new(ErrorClass::Data, format!("{what} is not in the database (run `aggro mmo populate` first)"))
}

fn corrupt(what: &str) -> StoreError {
    StoreError::new(ErrorClass::Data, format!("sqlite: {what} is malformed"))
}

/// Every row of a cached statement, mapped by `f`.
fn rows<T>(c: &Connection, sql: &str, p: impl rusqlite::Params, f: impl FnMut(&Row<'_>) -> rusqlite::Result<T>) -> Result<Vec<T>, StoreError> {
    let mut stmt = c.prepare_cached(sql).map_err(schema_error)?;
    let mapped = stmt.query_map(p, f).map_err(classify)?;
    mapped.collect::<Result<_, _>>().map_err(classify)
}

fn player_from(r: &Row<'_>) -> rusqlite::Result<(PlayerCore, PlayerParts, Vec<u8>, Vec<u8>)> {
    let core = PlayerCore {
        id: r.get(0)?,
        account: r.get(1)?,
        name: r.get(2)?,
        money: r.get(3)?,
        exp: r.get(4)?,
        pos: [r.get::<_, f64>(5)? as f32, r.get::<_, f64>(6)? as f32, r.get::<_, f64>(7)? as f32],
        guild: r.get(8)?,
        rank: r.get(9)?,
        item_count: r.get(10)?,
        slot_end: r.get(11)?,
        quest_count: r.get(12)?,
        friends: Vec::new(),
        ignores: Vec::new(),
    };
    let parts = PlayerParts(std::array::from_fn(|i| r.get(15 + i).unwrap_or_default()));
    Ok((core, parts, r.get(13)?, r.get(14)?))
}

fn item_from(r: &Row<'_>) -> rusqlite::Result<Item> {
    let data: Vec<u8> = r.get(6)?;
    Ok(Item {
        id: r.get::<_, i64>(0)? as u64,
        owner: r.get(1)?,
        slot: r.get(2)?,
        descriptor: r.get(3)?,
        count: r.get(4)?,
        durability: r.get(5)?,
        data: data.as_slice().try_into().unwrap_or([0; ITEM_DATA_BYTES]),
    })
}

impl MmoTarget for SqliteTarget {
    type Conn = SqliteMmoConn;

    fn describe(&self) -> String {
        aggro_core::mobile::MobileTarget::describe(self)
    }

    fn blocking(&self) -> bool {
        true
    }

    async fn connect(&self) -> Result<SqliteMmoConn, StoreError> {
        Ok(SqliteMmoConn { conn: self.open_with_keys()? })
    }

    async fn create(&self, world: &WorldSpec) -> Result<(), StoreError> {
        let mut conn = self.open()?;
        conn.execute_batch(&mmo_schema("BLOB")).map_err(classify)?;
        let tx = conn.transaction().map_err(classify)?;
        tx.execute("INSERT INTO id_sequence VALUES (?1)", params![world.first_free_id() as i64]).map_err(classify)?;
        {
            let mut t = tx.prepare("INSERT INTO quest_templates VALUES (?1, ?2)").map_err(classify)?;
            for id in 0..world.quest_templates() {
                t.execute(params![id, template(1, id)]).map_err(classify)?;
            }
            let mut d = tx.prepare("INSERT INTO item_descriptors VALUES (?1, ?2)").map_err(classify)?;
            for id in 0..world.item_descriptors {
                d.execute(params![id, template(2, id)]).map_err(classify)?;
            }
            let mut g = tx.prepare("INSERT INTO guilds VALUES (?1, ?2, ?3)").map_err(classify)?;
            let mut r = tx.prepare("INSERT INTO guild_ranks VALUES (?1, ?2, ?3, ?4)").map_err(classify)?;
            let ranks = guild_ranks(world.ranks_per_guild);
            for id in 0..world.guilds() {
                g.execute(params![id, guild_name(id), guild_motd(id)]).map_err(classify)?;
                for k in &ranks {
                    r.execute(params![id, k.rank, k.name, k.permissions]).map_err(classify)?;
                }
            }
        }
        tx.commit().map_err(classify)
    }

    async fn scan(&self) -> Result<WorldScan, StoreError> {
        let conn = self.open()?;
        let players = rows(&conn, "SELECT id, item_count, lease_owner, lease_until FROM players", [], |r| {
            let owner: Option<i64> = r.get(2)?;
            let until: Option<i64> = r.get(3)?;
            Ok(PlayerCheck { id: r.get(0)?, item_count: r.get(1)?, lease_until_ms: owner.and(until).map(|u| u as u64) })
        })?;
        let items = rows(&conn, "SELECT id, owner FROM items", [], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))?;
        Ok(WorldScan { players, items })
    }
}

impl SqliteTarget {
    /// A connection that enforces the schema's foreign keys.
    fn open_with_keys(&self) -> Result<Connection, StoreError> {
        let conn = self.open()?;
        conn.pragma_update(None, "foreign_keys", "on").map_err(classify)?;
        Ok(conn)
    }
}

impl SqliteMmoConn {
    fn begin(&mut self) -> Result<rusqlite::Transaction<'_>, StoreError> {
        self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(classify)
    }
}

impl MmoConn for SqliteMmoConn {
    async fn insert(&mut self, accounts: &[AccountGraph]) -> Result<(), StoreError> {
        let tx = self.begin()?;
        {
            let mut a = tx.prepare_cached("INSERT INTO accounts VALUES (?1, ?2, ?3, ?4)").map_err(schema_error)?;
            let mut p = tx
                .prepare_cached(&format!(
                    "INSERT INTO players ({PLAYER_COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22)"
                ))
                .map_err(schema_error)?;
            let mut i = tx.prepare_cached(&format!("INSERT INTO items ({ITEM_COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7)")).map_err(schema_error)?;
            for g in accounts {
                let ac = &g.account;
                a.execute(params![ac.id, ac.username, ac.login_count, ac.last_login_ms as i64]).map_err(classify)?;
                for pl in &g.players {
                    let c = &pl.core;
                    let x = &pl.parts.0;
                    p.execute(params![
                        c.id,
                        c.account,
                        c.name,
                        c.money,
                        c.exp,
                        c.pos[0] as f64,
                        c.pos[1] as f64,
                        c.pos[2] as f64,
                        c.guild,
                        c.rank,
                        c.item_count,
                        c.slot_end,
                        c.quest_count,
                        ids_to_blob(&c.friends),
                        ids_to_blob(&c.ignores),
                        x[0],
                        x[1],
                        x[2],
                        x[3],
                        x[4],
                        x[5],
                        x[6]
                    ])
                    .map_err(classify)?;
                    for it in &pl.items {
                        i.execute(params![it.id as i64, it.owner, it.slot, it.descriptor, it.count, it.durability, &it.data[..]])
                            .map_err(classify)?;
                    }
                }
            }
        }
        tx.commit().map_err(classify)
    }

    async fn login(&mut self, username: &str, now_ms: u64) -> Result<Account, StoreError> {
        let tx = self.begin()?;
        let account = tx
            .prepare_cached(
                "UPDATE accounts SET login_count = login_count + 1, last_login = ?2 WHERE username = ?1
                 RETURNING id, login_count, last_login",
            )
            .map_err(schema_error)?
            .query_row(params![username, now_ms as i64], |r| Ok((r.get::<_, u32>(0)?, r.get(1)?, r.get::<_, i64>(2)?)))
            .optional()
            .map_err(classify)?;
        let (id, login_count, last) = account.ok_or_else(|| missing(format!("user {username:?}")))?;
        let players = rows(&tx, "SELECT id FROM players WHERE account = ?1 ORDER BY id", params![id], |r| r.get(0))?;
        tx.commit().map_err(classify)?;
        Ok(Account { id, username: username.to_string(), login_count, last_login_ms: last as u64, players })
    }

    async fn load_player(&mut self, id: u32, lease: Lease) -> Result<PlayerGraph, StoreError> {
        let tx = self.begin()?;
        let taken = tx
            .prepare_cached(
                "UPDATE players SET lease_owner = ?2, lease_until = ?3
                 WHERE id = ?1 AND (lease_owner IS NULL OR lease_owner = ?2 OR lease_until < ?4)",
            )
            .map_err(schema_error)?
            .execute(params![id, lease.owner as i64, lease.until_ms as i64, lease.now_ms as i64])
            .map_err(classify)?;
        if taken == 0 {
            let holder: Option<(Option<i64>, Option<i64>)> = tx
                .query_row("SELECT lease_owner, lease_until FROM players WHERE id = ?1", params![id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(classify)?;
            return Err(match holder {
                None => missing(format!("player {id}")),
                Some((o, u)) => {
                    StoreError::new(ErrorClass::Locked, format!("player {id} is leased to {:#x} until {}", o.unwrap_or(0) as u64, u.unwrap_or(0)))
                }
            });
        }
        let (mut core, parts, friends, ignores) = tx
            .prepare_cached(&format!("SELECT {PLAYER_COLUMNS} FROM players WHERE id = ?1"))
            .map_err(schema_error)?
            .query_row(params![id], player_from)
            .map_err(classify)?;
        core.friends = blob_to_ids(&friends).ok_or_else(|| corrupt("a friend list"))?;
        core.ignores = blob_to_ids(&ignores).ok_or_else(|| corrupt("an ignore list"))?;
        let items = rows(&tx, &format!("SELECT {ITEM_COLUMNS} FROM items WHERE owner = ?1"), params![id], item_from)?;
        let quests = rows(&tx, &format!("SELECT {QUEST_COLUMNS} FROM quests WHERE player = ?1 ORDER BY seq"), params![id], |r| {
            Ok(Quest {
                id: r.get::<_, i64>(0)? as u64,
                player: r.get(1)?,
                seq: r.get(2)?,
                template: r.get(3)?,
                completed_ms: r.get::<_, i64>(4)? as u64,
            })
        })?;
        tx.commit().map_err(classify)?;
        Ok(PlayerGraph { core, parts, items, quests })
    }

    async fn roster(&mut self, guild: u32) -> Result<Roster, StoreError> {
        let c = &self.conn;
        let name: String = c
            .prepare_cached("SELECT name FROM guilds WHERE id = ?1")
            .map_err(schema_error)?
            .query_row(params![guild], |r| r.get(0))
            .optional()
            .map_err(classify)?
            .ok_or_else(|| missing(format!("guild {guild}")))?;
        let ranks = rows(c, "SELECT rank, name, permissions FROM guild_ranks WHERE guild = ?1 ORDER BY rank", params![guild], |r| {
            Ok(GuildRank { rank: r.get(0)?, name: r.get(1)?, permissions: r.get(2)? })
        })?;
        let members = rows(c, "SELECT id, name, rank FROM players WHERE guild = ?1", params![guild], |r| {
            Ok(Member { player: r.get(0)?, name: r.get(1)?, rank: r.get(2)? })
        })?;
        Ok(Roster { guild, name, ranks, members })
    }

    async fn write(&mut self, set: &ChangeSet) -> Result<(), StoreError> {
        let tx = self.begin()?;
        {
            let mut p = tx
                .prepare_cached(
                    "UPDATE players SET name = ?3, money = ?4, exp = ?5, x = ?6, y = ?7, z = ?8, guild = ?9, rank = ?10,
                     item_count = ?11, slot_end = ?12, quest_count = ?13, friends = ?14, ignores = ?15,
                     lease_owner = CASE WHEN ?16 THEN NULL ELSE lease_owner END,
                     lease_until = CASE WHEN ?16 THEN NULL ELSE ?17 END
                     WHERE id = ?1 AND lease_owner = ?2",
                )
                .map_err(schema_error)?;
            for w in &set.players {
                let c = &w.core;
                let changed = p
                    .execute(params![
                        c.id,
                        set.owner as i64,
                        c.name,
                        c.money,
                        c.exp,
                        c.pos[0] as f64,
                        c.pos[1] as f64,
                        c.pos[2] as f64,
                        c.guild,
                        c.rank,
                        c.item_count,
                        c.slot_end,
                        c.quest_count,
                        ids_to_blob(&c.friends),
                        ids_to_blob(&c.ignores),
                        w.release,
                        set.lease_until_ms as i64
                    ])
                    .map_err(classify)?;
                if changed != 1 {
                    // Dropping the transaction rolls the whole set back.
                    return Err(StoreError::new(
                        ErrorClass::Locked,
                        format!("player {} is not leased to this writer ({:#x}) any more", c.id, set.owner),
                    ));
                }
            }
            let mut d = tx.prepare_cached("DELETE FROM items WHERE id = ?1").map_err(schema_error)?;
            for i in &set.delete_items {
                d.execute(params![i.id as i64]).map_err(classify)?;
            }
            let mut i = tx
                .prepare_cached(&format!(
                    "INSERT INTO items ({ITEM_COLUMNS}) VALUES (?1,?2,?3,?4,?5,?6,?7) ON CONFLICT (id) DO UPDATE SET
                     owner = excluded.owner, slot = excluded.slot, descriptor = excluded.descriptor,
                     count = excluded.count, durability = excluded.durability, data = excluded.data"
                ))
                .map_err(schema_error)?;
            for it in &set.put_items {
                i.execute(params![it.id as i64, it.owner, it.slot, it.descriptor, it.count, it.durability, &it.data[..]]).map_err(classify)?;
            }
            let mut q = tx.prepare_cached(&format!("INSERT INTO quests ({QUEST_COLUMNS}) VALUES (?1,?2,?3,?4,?5)")).map_err(schema_error)?;
            for x in &set.new_quests {
                q.execute(params![x.id as i64, x.player, x.seq, x.template, x.completed_ms as i64]).map_err(classify)?;
            }
        }
        tx.commit().map_err(classify)
    }

    async fn reserve_ids(&mut self, n: u64) -> Result<u64, StoreError> {
        let tx = self.begin()?;
        let next: i64 = tx
            .prepare_cached("UPDATE id_sequence SET next = next + ?1 RETURNING next - ?1")
            .map_err(schema_error)?
            .query_row(params![n as i64], |r| r.get(0))
            .map_err(classify)?;
        tx.commit().map_err(classify)?;
        Ok(next as u64)
    }
}
