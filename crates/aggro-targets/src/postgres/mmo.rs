//! The MMO world in PostgreSQL: the shared schema of [`crate::sql_schema`].
//!
//! A change set is one transaction of at most five statements whatever its
//! size — rows travel as arrays through `unnest`: one fenced
//! `UPDATE players … FROM unnest(…) WHERE lease_owner = $owner` (fewer rows
//! changed than sent: `Locked`, rolled back), one `DELETE … = ANY`, one
//! upsert of items and one insert of quests. The lease is a conditional
//! `UPDATE`, so two game servers can never hold one player.

use super::{PostgresTarget, classify};
use crate::reconnect::Reconnecting;
use crate::sql_schema::*;
use aggro_core::mmo::*;
use aggro_core::{ErrorClass, StoreError};
use tokio_postgres::Client;

/// One game server's connection, re-opened if it breaks.
pub struct PostgresMmoConn {
    target: PostgresTarget,
    client: Reconnecting<Client>,
}

fn missing(what: String) -> StoreError {
    StoreError::new(ErrorClass::Data, format!("{what} is not in the database (run `aggro mmo populate` first)"))
}

fn corrupt(what: &str) -> StoreError {
    StoreError::new(ErrorClass::Data, format!("postgres: {what} is malformed"))
}

/// Column arrays of players, for `unnest`.
#[derive(Default)]
struct PlayerColumns {
    id: Vec<i32>,
    account: Vec<i32>,
    name: Vec<String>,
    money: Vec<i64>,
    exp: Vec<i64>,
    x: Vec<f32>,
    y: Vec<f32>,
    z: Vec<f32>,
    guild: Vec<i32>,
    rank: Vec<i32>,
    item_count: Vec<i32>,
    slot_end: Vec<i32>,
    quest_count: Vec<i32>,
    friends: Vec<Vec<u8>>,
    ignores: Vec<Vec<u8>>,
}

impl PlayerColumns {
    fn push(&mut self, c: &PlayerCore) {
        self.id.push(c.id as i32);
        self.account.push(c.account as i32);
        self.name.push(c.name.clone());
        self.money.push(c.money);
        self.exp.push(c.exp);
        self.x.push(c.pos[0]);
        self.y.push(c.pos[1]);
        self.z.push(c.pos[2]);
        self.guild.push(c.guild as i32);
        self.rank.push(c.rank as i32);
        self.item_count.push(c.item_count as i32);
        self.slot_end.push(c.slot_end as i32);
        self.quest_count.push(c.quest_count as i32);
        self.friends.push(ids_to_blob(&c.friends));
        self.ignores.push(ids_to_blob(&c.ignores));
    }
}

/// Column arrays of items.
#[derive(Default)]
struct ItemColumns {
    id: Vec<i64>,
    owner: Vec<i32>,
    slot: Vec<i32>,
    descriptor: Vec<i32>,
    count: Vec<i32>,
    durability: Vec<i32>,
    data: Vec<Vec<u8>>,
}

impl ItemColumns {
    fn of<'a>(items: impl IntoIterator<Item = &'a Item>) -> Self {
        let mut c = Self::default();
        for i in items {
            c.id.push(i.id as i64);
            c.owner.push(i.owner as i32);
            c.slot.push(i.slot as i32);
            c.descriptor.push(i.descriptor as i32);
            c.count.push(i.count as i32);
            c.durability.push(i.durability as i32);
            c.data.push(i.data.to_vec());
        }
        c
    }
}

const INSERT_ITEMS: &str = "INSERT INTO items (id, owner, slot, descriptor, count, durability, data)
     SELECT * FROM unnest($1::bigint[], $2::int[], $3::int[], $4::int[], $5::int[], $6::int[], $7::bytea[])";

impl PostgresMmoConn {
    async fn client(&mut self) -> Result<&mut Client, StoreError> {
        self.client.drop_if(|c| c.is_closed());
        let target = &self.target;
        self.client.get(|| target.client()).await
    }
}

