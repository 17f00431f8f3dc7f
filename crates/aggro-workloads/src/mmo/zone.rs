//! A game server's zone: the players it holds in memory, what changed since
//! the last push, and the paper's actions on them.
//!
//! Only Login, LoadPlayer, GuildRoster and the three pushes (WriteList,
//! EjectList, Checkpoint) reach the store; every other action changes objects
//! in memory and marks them dirty, as the paper's game-server clients do.

use super::ledger::ItemLedger;
use super::profile::Action;
use aggro_core::mmo::*;
use aggro_core::rng::Rng;
use aggro_core::{ErrorClass, StoreError};
use std::collections::HashSet;

/// Ids reserved from the store at a time.
const ID_BLOCK: u64 = 10_000;
/// Players tried before LoadPlayer gives up (each refusal is counted).
const LOAD_TRIES: u32 = 10;

/// What a zone knows of an item it holds beyond the item itself. Kept apart from the items, in a
/// vector of their own: a push looks at every held item's mark (~150 per player, every period), and
/// scanning 2-byte marks instead of 56-byte items took the push's own share of the zone thread's
/// samples from 12 % to 3 % (one zone +10-13 %).
#[derive(Clone, Copy, Debug, Default)]
struct Mark {
    /// Changed since the last push.
    dirty: bool,
    /// Never pushed (a delete needs no round trip).
    fresh: bool,
}

/// A player held in memory.
#[derive(Debug)]
struct Loaded {
    core: PlayerCore,
    /// Kept in memory as a game server would, though no action changes them.
    _parts: PlayerParts,
    items: Vec<Item>,
    /// `items[i]`'s mark at `marks[i]`.
    marks: Vec<Mark>,
    free_slots: Vec<u16>,
    quests: u32,
    dirty: bool,
    deleted: Vec<ItemRef>,
    new_quests: Vec<Quest>,
    moved: Option<GuildMove>,
    /// Items created minus deleted since the last push.
    item_delta: i64,
    lease_until_ms: u64,
}

impl Loaded {
    fn new(g: PlayerGraph, lease_until_ms: u64) -> Self {
        let used: HashSet<u16> = g.items.iter().map(|i| i.slot).collect();
        let free_slots = (0..g.core.slot_end).rev().filter(|s| !used.contains(s)).collect();
        Self {
            marks: vec![Mark::default(); g.items.len()],
            items: g.items,
            free_slots,
            quests: g.quests.len() as u32,
            core: g.core,
            _parts: g.parts,
            dirty: false,
            deleted: Vec::new(),
            new_quests: Vec::new(),
            moved: None,
            item_delta: 0,
            lease_until_ms,
        }
    }
}

/// What a zone has done, for the period table and the result.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ZoneCounts {
    /// Logins made.
    pub logins: u64,
    /// Players loaded (warm-up included).
    pub players_loaded: u64,
    /// Load attempts refused because another server held the player.
    pub lease_refusals: u64,
    /// Guild rosters loaded.
    pub guilds_loaded: u64,
    /// Change sets pushed.
    pub pushes: u64,
    /// Objects pushed.
    pub objects_pushed: u64,
}

impl std::ops::AddAssign<&ZoneCounts> for ZoneCounts {
    fn add_assign(&mut self, o: &ZoneCounts) {
        self.logins += o.logins;
        self.players_loaded += o.players_loaded;
        self.lease_refusals += o.lease_refusals;
        self.guilds_loaded += o.guilds_loaded;
        self.pushes += o.pushes;
        self.objects_pushed += o.objects_pushed;
    }
}

/// One zone of a game server and its connection.
pub struct Zone<C> {
    conn: C,
    world: WorldSpec,
    owner: u64,
    lease_ms: u64,
    rng: Rng,
    players: Vec<Loaded>,
    ejected: Vec<Loaded>,
    present: HashSet<u32>,
    chosen: Option<u32>,
    ids: std::ops::Range<u64>,
    /// Net items per player (created − deleted), committed and in doubt, for `verify`.
    pub ledger: ItemLedger,
    /// Running counts.
    pub counts: ZoneCounts,
}

