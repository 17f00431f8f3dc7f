//! The relay's messages (Photon's room model). Little-endian, fixed layouts;
//! the first byte is the kind.
//!
//! - Control, reliable: a client asks to [`Control::Join`] a room; the server
//!   answers [`Control::Joined`] or [`Control::Refused`] and tells members of
//!   arrivals and departures.
//! - Events, both ways, reliable (one message each) or unreliable (framed in a
//!   packet's payload, several per packet: u16 length, then the event). An
//!   event is exactly the size the client chose, header included; the server
//!   relays it unchanged except for stamping the sender's member id, so relayed
//!   bytes equal raised bytes. An event goes to the room's other members, or
//!   to all of them, its sender included (Photon's `ReceiverGroup.Others` and
//!   `.All`; the guide's arithmetic counts `All`: 4 players, 40 in, 160 out).

use arena_proto::wire::Reader;

/// Join any room with a free seat (matchmaking) instead of a named one.
pub const ANY_ROOM: u32 = u32::MAX;
/// Named rooms are below this; rooms made by matchmaking at or above it.
pub const FIRST_MATCHED_ROOM: u32 = 1 << 31;
/// Bytes of an event's header: kind, sender, sequence number, time raised.
pub const EVENT_HEADER: usize = 17;
/// The largest event (it fits one packet with its frame).
pub const MAX_EVENT: usize = arena_proto::connection::MAX_UNRELIABLE - 2;

const EVENT_TO_OTHERS: u8 = 1;
const EVENT_TO_ALL: u8 = 7;
const JOIN: u8 = 2;
const JOINED: u8 = 3;
const REFUSED: u8 = 4;
const MEMBER_JOINED: u8 = 5;
const MEMBER_LEFT: u8 = 6;

/// A room's control message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Client: put me in `room` (or [`ANY_ROOM`]), which seats `capacity`.
    Join { room: u32, capacity: u8 },
    /// Server: you are member `member` of `room`, now with `members` members.
    Joined { room: u32, member: u32, members: u8 },
    /// Server: `room` is full (or not a room a client may name).
    Refused { room: u32 },
    /// Server: `member` joined your room.
    MemberJoined { member: u32 },
    /// Server: `member` left your room.
    MemberLeft { member: u32 },
}

impl Control {
    /// Appends the message.
    pub fn write(&self, out: &mut Vec<u8>) {
        match *self {
            Control::Join { room, capacity } => {
                out.push(JOIN);
                out.extend_from_slice(&room.to_le_bytes());
                out.push(capacity);
            }
            Control::Joined { room, member, members } => {
                out.push(JOINED);
                out.extend_from_slice(&room.to_le_bytes());
                out.extend_from_slice(&member.to_le_bytes());
                out.push(members);
            }
            Control::Refused { room } => {
                out.push(REFUSED);
                out.extend_from_slice(&room.to_le_bytes());
            }
            Control::MemberJoined { member } => {
                out.push(MEMBER_JOINED);
                out.extend_from_slice(&member.to_le_bytes());
            }
            Control::MemberLeft { member } => {
                out.push(MEMBER_LEFT);
                out.extend_from_slice(&member.to_le_bytes());
            }
        }
    }

    /// Reads a control message (None for an event or garbage).
    pub fn read(bytes: &[u8]) -> Option<Self> {
        let mut r = Reader::new(bytes);
        let m = match r.u8()? {
            JOIN => Control::Join { room: r.u32()?, capacity: r.u8()? },
            JOINED => Control::Joined { room: r.u32()?, member: r.u32()?, members: r.u8()? },
            REFUSED => Control::Refused { room: r.u32()? },
            MEMBER_JOINED => Control::MemberJoined { member: r.u32()? },
            MEMBER_LEFT => Control::MemberLeft { member: r.u32()? },
            _ => return None,
        };
        r.rest().is_empty().then_some(m)
    }
}

/// An event's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Relayed to every member, the sender included (else to the others).
    pub to_all: bool,
    /// The sender's member id (0 from a client; the server stamps it).
    pub from: u32,
    /// The sender's count of its events, from 1.
    pub seq: u32,
    /// When the sender raised it (shared monotonic clock, µs).
    pub sent_at_us: u64,
}

impl Event {
    /// Appends the event padded to `bytes` in all (at least [`EVENT_HEADER`], at most [`MAX_EVENT`]).
    pub fn write(&self, bytes: usize, out: &mut Vec<u8>) {
        let start = out.len();
        out.push(if self.to_all { EVENT_TO_ALL } else { EVENT_TO_OTHERS });
        out.extend_from_slice(&self.from.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.sent_at_us.to_le_bytes());
        out.resize(start + bytes.clamp(EVENT_HEADER, MAX_EVENT), 0);
    }

    /// Reads an event's header; None unless `bytes` is an event of a valid size.
    pub fn read(bytes: &[u8]) -> Option<Self> {
        let to_all = match bytes.first() {
            Some(&EVENT_TO_OTHERS) => false,
            Some(&EVENT_TO_ALL) => true,
            _ => return None,
        };
        if !(EVENT_HEADER..=MAX_EVENT).contains(&bytes.len()) {
            return None;
        }
        let mut r = Reader::new(&bytes[1..]);
        Some(Self { to_all, from: r.u32()?, seq: r.u32()?, sent_at_us: r.u64()? })
    }

    /// Stamps the sender into an encoded event.
    pub fn stamp(bytes: &mut [u8], from: u32) {
        bytes[1..5].copy_from_slice(&from.to_le_bytes());
    }
}

/// Appends `msg` to an unreliable payload as one frame.
pub fn frame(payload: &mut Vec<u8>, msg: &[u8]) {
    payload.extend_from_slice(&(msg.len() as u16).to_le_bytes());
    payload.extend_from_slice(msg);
}

/// Bytes a frame of `msg_len` adds to a payload.
pub const fn framed_len(msg_len: usize) -> usize {
    msg_len + 2
}

/// The frames of an unreliable payload, in order; stops at the first malformed one.
pub fn frames(payload: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut r = Reader::new(payload);
    std::iter::from_fn(move || {
        let n = r.u16()? as usize;
        r.take(n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_garbage_is_refused() {
        for m in [
            Control::Join { room: ANY_ROOM, capacity: 4 },
            Control::Joined { room: 7, member: 9, members: 3 },
            Control::Refused { room: 1 },
            Control::MemberJoined { member: 2 },
            Control::MemberLeft { member: 3 },
        ] {
            let mut b = Vec::new();
            m.write(&mut b);
            assert_eq!(Control::read(&b), Some(m));
            assert_eq!(Control::read(&b[..b.len() - 1]), None, "cut short");
            b.push(0);
            assert_eq!(Control::read(&b), None, "trailing bytes");
        }
        let mut b = Vec::new();
        Event { to_all: true, from: 0, seq: 5, sent_at_us: 77 }.write(200, &mut b);
        assert_eq!(b.len(), 200);
        Event::stamp(&mut b, 42);
        assert_eq!(Event::read(&b), Some(Event { to_all: true, from: 42, seq: 5, sent_at_us: 77 }));
        assert_eq!(Event::read(&b[..EVENT_HEADER - 1]), None);
        assert_eq!(Control::read(&b), None, "an event is not a control message");
        let mut p = Vec::new();
        frame(&mut p, &b);
        frame(&mut p, &b[..20]);
        p.push(9);
        let got: Vec<&[u8]> = frames(&p).collect();
        assert_eq!(got, vec![&b[..], &b[..20]], "a broken last frame is dropped");
    }
}
