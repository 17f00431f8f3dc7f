//! The bot swarm: thousands of bots in one thread on a few shared UDP sockets
//! (the server tells sessions apart by slot, not by address), batched receive
//! and send, one timer heap for every bot's input ticks.
//!
//! What it measures: the **action-to-observer delay** (a bot pulls the
//! trigger at t0 on the shared monotonic clock; every bot that receives the
//! server's gunfire event records now − t0 — exact, because swarm and server
//! read one clock on one machine), its own **timer lateness** (how late each
//! input tick went out), snapshots and bytes received, and its own CPU, and it
//! warns when it, not the server, is the bottleneck.

pub mod bot;
pub mod profile;

pub use profile::{SwarmCounters, SwarmInterval};

use crate::clock::{now_us, unix_ms};
use aggro_core::rng::Rng;
use crate::udp::{BATCH, BatchSocket, Traffic};
use arena_proto::{Client, ConnectToken, Secret};
use bot::Bot;
use profile::SwarmProfile;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How the swarm plays.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SwarmConfig {
    /// The server's address.
    #[serde(serialize_with = "display")]
    pub server: SocketAddr,
    /// Bots kept in the match.
    pub bots: usize,
    /// Input ticks per second per bot.
    pub input_hz: u32,
    /// Shots per second per bot while it sees an enemy.
    pub fire_hz: f32,
    /// Bots that drop together (hot drops): one cluster per this many bots.
    pub cluster: usize,
    /// UDP sockets shared by the bots.
    pub sockets: usize,
    /// New connections per second while filling up.
    pub connect_rate: u32,
    /// A dead bot's replacement joins after this long.
    #[serde(serialize_with = "secs")]
    pub respawn_after: Duration,
    /// Run length (from the first connection).
    #[serde(serialize_with = "secs")]
    pub duration: Duration,
    /// Interval between records.
    #[serde(serialize_with = "secs")]
    pub interval: Duration,
    /// Seed of drops, waypoints and aim.
    pub seed: u64,
    /// Client ids start here (so several swarms against one server do not collide).
    pub first_client_id: u64,
    #[serde(skip)]
    pub secret: Secret,
}

