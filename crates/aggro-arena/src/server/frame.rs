//! One server process's state and its frame: dispatch, send flush, simulate, flush.

use super::ServeConfig;
use super::bodies::SharedBodies;
use super::history::StateHistory;
use super::profile::{PHASES, Profile, ServerGauges, ServerInterval};
use super::relevance::{Relevance, candidates_for};
use super::replication::{Candidate, ClientReplication, SkipTable, SnapshotFrame};
use crate::clock::{now_us, sleep_until, unix_ms};
use crate::codec::msg::{ClientRpc, Input, ServerRpc};
use crate::game::world::{Event, Shot, World};
use crate::udp::{BATCH, BatchSocket, Traffic};
use arena_proto::{DropReason, Server, ServerConfig, ServerEvent};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, Default)]
struct Session {
    repl: ClientReplication,
    joined: bool,
    resends_seen: u64,
}

/// The server: sockets, sessions, the match, the profile.
#[derive(Debug)]
pub struct GameServer {
    cfg: ServeConfig,
    sock: BatchSocket,
    proto: Server<SocketAddr>,
    world: World,
    sessions: Vec<Option<Session>>,
    frame: u32,
    last_frame_us: u64,
    shots: Vec<Shot>,
    fired: Vec<(u32, u64)>,
    events: Vec<Event>,
    /// Who is told of the event at hand (reused).
    observers: Vec<u32>,
    candidates: Vec<Candidate>,
    skips: SkipTable,
    relevance: Relevance,
    bodies: SharedBodies,
    history: StateHistory,
    errors: Vec<u64>,
    buf: Vec<u8>,
    rpc: Vec<u8>,
    profile: Profile,
    drops_seen: arena_proto::Drops,
    traffic_seen: Traffic,
    last_timeout_check_us: u64,
}

impl GameServer {
    /// A server on a bound socket.
    pub fn new(cfg: ServeConfig, sock: BatchSocket) -> Self {
        let proto = Server::new(ServerConfig { max_clients: cfg.max_clients, ..ServerConfig::new(cfg.secret.clone()) });
        let now = now_us();
        let skips = SkipTable::new(&cfg.tiers);
        Self {
            world: World::new(cfg.seed, cfg.zone_shrink_s),
            cfg,
            sock,
            proto,
            sessions: Vec::new(),
            frame: 0,
            last_frame_us: now,
            shots: Vec::new(),
            fired: Vec::new(),
            events: Vec::new(),
            observers: Vec::new(),
            candidates: Vec::new(),
            skips,
            relevance: Relevance::default(),
            bodies: SharedBodies::default(),
            history: StateHistory::default(),
            errors: Vec::new(),
            buf: Vec::with_capacity(arena_proto::MTU),
            rpc: Vec::with_capacity(64),
            profile: Profile::new(now),
            drops_seen: arena_proto::Drops::default(),
            traffic_seen: Traffic::default(),
            last_timeout_check_us: now,
        }
    }

    /// The socket's address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Runs frames at the target rate until `stop` is set or the configured duration passes; `on_interval`
    /// sees each interval's profile (the caller keeps what it wants of each). Returns the whole run.
    pub fn run(&mut self, stop: &AtomicBool, mut on_interval: impl FnMut(&ServerInterval)) -> std::io::Result<ServerInterval> {
        crate::clock::tighten_timer_slack();
        let period_us = 1_000_000 / self.cfg.tick_hz.max(1) as u64;
        let start = now_us();
        self.profile = Profile::new(start);
        self.last_frame_us = start;
        let end = self.cfg.duration.map(|d| start + d.as_micros() as u64);
        let interval_us = self.cfg.interval.as_micros().max(1) as u64;
        let mut next_interval = start + interval_us;
        let mut next_frame = start;
        while !stop.load(Ordering::Relaxed) && end.is_none_or(|e| next_frame < e) {
            sleep_until(next_frame);
            let ns = self.frame()?;
            let done = now_us();
            next_frame = (next_frame + period_us).max(done);
            if done >= next_interval {
                let iv = self.close_interval(done);
                on_interval(&iv);
                next_interval += interval_us;
            }
            self.profile.frame(ns, self.proto.sessions() as u64);
        }
        self.goodbye();
        let iv = self.close_interval(now_us());
        on_interval(&iv);
        let (clients, queued) = (iv.clients, iv.queued_reliable);
        let drops = drop_counts(&self.proto.stats().drops, &arena_proto::Drops::default());
        let totals = self.profile.totals(&ServerGauges { clients, queued_reliable: queued, drops }).expect("an interval was closed");
        Ok(totals)
    }

