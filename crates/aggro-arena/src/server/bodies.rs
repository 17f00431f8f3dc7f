//! Entry bodies shared by all clients within a frame: an actor's changes from the state it had in frame B
//! are the same bits for every client whose baseline is frame B, so they are encoded once per frame and
//! copied for the others.

use crate::codec::bits::{BitWriter, Bits};
use crate::codec::state::{ActorState, Baseline, put_body};

/// Delta bodies kept per actor, placed by baseline frame: one actor's baselines across clients are a
/// few consecutive frames, which land in different places. One more place holds the full state.
const WAYS: usize = 4;

#[derive(Clone, Copy, Debug, Default)]
struct Body {
    /// The frame it was encoded in (0: empty).
    frame: u32,
    /// The baseline's frame (0: the full state).
    base_frame: u32,
    bits: Bits,
}

/// This frame's encoded bodies, by place and actor (so that a lookup reads one body, not an actor's row).
#[derive(Debug, Default)]
pub struct SharedBodies {
    bodies: [Vec<Body>; WAYS + 1],
    scratch: BitWriter,
    /// Bodies encoded, and bodies copied from an earlier client's.
    pub encoded: u64,
    pub copied: u64,
}

impl SharedBodies {
    /// Writes actor `id`'s body in `frame` (≥ 1) against `base` into `w` (see [`put_body`]), encoding it
    /// only if no client before needed the same one this frame.
    pub fn put(&mut self, w: &mut BitWriter, id: u32, base: Option<Baseline>, frame: u32, hz: u32, s: &ActorState) {
        let base_frame = base.map_or(0, |b| b.frame);
        let place = &mut self.bodies[base.map_or(WAYS, |b| b.frame as usize % WAYS)];
        if place.len() <= id as usize {
            place.resize(id as usize + 1, Body::default());
        }
        let body = &mut place[id as usize];
        if frame != 0 && body.frame == frame && body.base_frame == base_frame {
            self.copied += 1;
            w.put_bits(&body.bits);
            return;
        }
        self.encoded += 1;
        put_body(&mut self.scratch, base, frame, hz, s);
        match self.scratch.take_bits() {
            Some(bits) => {
                *body = Body { frame, base_frame, bits };
                w.put_bits(&bits);
            }
            // Longer than a piece holds (no body is, by the layout): written directly, not kept.
            None => put_body(w, base, frame, hz, s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::bits::BitReader;
    use crate::codec::state::get_body;

    #[test]
    fn a_shared_body_is_the_body_each_client_would_have_encoded() {
        let hz = 30;
        let states: Vec<ActorState> = (0..6)
            .map(|f| ActorState { x: 10_000 + f * 23, y: 5_000 - f * 7, z: 0, yaw: f as u8, vx: 600, vy: -200, vz: 0, health: 100 - f as u8 })
            .collect();
        let mut shared = SharedBodies::default();
        let frame = 5;
        // Clients with baselines from frames 1–4 and none, each asked for twice.
        for round in 0..2 {
            for base_frame in [None, Some(1u32), Some(2), Some(3), Some(4)] {
                let base = base_frame.map(|f| Baseline { slot: 0, state: &states[f as usize], frame: f });
                let (mut direct, mut copied) = (BitWriter::default(), BitWriter::default());
                put_body(&mut direct, base, frame, hz, &states[5]);
                shared.put(&mut copied, 7, base, frame, hz, &states[5]);
                assert_eq!(copied.finish(), direct.finish(), "round {round}, baseline {base_frame:?}");
                let bytes = copied.finish().to_vec();
                assert_eq!(get_body(&mut BitReader::new(&bytes), base, frame, hz), Some(states[5]));
            }
        }
        assert_eq!((shared.encoded, shared.copied), (5, 5));
        // The next frame encodes afresh.
        shared.put(&mut BitWriter::default(), 7, None, frame + 1, hz, &states[4]);
        assert_eq!(shared.encoded, 6);
    }
}
