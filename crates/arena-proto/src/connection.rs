//! One authenticated peer: its sequence numbers, acks, round-trip time, the
//! reliable channel in both directions, and its counters.

use crate::drops::DropReason;
use crate::reliable::{ReliableReceiver, ReliableSender, SliceFate, read_slice};
use crate::token::SessionKey;
use crate::window::{Arrival, ReceiveWindow};
use crate::wire::{self, DATA, DISCONNECT, FROM_SERVER, HEADER, Header, Reader, TAG};
use smallvec::SmallVec;

/// Bytes of a data packet that are not payload: header, ack, slice count, tag.
pub const DATA_OVERHEAD: usize = HEADER + 8 + 1 + TAG;
/// The largest unreliable payload a data packet carries.
pub const MAX_UNRELIABLE: usize = crate::MTU - DATA_OVERHEAD;

const SENT_RING: usize = 1024;

/// Why a reliable message was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The queue of unacked slices is full: the peer is not keeping up.
    #[error("the reliable send queue is full")]
    QueueFull,
    /// Longer than the channel's largest message.
    #[error("a reliable message is at most {} bytes", crate::reliable::MAX_MESSAGE)]
    TooLarge,
}

/// A connection's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnStats {
    /// Packets received and accepted.
    pub packets_in: u64,
    /// Packets sent.
    pub packets_out: u64,
    /// Bytes of accepted packets.
    pub bytes_in: u64,
    /// Bytes sent.
    pub bytes_out: u64,
    /// Reliable messages queued for sending.
    pub reliable_out: u64,
    /// Reliable messages delivered to the owner.
    pub reliable_in: u64,
    /// Reliable slices sent again.
    pub resends: u64,
    /// Reliable slices received twice (resends that crossed their ack).
    pub duplicate_slices: u64,
    /// Reliable messages refused because the send queue was full.
    pub queue_full: u64,
    /// Unacked reliable slices now (a gauge).
    pub queued: u64,
}

#[derive(Debug, Default)]
struct Sent {
    seq: u32,
    sent_at_us: u64,
    acked: bool,
    /// Ids of the reliable slices it carried, held in the record for the usual few (an ack then reads one
    /// record, not also a list elsewhere).
    slices: SmallVec<[u16; 6]>,
}

