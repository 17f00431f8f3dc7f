//! One bot: a protocol client, what it sees, and the `br` behaviour — drop in
//! with a cluster, run between waypoints, turn, shoot at the nearest visible
//! enemy, die and leave.

use crate::codec::msg::{ClientRpc, Input, ServerRpc};
use crate::codec::view::View;
use crate::game::map::MAP_M;
use aggro_core::rng::Rng;
use arena_proto::{Client, ClientEvent, ClientState};

/// How far a bot sees and shoots, metres.
pub const SIGHT_M: f32 = 150.0;

/// What a bot tells the swarm after taking a packet.
#[derive(Clone, Copy, Debug, Default)]
pub struct Heard {
    /// Gunfire delays measured (µs), at most a few per packet.
    pub delays_us: [u64; 8],
    pub delays: usize,
    pub snapshots: u64,
    pub decode_errors: u64,
    pub connected: bool,
    pub died: bool,
    pub disconnected: bool,
}

impl Heard {
    fn delay(&mut self, us: u64) {
        if self.delays < self.delays_us.len() {
            self.delays_us[self.delays] = us;
            self.delays += 1;
        }
    }
}

/// One bot.
#[derive(Debug)]
pub struct Bot {
    pub client: Client,
    pub socket: usize,
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
    pub dead: bool,
    left: bool,
    out: Vec<u8>,
}

impl Bot {
    /// A bot that will present `client`'s token, drop near `drop_at`, fire every `fire_every_us` when it sees someone, and draw its choices from `rng`.
    pub fn new(client: Client, socket: usize, drop_at: (f32, f32), fire_every_us: u64, rng: Rng) -> Self {
        Self {
            client,
            socket,
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
            left: false,
            out: Vec::with_capacity(64),
        }
    }

    fn rand(&mut self) -> f32 {
        self.rng.unit() as f32
    }

    /// Whether the bot is in the match (connected and welcomed).
    pub fn active(&self) -> bool {
        self.joined && !self.dead && self.client.state() == ClientState::Connected
    }

    /// Takes one datagram (with its sequence number, read from the header).
    pub fn receive(&mut self, now_us: u64, seq: u32, packet: &[u8]) -> Heard {
        let mut heard = Heard::default();
        match self.client.process_packet(now_us, packet) {
            Ok(ClientEvent::Connected { .. }) => heard.connected = true,
            Ok(ClientEvent::Data(payload)) if !payload.is_empty() => {
                heard.snapshots += 1;
                self.take_snapshot(seq, payload, &mut heard);
            }
            Ok(ClientEvent::Disconnected) => heard.disconnected = true,
            _ => {}
        }
        let Some(conn) = self.client.connection() else { return heard };
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
                Some(ServerRpc::Fired { shooter, shot_at_us }) if Some(shooter) != self.actor => heard.delay(now_us.saturating_sub(shot_at_us)),
                Some(ServerRpc::Died { who, .. }) if Some(who) == self.actor && !self.dead => {
                    self.dead = true;
                    heard.died = true;
                }
                _ => {}
            }
        }
        heard
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
            heard.decode_errors += 1;
            return;
        }
        if own.is_some() {
            self.pos = own;
        }
        if nearest.is_some() || own.is_some() {
            self.target = nearest.map(|(id, x, y, _)| (id, x, y));
        }
    }

    /// One input tick: connect request while connecting, else input (and maybe a shot). Returns the
    /// datagram to send (in `out`), if any.
    pub fn tick(&mut self, now_us: u64, out: &mut Vec<u8>) -> bool {
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
        let input = Input { seq: self.input_seq, sent_at_us: now_us, move_x: (dx / len * 127.0) as i8, move_y: (dy / len * 127.0) as i8, yaw: (turns * 256.0) as u8 };
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

    /// The next waypoint: up to 200 m away, pulled toward the centre when far out (the zone closes there).
    fn next_waypoint(&mut self, x: f32, y: f32) -> (f32, f32) {
        let c = MAP_M / 2.0;
        let pull = if (x - c).hypot(y - c) > 2000.0 { 0.3 } else { 0.0 };
        let (rx, ry) = (self.rand() * 400.0 - 200.0, self.rand() * 400.0 - 200.0);
        let nx = x + rx + (c - x) * pull * self.rand() * 0.1;
        let ny = y + ry + (c - y) * pull * self.rand() * 0.1;
        (nx.clamp(10.0, MAP_M - 10.0), ny.clamp(10.0, MAP_M - 10.0))
    }

    /// Writes a goodbye, once.
    pub fn leave(&mut self, now_us: u64, out: &mut Vec<u8>) -> bool {
        if self.left {
            return false;
        }
        self.left = true;
        match self.client.connection() {
            Some(conn) => {
                conn.write_disconnect(now_us, out);
                true
            }
            None => false,
        }
    }
}