impl MmoTarget for PostgresTarget {
    type Conn = PostgresMmoConn;

    fn describe(&self) -> String {
        aggro_core::mobile::MobileTarget::describe(self)
    }

    async fn connect(&self) -> Result<PostgresMmoConn, StoreError> {
        let client = self.client().await?;
        Ok(PostgresMmoConn { target: self.clone(), client: Reconnecting::new(client) })
    }

    async fn create(&self, world: &WorldSpec) -> Result<(), StoreError> {
        let c = self.client().await?;
        super::create_world_tables(&c).await?;
        c.batch_execute(&mmo_schema("BYTEA")).await.map_err(classify)?;
        c.execute("INSERT INTO id_sequence VALUES ($1)", &[&(world.first_free_id() as i64)]).await.map_err(classify)?;
        let ids = |n: u32| (0..n as i32).collect::<Vec<i32>>();
        let (q, d) = (world.quest_templates(), world.item_descriptors);
        let q_data: Vec<Vec<u8>> = (0..q).map(|i| template(1, i)).collect();
        let d_data: Vec<Vec<u8>> = (0..d).map(|i| template(2, i)).collect();
        c.execute("INSERT INTO quest_templates SELECT * FROM unnest($1::int[], $2::bytea[])", &[&ids(q), &q_data]).await.map_err(classify)?;
        c.execute("INSERT INTO item_descriptors SELECT * FROM unnest($1::int[], $2::bytea[])", &[&ids(d), &d_data]).await.map_err(classify)?;
        let g = world.guilds();
        let names: Vec<String> = (0..g).map(guild_name).collect();
        let motds: Vec<Vec<u8>> = (0..g).map(guild_motd).collect();
        c.execute("INSERT INTO guilds SELECT * FROM unnest($1::int[], $2::text[], $3::bytea[])", &[&ids(g), &names, &motds])
            .await
            .map_err(classify)?;
        let ranks = guild_ranks(world.ranks_per_guild);
        let (mut rg, mut rr, mut rn, mut rp) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for guild in 0..g as i32 {
            for r in &ranks {
                rg.push(guild);
                rr.push(r.rank as i32);
                rn.push(r.name.clone());
                rp.push(r.permissions as i64);
            }
        }
        c.execute("INSERT INTO guild_ranks SELECT * FROM unnest($1::int[], $2::int[], $3::text[], $4::bigint[])", &[&rg, &rr, &rn, &rp])
            .await
            .map_err(classify)?;
        Ok(())
    }

    fn populate_connections(&self) -> usize {
        4
    }

    async fn finish_population(&self) -> Result<(), StoreError> {
        self.client().await?.batch_execute("ANALYZE").await.map_err(classify)
    }

    async fn scan(&self) -> Result<WorldScan, StoreError> {
        let c = self.client().await?;
        let players = c.query("SELECT id, item_count, lease_owner, lease_until FROM players", &[]).await.map_err(classify)?;
        let items = c.query("SELECT id, owner FROM items", &[]).await.map_err(classify)?;
        Ok(WorldScan {
            players: players
                .iter()
                .map(|r| {
                    let owner: Option<i64> = r.get(2);
                    let until: Option<i64> = r.get(3);
                    PlayerCheck {
                        id: r.get::<_, i32>(0) as u32,
                        item_count: r.get::<_, i32>(1) as u32,
                        lease_until_ms: owner.and(until).map(|u| u as u64),
                    }
                })
                .collect(),
            items: items.iter().map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, i32>(1) as u32)).collect(),
        })
    }
}

