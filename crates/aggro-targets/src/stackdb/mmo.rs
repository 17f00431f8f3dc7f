//! The MMO world in stackdb: one key per object, a one-byte tag then
//! big-endian ids, values in [`aggro_core::mmo::codec`]'s encoding.
//!
//! | key | value |
//! |---|---|
//! | `A` account | account |
//! | `U` user name | account id (u32) |
//! | `P` player | core |
//! | `R` player | the seven parts |
//! | `L` player | lease: owner (u64), until ms (u64); absent when free |
//! | `I` player slot(u16) | item |
//! | `Q` player n(u32) | the player's `n`-th quest |
//! | `G` guild | name, message of the day |
//! | `K` guild rank(u8) | rank |
//! | `M` guild | member ids |
//! | `T` id / `D` id | quest template / item descriptor |
//! | `S` | next free id (u64) |
//!
//! Loading a player reads slots `0..slot_end` and quests `0..quest_count`
//! (a deleted item's slot is a miss, which the head table's Bloom words
//! answer without reading the log). Every lease take, change set and login
//! is one write transaction: stackdb has one writer at a time, so reading
//! the lease and writing inside it is atomic, and the commit is all or
//! nothing.

use super::{StackDbTarget, classify};
use aggro_core::mmo::codec::*;
use aggro_core::mmo::*;
use aggro_core::{ErrorClass, StoreError};
use stackdb::{Database, WriteTxn};
use std::sync::Arc;

fn key(tag: u8, id: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(11);
    k.push(tag);
    k.extend_from_slice(&id.to_be_bytes());
    k
}

fn item_key(player: u32, slot: u16) -> Vec<u8> {
    let mut k = key(b'I', player);
    k.extend_from_slice(&slot.to_be_bytes());
    k
}

fn quest_key(player: u32, n: u32) -> Vec<u8> {
    let mut k = key(b'Q', player);
    k.extend_from_slice(&n.to_be_bytes());
    k
}

fn rank_key(guild: u32, rank: u8) -> Vec<u8> {
    let mut k = key(b'K', guild);
    k.push(rank);
    k
}

fn username_key(name: &str) -> Vec<u8> {
    let mut k = vec![b'U'];
    k.extend_from_slice(name.as_bytes());
    k
}

const SEQUENCE: &[u8] = b"S";

/// The keys a population of `world` writes: per account `A` and `U`, per player `P` and `R`, per item
/// `I`, per guild `G`, `M` and its ranks, the templates, the descriptors and the sequence.
fn population_keys(world: &WorldSpec) -> u64 {
    let guilds = world.guilds() as u64 * (2 + world.ranks_per_guild as u64);
    2 * world.accounts as u64
        + 2 * world.players() as u64
        + world.items()
        + guilds
        + world.quest_templates() as u64
        + world.item_descriptors as u64
        + 1
}

fn corrupt(what: &str) -> StoreError {
    StoreError::new(ErrorClass::Data, format!("stackdb: {what} does not decode"))
}

fn missing(what: String) -> StoreError {
    StoreError::new(ErrorClass::Data, format!("{what} is not in the database (run `aggro mmo populate` first)"))
}

fn encode_lease(owner: u64, until_ms: u64) -> [u8; 16] {
    let mut b = [0; 16];
    b[..8].copy_from_slice(&owner.to_le_bytes());
    b[8..].copy_from_slice(&until_ms.to_le_bytes());
    b
}

fn decode_lease(b: &[u8]) -> Option<(u64, u64)> {
    let mut r = Reader::new(b);
    Some((r.u64()?, r.u64()?))
}

fn decode_ids(b: &[u8]) -> Option<Vec<u32>> {
    let mut r = Reader::new(b);
    let ids = r.ids()?;
    r.done().then_some(ids)
}

fn encode_ids(ids: &[u32]) -> Vec<u8> {
    let mut w = Writer::default();
    w.ids(ids);
    w.0
}

/// One game server's handle on the shared database.
pub struct StackDbMmoConn {
    db: Arc<Database>,
    path: std::path::PathBuf,
}

