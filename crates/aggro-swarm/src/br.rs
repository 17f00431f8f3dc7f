//! One bot: a protocol client, what it sees, and the `br` behaviour — drop in
//! with a cluster, run between waypoints, turn, shoot at the nearest visible
//! enemy, die and leave. A bot whose server says goodbye or falls silent for the
//! protocol's 5 s has lost it, and leaves too (a newcomer takes its place).

use super::datagrams::{Datagram, Datagrams};
use super::{Behaviour, Heard, Player, SwarmConfig, arena_client, goodbye};
use aggro_arena::codec::msg::{ClientRpc, Input, ServerRpc};
use aggro_arena::codec::view::View;
use aggro_arena::game::map::MAP_M;
use aggro_core::rng::Rng;
use arena_proto::{Client, ClientEvent, ClientState};

/// How far a bot sees and shoots, metres.
pub const SIGHT_M: f32 = 150.0;

/// The `br` behaviour's settings.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BrConfig {
    /// Shots per second per bot while it sees an enemy.
    pub fire_hz: f32,
    /// Bots that drop together (hot drops): one cluster per this many bots.
    pub cluster: usize,
}

impl Default for BrConfig {
    /// One shot a second, clusters of 25.
    fn default() -> Self {
        Self { fire_hz: 1.0, cluster: 25 }
    }
}

/// Makes `br` bots: each drops near its cluster's spot.
#[derive(Debug)]
pub struct Br {
    cfg: BrConfig,
    clusters: Vec<(f32, f32)>,
    rng: Rng,
}

impl Br {
    /// Hot-drop spots for `bots` bots, drawn from `seed`.
    pub fn new(cfg: BrConfig, bots: usize, seed: u64) -> Self {
        let mut rng = Rng::seeded(seed);
        let clusters = (0..bots.div_ceil(cfg.cluster.max(1)).max(1))
            .map(|_| {
                let c = MAP_M / 2.0;
                // Hot drops anywhere on the island but its outer 600 m, as a battle royale's plane path allows.
                (c + (rng.unit() as f32 - 0.5) * 7000.0, c + (rng.unit() as f32 - 0.5) * 7000.0)
            })
            .collect();
        Self { cfg, clusters, rng }
    }
}

impl Behaviour for Br {
    type Transport = Datagrams;
    type Bot = Bot;
    const DELAY: &'static str = "gunfire_delay";

    fn bot(&mut self, cfg: &SwarmConfig, index: usize, client_id: u64, now_us: u64, mut rng: Rng) -> Bot {
        let client = arena_client(&cfg.secret, client_id, now_us, &mut rng);
        let (cx, cy) = self.clusters[index / self.cfg.cluster.max(1) % self.clusters.len()];
        let drop_at = (cx + (self.rng.unit() as f32 - 0.5) * 200.0, cy + (self.rng.unit() as f32 - 0.5) * 200.0);
        let fire_every = (1e6 / self.cfg.fire_hz.max(0.01) as f64) as u64;
        Bot::new(client, drop_at, fire_every, rng)
    }
}

/// One bot.
#[derive(Debug)]
pub struct Bot {
    client: Client,
    actor: Option<u32>,
    hz: u32,
    view: View,
    pos: Option<(f32, f32)>,
    waypoint: (f32, f32),
    drop_at: (f32, f32),
    target: Option<(u32, f32, f32)>,
    input_seq: u32,
    next_fire_us: u64,
    fire_every_us: u64,
    rng: Rng,
    joined: bool,
    dead: bool,
    /// Its server said goodbye or fell silent.
    lost: bool,
    left: bool,
    out: Vec<u8>,
}

impl Bot {
    /// A bot that will present `client`'s token, drop near `drop_at`, fire every `fire_every_us` when it sees someone, and draw its choices from `rng`.
    pub fn new(client: Client, drop_at: (f32, f32), fire_every_us: u64, rng: Rng) -> Self {
        Self {
            client,
            actor: None,
            hz: 30,
            view: View::default(),
            pos: None,
            waypoint: drop_at,
            drop_at,
            target: None,
            input_seq: 0,
            next_fire_us: 0,
            fire_every_us,
            rng,
            joined: false,
            dead: false,
            lost: false,
            left: false,
            out: Vec::with_capacity(64),
        }
    }

    /// It lost its server: it leaves play, once.
    fn lose(&mut self, heard: &mut Heard) {
        if !std::mem::replace(&mut self.lost, true) && !self.dead {
            heard.counters.disconnects += 1;
            heard.gone = true;
        }
    }

    fn rand(&mut self) -> f32 {
        self.rng.unit() as f32
    }

    fn take_snapshot(&mut self, seq: u32, payload: &[u8], heard: &mut Heard) {
        let me = self.actor;
        let mut own = None;
        let mut nearest: Option<(u32, f32, f32, f32)> = None;
        let here = self.pos;
        let r = self.view.apply(seq, payload, self.hz, |id, s| {
            let (x, y) = (s.x as f32 / 100.0, s.y as f32 / 100.0);
            if Some(id) == me {
                own = Some((x, y));
            } else if let Some((hx, hy)) = here {
                let d = (x - hx).hypot(y - hy);
                if s.health > 0 && d <= SIGHT_M && nearest.is_none_or(|n| d < n.3) {
                    nearest = Some((id, x, y, d));
                }
            }
        });
        if r.is_err() {
            heard.counters.decode_errors += 1;
            return;
        }
        if own.is_some() {
            self.pos = own;
        }
        if nearest.is_some() || own.is_some() {
            self.target = nearest.map(|(id, x, y, _)| (id, x, y));
        }
    }