impl<C: MmoConn> Zone<C> {
    /// An empty zone; `owner` (non-zero, unique among running servers) names
    /// its leases, which last `lease_ms`.
    pub fn new(conn: C, world: WorldSpec, owner: u64, lease_ms: u64, seed: u64) -> Self {
        Self {
            conn,
            world,
            owner,
            lease_ms,
            rng: Rng::seeded(seed),
            players: Vec::new(),
            ejected: Vec::new(),
            present: HashSet::new(),
            chosen: None,
            ids: 0..0,
            ledger: ItemLedger::default(),
            counts: ZoneCounts::default(),
        }
    }

    /// Players in memory.
    pub fn len(&self) -> usize {
        self.players.len()
    }

    /// Whether the zone holds no player.
    pub fn is_empty(&self) -> bool {
        self.players.is_empty()
    }

    /// Logs in and loads players until the zone holds `n` (the warm-up
    /// before the first period). Other zones already hold some players: a load
    /// that met only leased ones (LoadPlayer's `LOAD_TRIES`) is tried again,
    /// until the zone has met as many refusals as the world has players.
    pub async fn fill(&mut self, n: usize) -> Result<(), StoreError> {
        let mut refused = 0;
        while self.players.len() < n {
            self.login().await?;
            match self.load_player(&mut refused).await {
                Err(e) if e.class == ErrorClass::Locked && refused < self.world.players() => {}
                done => done?,
            }
        }
        Ok(())
    }

