//! A client's replicas, one per relevant actor in id order, carried from frame to frame. Each frame's
//! candidates (in id order too) are matched against the last frame's replicas: while they are the same
//! actors in the same order, the replicas are updated where they lie; from the first difference on, the
//! rest is merged into a second table (an actor no longer relevant is dropped, a new one starts empty).
//! Most frames change nothing for most clients, so the table is read and written once, in order.

use crate::codec::state::SLOTS;

/// What the client was sent of one actor: the packet that carried each slot (0: none) — the frame and the
/// state follow from the packet —, the frame it was last sent in plus one (0: never), and the slot the next
/// update goes in.
#[derive(Clone, Copy, Debug, Default)]
pub struct Replica {
    pub id: u32,
    pub seq: [u32; SLOTS],
    pub last_sent: u32,
    pub next: u8,
}

/// The replica table and this frame's progress through it.
#[derive(Debug, Default)]
pub struct Replicas {
    table: Vec<Replica>,
    spare: Vec<Replica>,
    /// Replicas placed this frame.
    placed: usize,
    /// How far the last frame's table was read.
    read: usize,
    /// Past the first difference: this frame's replicas are in `spare`.
    merging: bool,
}

impl Replicas {
    /// Starts a frame.
    pub fn begin(&mut self) {
        (self.placed, self.read, self.merging) = (0, 0, false);
    }

    /// Places the replica of the frame's next candidate, `id` (greater than the last one's), and returns
    /// its index in [`placed_mut`](Self::placed_mut).
    #[inline]
    pub fn place(&mut self, id: u32) -> usize {
        let k = self.placed;
        debug_assert!(k == 0 || self.placed_mut()[k - 1].id < id, "candidates in id order");
        self.placed += 1;
        if !self.merging && self.table.get(k).is_some_and(|r| r.id == id) {
            self.read = k + 1;
            return k;
        }
        self.merge(k, id);
        k
    }

    /// Places `id` as the `k`th replica past the first difference from the last frame's table.
    #[cold]
    fn merge(&mut self, k: usize, id: u32) {
        if !self.merging {
            // The first difference: the replicas placed so far (updated where they lie) go first.
            self.merging = true;
            self.spare.clear();
            self.spare.extend_from_slice(&self.table[..k]);
            self.read = k;
        }
        while self.table.get(self.read).is_some_and(|r| r.id < id) {
            self.read += 1;
        }
        let replica = match self.table.get(self.read) {
            Some(r) if r.id == id => {
                self.read += 1;
                *r
            }
            _ => Replica { id, ..Replica::default() },
        };
        self.spare.push(replica);
    }

    /// This frame's replicas placed so far.
    pub fn placed_mut(&mut self) -> &mut [Replica] {
        if self.merging { &mut self.spare } else { &mut self.table[..self.placed] }
    }

    /// Ends the frame: the replicas placed become the table.
    pub fn end(&mut self) {
        if self.merging {
            std::mem::swap(&mut self.table, &mut self.spare);
        } else {
            self.table.truncate(self.placed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a frame over `ids`, marking each replica with `frame`; returns the table's (id, last_sent).
    fn frame(r: &mut Replicas, ids: &[u32], frame: u32) -> Vec<(u32, u32)> {
        r.begin();
        for &id in ids {
            let i = r.place(id);
            let replica = &mut r.placed_mut()[i];
            assert_eq!(replica.id, id);
            replica.last_sent = frame;
        }
        r.end();
        r.table.iter().map(|x| (x.id, x.last_sent)).collect()
    }

    #[test]
    fn replicas_follow_the_candidates_and_keep_their_state() {
        let mut r = Replicas::default();
        assert_eq!(frame(&mut r, &[2, 5, 9], 1), vec![(2, 1), (5, 1), (9, 1)]);
        assert_eq!(frame(&mut r, &[2, 5, 9], 2), vec![(2, 2), (5, 2), (9, 2)], "same actors: in place");
        assert_eq!(frame(&mut r, &[2, 5], 3), vec![(2, 3), (5, 3)], "the last one dropped");
        assert_eq!(frame(&mut r, &[2, 4, 5, 7], 4), vec![(2, 4), (4, 4), (5, 4), (7, 4)], "new ones between");
        // Only some are marked: the others keep the frame they had.
        r.begin();
        for id in [1, 4, 7] {
            let i = r.place(id);
            if id != 4 {
                r.placed_mut()[i].last_sent = 5;
            }
        }
        r.end();
        assert_eq!(r.table.iter().map(|x| (x.id, x.last_sent)).collect::<Vec<_>>(), vec![(1, 5), (4, 4), (7, 5)]);
        assert_eq!(frame(&mut r, &[], 6), vec![]);
    }
}
