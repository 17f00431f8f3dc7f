//! The bot swarm: thousands of bots on a few threads, one timer heap per thread for every bot's
//! ticks, one loop for every [`Behaviour`] — [`br`] (battle royale against aggro's game server),
//! [`relay`] (rooms of the relay server), [`colyseus`] (rooms of a Colyseus server) and `script` (Lua
//! bots; feature `lua`) — over either [`Transport`]: the arena protocol's shared UDP sockets
//! ([`datagrams`]) or one WebSocket, Socket.IO or HTTP connection per bot ([`websocket`]).
//!
//! What it measures: the **action-to-observer delay** (a bot acts at t0 on the shared monotonic clock —
//! a shot, a room event, a move; every bot that receives the server's relay of it records now − t0 —
//! exact, because swarm and server read one clock on one machine), its own **timer lateness** (how late
//! each tick went out), traffic, and its own CPU, and it warns when it, not the server, is the
//! bottleneck. The servers it plays against, the shared clock and the wire protocol are the
//! `aggro-arena` and `arena-proto` crates.
//!
//! # Layout
//! - [`config`]: how the swarm runs, whatever its bots do.
//! - [`threads`]: one event loop per thread, the bots spread over them, one result.
//! - [`transport`]: what moves a bot's bytes; [`datagrams`] (shared UDP sockets) and [`websocket`]
//!   (a connection per bot: WebSocket, TLS, HTTP/1.1, the hurried epoll set).
//! - [`timers`]: the timer heap every bot's tick sits in; [`grid`]: the moments a thread wakes for them.
//! - [`pacer`]: joins that ramp up and back off when they fail or the server starves.
//! - [`backoff`]: jittered exponential reconnects.
//! - [`network`]: an added network (delay, jitter, loss) per share of bots (`--net`).
//! - [`peers`]: who must receive what a bot sent: delivery and order checked across threads.
//! - [`profile`]: the swarm's counters, intervals and named measures.
//! - [`way_in`]: the stages of a built-in bot's way in, timed as a script's `stage()` calls are.
//! - [`br`], [`relay`], [`colyseus`], `script`: the behaviours.
//! - [`socketio`]: the Socket.IO and Engine.IO framing scripted bots speak.

pub mod backoff;
pub mod br;
pub mod colyseus;
pub mod config;
pub mod datagrams;
pub mod grid;
pub mod network;
pub mod pacer;
pub mod peers;
pub mod profile;
pub mod relay;
#[cfg(feature = "lua")]
pub mod script;
pub mod socketio;
pub mod threads;
pub mod timers;
pub mod transport;
pub mod way_in;
pub mod websocket;

pub use config::SwarmConfig;
pub use profile::{NamedMeasures, RECONNECT, STAGE, SwarmCounters, SwarmInterval};
pub use threads::run_threads;
pub use transport::Transport;

use aggro_arena::clock::{now_us, unix_ms};
use aggro_core::rng::Rng;
use arena_proto::{Client, ConnectToken};
use profile::{SwarmProfile, SwarmRecords};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A kind of bot: makes them, and names the transport they speak over; the swarm runs any kind on one loop.
pub trait Behaviour {
    type Transport: Transport;
    type Bot: Player<Self::Transport>;
    /// What the swarm's delay histogram measures, as an operation name (`gunfire_delay`, `relay_delay`).
    const DELAY: &'static str;
    /// Whether a refusal is a player turned away (Colyseus' matchmaking or `onJoin`), not a full room
    /// the bot simply asks again (the relay's).
    const REFUSALS_FAIL: bool = false;
    /// Whether every bot asked for is meant to hold a seat at once (Colyseus' players), so bots never
    /// seated are players not served — not so where bots die and respawn (br) or wait for a room.
    const SEATS_EVERY_BOT: bool = false;
    /// The stages of a bot's way in that aggro sees, in order ([`way_in`]; a script names its own).
    const STAGES: way_in::StageNames = &[];
    /// Bot number `index` (client id `client_id`, made at `now_us`), drawing its choices from `rng`.
    fn bot(&mut self, cfg: &SwarmConfig, index: usize, client_id: u64, now_us: u64, rng: Rng) -> Self::Bot;
    /// What the bots measured and counted by name since the last call (a script's), taken as each
    /// interval closes.
    fn named(&mut self) -> NamedMeasures {
        NamedMeasures::default()
    }
}

