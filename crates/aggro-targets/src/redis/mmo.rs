//! The MMO world in Redis, under the `{mmo}:` prefix: hashes, sets and lists.
//!
//! | key | type | holds |
//! |---|---|---|
//! | `{mmo}:a:ID` | hash | `username`, `login_count`, `last_login`, `players` |
//! | `{mmo}:u:NAME` | string | account id |
//! | `{mmo}:p:ID` | hash | `core` and the seven parts |
//! | `{mmo}:lease:ID` | string, `PX` expiry | the owner holding the player |
//! | `{mmo}:inv:ID` | hash | item id → item |
//! | `{mmo}:q:ID` | list | the player's quests |
//! | `{mmo}:g:ID` / `{mmo}:r:ID` / `{mmo}:m:ID` | hash / hash / set | guild, its ranks, its members |
//! | `{mmo}:tq:ID` / `{mmo}:td:ID` | string | quest template / item descriptor |
//! | `{mmo}:seq` | string | next free id |
//!
//! `{mmo}` is a hash tag: on a Redis Cluster the whole world is in one slot, so
//! one master. A change set spans players (a trade, a guild move) and a
//! cluster makes a transaction atomic only within a slot; aggro keeps the
//! world's invariants rather than spread it — on a cluster the MMO gains
//! failover (a replica takes over), not capacity.
//!
//! LoadPlayer is `SET {mmo}:lease:ID owner NX PX ttl` (Redis ends the lease
//! itself). A change set `WATCH`es its players' leases, checks them with one
//! `MGET`, then writes everything in one `MULTI … EXEC` pipeline: if any
//! lease changed in between, `EXEC` does nothing and the set is refused with
//! `Locked`. Durability is the server's (`appendfsync`).

use super::connection::Connection;
use super::resp::Reply;
use super::{Link, RedisTarget, delete_matching, scan_keys};
use aggro_core::mmo::codec::*;
use aggro_core::mmo::*;
use aggro_core::{ErrorClass, StoreError};

fn k(kind: &str, id: impl std::fmt::Display) -> Vec<u8> {
    format!("{{mmo}}:{kind}:{id}").into_bytes()
}

fn missing(what: String) -> StoreError {
    StoreError::new(ErrorClass::Data, format!("{what} is not in the database (run `aggro mmo populate` first)"))
}

fn corrupt(what: &str) -> StoreError {
    StoreError::new(ErrorClass::Data, format!("redis: {what} does not decode"))
}

fn bulk(r: Reply) -> Option<Vec<u8>> {
    match r {
        Reply::Bulk(b) => b,
        _ => None,
    }
}

fn array(r: Reply) -> Result<Vec<Reply>, StoreError> {
    match r {
        Reply::Array(Some(items)) => Ok(items),
        Reply::Array(None) => Ok(Vec::new()),
        Reply::Error(e) => Err(StoreError::new(ErrorClass::Server, e)),
        _ => Err(StoreError::new(ErrorClass::Protocol, "expected an array reply")),
    }
}

/// Sends the pushed commands and reads `n` replies; the first error reply
/// fails the batch (after every reply is read, so the connection stays in step).
async fn replies(c: &mut Connection, n: usize) -> Result<Vec<Reply>, StoreError> {
    c.flush().await?;
    let mut out = Vec::with_capacity(n);
    let mut failed = None;
    for _ in 0..n {
        match c.read().await? {
            Reply::Error(e) => failed = failed.or(Some(e)),
            r => out.push(r),
        }
    }
    match failed {
        Some(e) => Err(StoreError::new(ErrorClass::Server, e)),
        None => Ok(out),
    }
}

/// One game server's connection, re-opened if it breaks.
pub struct RedisMmoConn {
    link: Link,
}

impl RedisMmoConn {
    async fn conn(&mut self) -> Result<&mut Connection, StoreError> {
        self.link.conn().await
    }

    fn checked<T>(&mut self, r: Result<T, StoreError>) -> Result<T, StoreError> {
        self.link.keep_if_healthy(r)
    }

