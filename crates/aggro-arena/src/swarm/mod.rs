//! The bot swarm: thousands of bots in one thread on a few shared UDP sockets
//! (the server tells sessions apart by slot, not by address), batched receive
//! and send, one timer heap for every bot's ticks. One loop runs every
//! [`Behaviour`]: [`br`] (battle royale against the game server) and
//! [`relay`] (rooms of the relay server).
//!
//! What it measures: the **action-to-observer delay** (a bot acts at t0 on
//! the shared monotonic clock — a shot, a room event; every bot that receives
//! the server's relay of it records now − t0 — exact, because swarm and
//! server read one clock on one machine), its own **timer lateness** (how late
//! each tick went out), traffic, and its own CPU, and it warns when it, not the
//! server, is the bottleneck.

pub mod br;
pub mod profile;
pub mod relay;

pub use profile::{SwarmCounters, SwarmInterval};

use crate::clock::{now_us, unix_ms};
use aggro_core::rng::Rng;
use crate::udp::{BATCH, BatchSocket, Traffic};
use arena_proto::{Client, ConnectToken, Secret};
use profile::SwarmProfile;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How the swarm runs, whatever its bots do.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SwarmConfig {
    /// The server's address.
    #[serde(serialize_with = "display")]
    pub server: SocketAddr,
    /// Bots kept in play.
    pub bots: usize,
    /// Each bot's tick: an input (br) or an event (relay) every this long.
    #[serde(serialize_with = "crate::clock::secs")]
    pub tick_every: Duration,
    /// UDP sockets shared by the bots.
    pub sockets: usize,
    /// New connections per second while filling up.
    pub connect_rate: u32,
    /// A bot that left (died, or churned out) is replaced after this long.
    #[serde(serialize_with = "crate::clock::secs")]
    pub respawn_after: Duration,
    /// Run length (from the first connection).
    #[serde(serialize_with = "crate::clock::secs")]
    pub duration: Duration,
    /// Interval between records.
    #[serde(serialize_with = "crate::clock::secs")]
    pub interval: Duration,
    /// Seed of every bot's choices.
    pub seed: u64,
    /// Client ids start here (so several swarms against one server do not collide).
    pub first_client_id: u64,
    /// Fault injection: this fraction of received datagrams is thrown away before any bot sees it.
    pub receive_loss: f64,
    #[serde(skip)]
    pub secret: Secret,
}

fn display<S: serde::Serializer>(a: &SocketAddr, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(a)
}

impl SwarmConfig {
    /// 100 bots ticking at 30 Hz, 1,000 connects/s, 2 minutes.
    pub fn new(server: SocketAddr, secret: Secret) -> Self {
        Self {
            server,
            bots: 100,
            tick_every: Duration::from_micros(1_000_000 / 30),
            sockets: 0,
            connect_rate: 1000,
            respawn_after: Duration::from_secs(1),
            duration: Duration::from_secs(120),
            interval: Duration::from_secs(5),
            seed: 1,
            first_client_id: 1,
            receive_loss: 0.0,
            secret,
        }
    }

    /// Ticks per second of the whole swarm.
    pub fn tick_rate(&self) -> f64 {
        self.bots as f64 / self.tick_every.as_secs_f64().max(1e-6)
    }

    fn socket_count(&self) -> usize {
        if self.sockets > 0 { self.sockets } else { self.bots.div_ceil(512).clamp(1, 8) }
    }
}

/// A kind of bot: makes them; the swarm runs any kind on one loop.
pub trait Behaviour {
    type Bot: Player;
    /// What the swarm's delay histogram measures, as an operation name (`gunfire_delay`, `relay_delay`).
    const DELAY: &'static str;
    /// Bot number `index` presenting `client`, drawing its choices from `rng`.
    fn bot(&mut self, index: usize, client: Client, rng: Rng) -> Self::Bot;
}

/// One bot, as the swarm drives it.
pub trait Player {
    /// Connected and playing.
    fn active(&self) -> bool;
    /// Gone from play (died or churned out); the swarm retires it once.
    fn gone(&self) -> bool;
    /// One tick: writes the datagram to send into `out`, if any.
    fn tick(&mut self, now_us: u64, out: &mut Vec<u8>, heard: &mut Heard) -> bool;
    /// Takes one datagram (its sequence number read from the header).
    fn receive(&mut self, now_us: u64, seq: u32, packet: &[u8], heard: &mut Heard);
    /// Writes a goodbye into `out`, once.
    fn leave(&mut self, now_us: u64, out: &mut Vec<u8>) -> bool;
}

/// Writes `client`'s goodbye into `out` unless it was written before (`left`); true if there is one to send.
pub fn goodbye(client: &mut Client, left: &mut bool, now_us: u64, out: &mut Vec<u8>) -> bool {
    if std::mem::replace(left, true) {
        return false;
    }
    match client.connection() {
        Some(conn) => {
            conn.write_disconnect(now_us, out);
            true
        }
        None => false,
    }
}

