//! The received-sequence window: which recent packets arrived. It rejects
//! replays and too-old packets, and produces the ack header (latest + 32 bits).
//!
//! Sequence numbers are u32 and start at 1; they do not wrap (a connection
//! ends before 2^32 packets: 4.5 years at 30 packets a second).

/// How far behind the newest packet an older one is still accepted.
pub const WINDOW: u32 = 64;

/// The verdict on an incoming sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Not seen before and inside the window.
    New,
    /// Already received: a duplicate or a replay.
    Duplicate,
    /// Older than the window (or zero): can no longer be told from a replay.
    TooOld,
}

/// Received sequence numbers: the newest, and a bit per each of the 64 before it.
#[derive(Clone, Debug, Default)]
pub struct ReceiveWindow {
    latest: u32,
    /// Bit i set: `latest - 1 - i` was received.
    bits: u64,
}

impl ReceiveWindow {
    /// What receiving `seq` would be.
    pub fn check(&self, seq: u32) -> Arrival {
        if seq == 0 {
            return Arrival::TooOld;
        }
        if seq > self.latest {
            return Arrival::New;
        }
        if seq == self.latest {
            return Arrival::Duplicate;
        }
        let behind = self.latest - seq;
        if behind > WINDOW {
            Arrival::TooOld
        } else if self.bits & (1 << (behind - 1)) != 0 {
            Arrival::Duplicate
        } else {
            Arrival::New
        }
    }

    /// Records `seq` as received (call only after [`check`](Self::check) said New and the packet authenticated).
    pub fn mark(&mut self, seq: u32) {
        if seq > self.latest {
            let shift = seq - self.latest;
            self.bits = if self.latest == 0 || shift > 64 {
                0
            } else if shift == 64 {
                1 << 63
            } else {
                (self.bits << shift) | (1 << (shift - 1))
            };
            self.latest = seq;
        } else if seq < self.latest {
            self.bits |= 1 << (self.latest - seq - 1);
        }
    }

    /// The ack header: the newest sequence received, and bit i for `latest - 1 - i` (i < 32).
    pub fn ack(&self) -> (u32, u32) {
        (self.latest, self.bits as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_and_old_packets_are_refused_and_gaps_accepted() {
        let mut w = ReceiveWindow::default();
        assert_eq!(w.check(0), Arrival::TooOld);
        for s in [1, 2, 5] {
            assert_eq!(w.check(s), Arrival::New);
            w.mark(s);
        }
        assert_eq!(w.check(5), Arrival::Duplicate);
        assert_eq!(w.check(2), Arrival::Duplicate);
        assert_eq!(w.check(3), Arrival::New);
        w.mark(3);
        // 5 latest; 4 missing (bit 0); 3, 2, 1 received (bits 1-3).
        assert_eq!(w.ack(), (5, 0b1110));
        w.mark(100);
        assert_eq!(w.check(36), Arrival::New);
        assert_eq!(w.check(35), Arrival::TooOld);
        assert_eq!(w.ack(), (100, 0));
    }

    #[test]
    fn ack_bits_name_the_packets_behind_the_latest() {
        let mut w = ReceiveWindow::default();
        for s in [10, 12, 13] {
            w.mark(s);
        }
        // 13 latest; 12 is 1 behind (bit 0), 10 is 3 behind (bit 2).
        assert_eq!(w.ack(), (13, 0b101));
    }
}