    async fn try_write(&mut self, set: &ChangeSet) -> Result<(), StoreError> {
        let c = self.conn().await?;
        let leases: Vec<Vec<u8>> = set.players.iter().map(|p| k("lease", p.core.id)).collect();
        let owner = set.owner.to_string();
        let mut watch: Vec<&[u8]> = vec![b"WATCH"];
        watch.extend(leases.iter().map(Vec::as_slice));
        c.push(&watch);
        watch[0] = b"MGET";
        c.push(&watch);
        let mut r = replies(c, 2).await?;
        let held = array(r.pop().unwrap_or(Reply::Array(None)))?;
        if let Some((p, _)) = set.players.iter().zip(held).find(|(_, h)| bulk(h.clone()).as_deref() != Some(owner.as_bytes())) {
            c.push(&[b"UNWATCH"]);
            replies(c, 1).await?;
            return Err(StoreError::new(
                ErrorClass::Locked,
                format!("player {} is not leased to this writer ({:#x}) any more", p.core.id, set.owner),
            ));
        }
        let ttl = set.lease_until_ms.saturating_sub(set.now_ms).max(1).to_string();
        c.push(&[b"MULTI"]);
        let mut n = 1;
        for (p, lease) in set.players.iter().zip(&leases) {
            c.push(&[b"HSET", &k("p", p.core.id), b"core", &encode_core(&p.core)]);
            if p.release {
                c.push(&[b"DEL", lease]);
            } else {
                c.push(&[b"SET", lease, owner.as_bytes(), b"PX", ttl.as_bytes()]);
            }
            n += 2;
        }
        for i in &set.delete_items {
            c.push(&[b"HDEL", &k("inv", i.owner), i.id.to_string().as_bytes()]);
            n += 1;
        }
        for i in &set.put_items {
            c.push(&[b"HSET", &k("inv", i.owner), i.id.to_string().as_bytes(), &encode_item(i)]);
            n += 1;
        }
        for q in &set.new_quests {
            c.push(&[b"RPUSH", &k("q", q.player), &encode_quest(q)]);
            n += 1;
        }
        for m in &set.guild_moves {
            let id = m.player.to_string();
            c.push(&[b"SREM", &k("m", m.from), id.as_bytes()]);
            c.push(&[b"SADD", &k("m", m.to), id.as_bytes()]);
            n += 2;
        }
        c.push(&[b"EXEC"]);
        let mut r = replies(c, n + 1).await?;
        match r.pop() {
            Some(Reply::Array(Some(_))) => Ok(()),
            Some(Reply::Array(None)) => {
                Err(StoreError::new(ErrorClass::Locked, format!("a lease of this writer ({:#x}) changed during the write", set.owner)))
            }
            _ => Err(StoreError::new(ErrorClass::Protocol, "unexpected EXEC reply")),
        }
    }
}

impl MmoTarget for RedisTarget {
    type Conn = RedisMmoConn;

    fn describe(&self) -> String {
        aggro_core::mobile::MobileTarget::describe(self)
    }

    async fn connect(&self) -> Result<RedisMmoConn, StoreError> {
        Ok(RedisMmoConn { link: Link::open(self).await? })
    }

    async fn create(&self, world: &WorldSpec) -> Result<(), StoreError> {
        let mut c = self.open().await?;
        super::forget_world(&mut c, "mmo").await?;
        delete_matching(&mut c, "{mmo}:*").await?;
        c.push(&[b"SET", b"{mmo}:seq", world.first_free_id().to_string().as_bytes()]);
        let mut n = 1;
        for t in 0..world.quest_templates() {
            c.push(&[b"SET", &k("tq", t), &template(1, t)]);
            n += 1;
        }
        for d in 0..world.item_descriptors {
            c.push(&[b"SET", &k("td", d), &template(2, d)]);
            n += 1;
        }
        let ranks = guild_ranks(world.ranks_per_guild);
        for g in 0..world.guilds() {
            c.push(&[b"HSET", &k("g", g), b"name", guild_name(g).as_bytes(), b"motd", &guild_motd(g)]);
            let encoded: Vec<(String, Vec<u8>)> = ranks.iter().map(|r| (r.rank.to_string(), encode_rank(r))).collect();
            let key = k("r", g);
            let mut args: Vec<&[u8]> = vec![b"HSET", &key];
            for (f, v) in &encoded {
                args.push(f.as_bytes());
                args.push(v);
            }
            c.push(&args);
            n += 2;
        }
        replies(&mut c, n).await.map(drop)
    }

