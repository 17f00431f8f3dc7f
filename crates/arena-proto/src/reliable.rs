//! The reliable channel: messages cut into slices with 16-bit ids, resent until
//! a packet carrying them is acked, delivered in order exactly once.
//!
//! The sender keeps at most `max_queued` unacked slices (a full queue refuses
//! new messages — a bounded queue, as a server must have) and sends only slices
//! within [`WINDOW`] of the oldest unacked one, so the receiver never has to
//! buffer more than that many out of order.

use crate::wire::Reader;
use smallvec::SmallVec;
use std::collections::VecDeque;

/// Largest slice payload: a message longer than this is fragmented.
pub const SLICE_BYTES: usize = 1024;
/// Slices in flight beyond the oldest unacked one.
pub const WINDOW: u16 = 256;
/// Largest message either side accepts.
pub const MAX_MESSAGE: usize = 64 * 1024;
/// Bytes a slice costs in a packet besides its payload (id, length with last-flag).
pub const SLICE_OVERHEAD: usize = 4;

/// Slice bytes held in the slice itself: game events (a shot, a hit) are a dozen bytes and are queued
/// for every observer, so they are not each a heap allocation.
const INLINE: usize = 24;

#[derive(Debug)]
struct Slice {
    data: SmallVec<[u8; INLINE]>,
    last: bool,
    acked: bool,
    sent_at_us: Option<u64>,
}

/// The sending half: the queue of unacked slices.
#[derive(Debug)]
pub struct ReliableSender {
    queue: VecDeque<Slice>,
    /// Id of the queue's front slice (the next id when empty).
    base: u16,
    max_queued: usize,
    /// Slices sent again after their first send.
    pub resends: u64,
}

impl ReliableSender {
    /// A sender that holds at most `max_queued` unacked slices.
    pub fn new(max_queued: usize) -> Self {
        Self { queue: VecDeque::new(), base: 0, max_queued: max_queued.max(1), resends: 0 }
    }

    /// Unacked slices.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Queues a message; `false` (and nothing queued) if it would overfill the queue.
    pub fn push(&mut self, msg: &[u8]) -> bool {
        // An empty message is one empty slice.
        let slices = msg.len().div_ceil(SLICE_BYTES).max(1);
        if self.queue.len() + slices > self.max_queued {
            return false;
        }
        for k in 0..slices {
            let data = SmallVec::from_slice(&msg[k * SLICE_BYTES..msg.len().min((k + 1) * SLICE_BYTES)]);
            self.queue.push_back(Slice { data, last: k + 1 == slices, acked: false, sent_at_us: None });
        }
        true
    }

    /// Whether some slice is waiting to be sent or resent at `now_us`.
    pub fn has_due(&self, now_us: u64, resend_after_us: u64) -> bool {
        self.queue.iter().take(WINDOW as usize).any(|s| Self::due(s, now_us, resend_after_us))
    }

    fn due(s: &Slice, now_us: u64, resend_after_us: u64) -> bool {
        !s.acked && s.sent_at_us.is_none_or(|t| now_us.saturating_sub(t) >= resend_after_us)
    }

    /// Writes due slices into `out` while they fit in `budget` bytes (at most 255); returns how many,
    /// and records their ids in `sent` for [`acked`](Self::acked).
    pub fn write(&mut self, now_us: u64, resend_after_us: u64, mut budget: usize, out: &mut Vec<u8>, sent: &mut impl Extend<u16>) -> u8 {
        let mut count = 0u8;
        for (i, s) in self.queue.iter_mut().take(WINDOW as usize).enumerate() {
            if count == u8::MAX {
                break;
            }
            if !Self::due(s, now_us, resend_after_us) || s.data.len() + SLICE_OVERHEAD > budget {
                continue;
            }
            budget -= s.data.len() + SLICE_OVERHEAD;
            let id = self.base.wrapping_add(i as u16);
            write_slice(out, id, &s.data, s.last);
            if s.sent_at_us.is_some() {
                self.resends += 1;
            }
            s.sent_at_us = Some(now_us);
            sent.extend([id]);
            count += 1;
        }
        count
    }

    /// A packet carrying these slice ids was acked.
    pub fn acked(&mut self, ids: &[u16]) {
        for &id in ids {
            let i = id.wrapping_sub(self.base) as usize;
            if let Some(s) = self.queue.get_mut(i) {
                s.acked = true;
            }
        }
        while self.queue.front().is_some_and(|s| s.acked) {
            self.queue.pop_front();
            self.base = self.base.wrapping_add(1);
        }
    }
}