    /// The next waypoint: up to 200 m away, pulled toward the centre when far out (the zone closes there).
    fn next_waypoint(&mut self, x: f32, y: f32) -> (f32, f32) {
        let c = MAP_M / 2.0;
        let pull = if (x - c).hypot(y - c) > 2000.0 { 0.3 } else { 0.0 };
        let (rx, ry) = (self.rand() * 400.0 - 200.0, self.rand() * 400.0 - 200.0);
        let nx = x + rx + (c - x) * pull * self.rand() * 0.1;
        let ny = y + ry + (c - y) * pull * self.rand() * 0.1;
        (nx.clamp(10.0, MAP_M - 10.0), ny.clamp(10.0, MAP_M - 10.0))
    }
}

impl Player<Datagrams> for Bot {
    /// In the match: connected and welcomed, not dead.
    fn active(&self) -> bool {
        self.joined && !self.dead && self.client.state() == ClientState::Connected
    }

    fn gone(&self) -> bool {
        self.dead || self.lost
    }

    /// One input tick: connect request while connecting, else input (and maybe a shot). Returns the
    /// datagram to send (in `out`), if any.
    fn tick(&mut self, _due_us: u64, now_us: u64, out: &mut Vec<u8>, heard: &mut Heard) -> bool {
        if self.client.update(now_us) {
            self.lose(heard);
            return false;
        }
        if self.client.write_request(now_us, out) {
            return true;
        }
        if !self.joined || self.dead {
            return match self.client.connection() {
                Some(conn) => {
                    conn.write_data(now_us, &[], out);
                    true
                }
                None => false,
            };
        }
        let (x, y) = self.pos.unwrap_or(self.drop_at);
        if (self.waypoint.0 - x).hypot(self.waypoint.1 - y) < 5.0 {
            self.waypoint = self.next_waypoint(x, y);
        }
        let (dx, dy) = (self.waypoint.0 - x, self.waypoint.1 - y);
        let len = dx.hypot(dy).max(1e-3);
        let facing = match self.target {
            Some((_, tx, ty)) => (ty - y).atan2(tx - x),
            None => dy.atan2(dx),
        };
        let turns = facing.rem_euclid(std::f32::consts::TAU) / std::f32::consts::TAU;
        self.input_seq += 1;
        let input = Input {
            seq: self.input_seq,
            sent_at_us: now_us,
            move_x: (dx / len * 127.0) as i8,
            move_y: (dy / len * 127.0) as i8,
            yaw: (turns * 256.0) as u8,
        };
        let fire = self.target.is_some() && now_us >= self.next_fire_us;
        let spread = (self.rand() - 0.5) * 0.004;
        let Some(conn) = self.client.connection() else { return false };
        if fire {
            let aim = ((turns + spread).rem_euclid(1.0) * 65536.0) as u16;
            self.out.clear();
            ClientRpc::Fire { shot_at_us: now_us, aim }.write(&mut self.out);
            let _ = conn.send_reliable(&self.out);
        }
        self.out.clear();
        input.write(&mut self.out);
        conn.write_data(now_us, &self.out, out);
        if fire {
            self.next_fire_us = now_us + self.fire_every_us / 2 + (self.rand() * self.fire_every_us as f32) as u64;
        }
        true
    }

    fn receive(&mut self, now_us: u64, Datagram { seq, bytes }: Datagram<'_>, _: &mut Vec<u8>, heard: &mut Heard) -> bool {
        let c = &mut heard.counters;
        match self.client.process_packet(now_us, bytes) {
            Ok(ClientEvent::Connected { .. }) => c.connects += 1,
            Ok(ClientEvent::Data(payload)) if !payload.is_empty() => {
                c.snapshots += 1;
                self.take_snapshot(seq, payload, heard);
            }
            Ok(ClientEvent::Disconnected) => self.lose(heard),
            // A full server turned it away: a join that failed (it used to sit out the run unseen, and a
            // verdict counted only the bots let in).
            Ok(ClientEvent::Denied(_)) => c.failed_joins += 1,
            _ => {}
        }
        let Some(conn) = self.client.connection() else { return false };
        while let Some(m) = conn.receive_reliable() {
            match ServerRpc::read(&m) {
                Some(ServerRpc::Welcome { actor, tick_hz }) => {
                    self.actor = Some(actor);
                    self.hz = tick_hz.max(1) as u32;
                    self.out.clear();
                    let (x, y) = self.drop_at;
                    ClientRpc::Join { x: (x * 100.0) as u32, y: (y * 100.0) as u32 }.write(&mut self.out);
                    let _ = conn.send_reliable(&self.out);
                    self.joined = true;
                }
                Some(ServerRpc::Fired { shooter, shot_at_us }) if Some(shooter) != self.actor => {
                    heard.delays_us.push(now_us.saturating_sub(shot_at_us))
                }
                Some(ServerRpc::Died { who, .. }) if Some(who) == self.actor && !self.dead => {
                    self.dead = true;
                    heard.gone = true;
                    heard.counters.deaths += 1;
                }
                _ => {}
            }
        }
        false
    }

    fn leave(&mut self, now_us: u64, out: &mut Vec<u8>) -> bool {
        goodbye(&mut self.client, &mut self.left, now_us, out)
    }
}
