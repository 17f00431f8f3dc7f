//! What a bot has heard from each other bot: the newest message number from
//! each, so every message is told in order, late (or repeated), or after a gap.

use std::cmp::Ordering;

/// Where a message falls in its sender's numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// The first heard from this sender.
    First,
    /// The next number.
    Next,
    /// At or before one already heard: late, or a repeat.
    Late,
    /// After a gap of this many numbers never heard.
    Gap(u32),
}

/// Each sender heard from, with its newest number (rooms are small: a short list).
#[derive(Clone, Debug, Default)]
pub struct Peers(Vec<(u64, u32)>);

/// Senders remembered at most; past it the older half is forgotten (a room's senders come and go with
/// churn, and a forgotten one's next message only counts as its first).
const REMEMBERED: usize = 256;

impl Peers {
    /// Notes message `seq` from `from`, and where it falls.
    pub fn heard(&mut self, from: u64, seq: u32) -> Order {
        let Some(peer) = self.0.iter_mut().find(|p| p.0 == from) else {
            if self.0.len() >= REMEMBERED {
                self.0.drain(..REMEMBERED / 2);
            }
            self.0.push((from, seq));
            return Order::First;
        };
        let last = peer.1;
        peer.1 = last.max(seq);
        match seq.cmp(&last.wrapping_add(1)) {
            Ordering::Equal => Order::Next,
            Ordering::Less => Order::Late,
            Ordering::Greater => Order::Gap(seq - last - 1),
        }
    }

    /// Forgets a sender that left (a newcomer with its number starts afresh).
    pub fn forget(&mut self, from: u64) {
        self.0.retain(|p| p.0 != from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_told_in_order_late_or_after_a_gap() {
        let mut p = Peers::default();
        assert_eq!(p.heard(7, 5), Order::First);
        assert_eq!(p.heard(7, 6), Order::Next);
        assert_eq!(p.heard(7, 9), Order::Gap(2));
        assert_eq!(p.heard(7, 8), Order::Late);
        assert_eq!(p.heard(7, 10), Order::Next, "the newest number stays 9 after a late 8");
        assert_eq!(p.heard(3, 1), Order::First);
        p.forget(7);
        assert_eq!(p.heard(7, 1), Order::First);
        for from in 100..100 + REMEMBERED as u64 {
            p.heard(from, 1);
        }
        assert!(p.0.len() <= REMEMBERED);
        assert_eq!(p.heard(100 + REMEMBERED as u64 - 1, 2), Order::Next, "the newest are kept");
    }
}
