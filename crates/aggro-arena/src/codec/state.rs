//! An actor's replicated state and its encoding: in full, or as a delta against
//! a baseline the client is known to hold, with the position predicted from
//! the baseline's velocity — so an actor moving in a straight line costs about
//! two bytes per update.
//!
//! Entry layout (bits): actor id as Exp-Golomb of the gap from the previous
//! entry's id; the slot this state goes in (2); has-baseline (1); then either
//! the baseline's slot (2), a change mask (4: position, yaw, velocity, health)
//! and the changed fields, or the full state.

use super::bits::{BitReader, BitWriter, get_golomb, get_small, put_golomb, put_small};

/// Ring slots per actor per client: a baseline can be up to three updates old.
pub const SLOTS: usize = 4;

/// An actor in replicated units: centimetres, centimetres per second, 1/256 turns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActorState {
    pub x: i32,
    pub y: i32,
    pub z: i32,
    pub yaw: u8,
    pub vx: i32,
    pub vy: i32,
    pub vz: i32,
    pub health: u8,
}

const XY_BITS: u32 = 20;
const Z_BITS: u32 = 17;

impl ActorState {
    /// Where a receiver predicts this state puts the actor `frames` frames later at `hz` frames a second.
    pub fn predicted(&self, frames: u32, hz: u32) -> (i32, i32, i32) {
        let step = |p: i32, v: i32| p + (v as i64 * frames as i64 / hz.max(1) as i64) as i32;
        (step(self.x, self.vx), step(self.y, self.vy), step(self.z, self.vz))
    }

    fn put_full(&self, w: &mut BitWriter) {
        w.put(self.x.clamp(0, (1 << XY_BITS) - 1) as u32, XY_BITS);
        w.put(self.y.clamp(0, (1 << XY_BITS) - 1) as u32, XY_BITS);
        w.put(self.z.clamp(0, (1 << Z_BITS) - 1) as u32, Z_BITS);
        w.put(self.yaw as u32, 8);
        for v in [self.vx, self.vy, self.vz] {
            put_small(w, v);
        }
        w.put(self.health as u32, 8);
    }

    fn get_full(r: &mut BitReader) -> Option<Self> {
        Some(Self {
            x: r.get(XY_BITS)? as i32,
            y: r.get(XY_BITS)? as i32,
            z: r.get(Z_BITS)? as i32,
            yaw: r.get(8)? as u8,
            vx: get_small(r)?,
            vy: get_small(r)?,
            vz: get_small(r)?,
            health: r.get(8)? as u8,
        })
    }
}

/// A baseline: the slot it sits in, its state, and the frame it was sent in.
#[derive(Clone, Copy, Debug)]
pub struct Baseline<'a> {
    pub slot: u8,
    pub state: &'a ActorState,
    pub frame: u32,
}

/// One actor's states in its four slots, as a client holds them: the packet each came in
/// (0: none yet), the frame it describes, the state.
#[derive(Clone, Copy, Debug, Default)]
pub struct Slots {
    pub seq: [u32; SLOTS],
    pub frame: [u32; SLOTS],
    pub state: [ActorState; SLOTS],
}

impl Slots {
    /// The baseline in `slot`.
    pub fn baseline(&self, slot: u8) -> Baseline<'_> {
        Baseline { slot, state: &self.state[slot as usize], frame: self.frame[slot as usize] }
    }

    /// Stores a state in `slot`.
    pub fn put(&mut self, slot: u8, seq: u32, frame: u32, state: ActorState) {
        let i = slot as usize;
        (self.seq[i], self.frame[i], self.state[i]) = (seq, frame, state);
    }
}

/// Writes one actor's entry. `prev_id` is the previous entry's id (entries go in increasing id order), or -1.
#[allow(clippy::too_many_arguments)]
pub fn put_entry(w: &mut BitWriter, prev_id: i64, id: u32, slot: u8, base: Option<Baseline>, frame: u32, hz: u32, s: &ActorState) {
    put_head(w, prev_id, EntryHead { id, slot, base_slot: base.map(|b| b.slot) });
    put_body(w, base, frame, hz, s);
}

/// Writes an entry's header.
pub fn put_head(w: &mut BitWriter, prev_id: i64, head: EntryHead) {
    put_golomb(w, (head.id as i64 - prev_id - 1) as u32);
    w.put(head.slot as u32, 2);
    w.bit(head.base_slot.is_some());
    if let Some(b) = head.base_slot {
        w.put(b as u32, 2);
    }
}