fn display<S: serde::Serializer>(a: &SocketAddr, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(a)
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl SwarmConfig {
    /// 100 bots at 30 Hz input, one shot a second, clusters of 25, 1,000 connects/s, 2 minutes.
    pub fn new(server: SocketAddr, secret: Secret) -> Self {
        Self {
            server,
            bots: 100,
            input_hz: 30,
            fire_hz: 1.0,
            cluster: 25,
            sockets: 0,
            connect_rate: 1000,
            respawn_after: Duration::from_secs(1),
            duration: Duration::from_secs(120),
            interval: Duration::from_secs(5),
            seed: 1,
            first_client_id: 1,
            secret,
        }
    }

    fn socket_count(&self) -> usize {
        if self.sockets > 0 { self.sockets } else { self.bots.div_ceil(512).clamp(1, 8) }
    }
}

/// A running swarm.
#[derive(Debug)]
pub struct Swarm {
    cfg: SwarmConfig,
    sockets: Vec<BatchSocket>,
    bots: Vec<Bot>,
    generation: Vec<u32>,
    slot_to_bot: Vec<u32>,
    timers: BinaryHeap<Reverse<(u64, u32)>>,
    clusters: Vec<(f32, f32)>,
    profile: SwarmProfile,
    buf: Vec<u8>,
    rng: Rng,
    traffic_seen: Traffic,
    /// Bots that died since the loop last retired the dead.
    dying: Vec<usize>,
    /// One entry per socket, for waiting on all of them.
    pollfds: Vec<libc::pollfd>,
}

const NO_BOT: u32 = u32::MAX;

impl Swarm {
    /// Binds the sockets (on the server's loopback family) and prepares the bots; nothing is sent yet.
    pub fn new(cfg: SwarmConfig) -> std::io::Result<Self> {
        let local: SocketAddr = if cfg.server.is_ipv4() { "127.0.0.1:0" } else { "[::1]:0" }.parse().expect("literal");
        let local = if cfg.server.ip().is_loopback() { local } else { SocketAddr::new(if cfg.server.is_ipv4() { [0, 0, 0, 0].into() } else { std::net::Ipv6Addr::UNSPECIFIED.into() }, 0) };
        let sockets = (0..cfg.socket_count()).map(|_| BatchSocket::bind(local)).collect::<std::io::Result<Vec<_>>>()?;
        let mut rng = Rng::seeded(cfg.seed);
        let clusters = (0..cfg.bots.div_ceil(cfg.cluster.max(1)))
            .map(|_| {
                let c = crate::game::map::MAP_M / 2.0;
                // Hot drops anywhere on the island but its outer 600 m, as a battle royale's plane path allows.
                (c + (rng.unit() as f32 - 0.5) * 7000.0, c + (rng.unit() as f32 - 0.5) * 7000.0)
            })
            .collect();
        let profile = SwarmProfile::new(now_us());
        let pollfds = sockets.iter().map(|s| libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
        Ok(Self {
            cfg,
            sockets,
            bots: Vec::new(),
            generation: Vec::new(),
            slot_to_bot: Vec::new(),
            timers: BinaryHeap::new(),
            clusters,
            profile,
            buf: Vec::with_capacity(1500),
            rng,
            traffic_seen: Traffic::default(),
            dying: Vec::new(),
            pollfds,
        })
    }

    fn make_bot(&mut self, index: usize, now: u64) -> Bot {
        let generation = self.generation[index];
        let client_id = self.cfg.first_client_id + ((generation as u64) << 32 | index as u64);
        let token = ConnectToken { client_id, expires_at_ms: unix_ms() + 3_600_000, nonce: self.rng.next_u64() };
        let (bytes, key) = token.issue(&self.cfg.secret);
        let (cx, cy) = self.clusters[index / self.cfg.cluster.max(1) % self.clusters.len()];
        let drop_at = (cx + (self.rng.unit() as f32 - 0.5) * 200.0, cy + (self.rng.unit() as f32 - 0.5) * 200.0);
        let fire_every = (1e6 / self.cfg.fire_hz.max(0.01) as f64) as u64;
        Bot::new(Client::new(bytes, key, now), index % self.sockets.len(), drop_at, fire_every, Rng::stream(self.cfg.seed, client_id))
    }

    /// Plays until the duration passes or `stop` is set; `on_interval` sees each interval. Bots leave politely at the end.
    pub fn run(&mut self, stop: &AtomicBool, mut on_interval: impl FnMut(&SwarmInterval)) -> std::io::Result<(Vec<SwarmInterval>, SwarmInterval)> {
        crate::clock::tighten_timer_slack();
        let start = now_us();
        self.profile = SwarmProfile::new(start);
        let period = 1_000_000 / self.cfg.input_hz.max(1) as u64;
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
            let more = self.receive(now);
            while let Some(&Reverse((due, i))) = self.timers.peek() {
                let now = now_us();
                if due > now {
                    break;
                }
                self.timers.pop();
                let i = i as usize;
                if self.bots[i].dead {
                    continue;
                }
                if self.bots[i].active() {
                    self.profile.lateness(now - due);
                }
                if self.bots[i].tick(now, &mut self.buf) {
                    self.send(i);
                }
                // The next tick keeps the bot's phase; a bot more than a period behind skips ahead.
                let next = if now - due > period { now + period } else { due + period };
                self.timers.push(Reverse((next, i as u32)));
            }
            for s in &mut self.sockets {
                s.flush();
            }
            self.retire_dead(now, &mut respawns);
            let now = now_us();
            respawns.retain(|&(at, i)| {
                if at > now {
                    return true;
                }
                self.generation[i] += 1;
                let b = self.make_bot(i, now);
                self.bots[i] = b;
                self.timers.push(Reverse((now, i as u32)));
                self.profile.counters.respawns += 1;
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
                self.wait(wake);
            }
        }
        self.leave_all();
        let iv = self.close_interval(now_us());
        on_interval(&iv);
        intervals.push(iv);
        Ok((intervals, self.profile.totals().expect("an interval was closed")))
    }

    fn close_interval(&mut self, now: u64) -> SwarmInterval {
        let mut traffic = Traffic::default();
        for s in &self.sockets {
            traffic += s.traffic();
        }
        let t = traffic.since(self.traffic_seen);
        self.traffic_seen = traffic;
        let c = &mut self.profile.counters;
        (c.packets_in, c.bytes_in, c.packets_out, c.bytes_out) = (t.packets_in, t.bytes_in, t.packets_out, t.bytes_out);
        self.profile.close(now, self.active() as u64)
    }

    /// Bots in the match now.
    pub fn active(&self) -> usize {
        self.bots.iter().filter(|b| b.active()).count()
    }

    fn send(&mut self, i: usize) {
        let s = self.bots[i].socket;
        self.sockets[s].send(self.cfg.server, &self.buf);
    }

    /// Takes one batch (up to 64 datagrams) from each socket, so a burst of snapshots never holds up due
    /// input ticks for long; returns whether datagrams may still be waiting.
    fn receive(&mut self, now: u64) -> bool {
        let mut more = false;
        for s in 0..self.sockets.len() {
            let n = match self.sockets[s].recv_batch() {
                Ok(n) => n,
                Err(_) => {
                    self.profile.counters.socket_errors += 1;
                    0
                }
            };
            for k in 0..n {
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
                let heard = self.bots[i as usize].receive(now, h.seq, bytes);
                if heard.died {
                    self.dying.push(i as usize);
                }
                self.profile.heard(&heard);
            }
            more |= n == BATCH;
        }
        more
    }

    /// The bots that died since the last call say goodbye; each is replaced after `respawn_after`.
    fn retire_dead(&mut self, now: u64, respawns: &mut Vec<(u64, usize)>) {
        while let Some(i) = self.dying.pop() {
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

    /// Waits for a datagram on any socket or until `deadline_us`.
    fn wait(&mut self, deadline_us: u64) {
        let now = now_us();
        if deadline_us <= now {
            return;
        }
        let fds = &mut self.pollfds;
        let left = deadline_us - now;
        let ts = libc::timespec { tv_sec: (left / 1_000_000) as i64, tv_nsec: ((left % 1_000_000) * 1000) as i64 };
        // SAFETY: the pollfd array and the timespec live across the call; a null sigmask keeps the current one.
        unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
    }

}