    /// Runs one action; `refused` counts lease refusals LoadPlayer met.
    pub async fn act(&mut self, action: Action, refused: &mut u32) -> Result<(), StoreError> {
        match action {
            Action::Login => self.login().await,
            Action::LoadPlayer => self.load_player(refused).await,
            Action::MoneyUpdate => {
                self.with_player(|p, rng| {
                    p.core.money += rng.range_inclusive(0, 150) as i64 - 50;
                    p.core.exp += rng.range_inclusive(0, 500) as i64;
                    p.core.pos[0] = (p.core.pos[0] + rng.unit() as f32 * 20.0 - 10.0).clamp(0.0, 8000.0);
                    p.core.pos[1] = (p.core.pos[1] + rng.unit() as f32 * 20.0 - 10.0).clamp(0.0, 8000.0);
                });
                Ok(())
            }
            Action::GuildRoster => self.roster().await,
            Action::JoinGuild => {
                let guilds = self.world.guilds() as u64;
                let lowest = (self.world.ranks_per_guild - 1) as u8;
                self.with_player(|p, rng| {
                    let to = rng.range_inclusive(0, guilds - 1) as u32;
                    if to != p.core.guild {
                        let from = p.moved.map_or(p.core.guild, |m| m.from);
                        p.moved = Some(GuildMove { player: p.core.id, from, to });
                        p.core.guild = to;
                        p.core.rank = lowest;
                    }
                });
                Ok(())
            }
            Action::CreateItem => self.create_item().await,
            Action::WriteList | Action::Checkpoint => self.push_dirty(action == Action::Checkpoint).await,
            Action::DeleteItem => {
                self.with_player(|p, rng| {
                    if p.items.is_empty() {
                        return;
                    }
                    let i = rng.range_inclusive(0, p.items.len() as u64 - 1) as usize;
                    let (item, mark) = (p.items.swap_remove(i), p.marks.swap_remove(i));
                    if !mark.fresh {
                        p.deleted.push(item.at());
                    }
                    p.free_slots.push(item.slot);
                    p.core.item_count -= 1;
                    p.item_delta -= 1;
                });
                Ok(())
            }
            Action::UpdateItem | Action::ItemStackSize => {
                let stack = action == Action::ItemStackSize;
                self.with_player(|p, rng| {
                    if p.items.is_empty() {
                        return;
                    }
                    let i = rng.range_inclusive(0, p.items.len() as u64 - 1) as usize;
                    let item = &mut p.items[i];
                    if stack {
                        item.count = rng.range_inclusive(1, 99) as u16;
                    } else {
                        item.durability = rng.range_inclusive(0, 1000) as u16;
                        item.data[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
                    }
                    p.marks[i].dirty = true;
                });
                Ok(())
            }
            Action::CompleteQuest => self.complete_quest().await,
            Action::Friend | Action::Ignore => {
                let players = self.world.players() as u64;
                let friends = action == Action::Friend;
                self.with_player(|p, rng| {
                    let list = if friends { &mut p.core.friends } else { &mut p.core.ignores };
                    let other = rng.range_inclusive(0, players - 1) as u32;
                    if let Some(i) = list.iter().position(|&f| f == other) {
                        list.remove(i);
                    } else {
                        if list.len() >= MAX_FRIENDS {
                            list.remove(0);
                        }
                        list.push(other);
                    }
                });
                Ok(())
            }
            Action::EjectPlayer => {
                if !self.players.is_empty() {
                    let i = self.pick(self.players.len());
                    let p = self.players.swap_remove(i);
                    self.ejected.push(p);
                }
                Ok(())
            }
            Action::EjectList => self.push_ejected().await,
        }
    }

    fn pick(&mut self, n: usize) -> usize {
        self.rng.range_inclusive(0, n as u64 - 1) as usize
    }

    /// Changes a random player in memory and marks it dirty.
    fn with_player(&mut self, change: impl FnOnce(&mut Loaded, &mut Rng)) {
        if self.players.is_empty() {
            return;
        }
        let i = self.pick(self.players.len());
        let p = &mut self.players[i];
        change(p, &mut self.rng);
        p.dirty = true;
    }

    async fn login(&mut self) -> Result<(), StoreError> {
        let account = self.rng.range_inclusive(0, self.world.accounts as u64 - 1) as u32;
        let a = self.conn.login(&WorldSpec::username(account), now_ms()).await?;
        self.counts.logins += 1;
        let free: Vec<u32> = a.players.iter().copied().filter(|p| !self.present.contains(p)).collect();
        self.chosen = (!free.is_empty()).then(|| free[self.pick(free.len())]);
        Ok(())
    }

    async fn load_player(&mut self, refused: &mut u32) -> Result<(), StoreError> {
        let mut last = None;
        for _ in 0..LOAD_TRIES {
            let id = match self.chosen.take() {
                Some(id) => id,
                None => self.rng.range_inclusive(0, self.world.players() as u64 - 1) as u32,
            };
            if self.present.contains(&id) {
                continue;
            }
            let now = now_ms();
            let lease = Lease { owner: self.owner, now_ms: now, until_ms: now + self.lease_ms };
            match self.conn.load_player(id, lease).await {
                Ok(graph) => {
                    self.present.insert(id);
                    self.players.push(Loaded::new(graph, lease.until_ms));
                    self.counts.players_loaded += 1;
                    return Ok(());
                }
                Err(e) if e.class == ErrorClass::Locked => {
                    *refused += 1;
                    self.counts.lease_refusals += 1;
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| StoreError::new(ErrorClass::Locked, "every player tried is leased elsewhere")))
    }

    async fn roster(&mut self) -> Result<(), StoreError> {
        let guild = match self.players.len() {
            0 => self.rng.range_inclusive(0, self.world.guilds() as u64 - 1) as u32,
            n => {
                let i = self.pick(n);
                self.players[i].core.guild
            }
        };
        self.conn.roster(guild).await?;
        self.counts.guilds_loaded += 1;
        Ok(())
    }

    async fn next_id(&mut self) -> Result<u64, StoreError> {
        if self.ids.is_empty() {
            let first = self.conn.reserve_ids(ID_BLOCK).await?;
            self.ids = first..first + ID_BLOCK;
        }
        Ok(self.ids.next().unwrap_or_default())
    }

    async fn create_item(&mut self) -> Result<(), StoreError> {
        if self.players.is_empty() {
            return Ok(());
        }
        let id = self.next_id().await?;
        let world = self.world;
        self.with_player(|p, rng| {
            let slot = p.free_slots.pop().unwrap_or_else(|| {
                p.core.slot_end += 1;
                p.core.slot_end - 1
            });
            let item = new_item(rng, &world, id, p.core.id, slot);
            p.items.push(item);
            p.marks.push(Mark { dirty: true, fresh: true });
            p.core.item_count += 1;
            p.item_delta += 1;
        });
        Ok(())
    }

    async fn complete_quest(&mut self) -> Result<(), StoreError> {
        if self.players.is_empty() {
            return Ok(());
        }
        let id = self.next_id().await?;
        let templates = self.world.quest_templates() as u64;
        self.with_player(|p, rng| {
            let q = Quest {
                id,
                player: p.core.id,
                seq: p.core.quest_count,
                template: rng.range_inclusive(0, templates - 1) as u32,
                completed_ms: now_ms(),
            };
            p.core.quest_count += 1;
            p.quests += 1;
            p.new_quests.push(q);
        });
        Ok(())
    }

    /// WriteList and Checkpoint: every dirty player in the zone; a
    /// Checkpoint also renews leases past half their length.
    async fn push_dirty(&mut self, renew: bool) -> Result<(), StoreError> {
        let now = now_ms();
        let renew_before = now + self.lease_ms / 2;
        let chosen: Vec<usize> =
            (0..self.players.len()).filter(|&i| self.players[i].dirty || (renew && self.players[i].lease_until_ms < renew_before)).collect();
        let mut players = std::mem::take(&mut self.players);
        let result = self.push(&mut players, &chosen, false).await;
        self.players = players;
        if let Err(e) = &result
            && e.class == ErrorClass::Locked
        {
            // A lease ran out and another server took a player: this zone
            // must not hold any of the set's players any more.
            for &i in chosen.iter().rev() {
                let p = self.players.swap_remove(i);
                self.present.remove(&p.core.id);
            }
        }
        result
    }

    /// EjectList: every ejected player, leases released, memory freed.
    async fn push_ejected(&mut self) -> Result<(), StoreError> {
        let mut ejected = std::mem::take(&mut self.ejected);
        let all: Vec<usize> = (0..ejected.len()).collect();
        let result = self.push(&mut ejected, &all, true).await;
        match &result {
            // Not written: keep them for the next EjectList.
            Err(e) if e.class != ErrorClass::Locked => self.ejected = ejected,
            _ => ejected.iter().for_each(|p| {
                self.present.remove(&p.core.id);
            }),
        }
        result
    }

    /// Writes the chosen players' changes as one change set; on success
    /// their dirty marks are cleared and the ledger updated.
    async fn push(&mut self, players: &mut [Loaded], chosen: &[usize], release: bool) -> Result<(), StoreError> {
        if chosen.is_empty() {
            return Ok(());
        }
        let now = now_ms();
        let until = now + self.lease_ms;
        let mut set = ChangeSet { owner: self.owner, now_ms: now, lease_until_ms: until, ..ChangeSet::default() };
        for &i in chosen {
            let p = &players[i];
            set.players.push(PlayerWrite { core: p.core.clone(), release });
            set.put_items.extend(p.items.iter().zip(&p.marks).filter(|(_, m)| m.dirty).map(|(item, _)| item.clone()));
            set.delete_items.extend_from_slice(&p.deleted);
            set.new_quests.extend_from_slice(&p.new_quests);
            set.guild_moves.extend(p.moved.filter(|m| m.from != m.to));
        }
        if let Err(e) = self.conn.write(&set).await {
            // Not acknowledged is not "not written": a commit can fail after it is written (a sync's
            // error, a broken connection). Items created since the last push may now be in the store, so
            // deleting one later must delete it there too — or the player holds an item it no longer counts.
            let in_doubt = e.class.may_have_committed();
            for &i in chosen {
                players[i].marks.iter_mut().for_each(|m| m.fresh = false);
                if in_doubt {
                    self.ledger.doubted(players[i].core.id, players[i].item_delta);
                }
            }
            return Err(e);
        }
        self.counts.pushes += 1;
        self.counts.objects_pushed += set.objects() as u64;
        for &i in chosen {
            let p = &mut players[i];
            p.marks.fill(Mark::default());
            p.deleted.clear();
            p.new_quests.clear();
            p.moved = None;
            p.dirty = false;
            p.lease_until_ms = until;
            self.ledger.acknowledged(p.core.id, p.item_delta);
            p.item_delta = 0;
        }
        Ok(())
    }

    /// Shuts the zone down cleanly: every player is written and released.
    pub async fn shutdown(&mut self) -> Result<(), StoreError> {
        self.ejected.append(&mut self.players);
        self.push_ejected().await
    }

    /// Items held by the zone's players in memory (for the period table).
    pub fn items_held(&self) -> usize {
        self.players.iter().map(|p| p.items.len()).sum()
    }
}