    async fn scan(&self) -> Result<WorldScan, StoreError> {
        let mut c = self.open().await?;
        let mut scan = WorldScan::default();
        let keys = scan_keys(&mut c, "{mmo}:p:*").await?;
        for chunk in keys.chunks(500) {
            for key in chunk {
                let id = &key[b"{mmo}:p:".len()..];
                c.push(&[b"HGET", key, b"core"]);
                c.push(&[b"PTTL", &[b"{mmo}:lease:", id].concat()]);
                c.push(&[b"HVALS", &[b"{mmo}:inv:", id].concat()]);
            }
            let mut r = replies(&mut c, chunk.len() * 3).await?.into_iter();
            let now = aggro_core::mmo::now_ms();
            for _ in chunk {
                let (core, ttl, items) = (r.next(), r.next(), r.next());
                let core = core.and_then(bulk).and_then(|b| decode_core(&b)).ok_or_else(|| corrupt("a player"))?;
                let lease_until_ms = match ttl {
                    Some(Reply::Int(ms)) if ms >= 0 => Some(now + ms as u64),
                    _ => None,
                };
                scan.players.push(PlayerCheck { id: core.id, item_count: core.item_count, lease_until_ms });
                for v in array(items.unwrap_or(Reply::Array(None)))? {
                    let item = bulk(v).and_then(|b| decode_item(&b)).ok_or_else(|| corrupt("an item"))?;
                    scan.items.push((item.id, item.owner));
                }
            }
        }
        Ok(scan)
    }
}

impl MmoConn for RedisMmoConn {
    async fn insert(&mut self, accounts: &[AccountGraph]) -> Result<(), StoreError> {
        let r = async {
            let c = self.conn().await?;
            let mut n = 0;
            for g in accounts {
                let a = &g.account;
                let mut players = Writer::default();
                players.ids(&a.players);
                c.push(&[
                    b"HSET",
                    &k("a", a.id),
                    b"username",
                    a.username.as_bytes(),
                    b"login_count",
                    b"0",
                    b"last_login",
                    b"0",
                    b"players",
                    &players.0,
                ]);
                c.push(&[b"SET", &k("u", &a.username), a.id.to_string().as_bytes()]);
                n += 2;
                for p in &g.players {
                    let id = p.core.id;
                    let core = encode_core(&p.core);
                    let pk = k("p", id);
                    let mut args: Vec<&[u8]> = vec![b"HSET", &pk, b"core", &core];
                    for (name, part) in PART_NAMES.iter().zip(&p.parts.0) {
                        args.push(name.as_bytes());
                        args.push(part);
                    }
                    c.push(&args);
                    let ik = k("inv", id);
                    let fields: Vec<(String, [u8; ITEM_BYTES])> = p.items.iter().map(|i| (i.id.to_string(), encode_item(i))).collect();
                    let mut args: Vec<&[u8]> = vec![b"HSET", &ik];
                    for (f, v) in &fields {
                        args.push(f.as_bytes());
                        args.push(v);
                    }
                    c.push(&args);
                    c.push(&[b"SADD", &k("m", p.core.guild), id.to_string().as_bytes()]);
                    n += 3;
                }
            }
            replies(c, n).await.map(drop)
        }
        .await;
        self.checked(r)
    }

    async fn login(&mut self, username: &str, now_ms: u64) -> Result<Account, StoreError> {
        let r = async {
            let c = self.conn().await?;
            let id = bulk(c.call(&[b"GET", &k("u", username)]).await?).ok_or_else(|| missing(format!("user {username:?}")))?;
            let id: u32 = std::str::from_utf8(&id).ok().and_then(|s| s.parse().ok()).ok_or_else(|| corrupt("a user name index"))?;
            let ak = k("a", id);
            c.push(&[b"HINCRBY", &ak, b"login_count", b"1"]);
            c.push(&[b"HSET", &ak, b"last_login", now_ms.to_string().as_bytes()]);
            c.push(&[b"HGET", &ak, b"players"]);
            let mut r = replies(c, 3).await?.into_iter();
            let login_count = r.next().and_then(|r| r.as_i64()).unwrap_or(0) as u32;
            let players = r.nth(1).and_then(bulk).ok_or_else(|| missing(format!("account {id}")))?;
            let players = Reader::new(&players).ids().ok_or_else(|| corrupt("an account's players"))?;
            Ok(Account { id, username: username.to_string(), login_count, last_login_ms: now_ms, players })
        }
        .await;
        self.checked(r)
    }