/// A slice on the wire: `id u16 | (len << 1 | last) u16 | bytes[len]`.
fn write_slice(out: &mut Vec<u8>, id: u16, data: &[u8], last: bool) {
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&((data.len() as u16) << 1 | last as u16).to_le_bytes());
    out.extend_from_slice(data);
}

/// Reads one slice written by the sender: (id, bytes, last).
pub fn read_slice<'a>(r: &mut Reader<'a>) -> Option<(u16, &'a [u8], bool)> {
    let id = r.u16()?;
    let len = r.u16()?;
    Some((id, r.take((len >> 1) as usize)?, len & 1 == 1))
}

/// What became of an arriving slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceFate {
    /// Buffered or delivered.
    Accepted,
    /// Already received.
    Duplicate,
    /// Beyond the window: a sender breaking the protocol.
    OutOfWindow,
    /// It made its message longer than [`MAX_MESSAGE`]; the message is dropped.
    Oversized,
}

/// The receiving half: reorders slices and reassembles messages.
#[derive(Debug)]
pub struct ReliableReceiver {
    next: u16,
    pending: Vec<Option<(Vec<u8>, bool)>>,
    assembling: Vec<u8>,
    /// The message being assembled grew too large: drop slices until its last one.
    discarding: bool,
    delivered: VecDeque<Vec<u8>>,
}

impl Default for ReliableReceiver {
    fn default() -> Self {
        Self { next: 0, pending: (0..WINDOW).map(|_| None).collect(), assembling: Vec::new(), discarding: false, delivered: VecDeque::new() }
    }
}

impl ReliableReceiver {
    /// Takes one arriving slice.
    pub fn receive(&mut self, id: u16, data: &[u8], last: bool) -> SliceFate {
        let ahead = id.wrapping_sub(self.next);
        if ahead >= 0x8000 {
            return SliceFate::Duplicate;
        }
        if ahead >= WINDOW {
            return SliceFate::OutOfWindow;
        }
        let cell = &mut self.pending[(id % WINDOW) as usize];
        if cell.is_some() {
            return SliceFate::Duplicate;
        }
        // The usual case, the next slice in order, goes straight into the message; only slices that
        // arrive early are copied aside.
        let mut fate = SliceFate::Accepted;
        if ahead > 0 {
            *cell = Some((data.to_vec(), last));
            return fate;
        }
        if !self.assemble(data, last) {
            fate = SliceFate::Oversized;
        }
        while let Some((bytes, last)) = self.pending[(self.next % WINDOW) as usize].take() {
            if !self.assemble(&bytes, last) {
                fate = SliceFate::Oversized;
            }
        }
        fate
    }

    /// Appends the next slice in order; false if it made its message too large (the message is dropped).
    fn assemble(&mut self, bytes: &[u8], last: bool) -> bool {
        self.next = self.next.wrapping_add(1);
        let mut fits = true;
        if !self.discarding {
            self.assembling.extend_from_slice(bytes);
            if self.assembling.len() > MAX_MESSAGE {
                self.assembling.clear();
                self.discarding = true;
                fits = false;
            }
        }
        if last {
            if !self.discarding {
                self.delivered.push_back(std::mem::take(&mut self.assembling));
            }
            self.discarding = false;
        }
        fits
    }

    /// The next complete message, in send order.
    pub fn pop(&mut self) -> Option<Vec<u8>> {
        self.delivered.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_message_is_sliced_and_reassembled_out_of_order() {
        let msg: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
        let mut tx = ReliableSender::new(16);
        assert!(tx.push(&msg));
        assert_eq!(tx.queued(), 3);
        let (mut out, mut ids) = (Vec::new(), Vec::new());
        assert_eq!(tx.write(0, 100, 10_000, &mut out, &mut ids), 3);
        let mut r = Reader::new(&out);
        let slices: Vec<_> = (0..3).map(|_| read_slice(&mut r).unwrap()).collect();
        let mut rx = ReliableReceiver::default();
        for i in [2, 0, 0, 1] {
            let (id, d, last) = slices[i];
            rx.receive(id, d, last);
        }
        assert_eq!(rx.pop().unwrap(), msg);
        assert!(rx.pop().is_none());
        assert!(!tx.has_due(50, 100), "nothing to resend before the timeout");
        assert!(tx.has_due(100, 100));
        tx.acked(&ids);
        assert_eq!(tx.queued(), 0);
    }

    #[test]
    fn a_full_queue_refuses_and_keeps_nothing() {
        let mut tx = ReliableSender::new(2);
        assert!(tx.push(b"a"));
        assert!(!tx.push(&[0; 2 * SLICE_BYTES]));
        assert_eq!(tx.queued(), 1);
    }
}