/// One bot, as the swarm drives it over transport `T`.
pub trait Player<T: Transport> {
    /// Connected and playing.
    fn active(&self) -> bool;
    /// Gone from play (died, churned out, refused or disconnected); the swarm retires it once.
    fn gone(&self) -> bool;
    /// One tick, due at `due_us` (a bot's first: its intended moment to join) and run at `now_us`: writes
    /// what to send into `out`; true if there is something.
    fn tick(&mut self, due_us: u64, now_us: u64, out: &mut T::Out, heard: &mut Heard) -> bool;
    /// Takes one arrival; may write a reply into `out` (true if there is one).
    fn receive(&mut self, now_us: u64, arrival: T::In<'_>, out: &mut T::Out, heard: &mut Heard) -> bool;
    /// Writes a goodbye into `out`, once.
    fn leave(&mut self, now_us: u64, out: &mut T::Out) -> bool;
    /// When the bot next wants to tick, if it keeps timers of its own (a scripted bot; `u64::MAX`: none
    /// set); None: one period after its last tick.
    fn next_tick(&self) -> Option<u64> {
        None
    }
    /// The stages of its way in it reached (bits in [`Behaviour::STAGES`]' order) while it is on its way
    /// in or playing — the swarm sending it away at the end included; None before it began and once gone.
    fn reached(&self) -> Option<u64> {
        None
    }
    /// It lost its server and is not back in play yet (coming back: `--reconnect`).
    fn coming_back(&self) -> bool {
        false
    }
}

/// An arena-protocol client for bot `client_id`, its connect token signed with the swarm's `secret`.
pub fn arena_client(secret: &arena_proto::Secret, client_id: u64, now_us: u64, rng: &mut Rng) -> Client {
    let token = ConnectToken { client_id, expires_at_ms: unix_ms() + 3_600_000, nonce: rng.next_u64() };
    let (bytes, key) = token.issue(secret);
    Client::new(bytes, key, now_us)
}

/// Churn: `per_s` bots of a swarm of `bots` leave play each second (each replaced by a newcomer), so a
/// bot's time in play is exponential with mean `bots ÷ per_s`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Churn {
    mean_life_us: Option<f64>,
}

impl Churn {
    /// No bot leaves when `per_s` is 0.
    pub fn new(bots: usize, per_s: f64) -> Self {
        Self { mean_life_us: (per_s > 0.0).then(|| bots as f64 / per_s * 1e6) }
    }

    /// When a bot that joined at `now_us` leaves play (None: it stays).
    pub fn leave_at(&self, now_us: u64, rng: &mut Rng) -> Option<u64> {
        self.mean_life_us.map(|mean| now_us + (rng.exp1() * mean) as u64)
    }
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
    /// Request→reply round trips (µs) measured since the swarm last took them.
    pub round_trips_us: Vec<u64>,
    /// Counters of the open interval.
    pub counters: SwarmCounters,
    /// Set when the bot just left play; the swarm retires and replaces it.
    pub gone: bool,
    /// Set when the bot began its way in.
    pub began: bool,
    /// Stages of its way in it just reached: (stage, µs since its intended start).
    pub reached: Vec<(usize, u64)>,
    /// Set when a player who lost its server just tried to come back.
    pub attempted: bool,
    /// Set when a player who lost its server is back in play: µs since it lost it.
    pub back_after_us: Option<u64>,
}