/// What bots tell the swarm as they tick and take packets.
#[derive(Debug, Default)]
pub struct Heard {
    /// Action-to-observer delays (µs) measured since the swarm last took them.
    pub delays_us: Vec<u64>,
    /// Counters of the open interval.
    pub counters: SwarmCounters,
    /// Set when the bot just left play; the swarm retires and replaces it.
    pub gone: bool,
}

/// A running swarm of `B`'s bots.
#[derive(Debug)]
pub struct Swarm<B: Behaviour> {
    cfg: SwarmConfig,
    behaviour: B,
    sockets: Vec<BatchSocket>,
    bots: Vec<B::Bot>,
    generation: Vec<u32>,
    slot_to_bot: Vec<u32>,
    timers: BinaryHeap<Reverse<(u64, u32)>>,
    profile: SwarmProfile,
    heard: Heard,
    buf: Vec<u8>,
    rng: Rng,
    traffic_seen: Traffic,
    /// Bots that left play since the loop last retired them.
    leaving: Vec<usize>,
    /// One entry per socket, for waiting on all of them.
    pollfds: Vec<libc::pollfd>,
}

const NO_BOT: u32 = u32::MAX;

/// Datagrams decoded between two looks at the tick timers.
const TICKS_EVERY: usize = 8;

impl<B: Behaviour> Swarm<B> {
    /// Binds the sockets (on the server's loopback family); nothing is sent yet.
    pub fn new(cfg: SwarmConfig, behaviour: B) -> std::io::Result<Self> {
        let local: SocketAddr = if cfg.server.is_ipv4() { "127.0.0.1:0" } else { "[::1]:0" }.parse().expect("literal");
        let local = if cfg.server.ip().is_loopback() { local } else { SocketAddr::new(if cfg.server.is_ipv4() { [0, 0, 0, 0].into() } else { std::net::Ipv6Addr::UNSPECIFIED.into() }, 0) };
        let sockets = (0..cfg.socket_count()).map(|_| BatchSocket::bind(local)).collect::<std::io::Result<Vec<_>>>()?;
        let pollfds = sockets.iter().map(BatchSocket::pollfd).collect();
        Ok(Self {
            rng: Rng::seeded(cfg.seed),
            cfg,
            behaviour,
            sockets,
            bots: Vec::new(),
            generation: Vec::new(),
            slot_to_bot: Vec::new(),
            timers: BinaryHeap::new(),
            profile: SwarmProfile::new(now_us()),
            heard: Heard::default(),
            buf: Vec::with_capacity(1500),
            traffic_seen: Traffic::default(),
            leaving: Vec::new(),
            pollfds,
        })
    }

    fn make_bot(&mut self, index: usize, now: u64) -> B::Bot {
        let generation = self.generation[index];
        let client_id = self.cfg.first_client_id + ((generation as u64) << 32 | index as u64);
        let token = ConnectToken { client_id, expires_at_ms: unix_ms() + 3_600_000, nonce: self.rng.next_u64() };
        let (bytes, key) = token.issue(&self.cfg.secret);
        self.behaviour.bot(index, Client::new(bytes, key, now), Rng::stream(self.cfg.seed, client_id))
    }

    fn socket_of(&self, bot: usize) -> usize {
        bot % self.sockets.len()
    }

    /// Plays until the duration passes or `stop` is set; `on_interval` sees each interval. Bots leave politely at the end.
    pub fn run(&mut self, stop: &AtomicBool, mut on_interval: impl FnMut(&SwarmInterval)) -> std::io::Result<(Vec<SwarmInterval>, SwarmInterval)> {
        crate::clock::tighten_timer_slack();
        let start = now_us();
        self.profile = SwarmProfile::new(start);
        let period = (self.cfg.tick_every.as_micros() as u64).max(1);
        let connect_gap = 1_000_000 / self.cfg.connect_rate.max(1) as u64;
        self.generation = vec![0; self.cfg.bots];
        for i in 0..self.cfg.bots {
            let b = self.make_bot(i, start);
            self.bots.push(b);
            // Bots join at the connect rate; each one's ticks are spread over the period.
            self.timers.push(Reverse((start + i as u64 * connect_gap, i as u32)));
        }
        let end = start + self.cfg.duration.as_micros() as u64;
        let interval = self.cfg.interval.as_micros().max(1) as u64;
        let mut next_interval = start + interval;
        let mut intervals = Vec::new();
        let mut respawns: Vec<(u64, usize)> = Vec::new();
        loop {
            let now = now_us();
            if now >= end || stop.load(Ordering::Relaxed) {
                break;
            }
            let mut more = false;
            for s in 0..self.sockets.len() {
                more |= self.receive(s, period);
            }
            self.tick_due(period);
            for s in &mut self.sockets {
                s.flush();
            }
            self.retire_gone(now, &mut respawns);
            let now = now_us();
            respawns.retain(|&(at, i)| {
                if at > now {
                    return true;
                }
                self.generation[i] += 1;
                let b = self.make_bot(i, now);
                self.bots[i] = b;
                self.timers.push(Reverse((now, i as u32)));
                self.heard.counters.respawns += 1;
                false
            });
            if now >= next_interval {
                let iv = self.close_interval(now);
                on_interval(&iv);
                intervals.push(iv);
                next_interval += interval;
            }
            if !more {
                let wake = self.timers.peek().map_or(now + 1000, |Reverse((d, _))| *d).min(next_interval).min(end);
                crate::udp::wait_readable(&mut self.pollfds, wake);
            }
        }
        self.leave_all();
        let iv = self.close_interval(now_us());
        on_interval(&iv);
        intervals.push(iv);
        Ok((intervals, self.profile.totals().expect("an interval was closed")))
    }

