//! The arena protocol's transport: a few UDP sockets shared by every bot (the
//! server tells sessions apart by slot, not by address), batched receive and
//! send. A datagram finds its bot by the slot in its header, learnt from the
//! server's accept packet (which names the client id, hence the bot).

use super::SwarmConfig;
use super::transport::Transport;
use aggro_arena::arrival::Clocks;
use aggro_arena::procstat::ProcessGauges;
use aggro_arena::udp::{BATCH, BatchSocket, Traffic};
use std::net::{Ipv6Addr, SocketAddr};

/// One received datagram, as a bot sees it.
#[derive(Clone, Copy, Debug)]
pub struct Datagram<'a> {
    /// The sequence number in its header.
    pub seq: u32,
    pub bytes: &'a [u8],
}

/// UDP sockets shared by the swarm's bots.
#[derive(Debug)]
pub struct Datagrams {
    server: SocketAddr,
    first_client_id: u64,
    bots: usize,
    sockets: Vec<BatchSocket>,
    /// One entry per socket, for waiting on all of them.
    pollfds: Vec<libc::pollfd>,
    slot_to_bot: Vec<u32>,
    /// The last receive's datagrams: (socket, index in its batch, bot, sequence number).
    ready: Vec<(u16, u16, u32, u32)>,
    /// Turns the kernel's receive stamps into the shared clock; read at each receive.
    clocks: Clocks,
    errors: u64,
}

const NO_BOT: u32 = u32::MAX;

impl Datagrams {
    /// The bot of a client id this swarm gave out.
    fn bot_of(first_client_id: u64, bots: usize, client_id: u64) -> Option<u32> {
        let index = (client_id.wrapping_sub(first_client_id) & 0xffff_ffff) as usize;
        (index < bots).then_some(index as u32)
    }

    /// Learns a slot's bot from the server's accept packet (which names the client id).
    fn learn_slot(&mut self, slot: u32, client_id: u64) {
        if let Some(bot) = Self::bot_of(self.first_client_id, self.bots, client_id) {
            if self.slot_to_bot.len() <= slot as usize {
                self.slot_to_bot.resize(slot as usize + 1, NO_BOT);
            }
            self.slot_to_bot[slot as usize] = bot;
        }
    }
}

impl Transport for Datagrams {
    type Out = Vec<u8>;
    type In<'a> = Datagram<'a>;

    /// Binds the sockets (on the server's loopback family, or any address for a remote server).
    fn open(cfg: &SwarmConfig) -> std::io::Result<Self> {
        let server = cfg.server;
        let local = match (server.is_ipv4(), server.ip().is_loopback()) {
            (true, true) => SocketAddr::from(([127, 0, 0, 1], 0)),
            (false, true) => SocketAddr::from((Ipv6Addr::LOCALHOST, 0)),
            (true, false) => SocketAddr::from(([0, 0, 0, 0], 0)),
            (false, false) => SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)),
        };
        let count = if cfg.sockets > 0 { cfg.sockets } else { cfg.bots.div_ceil(512).clamp(1, 8) };
        let mut sockets = (0..count).map(|_| BatchSocket::bind(local)).collect::<std::io::Result<Vec<_>>>()?;
        sockets.iter_mut().for_each(BatchSocket::stamp_arrivals);
        let pollfds = sockets.iter().map(BatchSocket::pollfd).collect();
        Ok(Self {
            server,
            first_client_id: cfg.first_client_id,
            bots: cfg.bots,
            sockets,
            pollfds,
            slot_to_bot: Vec::new(),
            ready: Vec::new(),
            clocks: Clocks::default(),
            errors: 0,
        })
    }

    /// One batch (up to 64 datagrams) from each socket.
    fn receive(&mut self) -> (usize, bool) {
        self.ready.clear();
        self.clocks = Clocks::now();
        let mut more = false;
        for s in 0..self.sockets.len() {
            let n = match self.sockets[s].recv_batch() {
                Ok(n) => n,
                Err(_) => {
                    self.errors += 1;
                    0
                }
            };
            more |= n == BATCH;
            for k in 0..n {
                let (_, bytes) = self.sockets[s].received(k);
                let Some(h) = arena_proto::wire::read_header(bytes) else { continue };
                // Only a handshake's answer is looked into: an accept teaches its slot, a refusal (which has
                // no slot) names its client; every other datagram is found by its slot alone.
                let bot = match h.kind {
                    arena_proto::wire::DENIED => {
                        arena_proto::client::peek_denied(bytes).and_then(|id| Self::bot_of(self.first_client_id, self.bots, id))
                    }
                    kind => {
                        if kind == arena_proto::wire::ACCEPT
                            && let Some((slot, client_id)) = arena_proto::client::peek_accept(bytes)
                        {
                            self.learn_slot(slot, client_id);
                        }
                        self.slot_to_bot.get(h.slot as usize).copied().filter(|b| *b != NO_BOT)
                    }
                };
                if let Some(bot) = bot {
                    self.ready.push((s as u16, k as u16, bot, h.seq));
                }
            }
        }
        (self.ready.len(), more)
    }

    fn arrival(&self, k: usize) -> Option<(usize, Datagram<'_>)> {
        let &(s, i, bot, seq) = self.ready.get(k)?;
        Some((bot as usize, Datagram { seq, bytes: self.sockets[s as usize].received(i as usize).1 }))
    }

    /// A datagram's time is the kernel's stamp of its arrival, however late the swarm read it.
    fn arrived_us(&self, k: usize) -> Option<u64> {
        let &(s, i, _, _) = self.ready.get(k)?;
        self.clocks.shared_us(self.sockets[s as usize].received_at(i as usize))
    }

    fn send(&mut self, bot: usize, out: &mut Vec<u8>) {
        let s = bot % self.sockets.len();
        self.sockets[s].send(self.server, out);
        out.clear();
    }

    fn flush(&mut self) {
        for s in &mut self.sockets {
            s.flush();
        }
    }

    fn wait(&mut self, deadline_us: u64) -> bool {
        aggro_arena::udp::wait_readable(&mut self.pollfds, deadline_us)
    }

    fn traffic(&self) -> Traffic {
        let mut t = Traffic::default();
        for s in &self.sockets {
            t += s.traffic();
        }
        t
    }

    fn gauges(&self) -> ProcessGauges {
        ProcessGauges::read(self.sockets.iter().filter_map(|s| s.local_addr().ok()).map(|a| a.port()))
    }

    fn count_into(&mut self, counters: &mut super::SwarmCounters) {
        counters.socket_errors += std::mem::take(&mut self.errors);
    }
}
