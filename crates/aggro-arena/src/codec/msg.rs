//! The game's messages: a client's input (unreliable, every input tick), its
//! RPCs (reliable: join, fire), the server's RPCs (reliable: welcome, fired,
//! hit, died) and the snapshot header. Little-endian, fixed layouts.

use arena_proto::wire::Reader;

/// A client's input for one tick (unreliable; the newest wins).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Input {
    /// Increases every input tick; older inputs are ignored.
    pub seq: u32,
    /// When the client sent it (shared monotonic clock, µs).
    pub sent_at_us: u64,
    /// Wanted direction of movement, each axis in −127..=127 (0, 0: stand).
    pub move_x: i8,
    pub move_y: i8,
    /// Facing, 1/256 turns.
    pub yaw: u8,
}

/// Bytes of an encoded [`Input`].
pub const INPUT_BYTES: usize = 15;

impl Input {
    /// Appends the input.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.sent_at_us.to_le_bytes());
        out.extend_from_slice(&[self.move_x as u8, self.move_y as u8, self.yaw]);
    }

    /// Reads an input.
    pub fn read(bytes: &[u8]) -> Option<Self> {
        let mut r = Reader::new(bytes);
        Some(Self { seq: r.u32()?, sent_at_us: r.u64()?, move_x: r.u8()? as i8, move_y: r.u8()? as i8, yaw: r.u8()? })
    }
}

/// A reliable message from a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientRpc {
    /// Drop into the world at (x, y) cm.
    Join { x: u32, y: u32 },
    /// A shot along `aim` (1/65536 turns), pulled at `shot_at_us`.
    Fire { shot_at_us: u64, aim: u16 },
}

/// A reliable message from the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerRpc {
    /// You are actor `actor`; the server runs at `tick_hz`.
    Welcome { actor: u32, tick_hz: u16 },
    /// Actor `shooter` fired a shot pulled at `shot_at_us` (the gunfire event observers time).
    Fired { shooter: u32, shot_at_us: u64 },
    /// `shooter` hit `target`, leaving it `health`.
    Hit { shooter: u32, target: u32, health: u8 },
    /// `who` died (killed by `killer`, or by the zone when they are equal).
    Died { who: u32, killer: u32 },
}

impl ClientRpc {
    /// Appends the message.
    pub fn write(&self, out: &mut Vec<u8>) {
        match *self {
            ClientRpc::Join { x, y } => {
                out.push(1);
                out.extend_from_slice(&x.to_le_bytes());
                out.extend_from_slice(&y.to_le_bytes());
            }
            ClientRpc::Fire { shot_at_us, aim } => {
                out.push(2);
                out.extend_from_slice(&shot_at_us.to_le_bytes());
                out.extend_from_slice(&aim.to_le_bytes());
            }
        }
    }

    /// Reads a message.
    pub fn read(bytes: &[u8]) -> Option<Self> {
        let mut r = Reader::new(bytes);
        match r.u8()? {
            1 => Some(ClientRpc::Join { x: r.u32()?, y: r.u32()? }),
            2 => Some(ClientRpc::Fire { shot_at_us: r.u64()?, aim: r.u16()? }),
            _ => None,
        }
    }
}

impl ServerRpc {
    /// Appends the message.
    pub fn write(&self, out: &mut Vec<u8>) {
        match *self {
            ServerRpc::Welcome { actor, tick_hz } => {
                out.push(1);
                out.extend_from_slice(&actor.to_le_bytes());
                out.extend_from_slice(&tick_hz.to_le_bytes());
            }
            ServerRpc::Fired { shooter, shot_at_us } => {
                out.push(2);
                out.extend_from_slice(&shooter.to_le_bytes());
                out.extend_from_slice(&shot_at_us.to_le_bytes());
            }
            ServerRpc::Hit { shooter, target, health } => {
                out.push(3);
                out.extend_from_slice(&shooter.to_le_bytes());
                out.extend_from_slice(&target.to_le_bytes());
                out.push(health);
            }
            ServerRpc::Died { who, killer } => {
                out.push(4);
                out.extend_from_slice(&who.to_le_bytes());
                out.extend_from_slice(&killer.to_le_bytes());
            }
        }
    }

    /// Reads a message.
    pub fn read(bytes: &[u8]) -> Option<Self> {
        let mut r = Reader::new(bytes);
        match r.u8()? {
            1 => Some(ServerRpc::Welcome { actor: r.u32()?, tick_hz: r.u16()? }),
            2 => Some(ServerRpc::Fired { shooter: r.u32()?, shot_at_us: r.u64()? }),
            3 => Some(ServerRpc::Hit { shooter: r.u32()?, target: r.u32()?, health: r.u8()? }),
            4 => Some(ServerRpc::Died { who: r.u32()?, killer: r.u32()? }),
            _ => None,
        }
    }
}

/// What precedes a snapshot's entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotHead {
    /// The server frame it describes.
    pub frame: u32,
    /// The safe zone's radius, cm (its centre is the map's).
    pub zone_radius: u32,
    /// Entries that follow.
    pub count: u16,
}

/// Bytes of a [`SnapshotHead`].
pub const SNAPSHOT_HEAD_BYTES: usize = 10;

impl SnapshotHead {
    /// Appends the head.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.frame.to_le_bytes());
        out.extend_from_slice(&self.zone_radius.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
    }

    /// Reads the head; returns it and the entry bits that follow.
    pub fn read(bytes: &[u8]) -> Option<(Self, &[u8])> {
        let mut r = Reader::new(bytes);
        let head = Self { frame: r.u32()?, zone_radius: r.u32()?, count: r.u16()? };
        Some((head, r.rest()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_back_and_junk_is_refused() {
        let input = Input { seq: 9, sent_at_us: 123_456, move_x: -127, move_y: 5, yaw: 200 };
        let mut b = Vec::new();
        input.write(&mut b);
        assert_eq!(b.len(), INPUT_BYTES);
        assert_eq!(Input::read(&b), Some(input));
        for m in [ClientRpc::Join { x: 1, y: 2 }, ClientRpc::Fire { shot_at_us: 7, aim: 65_535 }] {
            b.clear();
            m.write(&mut b);
            assert_eq!(ClientRpc::read(&b), Some(m));
            assert_eq!(ClientRpc::read(&b[..b.len() - 1]), None);
        }
        for m in [
            ServerRpc::Welcome { actor: 3, tick_hz: 30 },
            ServerRpc::Fired { shooter: 1, shot_at_us: 99 },
            ServerRpc::Hit { shooter: 1, target: 2, health: 50 },
            ServerRpc::Died { who: 2, killer: 1 },
        ] {
            b.clear();
            m.write(&mut b);
            assert_eq!(ServerRpc::read(&b), Some(m));
        }
        assert_eq!(ServerRpc::read(&[9]), None);
    }
}
