//! The seam between the swarm's loop and the wire: the loop runs timers, bots
//! and records; a [`Transport`] moves their bytes — datagrams of the arena
//! protocol ([`super::datagrams`]) or WebSocket connections ([`super::websocket`]).

use aggro_arena::procstat::ProcessGauges;
use aggro_arena::udp::Traffic;

/// Carries bots' messages to and from the server.
pub trait Transport {
    /// What a bot writes for the transport to send (a datagram; WebSocket requests).
    type Out: Default;
    /// What the transport hands a bot (a datagram; a WebSocket event).
    type In<'a>
    where
        Self: 'a;

    /// Opens the transport for `cfg`'s bots against `cfg.server` (nothing is sent yet).
    fn open(cfg: &super::SwarmConfig) -> std::io::Result<Self>
    where
        Self: Sized;
    /// Takes what has arrived: how many arrivals are ready, and whether more may be waiting.
    fn receive(&mut self) -> (usize, bool);
    /// Arrival `k` of the last [`receive`](Self::receive) and the bot it is for; None when it is for no bot.
    fn arrival(&self, k: usize) -> Option<(usize, Self::In<'_>)>;
    /// When arrival `k` reached this machine (the shared clock, µs), if the transport knows (the
    /// kernel's receive timestamp); otherwise the swarm times it as it hands it over.
    fn arrived_us(&self, _k: usize) -> Option<u64> {
        None
    }
    /// Sends (or starts) what bot `bot` wrote into `out`, and clears `out`.
    fn send(&mut self, bot: usize, out: &mut Self::Out);
    /// Pushes out what sends have queued.
    fn flush(&mut self);
    /// Waits until something arrives or the clock reaches `deadline_us` (a deadline passed: only looks);
    /// returns whether something did (sockets on their way in aside).
    fn wait(&mut self, deadline_us: u64) -> bool;
    /// Waits until `until_us` for sockets still on their way in (a connect, a handshake, an HTTP call) alone;
    /// returns whether one is ready. A transport without such sockets sleeps.
    fn wait_hurried(&mut self, until_us: u64) -> bool {
        std::thread::sleep(std::time::Duration::from_micros(until_us.saturating_sub(aggro_arena::clock::now_us())));
        false
    }
    /// When the next message a network holds ([`super::network`]) is due, either way.
    fn held_until(&self) -> Option<u64> {
        None
    }
    /// Messages and bytes moved so far.
    fn traffic(&self) -> Traffic;
    /// Memory and kernel queues now.
    fn gauges(&self) -> ProcessGauges;
    /// Adds what the transport counted since the last call (socket errors; connections whose opening
    /// needed a retransmission) to `counters`.
    fn count_into(&mut self, counters: &mut super::SwarmCounters);
}