/// A running swarm of `B`'s bots.
pub struct Swarm<B: Behaviour> {
    cfg: SwarmConfig,
    behaviour: B,
    transport: B::Transport,
    bots: Vec<B::Bot>,
    generation: Vec<u32>,
    timers: timers::Timers,
    /// When the loop wakes for ticks.
    grid: grid::TickGrid,
    profile: SwarmProfile,
    /// The most bots in play at an interval's close, and the gauges of the last close (the run's totals).
    peak: profile::SwarmGauges,
    heard: Heard,
    /// The bots' way in over the open interval.
    way_in: way_in::WayIn,
    out: <B::Transport as Transport>::Out,
    rng: Rng,
    traffic_seen: aggro_arena::udp::Traffic,
    /// Bots that left play since the loop last retired them.
    leaving: Vec<usize>,
    /// With `poll_every`, when the loop last looked at the sockets and timers: a tick that fell due
    /// before is late only from then.
    looked: u64,
    /// With `read_every`, the soonest the loop looks at the sockets again.
    reads_from: u64,
    /// How fast bots join, and the next to join (from when).
    pacer: pacer::JoinPacer,
    next_join: usize,
    next_join_at: u64,
    /// Joins that ended (seated or failed) and failed, in the intervals closed so far.
    joins_closed: (u64, u64),
}

impl<B: Behaviour> std::fmt::Debug for Swarm<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Swarm").field("cfg", &self.cfg).field("bots", &self.bots.len()).finish_non_exhaustive()
    }
}

/// The longest a round of ticks runs before the loop looks at the clock and the stop again.
const TICK_ROUND_US: u64 = 100_000;

/// Arrivals handed to bots between two looks at the tick timers.
const TICKS_EVERY: usize = 8;

/// The random stream of the bots' join moments (a bot's own stream is numbered by its client id, which
/// never comes this far).
const JOIN_MOMENTS: u64 = u64::MAX;

/// When bot `i` joins, from the swarm's start: at a random moment of its own slot of `gap` µs.
fn join_moment(i: u64, gap: u64, rng: &mut Rng) -> u64 {
    i * gap + rng.range_inclusive(0, gap.saturating_sub(1))
}

impl<B: Behaviour> Swarm<B> {
    /// Opens the transport; nothing is sent yet.
    pub fn new(cfg: SwarmConfig, behaviour: B) -> std::io::Result<Self> {
        let transport = B::Transport::open(&cfg)?;
        let most = f64::from(cfg.connect_rate);
        let pacer = if cfg.pace_joins { pacer::JoinPacer::adaptive(most) } else { pacer::JoinPacer::fixed(most) };
        Ok(Self {
            rng: Rng::seeded(cfg.seed),
            cfg,
            behaviour,
            transport,
            bots: Vec::new(),
            generation: Vec::new(),
            timers: timers::Timers::default(),
            grid: grid::TickGrid::default(),
            profile: SwarmProfile::new(now_us()),
            peak: Default::default(),
            heard: Heard::default(),
            way_in: way_in::WayIn::new(B::STAGES),
            out: Default::default(),
            traffic_seen: Default::default(),
            leaving: Vec::new(),
            looked: 0,
            reads_from: 0,
            pacer,
            next_join: 0,
            next_join_at: 0,
            joins_closed: (0, 0),
        })
    }

    /// This swarm as thread `thread` of `threads`: it wakes for ticks on its share of the process's
    /// wakes ([`grid`]).
    pub fn sharing_wakes(mut self, thread: usize, threads: usize) -> Self {
        self.grid = grid::TickGrid::shared(thread, threads);
        self
    }

    fn make_bot(&mut self, index: usize, now: u64) -> B::Bot {
        let generation = self.generation[index];
        let client_id = self.cfg.first_client_id + ((generation as u64) << 32 | index as u64);
        self.behaviour.bot(&self.cfg, index, client_id, now, Rng::stream(self.cfg.seed, client_id))
    }

