//! The network a run puts between some of its bots and the server (`--net 80ms±20ms,0.5%@40%`), made in
//! the swarm itself: the kernel here has no netem, and a namespace's link would put every bot behind the
//! same queue. A conditioned bot's requests wait before they reach its sockets, and what arrives for it
//! waits before the bot is handed it: the one-way delay plus a uniform jitter each way, never reordered —
//! TCP keeps a connection's order, so a message leaves no sooner than the one before it — and a lost
//! message comes a retransmission timeout later (Linux's least, 200 ms), holding back those behind it, as
//! TCP's head-of-line blocking does.
//!
//! Not modelled: bandwidth and queues (a big message is delayed as a small one), the congestion window
//! after a loss, the server's own view of the connection (its RTT estimate and ACK timing stay
//! loopback's), and the handshake's extra round trips (a connect is delayed once each way).

use aggro_core::rng::Rng;
use aggro_core::units::parse_duration;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// How long TCP waits before it sends a lost segment again: Linux's least retransmission timeout.
pub const RETRANSMIT_US: u64 = 200_000;

/// The conditions of a share of the bots: each way's delay and jitter, the chance a message is lost.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct NetSpec {
    /// One-way delay, µs.
    pub delay_us: u64,
    /// Each message's delay is `delay_us` ± up to this, uniformly, µs.
    pub jitter_us: u64,
    /// The chance that a message is lost once (and retransmitted).
    pub loss: f64,
    /// The share of bots behind it, in (0, 1].
    pub share: f64,
}

impl NetSpec {
    /// Parses `DELAY[±JITTER][,LOSS%][@SHARE%]`: `80ms±20ms,0.5%@40%` (`+-` for `±`).
    pub fn parse(text: &str) -> Result<NetSpec, String> {
        let bad = |why: &str| format!("bad network {text:?}: {why} (example: 80ms±20ms,0.5%@40% — one-way delay ± jitter, loss, share of bots)");
        let percent = |p: &str| -> Result<f64, String> {
            let v: f64 = p
                .trim()
                .strip_suffix('%')
                .ok_or_else(|| bad(&format!("{p:?} is not a percentage")))?
                .trim()
                .parse()
                .map_err(|_| bad(&format!("{p:?} is not a number")))?;
            (0.0..=100.0).contains(&v).then_some(v / 100.0).ok_or_else(|| bad("a percentage is between 0% and 100%"))
        };
        let (rest, share) = match text.split_once('@') {
            Some((rest, share)) => (rest, percent(share)?),
            None => (text, 1.0),
        };
        if share == 0.0 {
            return Err(bad("a share of 0% puts no bot behind it"));
        }
        let (delays, loss) = match rest.split_once(',') {
            Some((delays, loss)) => (delays, percent(loss)?),
            None => (rest, 0.0),
        };
        let (delay, jitter) = match delays.split_once('±').or_else(|| delays.split_once("+-")) {
            Some((delay, jitter)) => (delay, jitter),
            None => (delays, "0s"),
        };
        let us = |d: &str| parse_duration(d.trim()).map(|d| d.as_micros() as u64).map_err(|e| bad(&e));
        let (delay_us, jitter_us) = (us(delay)?, us(jitter)?);
        if jitter_us > delay_us {
            return Err(bad("the jitter is not above the delay"));
        }
        Ok(NetSpec { delay_us, jitter_us, loss, share })
    }

    /// Whether bot `bot` is behind this network: the share spread evenly over the bots (any run of
    /// consecutive bots holds about its share).
    pub fn covers(&self, bot: usize) -> bool {
        const GOLDEN: f64 = 0.618_033_988_749_894_9;
        (bot as f64 * GOLDEN).fract() < self.share
    }
}

/// What a run's network held, counted.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NetCounts {
    /// Messages (and requests) held.
    pub held: u64,
    /// Of them, lost once and retransmitted.
    pub retransmitted: u64,
    /// The time they were held, in all, µs.
    pub added_us: u64,
}

/// One direction's held items: each bot's in its order, released in time order.
#[derive(Debug)]
pub struct Held<T> {
    heap: BinaryHeap<Entry<T>>,
    /// When each bot's last held item leaves (none leaves before it).
    last: Vec<u64>,
}

#[derive(Debug)]
struct Entry<T> {
    at: u64,
    seq: u64,
    bot: usize,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    /// The heap's top is the earliest (first held of equals).
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl<T> Held<T> {
    pub fn new(bots: usize) -> Self {
        Self { heap: BinaryHeap::new(), last: vec![0; bots] }
    }

    /// When the next item leaves.
    pub fn next_at(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.at)
    }

    /// The next item due by `now`: its bot, when it left, and it.
    pub fn pop_due(&mut self, now: u64) -> Option<(usize, u64, T)> {
        if self.heap.peek()?.at > now {
            return None;
        }
        self.heap.pop().map(|e| (e.bot, e.at, e.item))
    }
}

/// The network of a run's conditioned bots: their requests on the way out, what arrives for them on the
/// way in.
#[derive(Debug)]
pub struct Network<Out, In> {
    pub spec: NetSpec,
    rng: Rng,
    pub out: Held<Out>,
    pub inbound: Held<In>,
    pub counts: NetCounts,
    /// Items held so far: equal times leave in the order they were held.
    seq: u64,
}

/// Which way a message goes.
#[derive(Clone, Copy, Debug)]
pub enum Way {
    Out,
    In,
}