impl StackDbMmoConn {
    fn err(&self) -> impl Fn(stackdb::Error) -> StoreError + '_ {
        |e| classify(&e, &self.path)
    }

    /// Whether `owner` may write player `id` (its lease is `owner`'s);
    /// returns when the lease ends.
    fn fence(&self, txn: &mut WriteTxn<'_>, id: u32, owner: u64) -> Result<u64, StoreError> {
        let lease = txn.get(&key(b'L', id)).map_err(self.err())?;
        match lease.as_deref().and_then(decode_lease) {
            Some((o, until)) if o == owner => Ok(until),
            Some((o, until)) => Err(StoreError::new(
                ErrorClass::Locked,
                format!("player {id} is leased to {o:#x} until {until}; this writer ({owner:#x}) lost its lease"),
            )),
            None => Err(StoreError::new(ErrorClass::Locked, format!("player {id} is not leased to this writer ({owner:#x})"))),
        }
    }

    fn move_member(&self, txn: &mut WriteTxn<'_>, m: &GuildMove) -> Result<(), StoreError> {
        for (guild, join) in [(m.from, false), (m.to, true)] {
            let k = key(b'M', guild);
            let mut ids = match txn.get(&k).map_err(self.err())? {
                Some(b) => decode_ids(&b).ok_or_else(|| corrupt("a guild's member list"))?,
                None => Vec::new(),
            };
            ids.retain(|&p| p != m.player);
            if join {
                ids.push(m.player);
            }
            txn.put(&k, &encode_ids(&ids)).map_err(self.err())?;
        }
        Ok(())
    }

    fn get(&self, k: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.db.get(k).map_err(self.err())
    }

    /// [`get`](Self::get) of many keys, read together (their memory reads overlap).
    fn get_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        self.db.get_many(&keys.iter().map(AsRef::as_ref).collect::<Vec<_>>()).map_err(self.err())
    }
}

impl StackDbTarget {
    pub(super) fn mmo_conn(&self) -> Result<StackDbMmoConn, StoreError> {
        Ok(StackDbMmoConn { db: self.open()?, path: self.path.clone() })
    }
}

impl MmoTarget for StackDbTarget {
    type Conn = StackDbMmoConn;

    fn describe(&self) -> String {
        aggro_core::mobile::MobileTarget::describe(self)
    }

    fn blocking(&self) -> bool {
        true
    }

    async fn connect(&self) -> Result<StackDbMmoConn, StoreError> {
        self.mmo_conn()
    }

    async fn create(&self, world: &WorldSpec) -> Result<(), StoreError> {
        let db = self.create_for(population_keys(world))?;
        let err = |e: stackdb::Error| classify(&e, &self.path);
        let mut txn = db.begin_write();
        txn.put(SEQUENCE, &world.first_free_id().to_le_bytes()).map_err(err)?;
        let ranks = guild_ranks(world.ranks_per_guild);
        for g in 0..world.guilds() {
            let mut w = Writer::default();
            w.blob(guild_name(g).as_bytes()).blob(&guild_motd(g));
            txn.put(&key(b'G', g), &w.0).map_err(err)?;
            for r in &ranks {
                txn.put(&rank_key(g, r.rank), &encode_rank(r)).map_err(err)?;
            }
        }
        for t in 0..world.quest_templates() {
            txn.put(&key(b'T', t), &template(1, t)).map_err(err)?;
        }
        for d in 0..world.item_descriptors {
            txn.put(&key(b'D', d), &template(2, d)).map_err(err)?;
        }
        txn.commit().map_err(err)
    }

    async fn finish_population(&self) -> Result<(), StoreError> {
        self.open()?.checkpoint().map_err(|e| classify(&e, &self.path))
    }

