//! The game model of the Versant paper: Account → 5 Players, each with its
//! parts, Items and Quests; Guilds with 6 ranks; Quest templates and
//! ItemDescriptors. Population is deterministic from (seed, account id), so
//! any shard of the world can be generated on its own.

use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// Sizes in bytes of a player's seven parts: PlayerTaxi, PlayerZones,
/// PlayerBulkData, PlayerHighFreq, Mailbox, Bank, Pet. With 200–300 items of
/// [`ITEM_BYTES`] a player is about 16 KB, as in the paper.
pub const PART_SIZES: [usize; 7] = [64, 256, 2048, 128, 512, 512, 128];
/// Names of the parts, in [`PART_SIZES`] order.
pub const PART_NAMES: [&str; 7] = ["taxi", "zones", "bulk", "high_freq", "mailbox", "bank", "pet"];
/// Bytes of an item's opaque data (enchantments, sockets, binding).
pub const ITEM_DATA_BYTES: usize = 24;
/// Bytes of an encoded item.
pub const ITEM_BYTES: usize = 48;
/// Most friends (and, apart, ignored players) a player keeps.
pub const MAX_FRIENDS: usize = 50;

/// The world's size and ratios; the paper's are the defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorldSpec {
    /// Accounts (the paper: 50,000).
    pub accounts: u32,
    /// Players per account (5).
    pub players_per_account: u32,
    /// Items each player holds at population (100).
    pub items_per_player: u32,
    /// Accounts per guild (10: 5,000 guilds for 50,000 accounts).
    pub accounts_per_guild: u32,
    /// Ranks per guild (6).
    pub ranks_per_guild: u32,
    /// Accounts per quest template (10: 5,000 templates for 50,000 accounts).
    pub accounts_per_quest: u32,
    /// Item descriptors (10,004).
    pub item_descriptors: u32,
    /// Seed of every generated value.
    pub seed: u64,
}

impl WorldSpec {
    /// The paper's ratios at `accounts` accounts.
    pub fn paper(accounts: u32, seed: u64) -> Self {
        Self {
            accounts,
            players_per_account: 5,
            items_per_player: 100,
            accounts_per_guild: 10,
            ranks_per_guild: 6,
            accounts_per_quest: 10,
            item_descriptors: 10_004,
            seed,
        }
    }

    /// Players in the world.
    pub fn players(&self) -> u32 {
        self.accounts * self.players_per_account
    }

    /// Guilds in the world (at least one).
    pub fn guilds(&self) -> u32 {
        (self.accounts / self.accounts_per_guild.max(1)).max(1)
    }

    /// Quest templates (at least one).
    pub fn quest_templates(&self) -> u32 {
        (self.accounts / self.accounts_per_quest.max(1)).max(1)
    }

    /// Items at population.
    pub fn items(&self) -> u64 {
        self.players() as u64 * self.items_per_player as u64
    }

    /// The first id the store's sequence hands out: ids below are the
    /// population's items.
    pub fn first_free_id(&self) -> u64 {
        self.items() + 1
    }

    /// Approximate bytes of the populated world's objects (before any
    /// store's overhead).
    pub fn approx_bytes(&self) -> u64 {
        let player = PART_SIZES.iter().sum::<usize>() as u64 + 128;
        self.players() as u64 * player + self.items() * ITEM_BYTES as u64
    }

    /// The account's user name, as the login test queries it.
    pub fn username(account: u32) -> String {
        format!("user{account:08}")
    }

    /// The account owning `player`.
    pub fn account_of(&self, player: u32) -> u32 {
        player / self.players_per_account
    }

    /// Checks the figures make a world.
    pub fn validate(&self) -> Result<(), String> {
        if self.accounts == 0 || self.players_per_account == 0 {
            return Err("a world needs at least one account and one player per account".into());
        }
        if (self.accounts as u64) * (self.players_per_account as u64) > u32::MAX as u64 / 2 {
            return Err(format!("{} accounts is too many players for 32-bit player ids", self.accounts));
        }
        if self.ranks_per_guild == 0 || self.ranks_per_guild > 255 || self.item_descriptors == 0 {
            return Err("a world needs 1–255 ranks per guild and at least one item descriptor".into());
        }
        Ok(())
    }
}