    async fn load_player(&mut self, id: u32, lease: Lease) -> Result<PlayerGraph, StoreError> {
        let r = async {
            let c = self.conn().await?;
            let lk = k("lease", id);
            let owner = lease.owner.to_string();
            let ttl = lease.until_ms.saturating_sub(lease.now_ms).max(1).to_string();
            let taken = c.call(&[b"SET", &lk, owner.as_bytes(), b"NX", b"PX", ttl.as_bytes()]).await?;
            if !matches!(taken, Reply::Status(_)) {
                // Already ours (a reload) is fine: take it again for the full length.
                let holder = bulk(c.call(&[b"GET", &lk]).await?);
                if holder.as_deref() != Some(owner.as_bytes()) {
                    let who = holder.map(|h| String::from_utf8_lossy(&h).into_owned()).unwrap_or_default();
                    return Err(StoreError::new(ErrorClass::Locked, format!("player {id} is leased to {who}")));
                }
                c.call(&[b"SET", &lk, owner.as_bytes(), b"PX", ttl.as_bytes()]).await?;
            }
            let mut fields: Vec<&[u8]> = vec![b"HMGET", b"", b"core"];
            let pk = k("p", id);
            fields[1] = &pk;
            fields.extend(PART_NAMES.iter().map(|n| n.as_bytes()));
            c.push(&fields);
            c.push(&[b"HVALS", &k("inv", id)]);
            c.push(&[b"LRANGE", &k("q", id), b"0", b"-1"]);
            let mut r = replies(c, 3).await?.into_iter();
            let mut values = array(r.next().unwrap_or(Reply::Array(None)))?.into_iter().map(bulk);
            let core = values.next().flatten().ok_or_else(|| missing(format!("player {id}")))?;
            let core = decode_core(&core).ok_or_else(|| corrupt("a player"))?;
            let parts: Vec<Vec<u8>> = values.map(|v| v.unwrap_or_default()).collect();
            let parts = PlayerParts(parts.try_into().map_err(|_| corrupt("a player's parts"))?);
            let items = array(r.next().unwrap_or(Reply::Array(None)))?
                .into_iter()
                .map(|v| bulk(v).and_then(|b| decode_item(&b)).ok_or_else(|| corrupt("an item")))
                .collect::<Result<_, _>>()?;
            let quests = array(r.next().unwrap_or(Reply::Array(None)))?
                .into_iter()
                .map(|v| bulk(v).and_then(|b| decode_quest(&b)).ok_or_else(|| corrupt("a quest")))
                .collect::<Result<_, _>>()?;
            Ok(PlayerGraph { core, parts, items, quests })
        }
        .await;
        self.checked(r)
    }

    async fn roster(&mut self, guild: u32) -> Result<Roster, StoreError> {
        let r = async {
            let c = self.conn().await?;
            c.push(&[b"HGET", &k("g", guild), b"name"]);
            c.push(&[b"HVALS", &k("r", guild)]);
            c.push(&[b"SMEMBERS", &k("m", guild)]);
            let mut r = replies(c, 3).await?.into_iter();
            let name = r.next().and_then(bulk).ok_or_else(|| missing(format!("guild {guild}")))?;
            let mut ranks: Vec<GuildRank> = array(r.next().unwrap_or(Reply::Array(None)))?
                .into_iter()
                .map(|v| bulk(v).and_then(|b| decode_rank(&b)).ok_or_else(|| corrupt("a guild rank")))
                .collect::<Result<_, _>>()?;
            ranks.sort_by_key(|r| r.rank);
            let ids = array(r.next().unwrap_or(Reply::Array(None)))?;
            for id in &ids {
                let id = bulk(id.clone()).unwrap_or_default();
                c.push(&[b"HGET", &[b"{mmo}:p:".as_slice(), &id].concat(), b"core"]);
            }
            let members = replies(c, ids.len())
                .await?
                .into_iter()
                .map(|v| {
                    let core = bulk(v).and_then(|b| decode_core(&b)).ok_or_else(|| corrupt("a member"))?;
                    Ok(Member { player: core.id, name: core.name, rank: core.rank })
                })
                .collect::<Result<_, StoreError>>()?;
            Ok(Roster { guild, name: String::from_utf8_lossy(&name).into_owned(), ranks, members })
        }
        .await;
        self.checked(r)
    }

    async fn write(&mut self, set: &ChangeSet) -> Result<(), StoreError> {
        let r = self.try_write(set).await;
        self.checked(r)
    }

    async fn reserve_ids(&mut self, n: u64) -> Result<u64, StoreError> {
        let r = async {
            let c = self.conn().await?;
            let next = c.call(&[b"INCRBY", b"{mmo}:seq", n.to_string().as_bytes()]).await?;
            next.as_i64().map(|v| v as u64 - n).ok_or_else(|| missing("the id sequence".into()))
        }
        .await;
        self.checked(r)
    }
}