impl MmoConn for PostgresMmoConn {
    async fn insert(&mut self, accounts: &[AccountGraph]) -> Result<(), StoreError> {
        let c = self.client().await?;
        let tx = c.transaction().await.map_err(classify)?;
        let a_id: Vec<i32> = accounts.iter().map(|a| a.account.id as i32).collect();
        let a_name: Vec<&str> = accounts.iter().map(|a| a.account.username.as_str()).collect();
        let zeros = vec![0i32; accounts.len()];
        let zeros64 = vec![0i64; accounts.len()];
        tx.execute("INSERT INTO accounts SELECT * FROM unnest($1::int[], $2::text[], $3::int[], $4::bigint[])", &[&a_id, &a_name, &zeros, &zeros64])
            .await
            .map_err(classify)?;
        let players: Vec<&PlayerGraph> = accounts.iter().flat_map(|a| &a.players).collect();
        let mut cols = PlayerColumns::default();
        players.iter().for_each(|p| cols.push(&p.core));
        let parts: Vec<Vec<&[u8]>> = (0..7).map(|i| players.iter().map(|p| p.parts.0[i].as_slice()).collect()).collect();
        tx.execute(
            &format!(
                "INSERT INTO players ({PLAYER_COLUMNS}) SELECT * FROM unnest($1::int[], $2::int[], $3::text[], $4::bigint[],
                 $5::bigint[], $6::real[], $7::real[], $8::real[], $9::int[], $10::int[], $11::int[], $12::int[], $13::int[],
                 $14::bytea[], $15::bytea[], $16::bytea[], $17::bytea[], $18::bytea[], $19::bytea[], $20::bytea[], $21::bytea[], $22::bytea[])"
            ),
            &[
                &cols.id,
                &cols.account,
                &cols.name,
                &cols.money,
                &cols.exp,
                &cols.x,
                &cols.y,
                &cols.z,
                &cols.guild,
                &cols.rank,
                &cols.item_count,
                &cols.slot_end,
                &cols.quest_count,
                &cols.friends,
                &cols.ignores,
                &parts[0],
                &parts[1],
                &parts[2],
                &parts[3],
                &parts[4],
                &parts[5],
                &parts[6],
            ],
        )
        .await
        .map_err(classify)?;
        let i = ItemColumns::of(players.iter().flat_map(|p| &p.items));
        tx.execute(INSERT_ITEMS, &[&i.id, &i.owner, &i.slot, &i.descriptor, &i.count, &i.durability, &i.data]).await.map_err(classify)?;
        tx.commit().await.map_err(classify)
    }

    async fn login(&mut self, username: &str, now_ms: u64) -> Result<Account, StoreError> {
        let c = self.client().await?;
        let row = c
            .query_opt(
                "UPDATE accounts SET login_count = login_count + 1, last_login = $2 WHERE username = $1
                 RETURNING id, login_count, last_login",
                &[&username, &(now_ms as i64)],
            )
            .await
            .map_err(classify)?
            .ok_or_else(|| missing(format!("user {username:?}")))?;
        let id: i32 = row.get(0);
        let players = c.query("SELECT id FROM players WHERE account = $1 ORDER BY id", &[&id]).await.map_err(classify)?;
        Ok(Account {
            id: id as u32,
            username: username.to_string(),
            login_count: row.get::<_, i32>(1) as u32,
            last_login_ms: row.get::<_, i64>(2) as u64,
            players: players.iter().map(|r| r.get::<_, i32>(0) as u32).collect(),
        })
    }

    async fn load_player(&mut self, id: u32, lease: Lease) -> Result<PlayerGraph, StoreError> {
        let c = self.client().await?;
        let pid = id as i32;
        let taken = c
            .execute(
                "UPDATE players SET lease_owner = $2, lease_until = $3
                 WHERE id = $1 AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until < $4)",
                &[&pid, &(lease.owner as i64), &(lease.until_ms as i64), &(lease.now_ms as i64)],
            )
            .await
            .map_err(classify)?;
        if taken == 0 {
            let holder = c.query_opt("SELECT lease_owner, lease_until FROM players WHERE id = $1", &[&pid]).await.map_err(classify)?;
            return Err(match holder {
                None => missing(format!("player {id}")),
                Some(r) => StoreError::new(
                    ErrorClass::Locked,
                    format!(
                        "player {id} is leased to {:#x} until {}",
                        r.get::<_, Option<i64>>(0).unwrap_or(0) as u64,
                        r.get::<_, Option<i64>>(1).unwrap_or(0)
                    ),
                ),
            });
        }
        let r = c.query_one(&format!("SELECT {PLAYER_COLUMNS} FROM players WHERE id = $1"), &[&pid]).await.map_err(classify)?;
        let core = PlayerCore {
            id,
            account: r.get::<_, i32>(1) as u32,
            name: r.get(2),
            money: r.get(3),
            exp: r.get(4),
            pos: [r.get(5), r.get(6), r.get(7)],
            guild: r.get::<_, i32>(8) as u32,
            rank: r.get::<_, i32>(9) as u8,
            item_count: r.get::<_, i32>(10) as u32,
            slot_end: r.get::<_, i32>(11) as u16,
            quest_count: r.get::<_, i32>(12) as u32,
            friends: blob_to_ids(r.get(13)).ok_or_else(|| corrupt("a friend list"))?,
            ignores: blob_to_ids(r.get(14)).ok_or_else(|| corrupt("an ignore list"))?,
        };
        let parts = PlayerParts(std::array::from_fn(|i| r.get::<_, Vec<u8>>(15 + i)));
        let items = c
            .query(&format!("SELECT {ITEM_COLUMNS} FROM items WHERE owner = $1"), &[&pid])
            .await
            .map_err(classify)?
            .iter()
            .map(|r| Item {
                id: r.get::<_, i64>(0) as u64,
                owner: r.get::<_, i32>(1) as u32,
                slot: r.get::<_, i32>(2) as u16,
                descriptor: r.get::<_, i32>(3) as u32,
                count: r.get::<_, i32>(4) as u16,
                durability: r.get::<_, i32>(5) as u16,
                data: r.get::<_, &[u8]>(6).try_into().unwrap_or([0; ITEM_DATA_BYTES]),
            })
            .collect();
        let quests = c
            .query(&format!("SELECT {QUEST_COLUMNS} FROM quests WHERE player = $1 ORDER BY seq"), &[&pid])
            .await
            .map_err(classify)?
            .iter()
            .map(|r| Quest {
                id: r.get::<_, i64>(0) as u64,
                player: r.get::<_, i32>(1) as u32,
                seq: r.get::<_, i32>(2) as u32,
                template: r.get::<_, i32>(3) as u32,
                completed_ms: r.get::<_, i64>(4) as u64,
            })
            .collect();
        Ok(PlayerGraph { core, parts, items, quests })
    }

    async fn roster(&mut self, guild: u32) -> Result<Roster, StoreError> {
        let c = self.client().await?;
        let g = guild as i32;
        let name: String = c
            .query_opt("SELECT name FROM guilds WHERE id = $1", &[&g])
            .await
            .map_err(classify)?
            .ok_or_else(|| missing(format!("guild {guild}")))?
            .get(0);
        let ranks = c
            .query("SELECT rank, name, permissions FROM guild_ranks WHERE guild = $1 ORDER BY rank", &[&g])
            .await
            .map_err(classify)?
            .iter()
            .map(|r| GuildRank { rank: r.get::<_, i32>(0) as u8, name: r.get(1), permissions: r.get::<_, i64>(2) as u32 })
            .collect();
        let members = c
            .query("SELECT id, name, rank FROM players WHERE guild = $1", &[&g])
            .await
            .map_err(classify)?
            .iter()
            .map(|r| Member { player: r.get::<_, i32>(0) as u32, name: r.get(1), rank: r.get::<_, i32>(2) as u8 })
            .collect();
        Ok(Roster { guild, name, ranks, members })
    }

    async fn write(&mut self, set: &ChangeSet) -> Result<(), StoreError> {
        let c = self.client().await?;
        let tx = c.transaction().await.map_err(classify)?;
        let mut p = PlayerColumns::default();
        set.players.iter().for_each(|w| p.push(&w.core));
        let release: Vec<bool> = set.players.iter().map(|w| w.release).collect();
        let changed = tx
            .execute(
                "UPDATE players p SET name = u.name, money = u.money, exp = u.exp, x = u.x, y = u.y, z = u.z,
                     guild = u.guild, rank = u.rank, item_count = u.item_count, slot_end = u.slot_end,
                     quest_count = u.quest_count, friends = u.friends, ignores = u.ignores,
                     lease_owner = CASE WHEN u.release THEN NULL ELSE p.lease_owner END,
                     lease_until = CASE WHEN u.release THEN NULL ELSE $16::bigint END
                 FROM unnest($1::int[], $2::text[], $3::bigint[], $4::bigint[], $5::real[], $6::real[], $7::real[],
                     $8::int[], $9::int[], $10::int[], $11::int[], $12::int[], $13::bytea[], $14::bytea[], $15::bool[])
                     AS u(id, name, money, exp, x, y, z, guild, rank, item_count, slot_end, quest_count, friends, ignores, release)
                 WHERE p.id = u.id AND p.lease_owner = $17",
                &[
                    &p.id,
                    &p.name,
                    &p.money,
                    &p.exp,
                    &p.x,
                    &p.y,
                    &p.z,
                    &p.guild,
                    &p.rank,
                    &p.item_count,
                    &p.slot_end,
                    &p.quest_count,
                    &p.friends,
                    &p.ignores,
                    &release,
                    &(set.lease_until_ms as i64),
                    &(set.owner as i64),
                ],
            )
            .await
            .map_err(classify)?;
        if changed != set.players.len() as u64 {
            // Dropping the transaction rolls the whole set back.
            return Err(StoreError::new(
                ErrorClass::Locked,
                format!(
                    "{} of {} players are not leased to this writer ({:#x}) any more",
                    set.players.len() as u64 - changed,
                    set.players.len(),
                    set.owner
                ),
            ));
        }
        if !set.delete_items.is_empty() {
            let ids: Vec<i64> = set.delete_items.iter().map(|i| i.id as i64).collect();
            tx.execute("DELETE FROM items WHERE id = ANY($1)", &[&ids]).await.map_err(classify)?;
        }
        if !set.put_items.is_empty() {
            let i = ItemColumns::of(&set.put_items);
            tx.execute(
                &format!(
                    "{INSERT_ITEMS} ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, slot = excluded.slot,
                     descriptor = excluded.descriptor, count = excluded.count, durability = excluded.durability, data = excluded.data"
                ),
                &[&i.id, &i.owner, &i.slot, &i.descriptor, &i.count, &i.durability, &i.data],
            )
            .await
            .map_err(classify)?;
        }
        if !set.new_quests.is_empty() {
            let q = &set.new_quests;
            let id: Vec<i64> = q.iter().map(|x| x.id as i64).collect();
            let player: Vec<i32> = q.iter().map(|x| x.player as i32).collect();
            let seq: Vec<i32> = q.iter().map(|x| x.seq as i32).collect();
            let tpl: Vec<i32> = q.iter().map(|x| x.template as i32).collect();
            let at: Vec<i64> = q.iter().map(|x| x.completed_ms as i64).collect();
            tx.execute(
                "INSERT INTO quests SELECT * FROM unnest($1::bigint[], $2::int[], $3::int[], $4::int[], $5::bigint[])",
                &[&id, &player, &seq, &tpl, &at],
            )
            .await
            .map_err(classify)?;
        }
        tx.commit().await.map_err(classify)
    }

    async fn reserve_ids(&mut self, n: u64) -> Result<u64, StoreError> {
        let c = self.client().await?;
        let row = c.query_one("UPDATE id_sequence SET next = next + $1 RETURNING next - $1", &[&(n as i64)]).await.map_err(classify)?;
        Ok(row.get::<_, i64>(0) as u64)
    }
}