    /// Runs every bot tick that is due, each rescheduled one period on.
    fn tick_due(&mut self, period: u64) {
        while let Some(&Reverse((due, i))) = self.timers.peek() {
            let now = now_us();
            if due > now {
                break;
            }
            self.timers.pop();
            let i = i as usize;
            if self.bots[i].gone() {
                continue;
            }
            if self.bots[i].active() {
                self.profile.lateness(now - due);
            }
            if self.bots[i].tick(now, &mut self.buf, &mut self.heard) {
                self.send(i);
            }
            self.take_heard(i);
            // The next tick keeps the bot's phase; a bot more than a period behind skips ahead.
            let next = if now - due > period { now + period } else { due + period };
            self.timers.push(Reverse((next, i as u32)));
        }
    }

    /// Moves what bot `i` just reported into the profile.
    fn take_heard(&mut self, i: usize) {
        for d in self.heard.delays_us.drain(..) {
            self.profile.delay(d);
        }
        if std::mem::take(&mut self.heard.gone) {
            self.leaving.push(i);
        }
    }

    fn close_interval(&mut self, now: u64) -> SwarmInterval {
        let mut traffic = Traffic::default();
        for s in &self.sockets {
            traffic += s.traffic();
        }
        let t = traffic.since(self.traffic_seen);
        self.traffic_seen = traffic;
        let mut c = std::mem::take(&mut self.heard.counters);
        (c.packets_in, c.bytes_in, c.packets_out, c.bytes_out) = (t.packets_in, t.bytes_in, t.packets_out, t.bytes_out);
        let gauges = crate::procstat::ProcessGauges::read(self.sockets.iter().filter_map(|s| s.local_addr().ok()).map(|a| a.port()));
        self.profile.close(now, self.active() as u64, c, gauges)
    }

    /// Bots in play now.
    pub fn active(&self) -> usize {
        self.bots.iter().filter(|b| b.active()).count()
    }

    fn send(&mut self, i: usize) {
        let s = self.socket_of(i);
        self.sockets[s].send(self.cfg.server, &self.buf);
    }

    /// Takes one batch (up to 64 datagrams) from socket `s`; returns whether more may be waiting.
    /// Due ticks run every [`TICKS_EVERY`] datagrams, so a burst of snapshots never holds a tick up
    /// for longer than decoding a few of them.
    fn receive(&mut self, s: usize, period: u64) -> bool {
        let n = match self.sockets[s].recv_batch() {
            Ok(n) => n,
            Err(_) => {
                self.heard.counters.socket_errors += 1;
                0
            }
        };
        for k in 0..n {
            if k % TICKS_EVERY == TICKS_EVERY - 1 {
                self.tick_due(period);
            }
            if self.cfg.receive_loss > 0.0 && self.rng.unit() < self.cfg.receive_loss {
                self.heard.counters.injected_losses += 1;
                continue;
            }
            let (_, bytes) = self.sockets[s].received(k);
            let Some(h) = arena_proto::wire::read_header(bytes) else { continue };
            if let Some((slot, client_id)) = arena_proto::client::peek_accept(bytes) {
                let index = (client_id.wrapping_sub(self.cfg.first_client_id) & 0xffff_ffff) as usize;
                if index < self.bots.len() {
                    if self.slot_to_bot.len() <= slot as usize {
                        self.slot_to_bot.resize(slot as usize + 1, NO_BOT);
                    }
                    self.slot_to_bot[slot as usize] = index as u32;
                }
            }
            let Some(&i) = self.slot_to_bot.get(h.slot as usize).filter(|i| **i != NO_BOT) else { continue };
            self.bots[i as usize].receive(now_us(), h.seq, bytes, &mut self.heard);
            self.take_heard(i as usize);
        }
        n == BATCH
    }

    /// The bots that left play since the last call say goodbye; each is replaced after `respawn_after`.
    fn retire_gone(&mut self, now: u64, respawns: &mut Vec<(u64, usize)>) {
        while let Some(i) = self.leaving.pop() {
            if self.bots[i].leave(now, &mut self.buf) {
                self.send(i);
            }
            respawns.push((now + self.cfg.respawn_after.as_micros() as u64, i));
        }
    }

    fn leave_all(&mut self) {
        let now = now_us();
        for i in 0..self.bots.len() {
            if self.bots[i].leave(now, &mut self.buf) {
                self.send(i);
            }
        }
        for s in &mut self.sockets {
            s.flush();
        }
    }
}