    /// Plays until the duration passes or `stop` is set; `on_interval` is handed each interval (nothing of it
    /// is kept here: a run of hours holds its memory flat, and no interval is copied). Bots leave politely at
    /// the end. Returns the run's totals.
    pub fn run(&mut self, stop: &AtomicBool, mut on_interval: impl FnMut(SwarmInterval)) -> std::io::Result<SwarmInterval> {
        aggro_arena::clock::tighten_timer_slack();
        let start = now_us();
        self.profile = SwarmProfile::new(start);
        let period = (self.cfg.tick_every.as_micros() as u64).max(1);
        self.generation = vec![0; self.cfg.bots];
        self.timers = timers::Timers::new(self.cfg.bots);
        for i in 0..self.cfg.bots {
            let b = self.make_bot(i, start);
            self.bots.push(b);
        }
        let mut moments = Rng::stream(self.cfg.seed, JOIN_MOMENTS);
        self.next_join_at = start;
        let end = start + self.cfg.duration.as_micros() as u64;
        let quiet_from = end.saturating_sub(self.cfg.drain.as_micros() as u64);
        let interval = self.cfg.interval.as_micros().max(1) as u64;
        let mut next_interval = start + interval;
        let mut respawns: Vec<(u64, usize)> = Vec::new();
        let poll_every = self.cfg.poll_every.as_micros() as u64;
        self.looked = start;
        loop {
            let now = now_us();
            if now >= end || stop.load(Ordering::Relaxed) {
                break;
            }
            let ticking = now < quiet_from;
            self.pace_joins(now, &mut moments);
            let more = self.receive(period, ticking);
            if ticking {
                self.tick_due(period);
            }
            self.transport.flush();
            self.retire_gone(now, &mut respawns);
            let now = now_us();
            respawns.retain(|&(at, i)| {
                if at > now {
                    return true;
                }
                self.generation[i] += 1;
                let b = self.make_bot(i, now);
                self.bots[i] = b;
                self.timers.set(i, now);
                self.heard.counters.respawns += 1;
                false
            });
            if now >= next_interval {
                let iv = self.close_interval(now, self.active());
                on_interval(iv);
                next_interval += interval;
            }
            if !more {
                // Ticks are woken for on a grid: those due within one step go out together.
                let mut next_tick = if ticking { self.timers.earliest().map_or(now + 1000, |t| self.grid.wake_for(t)) } else { end };
                if self.next_join < self.cfg.bots {
                    next_tick = next_tick.min(self.next_join_at);
                }
                if poll_every > 0 {
                    let now = now_us();
                    if self.looked + poll_every > now {
                        std::thread::sleep(Duration::from_micros(self.looked + poll_every - now));
                    }
                }
                let held = self.transport.held_until().unwrap_or(u64::MAX);
                self.wait(next_tick.min(next_interval).min(end).min(held));
                if poll_every > 0 {
                    self.looked = now_us();
                }
            }
        }
        // The last interval's bots in play are those the end sends away, not the none left after.
        let in_play = self.active();
        self.leave_all();
        let iv = self.close_interval(now_us(), in_play);
        on_interval(iv);
        Ok(self.profile.totals(&self.peak).expect("an interval was closed"))
    }

    /// Waits for the sockets until `deadline` — within `read_every` of the last readiness, for those still
    /// on their way in alone, the rest looked at from then on. When that look would come after the
    /// deadline (a tick) it is made at the deadline instead if half of `read_every` has passed, so that
    /// most looks cost no wake-up of their own.
    fn wait(&mut self, deadline: u64) {
        let read_every = self.cfg.read_every.as_micros() as u64;
        let all_from = if self.reads_from <= deadline + read_every / 2 { self.reads_from.min(deadline) } else { self.reads_from };
        if now_us() < all_from && (self.transport.wait_hurried(all_from.min(deadline)) || all_from > deadline) {
            return;
        }
        if self.transport.wait(deadline) {
            self.reads_from = now_us() + read_every;
        }
    }