    fn close_interval(&mut self, now: u64) -> ServerInterval {
        let mut queued = 0;
        for (slot, s) in self.sessions.iter_mut().enumerate() {
            let (Some(s), Some((_, conn))) = (s.as_mut(), self.proto.session(slot as u32)) else { continue };
            let st = conn.stats();
            queued += st.queued;
            self.profile.counters.resends += st.resends - s.resends_seen;
            s.resends_seen = st.resends;
        }
        let traffic = self.sock.traffic();
        let t = traffic.since(self.traffic_seen);
        self.traffic_seen = traffic;
        let c = &mut self.profile.counters;
        (c.packets_in, c.bytes_in, c.packets_out, c.bytes_out) = (t.packets_in, t.bytes_in, t.packets_out, t.bytes_out);
        let drops_now = self.proto.stats().drops;
        let drops = drop_counts(&drops_now, &self.drops_seen);
        self.drops_seen = drops_now;
        self.profile.close(now, &ServerGauges { clients: self.proto.sessions() as u64, queued_reliable: queued, drops })
    }

    /// One frame; returns its phase times in ns.
    fn frame(&mut self) -> std::io::Result<[u64; PHASES.len()]> {
        let t0 = now_us();
        self.frame += 1;
        self.dispatch(t0)?;
        let t1 = now_us();
        if self.cfg.send_flush {
            self.send_reliable_now(t1);
        }
        let t2 = now_us();
        let dt = ((t2 - self.last_frame_us) as f32 / 1e6).min(0.25);
        self.last_frame_us = t2;
        self.simulate(dt);
        let t3 = now_us();
        let sending_before = self.sock.send_call_ns();
        self.flush(t3);
        let t4 = now_us();
        let flush_sendmmsg_ns = self.sock.send_call_ns() - sending_before;
        Ok([(t4 - t0) * 1000, (t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000, (t4 - t3) * 1000, flush_sendmmsg_ns])
    }

    fn dispatch(&mut self, now: u64) -> std::io::Result<()> {
        let unix = unix_ms();
        loop {
            let n = self.sock.recv_batch()?;
            for i in 0..n {
                let (from, bytes) = self.sock.received(i);
                let Some(from) = from else { continue };
                match self.proto.process_packet(now, unix, from, bytes) {
                    Ok(ServerEvent::Connected { slot, .. }) => {
                        let s = slot as usize;
                        if self.sessions.len() <= s {
                            self.sessions.resize_with(s + 1, || None);
                        }
                        self.sessions[s] = Some(Session::default());
                        self.profile.counters.connects += 1;
                        self.rpc.clear();
                        ServerRpc::Welcome { actor: slot, tick_hz: self.cfg.tick_hz as u16 }.write(&mut self.rpc);
                        if let Some((_, conn)) = self.proto.session(slot) {
                            let _ = conn.send_reliable(&self.rpc);
                        }
                    }
                    Ok(ServerEvent::Data { slot, payload }) => {
                        if let Some(input) = Input::read(payload) {
                            self.world.apply_input(slot, input);
                        }
                    }
                    Ok(ServerEvent::Disconnected { slot, .. }) => self.leave(slot),
                    Ok(ServerEvent::Handled) | Err(_) => {}
                }
            }
            if n < BATCH {
                break;
            }
        }
        for (addr, p) in self.proto.drain_handshakes() {
            self.sock.send(addr, &p);
        }
        if now - self.last_timeout_check_us > 1_000_000 {
            self.last_timeout_check_us = now;
            for (slot, _) in self.proto.update(now) {
                self.leave(slot);
            }
        }
        self.take_rpcs();
        self.relay_gunfire();
        Ok(())
    }

    fn leave(&mut self, slot: u32) {
        self.world.remove(slot);
        if let Some(s) = self.sessions.get_mut(slot as usize) {
            *s = None;
        }
        self.profile.counters.disconnects += 1;
    }

    fn take_rpcs(&mut self) {
        for slot in 0..self.sessions.len() as u32 {
            let Some(s) = self.sessions[slot as usize].as_mut() else { continue };
            let Some((_, conn)) = self.proto.session(slot) else { continue };
            while let Some(m) = conn.receive_reliable() {
                match ClientRpc::read(&m) {
                    Some(ClientRpc::Join { x, y }) if !s.joined => {
                        s.joined = true;
                        self.world.spawn(slot, x as f32 / 100.0, y as f32 / 100.0);
                    }
                    Some(ClientRpc::Fire { shot_at_us, aim }) if s.joined => {
                        self.shots.push(Shot { shooter: slot, aim });
                        self.fired.push((slot, shot_at_us));
                    }
                    _ => {}
                }
            }
        }
    }

    /// Every shot becomes a gunfire event for each client that sees the shooter.
    fn relay_gunfire(&mut self) {
        for &(shooter, shot_at_us) in &self.fired {
            observers_of(&self.world, self.cfg.interest_m, shooter, &mut self.observers);
            self.rpc.clear();
            ServerRpc::Fired { shooter, shot_at_us }.write(&mut self.rpc);
            for &o in self.observers.iter().filter(|o| **o != shooter) {
                if let Some((_, conn)) = self.proto.session(o) {
                    let _ = conn.send_reliable(&self.rpc);
                    self.profile.counters.fired_rpcs += 1;
                }
            }
        }
        self.profile.counters.shots += self.fired.len() as u64;
        self.fired.clear();
    }

    fn send_reliable_now(&mut self, now: u64) {
        for slot in 0..self.sessions.len() as u32 {
            if self.sessions[slot as usize].is_none() {
                continue;
            }
            let Some((addr, conn)) = self.proto.session(slot) else { continue };
            if conn.has_reliable_due(now) {
                send_data(now, addr, conn, &[], &mut self.sock, &mut self.buf);
            }
        }
        self.sock.flush();
    }

    fn simulate(&mut self, dt: f32) {
        self.world.simulate(dt, &self.shots, &mut self.events);
        self.shots.clear();
        for e in &self.events {
            self.rpc.clear();
            match *e {
                Event::Hit { shooter, target, health } => {
                    self.profile.counters.hits += 1;
                    ServerRpc::Hit { shooter, target, health }.write(&mut self.rpc);
                    self.observers.clear();
                    self.observers.extend([shooter, target]);
                }
                Event::Died { who, killer } => {
                    self.profile.counters.deaths += 1;
                    ServerRpc::Died { who, killer }.write(&mut self.rpc);
                    observers_of(&self.world, self.cfg.interest_m, who, &mut self.observers);
                }
            }
            for &o in &self.observers {
                if let Some((_, conn)) = self.proto.session(o) {
                    let _ = conn.send_reliable(&self.rpc);
                }
            }
        }
        self.events.clear();
    }

    fn flush(&mut self, now: u64) {
        let hz = self.cfg.tick_hz;
        let zone_cm = (self.world.zone_radius_m() * 100.0) as u32;
        let Self { sessions, proto, world, sock, buf, candidates, skips, relevance, bodies, history, errors, profile, cfg, frame, .. } = self;
        relevance.clear();
        history.record(*frame, world.states());
        let at = SnapshotFrame { frame: *frame, hz, zone_radius_cm: zone_cm, states: world.states(), history };
        for slot in 0..sessions.len() as u32 {
            let Some(s) = sessions[slot as usize].as_mut() else { continue };
            let Some((addr, conn)) = proto.session(slot) else { continue };
            for seq in conn.drain_acked() {
                s.repl.acked(seq);
            }
            match world.player(slot).filter(|_| s.joined) {
                None => {
                    send_data(now, addr, conn, &[], sock, buf);
                }
                Some(me) => {
                    candidates_for(world, relevance, me.x, me.y, cfg.interest_m, skips, candidates);
                    errors.clear();
                    let fig = s.repl.write_snapshot(&at, bodies, candidates, |e| errors.push(e), |p| send_data(now, addr, conn, p, sock, buf));
                    for &e in errors.iter() {
                        profile.position_error(e);
                    }
                    let c = &mut profile.counters;
                    c.entries += fig.entries;
                    c.entry_bits += fig.entry_bits;
                    c.moving_deltas += fig.moving_deltas;
                    c.moving_delta_bits += fig.moving_delta_bits;
                    c.skipped += fig.skipped;
                }
            }
            // Reliable data the snapshot left no room for: up to four more packets.
            for _ in 0..4 {
                if !conn.has_reliable_due(now) {
                    break;
                }
                send_data(now, addr, conn, &[], sock, buf);
            }
        }
        sock.flush();
    }

    /// Tells every client the server is going away.
    fn goodbye(&mut self) {
        let now = now_us();
        for slot in 0..self.sessions.len() as u32 {
            if let Some(addr) = self.proto.disconnect(now, slot, &mut self.buf) {
                self.sock.send(addr, &self.buf);
            }
        }
        self.sock.flush();
    }
}

/// The sessions that see actor `id`: within the interest radius, or all.
fn observers_of(world: &World, interest_m: Option<f32>, id: u32, out: &mut Vec<u32>) {
    out.clear();
    let Some(p) = world.player(id) else { return };
    match interest_m {
        None => out.extend(world.players().map(|(i, _)| i)),
        Some(r) => world.grid.near(p.x, p.y, r, |i| {
            if world.player(i).is_some_and(|o| (o.x - p.x).hypot(o.y - p.y) <= r) {
                out.push(i);
            }
        }),
    }
}

/// Writes a data packet (acks, due reliable slices, `payload`) and queues it; returns its sequence number.
fn send_data(now: u64, addr: SocketAddr, conn: &mut arena_proto::Connection, payload: &[u8], sock: &mut BatchSocket, buf: &mut Vec<u8>) -> u32 {
    let seq = conn.write_data(now, payload, buf);
    sock.send(addr, buf);
    seq
}

/// Drops per reason since `since`, by name, reasons with none left out.
fn drop_counts(now: &arena_proto::Drops, since: &arena_proto::Drops) -> BTreeMap<String, u64> {
    DropReason::ALL.iter().map(|r| (r.name().to_string(), now.of(*r) - since.of(*r))).filter(|(_, n)| *n > 0).collect()
}
