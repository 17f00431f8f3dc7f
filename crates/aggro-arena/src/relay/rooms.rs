//! Rooms and matchmaking: named rooms (join or create, as Photon's
//! `JoinOrCreateRoom`) and matched rooms (any room with a free seat, filled
//! one at a time, as `JoinRandomRoom`). A room disappears when its last
//! member leaves.

use super::msg::{ANY_ROOM, FIRST_MATCHED_ROOM};
use std::collections::{BTreeSet, HashMap};

/// One room: its seats and its members' session slots, in joining order.
#[derive(Debug)]
pub struct Room {
    pub capacity: u8,
    pub members: Vec<u32>,
}

/// Why a join failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    Full,
    /// A named room id in the matched range, or a capacity below 2.
    Invalid,
}

/// Every room of a server.
#[derive(Debug, Default)]
pub struct Rooms {
    by_id: HashMap<u32, Room>,
    /// Matched rooms with a free seat, by capacity.
    open: BTreeSet<(u8, u32)>,
    next_matched: u32,
}

impl Rooms {
    /// Rooms now.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The members of `room` (empty if there is no such room).
    pub fn members(&self, room: u32) -> &[u32] {
        self.by_id.get(&room).map_or(&[], |r| &r.members)
    }

    /// Seats session `slot` in `room` (or, for [`ANY_ROOM`], in an open matched room of `capacity`,
    /// made if none); returns the room's id.
    pub fn join(&mut self, slot: u32, room: u32, capacity: u8) -> Result<u32, Refusal> {
        if capacity < 2 || (room != ANY_ROOM && room >= FIRST_MATCHED_ROOM) {
            return Err(Refusal::Invalid);
        }
        let id = if room == ANY_ROOM {
            match self.open.range((capacity, 0)..=(capacity, u32::MAX)).next() {
                Some(&(_, id)) => id,
                None => {
                    let id = FIRST_MATCHED_ROOM + self.next_matched % (u32::MAX - FIRST_MATCHED_ROOM);
                    self.next_matched += 1;
                    id
                }
            }
        } else {
            room
        };
        let r = self.by_id.entry(id).or_insert_with(|| Room { capacity, members: Vec::new() });
        if r.members.len() >= r.capacity as usize {
            return Err(Refusal::Full);
        }
        r.members.push(slot);
        if id >= FIRST_MATCHED_ROOM {
            if r.members.len() < r.capacity as usize {
                self.open.insert((r.capacity, id));
            } else {
                self.open.remove(&(r.capacity, id));
            }
        }
        Ok(id)
    }

    /// Takes session `slot` out of `room`.
    pub fn leave(&mut self, slot: u32, room: u32) {
        let Some(r) = self.by_id.get_mut(&room) else { return };
        r.members.retain(|&m| m != slot);
        let key = (r.capacity, room);
        if r.members.is_empty() {
            self.by_id.remove(&room);
            self.open.remove(&key);
        } else if room >= FIRST_MATCHED_ROOM {
            self.open.insert(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchmaking_fills_one_room_at_a_time_and_reopens_seats() {
        let mut rooms = Rooms::default();
        let ids: Vec<u32> = (0..9).map(|s| rooms.join(s, ANY_ROOM, 4).unwrap()).collect();
        assert_eq!(ids[0..4], [ids[0]; 4]);
        assert_eq!(ids[4..8], [ids[4]; 4]);
        assert_ne!(ids[0], ids[4]);
        assert_eq!(rooms.len(), 3);
        rooms.leave(1, ids[0]);
        assert_eq!(rooms.join(20, ANY_ROOM, 4), Ok(ids[0]), "a freed seat is taken before the half-empty room");
        assert_eq!(rooms.join(21, ANY_ROOM, 2).map(|id| id != ids[8]), Ok(true), "rooms of another size are apart");
        assert_eq!(rooms.members(ids[0]), &[0, 2, 3, 20]);
    }

    #[test]
    fn named_rooms_refuse_when_full_and_vanish_when_empty() {
        let mut rooms = Rooms::default();
        assert_eq!(rooms.join(1, 7, 2), Ok(7));
        assert_eq!(rooms.join(2, 7, 2), Ok(7));
        assert_eq!(rooms.join(3, 7, 2), Err(Refusal::Full));
        assert_eq!(rooms.join(3, FIRST_MATCHED_ROOM + 1, 2), Err(Refusal::Invalid));
        assert_eq!(rooms.join(3, 8, 1), Err(Refusal::Invalid));
        rooms.leave(1, 7);
        rooms.leave(2, 7);
        assert!(rooms.is_empty());
    }
}
