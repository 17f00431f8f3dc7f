//! The client's side of replication: the baselines it holds per actor, and
//! decoding a snapshot packet into the actors it updates.

use super::bits::BitReader;
use super::msg::SnapshotHead;
use super::ids::IdIndex;
use super::state::{ActorState, Slots, get_body, get_head};

#[derive(Clone, Copy, Debug, Default)]
struct Known {
    /// The baselines, kept only from packets newer than the one each slot holds.
    slots: Slots,
    /// Frame and state of the newest update, for the game.
    latest_frame: u32,
    latest: ActorState,
}

/// What a client knows of every actor it has seen.
#[derive(Debug, Default)]
pub struct View {
    ids: IdIndex,
    known: Vec<Known>,
}

/// Why a snapshot could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    #[error("the snapshot is cut short or malformed")]
    Malformed,
    #[error("the snapshot names a baseline this client does not hold")]
    MissingBaseline,
}

impl View {
    /// Applies one snapshot packet that arrived as packet `seq`; calls `each(id, state)` for every actor in it.
    pub fn apply(&mut self, seq: u32, payload: &[u8], hz: u32, mut each: impl FnMut(u32, &ActorState)) -> Result<SnapshotHead, ViewError> {
        let (head, bits) = SnapshotHead::read(payload).ok_or(ViewError::Malformed)?;
        let mut r = BitReader::new(bits);
        let mut prev: i64 = -1;
        for _ in 0..head.count {
            let h = get_head(&mut r, prev).ok_or(ViewError::Malformed)?;
            if h.id > 1 << 24 {
                return Err(ViewError::Malformed);
            }
            let (i, new) = self.ids.position(h.id);
            if new {
                self.known.push(Known::default());
            }
            let k = &mut self.known[i];
            let base = match h.base_slot {
                None => None,
                Some(b) if k.slots.seq[b as usize] != 0 => Some(k.slots.baseline(b)),
                Some(_) => return Err(ViewError::MissingBaseline),
            };
            let s = get_body(&mut r, base, head.frame, hz).ok_or(ViewError::Malformed)?;
            if seq > k.slots.seq[h.slot as usize] {
                k.slots.put(h.slot, seq, head.frame, s);
            }
            if head.frame >= k.latest_frame {
                (k.latest_frame, k.latest) = (head.frame, s);
            }
            each(h.id, &s);
            prev = h.id as i64;
        }
        Ok(head)
    }

    /// The newest state of an actor and the frame it is from.
    pub fn latest(&self, id: u32) -> Option<(u32, &ActorState)> {
        let k = &self.known[self.ids.get(id)?];
        (k.latest_frame > 0).then_some((k.latest_frame, &k.latest))
    }
}