/// An account and the ids of its characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// Account id.
    pub id: u32,
    /// Unique user name (the login query's key).
    pub username: String,
    /// Logins so far.
    pub login_count: u32,
    /// Time of the last login, ms since the Unix epoch.
    pub last_login_ms: u64,
    /// Its players' ids.
    pub players: Vec<u32>,
}

/// The fields of a player that change in play (the paper's Player and
/// PlayerHighFreq): what a change set writes.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerCore {
    /// Player id.
    pub id: u32,
    /// Owning account.
    pub account: u32,
    /// Character name.
    pub name: String,
    /// Money.
    pub money: i64,
    /// Experience.
    pub exp: i64,
    /// Position in the world.
    pub pos: [f32; 3],
    /// Guild id.
    pub guild: u32,
    /// Rank in the guild.
    pub rank: u8,
    /// Items the player holds; written in the same commit as the items.
    pub item_count: u32,
    /// One past the highest inventory slot ever used.
    pub slot_end: u16,
    /// Quests completed so far (quest `n` of a player is its `n`-th).
    pub quest_count: u32,
    /// Friends' player ids.
    pub friends: Vec<u32>,
    /// Ignored players' ids.
    pub ignores: Vec<u32>,
}

/// The seven bulky parts of a player, loaded with it and written only at
/// population (taxi routes, zones, bulk data, high-frequency data, mailbox,
/// bank, pet), in [`PART_NAMES`] order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayerParts(pub [Vec<u8>; 7]);

/// An item in a player's inventory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// Globally unique id.
    pub id: u64,
    /// Owning player.
    pub owner: u32,
    /// Inventory slot, unique per owner.
    pub slot: u16,
    /// ItemDescriptor id.
    pub descriptor: u32,
    /// Stack size.
    pub count: u16,
    /// Durability.
    pub durability: u16,
    /// Opaque data.
    pub data: [u8; ITEM_DATA_BYTES],
}

/// Where an item is, for deleting it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemRef {
    /// Item id.
    pub id: u64,
    /// Owning player.
    pub owner: u32,
    /// Its slot.
    pub slot: u16,
}

impl Item {
    /// Where this item is.
    pub fn at(&self) -> ItemRef {
        ItemRef { id: self.id, owner: self.owner, slot: self.slot }
    }
}

/// A completed quest: one new object per CompleteQuest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quest {
    /// Globally unique id.
    pub id: u64,
    /// The player.
    pub player: u32,
    /// Its number among the player's quests (0, 1, …).
    pub seq: u32,
    /// Quest template id.
    pub template: u32,
    /// Completion time, ms since the Unix epoch.
    pub completed_ms: u64,
}

/// A player with everything LoadPlayer brings into a game server.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerGraph {
    /// The changing fields.
    pub core: PlayerCore,
    /// The bulky parts.
    pub parts: PlayerParts,
    /// Its items.
    pub items: Vec<Item>,
    /// Its completed quests.
    pub quests: Vec<Quest>,
}

/// An account with its players, as population inserts it.
#[derive(Clone, Debug, PartialEq)]
pub struct AccountGraph {
    /// The account.
    pub account: Account,
    /// Its players.
    pub players: Vec<PlayerGraph>,
}

/// A guild's rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuildRank {
    /// Rank number within the guild.
    pub rank: u8,
    /// Title.
    pub name: String,
    /// Permission bits.
    pub permissions: u32,
}

/// One member as a roster shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Player id.
    pub player: u32,
    /// Character name.
    pub name: String,
    /// Rank.
    pub rank: u8,
}

/// What GuildRoster loads: the guild, its ranks and its members.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roster {
    /// Guild id.
    pub guild: u32,
    /// Guild name.
    pub name: String,
    /// Its ranks.
    pub ranks: Vec<GuildRank>,
    /// Its members.
    pub members: Vec<Member>,
}

/// The name of guild `g`.
pub fn guild_name(g: u32) -> String {
    format!("guild{g:06}")
}

/// The message of the day of guild `g` (stored with the guild).
pub fn guild_motd(g: u32) -> Vec<u8> {
    fill(&mut Rng::stream(g as u64, 0x6d6f7464), 128)
}