    /// Lets the pacer look at the joins so far, and schedules the bots whose join slots have begun:
    /// each joins at a random moment of its own slot (one gap at the pacer's rate) and ticks from
    /// there, so their ticks spread over the period as independent players' do — slots' starts alone
    /// put every bot on one phase whenever the gap is a multiple of the period (10 joins a second, a
    /// move every 100 ms), and in 1 ms bunches at 1,000 a second.
    fn pace_joins(&mut self, now: u64, moments: &mut Rng) {
        if self.next_join >= self.cfg.bots {
            return;
        }
        if self.pacer.due(now) {
            self.transport.count_into(&mut self.heard.counters);
            let c = &self.heard.counters;
            let seen = pacer::JoinSignals {
                ended: self.joins_closed.0 + c.connects + c.failed_joins,
                failed: self.joins_closed.1 + c.failed_joins + c.retried_opens,
                server_wait_s: self.cfg.server_pid.and_then(aggro_core::clock::process_wait_s),
            };
            self.pacer.look(now, seen);
        }
        while self.next_join < self.cfg.bots && self.next_join_at <= now {
            let gap = self.pacer.gap_us();
            self.timers.set(self.next_join, self.next_join_at + join_moment(0, gap, moments));
            self.next_join_at += gap;
            self.next_join += 1;
        }
    }

    /// Runs every bot tick that is due (for up to `TICK_ROUND_US`), each rescheduled one period on.
    fn tick_due(&mut self, period: u64) {
        let began = now_us();
        loop {
            let now = now_us();
            // A round of ticks slow enough to matter (scripts running to their budget) lets the loop look
            // at the clock and the stop between its bots; the rest stay due for the next round.
            if now - began > TICK_ROUND_US {
                break;
            }
            let Some((due, i)) = self.timers.pop_due(now) else { break };
            if self.bots[i].gone() {
                continue;
            }
            if self.bots[i].active() {
                let late_from = if self.cfg.poll_every.is_zero() { due } else { due.max(self.looked) };
                self.profile.lateness(now.saturating_sub(late_from));
            }
            if self.bots[i].tick(due, now, &mut self.out, &mut self.heard) {
                self.transport.send(i, &mut self.out);
            }
            self.take_heard(i);
            // The bot's own next tick, or the next period keeping its phase (a bot more than a period
            // behind skips ahead).
            let next = match self.bots[i].next_tick() {
                Some(at) => at,
                None if now - due > period => now + period,
                None => due + period,
            };
            self.timers.set(i, next);
        }
    }

    /// Moves what bot `i` just reported into the profile.
    fn take_heard(&mut self, i: usize) {
        for d in self.heard.delays_us.drain(..) {
            self.profile.delay(d);
        }
        for r in self.heard.round_trips_us.drain(..) {
            self.profile.round_trip(r);
        }
        if std::mem::take(&mut self.heard.gone) {
            self.leaving.push(i);
        }
        if std::mem::take(&mut self.heard.began) {
            self.way_in.start();
        }
        for (k, us) in self.heard.reached.drain(..) {
            self.way_in.reach(k, us);
        }
        if std::mem::take(&mut self.heard.attempted) {
            self.way_in.attempt();
        }
        if let Some(us) = self.heard.back_after_us.take() {
            self.way_in.back(us);
        }
    }

