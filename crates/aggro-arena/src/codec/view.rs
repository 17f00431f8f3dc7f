//! The client's side of replication: the baselines it holds per actor, and
//! decoding a snapshot packet into the actors it updates.

use super::bits::BitReader;
use super::msg::SnapshotHead;
use super::state::{ActorState, Baseline, SLOTS, get_body, get_head};

#[derive(Clone, Copy, Debug, Default)]
struct Known {
    /// Per slot: the packet sequence it came in (0: empty), its frame and state.
    seq: [u32; SLOTS],
    frame: [u32; SLOTS],
    state: [ActorState; SLOTS],
    /// Frame and state of the newest update, for the game.
    latest_frame: u32,
    latest: ActorState,
}

/// What a client knows of every actor it has seen: a dense table of the actors seen, found
/// through an index by id, so a bot that sees 100 of 2,000 actors holds 100 entries.
#[derive(Debug, Default)]
pub struct View {
    index: Vec<u32>,
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
            if h.id as usize >= self.index.len() {
                if h.id > 1 << 24 {
                    return Err(ViewError::Malformed);
                }
                self.index.resize(h.id as usize + 1, 0);
            }
            if self.index[h.id as usize] == 0 {
                self.known.push(Known::default());
                self.index[h.id as usize] = self.known.len() as u32;
            }
            let k = &mut self.known[self.index[h.id as usize] as usize - 1];
            let base = match h.base_slot {
                None => None,
                Some(b) if k.seq[b as usize] != 0 => Some(Baseline { slot: b, state: &k.state[b as usize], frame: k.frame[b as usize] }),
                Some(_) => return Err(ViewError::MissingBaseline),
            };
            let s = get_body(&mut r, base, head.frame, hz).ok_or(ViewError::Malformed)?;
            let slot = h.slot as usize;
            if seq > k.seq[slot] {
                (k.seq[slot], k.frame[slot], k.state[slot]) = (seq, head.frame, s);
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
        let k = &self.known[*self.index.get(id as usize).filter(|i| **i > 0)? as usize - 1];
        (k.latest_frame > 0).then_some((k.latest_frame, &k.latest))
    }
}