    async fn scan(&self) -> Result<WorldScan, StoreError> {
        let db = self.open()?;
        let mut scan = WorldScan::default();
        let mut leases = std::collections::HashMap::new();
        for entry in db.iter() {
            let (k, v) = entry.map_err(|e| classify(&e, &self.path))?;
            match k.first() {
                Some(b'P') => {
                    let core = decode_core(&v).ok_or_else(|| corrupt("a player"))?;
                    scan.players.push(PlayerCheck { id: core.id, item_count: core.item_count, lease_until_ms: None });
                }
                Some(b'I') => {
                    let item = decode_item(&v).ok_or_else(|| corrupt("an item"))?;
                    scan.items.push((item.id, item.owner));
                }
                Some(b'L') if k.len() == 5 => {
                    let id = u32::from_be_bytes(k[1..5].try_into().unwrap_or_default());
                    leases.insert(id, decode_lease(&v).ok_or_else(|| corrupt("a lease"))?.1);
                }
                _ => {}
            }
        }
        for p in &mut scan.players {
            p.lease_until_ms = leases.get(&p.id).copied();
        }
        Ok(scan)
    }
}

impl MmoConn for StackDbMmoConn {
    async fn insert(&mut self, accounts: &[AccountGraph]) -> Result<(), StoreError> {
        let mut txn = self.db.begin_write();
        for a in accounts {
            txn.put(&key(b'A', a.account.id), &encode_account(&a.account)).map_err(self.err())?;
            txn.put(&username_key(&a.account.username), &a.account.id.to_le_bytes()).map_err(self.err())?;
            for p in &a.players {
                let id = p.core.id;
                txn.put(&key(b'P', id), &encode_core(&p.core)).map_err(self.err())?;
                txn.put(&key(b'R', id), &encode_parts(&p.parts)).map_err(self.err())?;
                for i in &p.items {
                    txn.put(&item_key(id, i.slot), &encode_item(i)).map_err(self.err())?;
                }
                for q in &p.quests {
                    txn.put(&quest_key(id, q.seq), &encode_quest(q)).map_err(self.err())?;
                }
                let joined = GuildMove { player: id, from: p.core.guild, to: p.core.guild };
                self.move_member(&mut txn, &joined)?;
            }
        }
        txn.commit().map_err(self.err())
    }

    async fn login(&mut self, username: &str, now_ms: u64) -> Result<Account, StoreError> {
        let id = self.get(&username_key(username))?.ok_or_else(|| missing(format!("user {username:?}")))?;
        let id = u32::from_le_bytes(id.as_slice().try_into().map_err(|_| corrupt("a user name index"))?);
        let mut txn = self.db.begin_write();
        let k = key(b'A', id);
        let bytes = txn.get(&k).map_err(self.err())?.ok_or_else(|| missing(format!("account {id}")))?;
        let mut account = decode_account(&bytes).ok_or_else(|| corrupt("an account"))?;
        account.login_count += 1;
        account.last_login_ms = now_ms;
        txn.put(&k, &encode_account(&account)).map_err(self.err())?;
        txn.commit().map_err(self.err())?;
        Ok(account)
    }

    async fn load_player(&mut self, id: u32, lease: Lease) -> Result<PlayerGraph, StoreError> {
        let mut txn = self.db.begin_write();
        let k = key(b'L', id);
        if let Some((owner, until)) = txn.get(&k).map_err(self.err())?.as_deref().and_then(decode_lease)
            && owner != lease.owner
            && until > lease.now_ms
        {
            return Err(StoreError::new(ErrorClass::Locked, format!("player {id} is leased to {owner:#x} until {until}")));
        }
        txn.put(&k, &encode_lease(lease.owner, lease.until_ms)).map_err(self.err())?;
        txn.commit().map_err(self.err())?;
        let core = self.get(&key(b'P', id))?.ok_or_else(|| missing(format!("player {id}")))?;
        let core = decode_core(&core).ok_or_else(|| corrupt("a player"))?;
        let parts = self.get(&key(b'R', id))?.ok_or_else(|| missing(format!("player {id}'s parts")))?;
        let parts = decode_parts(&parts).ok_or_else(|| corrupt("a player's parts"))?;
        let slots: Vec<_> = (0..core.slot_end).map(|slot| item_key(id, slot)).collect();
        let mut items = Vec::with_capacity(core.item_count as usize);
        for b in self.get_many(&slots)?.into_iter().flatten() {
            items.push(decode_item(&b).ok_or_else(|| corrupt("an item"))?);
        }
        let numbers: Vec<_> = (0..core.quest_count).map(|n| quest_key(id, n)).collect();
        let mut quests = Vec::with_capacity(core.quest_count as usize);
        for (n, b) in self.get_many(&numbers)?.into_iter().enumerate() {
            let b = b.ok_or_else(|| missing(format!("player {id}'s quest {n}")))?;
            quests.push(decode_quest(&b).ok_or_else(|| corrupt("a quest"))?);
        }
        Ok(PlayerGraph { core, parts, items, quests })
    }

