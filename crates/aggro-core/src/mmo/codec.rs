//! A compact little-endian encoding of the model's objects, for key-value
//! targets. Every decoder checks lengths and returns `None` on bad input
//! rather than panicking (a corrupted record is a `Data` error, not a crash).

use super::model::*;

pub use aggro_bytes::{Reader, Writer};

/// Encodes a player's core.
pub fn encode_core(c: &PlayerCore) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(96 + 4 * (c.friends.len() + c.ignores.len())));
    w.u32(c.id).u32(c.account).blob(c.name.as_bytes()).u64(c.money as u64).u64(c.exp as u64);
    c.pos.iter().for_each(|p| {
        w.u32(p.to_bits());
    });
    w.u32(c.guild).u8(c.rank).u32(c.item_count).u16(c.slot_end).u32(c.quest_count).ids(&c.friends).ids(&c.ignores);
    w.0
}

/// Decodes a player's core.
pub fn decode_core(b: &[u8]) -> Option<PlayerCore> {
    let mut r = Reader::new(b);
    let core = PlayerCore {
        id: r.u32()?,
        account: r.u32()?,
        name: String::from_utf8(r.blob()?.to_vec()).ok()?,
        money: r.u64()? as i64,
        exp: r.u64()? as i64,
        pos: [f32::from_bits(r.u32()?), f32::from_bits(r.u32()?), f32::from_bits(r.u32()?)],
        guild: r.u32()?,
        rank: r.u8()?,
        item_count: r.u32()?,
        slot_end: r.u16()?,
        quest_count: r.u32()?,
        friends: r.ids()?,
        ignores: r.ids()?,
    };
    r.done().then_some(core)
}

/// Encodes the seven parts.
pub fn encode_parts(p: &PlayerParts) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(PART_SIZES.iter().sum::<usize>() + 14));
    p.0.iter().for_each(|b| {
        w.blob(b);
    });
    w.0
}

/// Decodes the seven parts.
pub fn decode_parts(b: &[u8]) -> Option<PlayerParts> {
    let mut r = Reader::new(b);
    let mut parts: [Vec<u8>; 7] = Default::default();
    for p in &mut parts {
        *p = r.blob()?.to_vec();
    }
    r.done().then_some(PlayerParts(parts))
}

/// Encodes an item in [`ITEM_BYTES`].
pub fn encode_item(i: &Item) -> [u8; ITEM_BYTES] {
    let mut w = Writer(Vec::with_capacity(ITEM_BYTES));
    w.u64(i.id).u32(i.owner).u16(i.slot).u32(i.descriptor).u16(i.count).u16(i.durability).bytes(&i.data);
    w.0.resize(ITEM_BYTES, 0);
    w.0.try_into().unwrap_or([0; ITEM_BYTES])
}

/// Decodes an item.
pub fn decode_item(b: &[u8]) -> Option<Item> {
    if b.len() != ITEM_BYTES {
        return None;
    }
    let mut r = Reader::new(b);
    Some(Item {
        id: r.u64()?,
        owner: r.u32()?,
        slot: r.u16()?,
        descriptor: r.u32()?,
        count: r.u16()?,
        durability: r.u16()?,
        data: r.take(ITEM_DATA_BYTES)?.try_into().ok()?,
    })
}

/// Encodes a quest (28 bytes).
pub fn encode_quest(q: &Quest) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(28));
    w.u64(q.id).u32(q.player).u32(q.seq).u32(q.template).u64(q.completed_ms);
    w.0
}

/// Decodes a quest.
pub fn decode_quest(b: &[u8]) -> Option<Quest> {
    let mut r = Reader::new(b);
    let q = Quest { id: r.u64()?, player: r.u32()?, seq: r.u32()?, template: r.u32()?, completed_ms: r.u64()? };
    r.done().then_some(q)
}

/// Encodes an account (without its user-name index).
pub fn encode_account(a: &Account) -> Vec<u8> {
    let mut w = Writer::default();
    w.u32(a.id).blob(a.username.as_bytes()).u32(a.login_count).u64(a.last_login_ms).ids(&a.players);
    w.0
}

/// Decodes an account.
pub fn decode_account(b: &[u8]) -> Option<Account> {
    let mut r = Reader::new(b);
    let a = Account {
        id: r.u32()?,
        username: String::from_utf8(r.blob()?.to_vec()).ok()?,
        login_count: r.u32()?,
        last_login_ms: r.u64()?,
        players: r.ids()?,
    };
    r.done().then_some(a)
}

/// Encodes a guild rank.
pub fn encode_rank(g: &GuildRank) -> Vec<u8> {
    let mut w = Writer::default();
    w.u8(g.rank).blob(g.name.as_bytes()).u32(g.permissions);
    w.0
}

/// Decodes a guild rank.
pub fn decode_rank(b: &[u8]) -> Option<GuildRank> {
    let mut r = Reader::new(b);
    let g = GuildRank { rank: r.u8()?, name: String::from_utf8(r.blob()?.to_vec()).ok()?, permissions: r.u32()? };
    r.done().then_some(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_round_trip_and_bad_bytes_are_refused() {
        let w = WorldSpec::paper(10, 3);
        let a = w.account_graph(4);
        let p = &a.players[2];
        assert_eq!(decode_core(&encode_core(&p.core)).as_ref(), Some(&p.core));
        assert_eq!(decode_parts(&encode_parts(&p.parts)).as_ref(), Some(&p.parts));
        assert_eq!(decode_item(&encode_item(&p.items[7])).as_ref(), Some(&p.items[7]));
        assert_eq!(decode_account(&encode_account(&a.account)).as_ref(), Some(&a.account));
        let q = Quest { id: 9, player: 3, seq: 1, template: 4, completed_ms: 5 };
        assert_eq!(decode_quest(&encode_quest(&q)), Some(q));
        let r = &guild_ranks(6)[2];
        assert_eq!(decode_rank(&encode_rank(r)).as_ref(), Some(r));
        let core = encode_core(&p.core);
        for cut in 0..core.len() {
            assert!(decode_core(&core[..cut]).is_none());
        }
        assert!(decode_item(&[0; 47]).is_none());
    }
}