/// What an accepted sealed packet carried.
#[derive(Debug)]
pub enum Opened<'p> {
    /// A data packet; its unreliable payload (possibly empty).
    Data(&'p [u8]),
    /// The peer said goodbye.
    Disconnect,
    /// Another sealed kind (accept, denied) with its body, for the handshake to read.
    Other(u8, &'p [u8]),
}

/// One peer.
#[derive(Debug)]
pub struct Connection {
    key: SessionKey,
    slot: u32,
    /// Set in the kinds this side sends.
    direction: u8,
    next_seq: u32,
    window: ReceiveWindow,
    sent: Vec<Sent>,
    tx: ReliableSender,
    rx: ReliableReceiver,
    rtt_us: u64,
    /// Mean deviation of the round trip (RFC 6298's RTTVAR).
    rtt_dev_us: u64,
    last_received_us: u64,
    /// When reliable slices arrived that no packet from this side has acknowledged yet.
    ack_owed_since: Option<u64>,
    newly_acked: Vec<u32>,
    /// The newest ack received and the acks known below it (bit i: seq − 1 − i), so that a packet's ack
    /// looks only at the packets it newly acknowledges: a peer repeats each ack in 32 packets, and
    /// looking at all 33 records each time read ~20 cold cache lines per packet received.
    known_ack: u32,
    known_bits: u32,
    stats: ConnStats,
}

impl Connection {
    pub(crate) fn new(key: SessionKey, slot: u32, is_server: bool, now_us: u64, max_queued: usize) -> Self {
        Self {
            key,
            slot,
            direction: if is_server { FROM_SERVER } else { 0 },
            next_seq: 1,
            window: ReceiveWindow::default(),
            sent: (0..SENT_RING).map(|_| Sent::default()).collect(),
            tx: ReliableSender::new(max_queued),
            rx: ReliableReceiver::default(),
            rtt_us: 0,
            rtt_dev_us: 0,
            last_received_us: now_us,
            ack_owed_since: None,
            newly_acked: Vec::new(),
            known_ack: 0,
            known_bits: 0,
            stats: ConnStats::default(),
        }
    }

    pub(crate) fn set_slot(&mut self, slot: u32) {
        self.slot = slot;
    }

    /// The session's slot on the server.
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// Smoothed round-trip time in µs (0 before the first ack), including the peer's delay before acking.
    pub fn rtt_us(&self) -> u64 {
        self.rtt_us
    }

    /// When the last accepted packet arrived.
    pub fn last_received_us(&self) -> u64 {
        self.last_received_us
    }

    /// The counters, with the queue gauge filled in.
    pub fn stats(&self) -> ConnStats {
        ConnStats { resends: self.tx.resends, queued: self.tx.queued() as u64, ..self.stats }
    }

    /// How long a reliable slice waits for its ack before it is sent again: the smoothed round trip plus
    /// four mean deviations (RFC 6298's RTO), and at least 1.5 round trips. A peer that acks only with its
    /// own 10 Hz sends has a round trip varying by up to 100 ms; a fixed multiple of the mean would resend in vain.
    pub fn resend_after_us(&self) -> u64 {
        if self.rtt_us == 0 { 100_000 } else { (self.rtt_us + (4 * self.rtt_dev_us).max(self.rtt_us / 2)).clamp(10_000, 1_000_000) }
    }

    /// Queues a reliable message.
    pub fn send_reliable(&mut self, msg: &[u8]) -> Result<(), SendError> {
        if msg.len() > crate::reliable::MAX_MESSAGE {
            return Err(SendError::TooLarge);
        }
        if !self.tx.push(msg) {
            self.stats.queue_full += 1;
            return Err(SendError::QueueFull);
        }
        self.stats.reliable_out += 1;
        Ok(())
    }

    /// The next reliable message received, in order.
    pub fn receive_reliable(&mut self) -> Option<Vec<u8>> {
        let m = self.rx.pop()?;
        self.stats.reliable_in += 1;
        Some(m)
    }

    /// When reliable slices (new or repeated) arrived that no data packet from this side has acknowledged
    /// yet: a side with nothing else to send owes the peer a packet before its resend timer runs out.
    pub fn ack_owed_since(&self) -> Option<u64> {
        self.ack_owed_since
    }

    /// Sequence numbers of this side's packets acked since the last call.
    pub fn drain_acked(&mut self) -> std::vec::Drain<'_, u32> {
        self.newly_acked.drain(..)
    }

    /// Whether reliable slices are waiting to be sent or resent.
    pub fn has_reliable_due(&self, now_us: u64) -> bool {
        self.tx.has_due(now_us, self.resend_after_us())
    }

    /// Writes a sealed data packet into `out`: acks, the reliable slices that fit, and `unreliable`
    /// (at most [`MAX_UNRELIABLE`] bytes; longer is cut). Returns the packet's sequence number.
    pub fn write_data(&mut self, now_us: u64, unreliable: &[u8], out: &mut Vec<u8>) -> u32 {
        let unreliable = &unreliable[..unreliable.len().min(MAX_UNRELIABLE)];
        let seq = self.next_seq;
        wire::write_header(out, Header { kind: DATA | self.direction, slot: self.slot, seq });
        let (ack, bits) = self.window.ack();
        self.ack_owed_since = None;
        out.extend_from_slice(&ack.to_le_bytes());
        out.extend_from_slice(&bits.to_le_bytes());
        let count_at = out.len();
        out.push(0);
        let resend_after_us = self.resend_after_us();
        let record = &mut self.sent[seq as usize % SENT_RING];
        record.slices.clear();
        let budget = MAX_UNRELIABLE - unreliable.len();
        out[count_at] = self.tx.write(now_us, resend_after_us, budget, out, &mut record.slices);
        out.extend_from_slice(unreliable);
        self.finish(now_us, seq, out);
        seq
    }

    /// Writes a sealed packet of another kind (accept, denied, disconnect) with `body`.
    pub(crate) fn write_sealed(&mut self, now_us: u64, kind: u8, body: &[u8], out: &mut Vec<u8>) {
        let seq = self.next_seq;
        wire::write_header(out, Header { kind: kind | self.direction, slot: self.slot, seq });
        out.extend_from_slice(body);
        self.sent[seq as usize % SENT_RING].slices.clear();
        self.finish(now_us, seq, out);
    }

    /// Writes a goodbye packet (send it a few times: it is not acked).
    pub fn write_disconnect(&mut self, now_us: u64, out: &mut Vec<u8>) {
        self.write_sealed(now_us, DISCONNECT, &[], out);
    }

    fn finish(&mut self, now_us: u64, seq: u32, out: &mut Vec<u8>) {
        wire::seal(&self.key, out);
        let record = &mut self.sent[seq as usize % SENT_RING];
        record.seq = seq;
        record.sent_at_us = now_us;
        record.acked = false;
        self.next_seq += 1;
        self.stats.packets_out += 1;
        self.stats.bytes_out += out.len() as u64;
    }

    /// Authenticates a sealed packet addressed to this connection and takes in its acks and slices.
    pub(crate) fn open<'p>(&mut self, now_us: u64, h: Header, packet: &'p [u8]) -> Result<Opened<'p>, DropReason> {
        if h.kind & FROM_SERVER == self.direction {
            return Err(DropReason::WrongDirection);
        }
        match self.window.check(h.seq) {
            Arrival::New => {}
            Arrival::Duplicate => return Err(DropReason::Replayed),
            Arrival::TooOld => return Err(DropReason::TooOld),
        }
        if !wire::verify(&self.key, packet) {
            return Err(DropReason::BadTag);
        }
        let body = wire::body(packet);
        let opened = match h.kind & !FROM_SERVER {
            DATA => Opened::Data(self.take_data(now_us, body).ok_or(DropReason::Malformed)?),
            DISCONNECT => Opened::Disconnect,
            _ => Opened::Other(h.kind, body),
        };
        self.window.mark(h.seq);
        self.last_received_us = now_us;
        self.stats.packets_in += 1;
        self.stats.bytes_in += packet.len() as u64;
        Ok(opened)
    }

    /// Parses a data body fully before changing anything, then applies it.
    fn take_data<'p>(&mut self, now_us: u64, body: &'p [u8]) -> Option<&'p [u8]> {
        let mut r = Reader::new(body);
        let ack = r.u32()?;
        let bits = r.u32()?;
        let count = r.u8()?;
        let slices = r.rest();
        let mut check = Reader::new(slices);
        for _ in 0..count {
            read_slice(&mut check)?;
        }
        let unreliable = check.rest();
        self.take_acks(now_us, ack, bits);
        if count > 0 {
            self.ack_owed_since.get_or_insert(now_us);
        }
        let mut r = Reader::new(slices);
        for _ in 0..count {
            let (id, data, last) = read_slice(&mut r)?;
            match self.rx.receive(id, data, last) {
                SliceFate::Duplicate => self.stats.duplicate_slices += 1,
                SliceFate::Accepted | SliceFate::OutOfWindow | SliceFate::Oversized => {}
            }
        }
        Some(unreliable)
    }

    fn take_acks(&mut self, now_us: u64, ack: u32, bits: u32) {
        if ack == 0 || ack >= self.next_seq {
            return;
        }
        let (ack_is_new, bits) = match ack.checked_sub(self.known_ack) {
            Some(0) => {
                let fresh = bits & !self.known_bits;
                self.known_bits |= bits;
                (false, fresh)
            }
            Some(d) => {
                // The acks known so far, in this ack's bit positions.
                let known = 1u32.checked_shl(d - 1).unwrap_or(0) | self.known_bits.checked_shl(d).unwrap_or(0);
                (self.known_ack, self.known_bits) = (ack, bits | known);
                (true, bits & !known)
            }
            // An older ack, reordered: looked at in full (the records say what is acked already).
            None => (true, bits),
        };
        if ack_is_new {
            self.take_ack(now_us, ack);
        }
        for i in (0..32).filter(|i| bits & (1 << i) != 0) {
            if let Some(seq) = ack.checked_sub(i + 1) {
                self.take_ack(now_us, seq);
            }
        }
    }

    fn take_ack(&mut self, now_us: u64, seq: u32) {
        let record = &mut self.sent[seq as usize % SENT_RING];
        if record.seq != seq || record.acked {
            return;
        }
        record.acked = true;
        // Every packet acked is a sample, not only the newest: a peer that acks once per tick acks its
        // oldest packets a whole tick late, and the deviation must see that.
        let sample = now_us.saturating_sub(record.sent_at_us).max(1);
        if self.rtt_us == 0 {
            (self.rtt_us, self.rtt_dev_us) = (sample, sample / 2);
        } else {
            self.rtt_dev_us = (self.rtt_dev_us * 3 + self.rtt_us.abs_diff(sample)) / 4;
            self.rtt_us = (self.rtt_us * 7 + sample) / 8;
        }
        self.tx.acked(&record.slices);
        self.newly_acked.push(seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::SessionKey;

    /// The acks a receiver would send after receiving `got` (its newest and the 32 before).
    fn ack_of(got: &[u32]) -> (u32, u32) {
        let ack = *got.iter().max().expect("something received");
        let bits = got.iter().filter(|s| **s < ack && ack - **s <= 32).fold(0, |b, s| b | 1 << (ack - s - 1));
        (ack, bits)
    }

    #[test]
    fn every_packet_is_acked_once_however_acks_repeat_and_reorder() {
        let mut c = Connection::new(SessionKey { k0: 1, k1: 2 }, 0, true, 0, 64);
        let mut out = Vec::new();
        for _ in 0..100 {
            out.clear();
            c.write_data(0, &[], &mut out);
        }
        // Every packet but the multiples of 7 arrives; the receiver acks after each, and some acks go
        // missing (every 3rd), repeat, or come out of order (every 5th a second time, late).
        let got: Vec<u32> = (1..=100).filter(|s| s % 7 != 0).collect();
        let mut acks: Vec<(u32, u32)> = (1..=got.len()).map(|n| ack_of(&got[..n])).collect();
        acks = acks.iter().enumerate().filter(|(i, _)| i % 3 != 2).map(|(_, a)| *a).collect();
        let late: Vec<_> = acks.iter().step_by(5).copied().collect();
        acks.extend(late);
        acks.push(*acks.last().expect("acks"));
        for (ack, bits) in acks {
            c.take_acks(10, ack, bits);
        }
        let mut acked: Vec<u32> = c.drain_acked().collect();
        let count = acked.len();
        acked.sort();
        acked.dedup();
        assert_eq!(acked.len(), count, "no packet acked twice");
        assert_eq!(acked, got, "every packet received is acked, and only those");
    }
}