    /// Closes the open interval at `now`, `active` bots in play as it closes.
    fn close_interval(&mut self, now: u64, active: usize) -> SwarmInterval {
        let traffic = self.transport.traffic();
        let t = traffic.since(self.traffic_seen);
        self.traffic_seen = traffic;
        let mut c = std::mem::take(&mut self.heard.counters);
        (c.packets_in, c.bytes_in, c.packets_out, c.bytes_out) = (t.packets_in, t.bytes_in, t.packets_out, t.bytes_out);
        self.transport.count_into(&mut c);
        self.joins_closed.0 += c.connects + c.failed_joins;
        self.joins_closed.1 += c.failed_joins + c.retried_opens;

        self.profile.counters = c;
        let gauges = profile::SwarmGauges { active: active as u64, process: self.transport.gauges() };
        self.peak = profile::SwarmGauges { active: self.peak.active.max(gauges.active), process: gauges.process };
        let mut iv = self.profile.close(now, &gauges);
        iv.join_rate = (self.next_join < self.cfg.bots).then(|| self.pacer.rate());
        iv.join_news = Some(std::mem::take(&mut self.pacer.news).join("\n  ")).filter(|n| !n.is_empty());
        iv.named = self.behaviour.named();
        if !B::STAGES.is_empty() {
            let out_of_play = self.bots.iter().filter(|b| b.coming_back()).count() as u64;
            self.way_in.close(&mut iv.named, self.bots.iter().filter_map(|b| b.reached()), out_of_play);
        }
        iv
    }

    /// Bots in play now.
    pub fn active(&self) -> usize {
        self.bots.iter().filter(|b| b.active()).count()
    }

    /// Hands what arrived to its bots; returns whether more may be waiting. While `ticking`, due
    /// ticks run every [`TICKS_EVERY`] arrivals, so a burst of snapshots never holds a tick up
    /// for longer than decoding a few of them.
    fn receive(&mut self, period: u64, ticking: bool) -> bool {
        let (n, more) = self.transport.receive();
        for k in 0..n {
            if ticking && k % TICKS_EVERY == TICKS_EVERY - 1 {
                self.tick_due(period);
            }
            if self.cfg.receive_loss > 0.0 && self.rng.unit() < self.cfg.receive_loss {
                self.heard.counters.injected_losses += 1;
                continue;
            }
            let at = self.transport.arrived_us(k).unwrap_or_else(now_us);
            let Some((i, arrival)) = self.transport.arrival(k) else { continue };
            let reply = self.bots[i].receive(at, arrival, &mut self.out, &mut self.heard);
            if reply {
                self.transport.send(i, &mut self.out);
            }
            if let Some(at) = self.bots[i].next_tick() {
                self.timers.sooner(i, at);
            }
            self.take_heard(i);
        }
        more
    }

    /// The bots that left play since the last call say goodbye; each is replaced after `respawn_after`.
    fn retire_gone(&mut self, now: u64, respawns: &mut Vec<(u64, usize)>) {
        while let Some(i) = self.leaving.pop() {
            if self.bots[i].leave(now, &mut self.out) {
                self.transport.send(i, &mut self.out);
            }
            respawns.push((now + self.cfg.respawn_after.as_micros() as u64, i));
        }
    }

    fn leave_all(&mut self) {
        let now = now_us();
        for i in 0..self.bots.len() {
            if self.bots[i].leave(now, &mut self.out) {
                self.transport.send(i, &mut self.out);
            }
        }
        self.transport.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bots_joining_on_a_gap_the_period_divides_still_tick_at_spread_phases() {
        // 10 joins a second, a tick every 100 ms: each bot keeps the phase of its join.
        let (gap, period) = (100_000, 100_000);
        let mut rng = Rng::stream(1, JOIN_MOMENTS);
        let moments: Vec<u64> = (0..200).map(|i| join_moment(i, gap, &mut rng)).collect();
        for (i, &at) in moments.iter().enumerate() {
            assert!((i as u64 * gap..(i as u64 + 1) * gap).contains(&at), "bot {i} joined outside its slot: {at}");
        }
        // Phases over the period, in tenths: every tenth holds some bots, none holds a third of them.
        let mut tenths = [0usize; 10];
        for at in &moments {
            tenths[(at % period * 10 / period) as usize] += 1;
        }
        assert!(tenths.iter().all(|&n| n > 0 && n < moments.len() / 3), "phases bunched: {tenths:?}");
    }
}