/// Writes an entry's body: the state in full, or its changes from `base` (the baseline the header named).
/// The bits depend only on the state, the baseline's state and frame, and `frame`: every client holding
/// the same baseline gets the same body.
pub fn put_body(w: &mut BitWriter, base: Option<Baseline>, frame: u32, hz: u32, s: &ActorState) {
    let Some(base) = base else {
        s.put_full(w);
        return;
    };
    let (px, py, pz) = base.state.predicted(frame.wrapping_sub(base.frame), hz);
    let pos = (s.x - px, s.y - py, s.z - pz);
    let vel = (s.vx - base.state.vx, s.vy - base.state.vy, s.vz - base.state.vz);
    let mask = [pos != (0, 0, 0), s.yaw != base.state.yaw, vel != (0, 0, 0), s.health != base.state.health];
    w.put(mask.iter().enumerate().map(|(i, m)| (*m as u32) << i).sum(), 4);
    if mask[0] {
        for d in [pos.0, pos.1, pos.2] {
            put_small(w, d);
        }
    }
    if mask[1] {
        w.put(s.yaw as u32, 8);
    }
    if mask[2] {
        for d in [vel.0, vel.1, vel.2] {
            put_small(w, d);
        }
    }
    if mask[3] {
        w.put(s.health as u32, 8);
    }
}

/// An entry's header, read before its body: the body needs the baseline it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryHead {
    pub id: u32,
    pub slot: u8,
    pub base_slot: Option<u8>,
}

/// Reads an entry's header.
pub fn get_head(r: &mut BitReader, prev_id: i64) -> Option<EntryHead> {
    let id = u32::try_from(prev_id + 1 + get_golomb(r)? as i64).ok()?;
    let slot = r.get(2)? as u8;
    let base_slot = if r.bit()? { Some(r.get(2)? as u8) } else { None };
    Some(EntryHead { id, slot, base_slot })
}

/// Reads an entry's body: in full, or against `base` (which must be the baseline the header named).
pub fn get_body(r: &mut BitReader, base: Option<Baseline>, frame: u32, hz: u32) -> Option<ActorState> {
    let Some(base) = base else {
        return ActorState::get_full(r);
    };
    let b = base.state;
    let mask = [r.bit()?, r.bit()?, r.bit()?, r.bit()?];
    let (px, py, pz) = b.predicted(frame.wrapping_sub(base.frame), hz);
    let mut s = ActorState { x: px, y: py, z: pz, ..*b };
    if mask[0] {
        s.x += get_small(r)?;
        s.y += get_small(r)?;
        s.z += get_small(r)?;
    }
    if mask[1] {
        s.yaw = r.get(8)? as u8;
    }
    if mask[2] {
        s.vx += get_small(r)?;
        s.vy += get_small(r)?;
        s.vz += get_small(r)?;
    }
    if mask[3] {
        s.health = r.get(8)? as u8;
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_and_delta_entries_read_back_and_straight_motion_is_cheap() {
        let base = ActorState { x: 400_000, y: 300_000, z: 0, yaw: 10, vx: 600, vy: -300, vz: 0, health: 100 };
        let hz = 30;
        // Two frames later, on the predicted path exactly.
        let (x, y, z) = base.predicted(2, hz);
        let now = ActorState { x, y, z, ..base };
        let turned = ActorState { x: x + 3, yaw: 40, vx: 500, health: 90, ..now };
        let mut w = BitWriter::default();
        put_entry(&mut w, -1, 0, 0, None, 10, hz, &base);
        let full_bits = w.bit_len();
        let b = Baseline { slot: 0, state: &base, frame: 10 };
        put_entry(&mut w, 0, 1, 1, Some(b), 12, hz, &now);
        let straight_bits = w.bit_len() - full_bits;
        put_entry(&mut w, 1, 5, 1, Some(b), 12, hz, &turned);
        assert!(straight_bits <= 12, "straight motion: {straight_bits} bits");
        let bytes = w.finish().to_vec();
        let mut r = BitReader::new(&bytes);
        assert_eq!(get_head(&mut r, -1), Some(EntryHead { id: 0, slot: 0, base_slot: None }));
        assert_eq!(get_body(&mut r, None, 10, hz), Some(base));
        assert_eq!(get_head(&mut r, 0), Some(EntryHead { id: 1, slot: 1, base_slot: Some(0) }));
        assert_eq!(get_body(&mut r, Some(b), 12, hz), Some(now));
        assert_eq!(get_head(&mut r, 1), Some(EntryHead { id: 5, slot: 1, base_slot: Some(0) }));
        assert_eq!(get_body(&mut r, Some(b), 12, hz), Some(turned));
    }
}
