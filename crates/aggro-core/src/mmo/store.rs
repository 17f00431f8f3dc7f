//! What a target implements to hold the MMO world.
//!
//! The round trips are the paper's: Login, LoadPlayer (which takes a
//! **lease** on the player in the store — a conditional write, not a flag in
//! the client), GuildRoster, and the change sets that WriteList, EjectList and
//! Checkpoint push. A change set is written atomically and is **fenced**: it
//! is refused with [`ErrorClass::Locked`](crate::ErrorClass::Locked) if any
//! player in it is leased to someone else, so a client whose lease was taken
//! over cannot overwrite the new owner's state (no item duplication).

use super::model::*;
use crate::outcome::StoreError;
use std::future::Future;

/// Milliseconds since the Unix epoch (lease times are wall-clock, shared
/// by every game server and the store).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A lease as LoadPlayer asks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The game server (client) asking; never 0.
    pub owner: u64,
    /// Now, ms since the Unix epoch: a lease that ended before this is free.
    pub now_ms: u64,
    /// When the new lease ends, ms since the Unix epoch.
    pub until_ms: u64,
}

/// A player written by a change set.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerWrite {
    /// Its new core (item and quest counts agree with the set's items and quests).
    pub core: PlayerCore,
    /// Whether the lease is released in the same commit (EjectList).
    pub release: bool,
}

/// A player moving from one guild to another (JoinGuild).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuildMove {
    /// The player.
    pub player: u32,
    /// The guild it left.
    pub from: u32,
    /// The guild it joined.
    pub to: u32,
}

/// Objects a game server pushes in one round trip.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChangeSet {
    /// The writer's lease owner id.
    pub owner: u64,
    /// Now, ms since the Unix epoch.
    pub now_ms: u64,
    /// Leases of written players that are kept are renewed to this time
    /// (a store may skip renewing a lease with more than half its length left).
    pub lease_until_ms: u64,
    /// Every player whose objects change (items, quests and guild moves
    /// below belong to these players only).
    pub players: Vec<PlayerWrite>,
    /// Items created or changed.
    pub put_items: Vec<Item>,
    /// Items deleted; applied before `put_items` (a slot freed and reused
    /// within one set holds the new item).
    pub delete_items: Vec<ItemRef>,
    /// Quests completed.
    pub new_quests: Vec<Quest>,
    /// Guild changes (the cores carry the new guild as well).
    pub guild_moves: Vec<GuildMove>,
}

impl ChangeSet {
    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.players.is_empty()
    }

    /// Objects in the set (players, items, quests).
    pub fn objects(&self) -> usize {
        self.players.len() + self.put_items.len() + self.delete_items.len() + self.new_quests.len()
    }
}

/// One player as `verify` sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlayerCheck {
    /// Player id.
    pub id: u32,
    /// The item count its core records.
    pub item_count: u32,
    /// The end of its lease, if one is recorded (ms since the Unix epoch).
    pub lease_until_ms: Option<u64>,
}

/// Everything `verify` checks, read from the store.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorldScan {
    /// Every player.
    pub players: Vec<PlayerCheck>,
    /// Every item as (item id, owner).
    pub items: Vec<(u64, u32)>,
}

/// A backend that can hold the MMO world (and its world record).
pub trait MmoTarget: crate::world::WorldStore + 'static {
    /// One game server's connection.
    type Conn: MmoConn;

    /// A short description for reports, without credentials.
    fn describe(&self) -> String;

    /// Whether its calls block the calling thread (an embedded database).
    fn blocking(&self) -> bool {
        false
    }

    /// Connections population may use at once.
    fn populate_connections(&self) -> usize {
        if self.blocking() { 1 } else { 4 }
    }

    /// Opens a connection.
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, StoreError>> + Send;

    /// Drops any previous world (the `mmo` world record first) and creates the schema, guilds, ranks, quest
    /// templates, item descriptors and the id sequence (starting at
    /// [`WorldSpec::first_free_id`]). Accounts are inserted afterwards
    /// through connections.
    fn create(&self, world: &WorldSpec) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Called once every account is in (indexes, a checkpoint).
    fn finish_population(&self) -> impl Future<Output = Result<(), StoreError>> + Send {
        async { Ok(()) }
    }

    /// Every player and item, for `verify`.
    fn scan(&self) -> impl Future<Output = Result<WorldScan, StoreError>> + Send;
}

/// One game server's connection: one request in flight.
pub trait MmoConn: Send + 'static {
    /// Inserts accounts with their players, parts and items.
    fn insert(&mut self, accounts: &[AccountGraph]) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Finds the account by user name, counts the login and returns the
    /// account with its players' ids.
    fn login(&mut self, username: &str, now_ms: u64) -> impl Future<Output = Result<Account, StoreError>> + Send;

    /// Takes a lease on player `id` (refused with `Locked` while another
    /// owner's lease runs) and loads its core, parts, items and quests.
    fn load_player(&mut self, id: u32, lease: Lease) -> impl Future<Output = Result<PlayerGraph, StoreError>> + Send;

    /// Loads a guild, its ranks and its members.
    fn roster(&mut self, guild: u32) -> impl Future<Output = Result<Roster, StoreError>> + Send;

    /// Writes a change set atomically, fenced by the writer's leases.
    fn write(&mut self, changes: &ChangeSet) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Reserves `n` ids from the store's sequence and returns the first.
    fn reserve_ids(&mut self, n: u64) -> impl Future<Output = Result<u64, StoreError>> + Send;
}