impl<Out, In> Network<Out, In> {
    /// The network for `bots` bots, its draws from `rng`.
    pub fn new(spec: NetSpec, bots: usize, rng: Rng) -> Self {
        Self { spec, rng, out: Held::new(bots), inbound: Held::new(bots), counts: NetCounts::default(), seq: 0 }
    }

    /// When a message of bot `bot` that set off at `from` arrives across the network going `way`: after
    /// the delay and a jitter, a retransmission if it was lost, and never before the bot's last one that way.
    pub fn arrival(&mut self, bot: usize, from: u64, way: Way) -> u64 {
        let s = self.spec;
        let jitter = if s.jitter_us == 0 { 0 } else { self.rng.range_inclusive(0, 2 * s.jitter_us) };
        let mut at = from + s.delay_us - s.jitter_us + jitter;
        if s.loss > 0.0 && self.rng.unit() < s.loss {
            at += RETRANSMIT_US;
            self.counts.retransmitted += 1;
        }
        let last = match way {
            Way::Out => &mut self.out.last[bot],
            Way::In => &mut self.inbound.last[bot],
        };
        at = at.max(*last);
        *last = at;
        self.counts.held += 1;
        self.counts.added_us += at - from;
        at
    }

    /// Holds `item`, bot `bot`'s request made at `now`, until it reaches the wire.
    pub fn hold_out(&mut self, bot: usize, now: u64, item: Out) {
        let at = self.arrival(bot, now, Way::Out);
        let seq = self.next_seq();
        self.out.heap.push(Entry { at, seq, bot, item });
    }

    /// Holds `item`, which arrived for bot `bot` at `arrived`, until the bot would have it.
    pub fn hold_in(&mut self, bot: usize, arrived: u64, item: In) {
        let at = self.arrival(bot, arrived, Way::In);
        let seq = self.next_seq();
        self.inbound.heap.push(Entry { at, seq, bot, item });
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// When the next held item, either way, is due.
    pub fn next_at(&self) -> Option<u64> {
        match (self.out.next_at(), self.inbound.next_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Takes what it counted since the last call.
    pub fn take_counts(&mut self) -> NetCounts {
        std::mem::take(&mut self.counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_network_is_written_as_delay_jitter_loss_and_share() {
        let n = NetSpec::parse("80ms±20ms,0.5%@40%").unwrap();
        assert_eq!((n.delay_us, n.jitter_us, n.share), (80_000, 20_000, 0.4));
        assert!((n.loss - 0.005).abs() < 1e-12);
        assert_eq!(NetSpec::parse("30ms").unwrap(), NetSpec { delay_us: 30_000, jitter_us: 0, loss: 0.0, share: 1.0 });
        assert_eq!(NetSpec::parse("100ms+-10ms").unwrap().jitter_us, 10_000);
        for bad in ["", "fast", "80ms±90ms", "80ms,5", "80ms,150%", "80ms@0%", "80ms@x%"] {
            let e = NetSpec::parse(bad).unwrap_err();
            assert!(e.contains("example: 80ms±20ms,0.5%@40%"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_share_of_the_bots_is_spread_over_them() {
        let spec = NetSpec::parse("50ms@40%").unwrap();
        let covered = (0..1000).filter(|&b| spec.covers(b)).count();
        assert!((390..=410).contains(&covered), "{covered} of 1,000 bots for 40 %");
        let first_ten = (0..10).filter(|&b| spec.covers(b)).count();
        assert!((3..=5).contains(&first_ten), "{first_ten} of the first 10");
    }

    #[test]
    fn messages_arrive_delayed_within_the_jitter_and_in_their_order() {
        let spec = NetSpec::parse("80ms±20ms").unwrap();
        let mut net: Network<u32, u32> = Network::new(spec, 1, Rng::seeded(7));
        let mut last = 0;
        for k in 0..1000u32 {
            let sent = u64::from(k) * 1_000; // one a millisecond: jitter would reorder them
            net.hold_out(0, sent, k);
            let (_, at, _) = std::iter::from_fn(|| net.out.pop_due(u64::MAX)).last().unwrap();
            assert!(at >= sent + 60_000 && (at <= sent + 100_000 || at == last), "message {k} sent at {sent} arrives at {at}");
            assert!(at >= last, "message {k} overtook the one before");
            last = at;
        }
        assert_eq!(net.counts.held, 1000);
        assert_eq!(net.counts.retransmitted, 0);
    }

    #[test]
    fn a_lost_message_comes_a_retransmission_later_and_holds_back_those_behind_it() {
        let spec = NetSpec::parse("10ms,100%").unwrap();
        let mut net: Network<(), u8> = Network::new(spec, 2, Rng::seeded(1));
        net.hold_in(0, 0, 1);
        assert_eq!(net.next_at(), Some(210_000), "10 ms and a retransmission");
        let spec = NetSpec { loss: 0.0, ..spec };
        net.spec = spec;
        net.hold_in(0, 1_000, 2);
        net.hold_in(1, 1_000, 3);
        let order: Vec<(usize, u64, u8)> = std::iter::from_fn(|| net.inbound.pop_due(u64::MAX)).collect();
        assert_eq!(order, [(1, 11_000, 3), (0, 210_000, 1), (0, 210_000, 2)], "bot 0's second waits behind its first; bot 1's does not");
        assert_eq!(net.take_counts(), NetCounts { held: 3, retransmitted: 1, added_us: 210_000 + 209_000 + 10_000 });
    }
}
