//! The Photon guide's arithmetic: in a room of K players each raising an
//! event every T, the server takes K/T events a second and sends K·K/T when
//! each event goes to all members (the guide's count: 4 × 40 = 160) or
//! K(K−1)/T when it goes to the others; with events of B bytes the room moves
//! (in + out) × B bytes a second, and N players fill N/K rooms.

use serde::Serialize;

/// A room profile.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct RoomProfile {
    pub room_size: u32,
    pub send_every_s: f64,
    pub msg_bytes: f64,
    /// Events go to every member, the sender included (else to the others).
    pub to_all: bool,
}

/// What the profile costs, per room and for a number of players.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Traffic {
    pub messages_in_per_room_s: f64,
    pub messages_out_per_room_s: f64,
    pub messages_per_room_s: f64,
    pub bytes_per_room_s: f64,
    pub ccu: f64,
    pub rooms: f64,
    pub messages_per_s: f64,
    pub bytes_per_s: f64,
}

impl RoomProfile {
    /// The traffic of `ccu` players.
    pub fn traffic(&self, ccu: f64) -> Traffic {
        let k = self.room_size as f64;
        let rate = 1.0 / self.send_every_s;
        let receivers = if self.to_all { k } else { k - 1.0 };
        let (inn, out) = (k * rate, k * receivers * rate);
        let rooms = ccu / k;
        Traffic {
            messages_in_per_room_s: inn,
            messages_out_per_room_s: out,
            messages_per_room_s: inn + out,
            bytes_per_room_s: (inn + out) * self.msg_bytes,
            ccu,
            rooms,
            messages_per_s: rooms * (inn + out),
            bytes_per_s: rooms * (inn + out) * self.msg_bytes,
        }
    }

    /// The most players whose traffic fits `bytes_per_s`.
    pub fn ccu_within(&self, bytes_per_s: f64) -> f64 {
        bytes_per_s / self.traffic(1.0).bytes_per_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guides_worked_example_is_reproduced_exactly() {
        // 4 players, 100 ms, 200 B: 40 in, 160 out, 200 messages per room per second, 40 KB/s per room,
        // 10 MB/s for 1,000 CCU in 250 rooms.
        let p = RoomProfile { room_size: 4, send_every_s: 0.1, msg_bytes: 200.0, to_all: true };
        let t = p.traffic(1000.0);
        assert_eq!((t.messages_in_per_room_s, t.messages_out_per_room_s, t.messages_per_room_s), (40.0, 160.0, 200.0));
        assert_eq!(t.bytes_per_room_s, 40_000.0);
        assert_eq!(t.rooms, 250.0);
        assert_eq!(t.messages_per_s, 50_000.0);
        assert_eq!(t.bytes_per_s, 10_000_000.0);
        assert_eq!(p.ccu_within(12_500_000.0), 1250.0, "a 100 Mbit/s uplink carries 1,250 such players");
        let others = RoomProfile { to_all: false, ..p }.traffic(1000.0);
        assert_eq!((others.messages_out_per_room_s, others.bytes_per_room_s), (120.0, 32_000.0), "to the others only");
    }
}
