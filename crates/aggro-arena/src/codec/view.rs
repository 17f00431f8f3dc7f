//! The client's side of replication: the baselines it holds per actor, and
//! decoding a snapshot packet into the actors it updates.

use super::bits::BitReader;
use super::msg::SnapshotHead;
use super::state::{ActorState, Slots, get_body, get_head};

#[derive(Clone, Copy, Debug, Default)]
struct Known {
    /// The baselines, kept only from packets newer than the one each slot holds.
    slots: Slots,
    /// Frame and state of the newest update, for the game.
    latest_frame: u32,
    latest: ActorState,
}

/// What a client knows of every actor it has seen, in id order: a snapshot's entries come in id order too,
/// so applying one walks the table front to back (a swarm holds thousands of views, far more than the
/// caches, and looking actors up at random stalled on every entry).
#[derive(Debug, Default)]
pub struct View {
    /// The actors' ids, ascending, and what is known of each, at the same index.
    ids: Vec<u32>,
    known: Vec<Known>,
    /// Actors first seen in the packet being applied, merged in at its end (one pass, however many).
    fresh: Vec<(u32, Known)>,
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
        self.fresh.clear();
        let mut prev: i64 = -1;
        // Where the next entry's id is, or goes: entries come in increasing id order.
        let mut i = 0;
        for _ in 0..head.count {
            let h = get_head(&mut r, prev).ok_or(ViewError::Malformed)?;
            if h.id > 1 << 24 {
                return Err(ViewError::Malformed);
            }
            i += self.ids[i..].iter().take_while(|id| **id < h.id).count();
            let k = if self.ids.get(i) == Some(&h.id) {
                &mut self.known[i]
            } else {
                self.fresh.push((h.id, Known::default()));
                &mut self.fresh.last_mut().expect("just pushed").1
            };
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
        self.merge_fresh();
        Ok(head)
    }

    /// Merges the actors first seen into the table, from the back (both are in id order).
    fn merge_fresh(&mut self) {
        let (n, m) = (self.ids.len(), self.fresh.len());
        if m == 0 {
            return;
        }
        self.ids.resize(n + m, 0);
        self.known.resize(n + m, Known::default());
        let (mut old, mut fresh) = (n, m);
        for w in (0..n + m).rev() {
            if fresh == 0 {
                break;
            }
            if old > 0 && self.ids[old - 1] > self.fresh[fresh - 1].0 {
                old -= 1;
                (self.ids[w], self.known[w]) = (self.ids[old], self.known[old]);
            } else {
                fresh -= 1;
                (self.ids[w], self.known[w]) = self.fresh[fresh];
            }
        }
        self.fresh.clear();
    }

    /// The newest state of an actor and the frame it is from.
    pub fn latest(&self, id: u32) -> Option<(u32, &ActorState)> {
        let k = &self.known[self.ids.binary_search(&id).ok()?];
        (k.latest_frame > 0).then_some((k.latest_frame, &k.latest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::bits::BitWriter;
    use crate::codec::state::put_entry;

    /// A snapshot of frame `frame` with the full states of `ids` (ascending); actor `id` is at x = id × 100 + frame.
    fn snapshot(frame: u32, ids: &[u32]) -> Vec<u8> {
        let mut w = BitWriter::default();
        let mut prev = -1;
        for &id in ids {
            put_entry(&mut w, prev, id, 0, None, frame, 30, &ActorState { x: id as i32 * 100 + frame as i32, ..ActorState::default() });
            prev = id as i64;
        }
        let mut out = Vec::new();
        SnapshotHead { frame, zone_radius: 0, count: ids.len() as u16 }.write(&mut out);
        out.extend_from_slice(w.finish());
        out
    }

    #[test]
    fn actors_first_seen_anywhere_in_a_packet_join_the_table_in_order() {
        let mut view = View::default();
        let packets: [&[u32]; 4] = [&[5, 9], &[1, 5, 7, 12], &[3, 9, 20], &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]];
        let mut seen = std::collections::BTreeMap::new();
        for (n, ids) in packets.iter().enumerate() {
            let frame = n as u32 + 1;
            let mut got = Vec::new();
            view.apply(frame, &snapshot(frame, ids), 30, |id, s| got.push((id, s.x))).unwrap();
            assert_eq!(got, ids.iter().map(|id| (*id, *id as i32 * 100 + frame as i32)).collect::<Vec<_>>());
            seen.extend(ids.iter().map(|id| (*id, frame)));
            assert!(view.ids.windows(2).all(|w| w[0] < w[1]), "ids in order after packet {frame}: {:?}", view.ids);
            for (&id, &at) in &seen {
                assert_eq!(view.latest(id).map(|(f, s)| (f, s.x)), Some((at, id as i32 * 100 + at as i32)), "actor {id}");
            }
        }
        assert_eq!(view.latest(99), None);
        // A malformed packet leaves no half-seen actor behind.
        let mut cut = snapshot(9, &[50, 60]);
        cut.truncate(cut.len() - 3);
        assert!(view.apply(9, &cut, 30, |_, _| {}).is_err());
        view.apply(10, &snapshot(10, &[55]), 30, |_, _| {}).unwrap();
        assert!(view.ids.windows(2).all(|w| w[0] < w[1]) && view.ids.len() == view.known.len());
        assert_eq!(view.latest(60), None);
    }
}