/// The ranks every guild has.
pub fn guild_ranks(count: u32) -> Vec<GuildRank> {
    (0..count).map(|r| GuildRank { rank: r as u8, name: format!("rank{r}"), permissions: (1u32 << (count - r)) - 1 }).collect()
}

/// Bytes of quest template and item descriptor records.
pub const TEMPLATE_BYTES: usize = 64;

/// Reference data record `id` of kind `kind` (quest templates, item descriptors).
pub fn template(kind: u64, id: u32) -> Vec<u8> {
    fill(&mut Rng::stream(kind ^ ((id as u64) << 8), 0x74706c), TEMPLATE_BYTES)
}

fn fill(rng: &mut Rng, n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(n);
    v
}

/// A random item's fields for `owner` at `slot`.
pub fn new_item(rng: &mut Rng, world: &WorldSpec, id: u64, owner: u32, slot: u16) -> Item {
    let mut data = [0u8; ITEM_DATA_BYTES];
    for chunk in data.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_le_bytes()[..chunk.len()]);
    }
    Item {
        id,
        owner,
        slot,
        descriptor: rng.range_inclusive(0, world.item_descriptors as u64 - 1) as u32,
        count: rng.range_inclusive(1, 20) as u16,
        durability: rng.range_inclusive(1, 1000) as u16,
        data,
    }
}

impl WorldSpec {
    /// Account `a` with its players, items and (no) quests, as populated.
    pub fn account_graph(&self, a: u32) -> AccountGraph {
        let mut rng = Rng::stream(self.seed, a as u64);
        let first = a * self.players_per_account;
        let players = (first..first + self.players_per_account).map(|p| self.player_graph(&mut rng, a, p)).collect();
        AccountGraph {
            account: Account {
                id: a,
                username: Self::username(a),
                login_count: 0,
                last_login_ms: 0,
                players: (first..first + self.players_per_account).collect(),
            },
            players,
        }
    }

    fn player_graph(&self, rng: &mut Rng, account: u32, p: u32) -> PlayerGraph {
        let n = self.items_per_player;
        let items = (0..n).map(|k| new_item(rng, self, p as u64 * n as u64 + k as u64 + 1, p, k as u16)).collect();
        let parts = PlayerParts(std::array::from_fn(|i| fill(rng, PART_SIZES[i])));
        let players = self.players() as u64;
        let friends = (0..rng.range_inclusive(0, 10)).map(|_| rng.range_inclusive(0, players - 1) as u32).collect();
        PlayerGraph {
            core: PlayerCore {
                id: p,
                account,
                name: format!("hero{p:08}"),
                money: rng.range_inclusive(0, 100_000) as i64,
                exp: rng.range_inclusive(0, 1_000_000) as i64,
                pos: [rng.unit() as f32 * 8000.0, rng.unit() as f32 * 8000.0, 0.0],
                guild: rng.range_inclusive(0, self.guilds() as u64 - 1) as u32,
                rank: rng.range_inclusive(0, self.ranks_per_guild as u64 - 1) as u8,
                item_count: n,
                slot_end: n as u16,
                quest_count: 0,
                friends,
                ignores: Vec::new(),
            },
            parts,
            items,
            quests: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn population_is_deterministic_and_sized_like_the_paper() {
        let w = WorldSpec::paper(50_000, 7);
        assert_eq!((w.players(), w.guilds(), w.quest_templates(), w.items()), (250_000, 5_000, 5_000, 25_000_000));
        let a = w.account_graph(123);
        assert_eq!(a, w.account_graph(123));
        assert_eq!(a.players.len(), 5);
        assert_eq!(a.players[0].core.id, 615);
        let ids: std::collections::BTreeSet<u64> = a.players.iter().flat_map(|p| p.items.iter().map(|i| i.id)).collect();
        assert_eq!(ids.len(), 500);
        assert!(ids.iter().all(|&id| id > 0 && id < w.first_free_id()));
        // ~16 KB once a player holds 250 items.
        let bytes = PART_SIZES.iter().sum::<usize>() + 250 * ITEM_BYTES;
        assert!((15_000..17_500).contains(&bytes), "{bytes}");
    }
}