    async fn roster(&mut self, guild: u32) -> Result<Roster, StoreError> {
        let g = self.get(&key(b'G', guild))?.ok_or_else(|| missing(format!("guild {guild}")))?;
        let name = Reader::new(&g).blob().map(|n| String::from_utf8_lossy(n).into_owned()).ok_or_else(|| corrupt("a guild"))?;
        let mut ranks = Vec::new();
        for r in 0..=u8::MAX {
            match self.get(&rank_key(guild, r))? {
                Some(b) => ranks.push(decode_rank(&b).ok_or_else(|| corrupt("a guild rank"))?),
                None => break,
            }
        }
        let ids = match self.get(&key(b'M', guild))? {
            Some(b) => decode_ids(&b).ok_or_else(|| corrupt("a guild's member list"))?,
            None => Vec::new(),
        };
        let cores: Vec<_> = ids.iter().map(|&p| key(b'P', p)).collect();
        let mut members = Vec::with_capacity(ids.len());
        for (p, b) in ids.into_iter().zip(self.get_many(&cores)?) {
            let b = b.ok_or_else(|| missing(format!("member {p}")))?;
            let core = decode_core(&b).ok_or_else(|| corrupt("a player"))?;
            members.push(Member { player: p, name: core.name, rank: core.rank });
        }
        Ok(Roster { guild, name, ranks, members })
    }

    async fn write(&mut self, c: &ChangeSet) -> Result<(), StoreError> {
        // A lease with more than half its length left is not rewritten.
        let renew_before = c.now_ms + c.lease_until_ms.saturating_sub(c.now_ms) / 2;
        let mut txn = self.db.begin_write();
        // The blind writes first: the transaction takes the writer at its first read (the first
        // fence), having looked up the keys written so far and the leases and member lists it will
        // read without it (`stackdb::WriteTxn`).
        // Deletes first: a slot freed and reused within one set holds the new item.
        for i in &c.delete_items {
            txn.delete(&item_key(i.owner, i.slot)).map_err(self.err())?;
        }
        for i in &c.put_items {
            txn.put(&item_key(i.owner, i.slot), &encode_item(i)).map_err(self.err())?;
        }
        for q in &c.new_quests {
            txn.put(&quest_key(q.player, q.seq), &encode_quest(q)).map_err(self.err())?;
        }
        for p in &c.players {
            txn.put(&key(b'P', p.core.id), &encode_core(&p.core)).map_err(self.err())?;
            txn.will_read(&key(b'L', p.core.id));
        }
        for m in &c.guild_moves {
            txn.will_read(&key(b'M', m.from));
            txn.will_read(&key(b'M', m.to));
        }
        for p in &c.players {
            let id = p.core.id;
            let until = self.fence(&mut txn, id, c.owner)?;
            if p.release {
                txn.delete(&key(b'L', id)).map_err(self.err())?;
            } else if until < renew_before {
                txn.put(&key(b'L', id), &encode_lease(c.owner, c.lease_until_ms)).map_err(self.err())?;
            }
        }
        for m in &c.guild_moves {
            self.move_member(&mut txn, m)?;
        }
        txn.commit().map_err(self.err())
    }

    async fn reserve_ids(&mut self, n: u64) -> Result<u64, StoreError> {
        let mut txn = self.db.begin_write();
        let next = txn.get(SEQUENCE).map_err(self.err())?.ok_or_else(|| missing("the id sequence".into()))?;
        let first = u64::from_le_bytes(next.as_slice().try_into().map_err(|_| corrupt("the id sequence"))?);
        txn.put(SEQUENCE, &(first + n).to_le_bytes()).map_err(self.err())?;
        txn.commit().map_err(self.err())?;
        Ok(first)
    }
}
