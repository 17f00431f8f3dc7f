//! The match: players moving with collision, hitscan shots, damage and death,
//! and a shrinking safe zone. One instance per server; actor id = session slot.

use super::grid::Grid;
use super::map::{MAP_M, Map};
use crate::codec::msg::Input;
use crate::codec::state::ActorState;

/// Running speed, m/s.
pub const RUN_MPS: f32 = 6.0;
/// Height a player drops in from, m, and the speed of the fall.
const DROP_M: f32 = 150.0;
const FALL_MPS: f32 = 50.0;
/// Hitscan range, m, capsule radius, m, and damage per hit.
pub const SHOT_RANGE_M: f32 = 250.0;
const CAPSULE_M: f32 = 0.6;
const DAMAGE: i32 = 10;
const ZONE_START_M: f32 = 5800.0;
const ZONE_END_M: f32 = 50.0;

/// One player.
#[derive(Clone, Debug, Default)]
pub struct Player {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub vx: f32,
    pub vy: f32,
    pub vz: f32,
    pub yaw: u8,
    pub health: i32,
    pub input: Input,
    zone_damage: f32,
}

impl Player {
    /// The player in replicated units.
    pub fn state(&self) -> ActorState {
        let cm = |v: f32| (v * 100.0).round() as i32;
        ActorState {
            x: cm(self.x),
            y: cm(self.y),
            z: cm(self.z),
            yaw: self.yaw,
            vx: cm(self.vx),
            vy: cm(self.vy),
            vz: cm(self.vz),
            health: self.health.clamp(0, 255) as u8,
        }
    }

    /// Whether the player moves.
    pub fn moving(&self) -> bool {
        self.vx != 0.0 || self.vy != 0.0 || self.vz != 0.0
    }
}

/// A shot to resolve this frame.
#[derive(Clone, Copy, Debug)]
pub struct Shot {
    pub shooter: u32,
    /// Direction, 1/65536 turns.
    pub aim: u16,
}

/// What the frame's simulation produced, for the server to tell clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Hit { shooter: u32, target: u32, health: u8 },
    Died { who: u32, killer: u32 },
}

/// The match state.
#[derive(Debug)]
pub struct World {
    pub map: Map,
    players: Vec<Option<Player>>,
    pub grid: Grid,
    /// Every player's replicated state and whether it moves, as of the last simulate (by id).
    states: Vec<Option<(ActorState, bool)>>,
    /// Seconds since the match began.
    pub elapsed_s: f64,
    zone_shrink_s: f64,
}

impl World {
    /// An empty match on the map of `seed`; the zone closes over `zone_shrink_s` seconds.
    pub fn new(seed: u64, zone_shrink_s: f64) -> Self {
        Self {
            map: Map::generate(seed),
            players: Vec::new(),
            grid: Grid::default(),
            states: Vec::new(),
            elapsed_s: 0.0,
            zone_shrink_s: zone_shrink_s.max(1.0),
        }
    }

    /// A player drops in near (x, y) metres.
    pub fn spawn(&mut self, id: u32, x: f32, y: f32) {
        let (x, y) = self.map.free_near(x, y);
        if self.players.len() <= id as usize {
            self.players.resize(id as usize + 1, None);
        }
        self.players[id as usize] = Some(Player { x, y, z: DROP_M, vz: -FALL_MPS, health: 100, ..Player::default() });
    }

    /// The player leaves.
    pub fn remove(&mut self, id: u32) {
        if let Some(p) = self.players.get_mut(id as usize) {
            *p = None;
        }
    }

    /// A player, if in the match (dead players stay, with health 0, until they leave).
    pub fn player(&self, id: u32) -> Option<&Player> {
        self.players.get(id as usize)?.as_ref()
    }

    /// Every actor's replicated state and whether it moves, by id.
    pub fn states(&self) -> &[Option<(ActorState, bool)>] {
        &self.states
    }

    /// Every player in the match, by id.
    pub fn players(&self) -> impl Iterator<Item = (u32, &Player)> + Clone {
        self.players.iter().enumerate().filter_map(|(i, p)| Some((i as u32, p.as_ref()?)))
    }

    /// Takes a client's input if it is newer than the one held.
    pub fn apply_input(&mut self, id: u32, input: Input) {
        if let Some(Some(p)) = self.players.get_mut(id as usize)
            && input.seq > p.input.seq
        {
            p.input = input;
        }
    }

    /// The safe zone's radius now, metres (centred on the map).
    pub fn zone_radius_m(&self) -> f32 {
        let f = (self.elapsed_s / self.zone_shrink_s).min(1.0) as f32;
        ZONE_START_M + (ZONE_END_M - ZONE_START_M) * f
    }

    /// Advances the match by `dt` seconds: movement, then the shots, then the zone.
    pub fn simulate(&mut self, dt: f32, shots: &[Shot], events: &mut Vec<Event>) {
        self.elapsed_s += dt as f64;
        for p in self.players.iter_mut().flatten() {
            move_player(&self.map, p, dt);
        }
        let players = &self.players;
        self.grid.rebuild(players.iter().enumerate().filter_map(|(i, p)| p.as_ref().map(|p| (i as u32, p.x, p.y))));
        for shot in shots {
            self.resolve(*shot, events);
        }
        let (r, c) = (self.zone_radius_m(), MAP_M / 2.0);
        for (id, slot) in self.players.iter_mut().enumerate() {
            let Some(p) = slot else { continue };
            if p.health <= 0 || (p.x - c).hypot(p.y - c) <= r {
                continue;
            }
            p.zone_damage += dt;
            if p.zone_damage >= 1.0 {
                p.zone_damage -= 1.0;
                p.health -= 1;
                if p.health == 0 {
                    events.push(Event::Died { who: id as u32, killer: id as u32 });
                }
            }
        }
        // Replicated as the frame ends: after movement, shots and the zone.
        self.states.clear();
        self.states.extend(self.players.iter().map(|p| p.as_ref().map(|p| (p.state(), p.moving()))));
    }

    fn resolve(&mut self, shot: Shot, events: &mut Vec<Event>) {
        let Some(s) = self.player(shot.shooter).filter(|p| p.health > 0) else { return };
        let angle = shot.aim as f32 / 65536.0 * std::f32::consts::TAU;
        let (dx, dy) = (angle.cos(), angle.sin());
        let (sx, sy) = (s.x, s.y);
        let range = self.map.clear_distance(sx, sy, dx, dy, SHOT_RANGE_M);
        let mut best: Option<(f32, u32)> = None;
        self.grid.near(sx + dx * range / 2.0, sy + dy * range / 2.0, range / 2.0 + CAPSULE_M, |id| {
            if id == shot.shooter {
                return;
            }
            let Some(t) = self.players[id as usize].as_ref().filter(|t| t.health > 0) else { return };
            let (ox, oy) = (t.x - sx, t.y - sy);
            let along = ox * dx + oy * dy;
            let across = (ox * dy - oy * dx).abs();
            if along > 0.0 && along <= range && across <= CAPSULE_M && best.is_none_or(|(b, _)| along < b) {
                best = Some((along, id));
            }
        });
        let Some((_, target)) = best else { return };
        let t = self.players[target as usize].as_mut().expect("found alive");
        t.health = (t.health - DAMAGE).max(0);
        events.push(Event::Hit { shooter: shot.shooter, target, health: t.health as u8 });
        if t.health == 0 {
            events.push(Event::Died { who: target, killer: shot.shooter });
        }
    }
}

fn move_player(map: &Map, p: &mut Player, dt: f32) {
    if p.health <= 0 {
        p.vx = 0.0;
        p.vy = 0.0;
        p.vz = 0.0;
        return;
    }
    p.yaw = p.input.yaw;
    let (mx, my) = (p.input.move_x as f32, p.input.move_y as f32);
    let len = mx.hypot(my);
    let (mut vx, mut vy) = if len > 0.0 { (mx / len * RUN_MPS, my / len * RUN_MPS) } else { (0.0, 0.0) };
    // Quantize the velocity to what replication carries, so receivers predict exactly what the server integrates.
    let q = |v: f32| (v * 100.0).round() / 100.0;
    (vx, vy) = (q(vx), q(vy));
    if p.z > 0.0 {
        p.z = (p.z + p.vz * dt).max(0.0);
        if p.z == 0.0 {
            p.vz = 0.0;
        }
    }
    let nx = p.x + vx * dt;
    if map.blocked(nx, p.y) {
        vx = 0.0;
    } else {
        p.x = nx;
    }
    let ny = p.y + vy * dt;
    if map.blocked(p.x, ny) {
        vy = 0.0;
    } else {
        p.y = ny;
    }
    p.vx = vx;
    p.vy = vy;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shot_hits_the_first_player_on_its_line_and_ten_hits_kill() {
        let mut w = World::new(1, 600.0);
        // A spot with 20 m of clear ground to the east.
        let (x, y) = (0..1000)
            .map(|i| (1000.0 + (i % 40) as f32 * 97.0, 1000.0 + (i / 40) as f32 * 89.0))
            .find(|&(x, y)| !w.map.blocked(x, y) && w.map.clear_distance(x, y, 1.0, 0.0, 20.0) >= 20.0)
            .expect("some clear ground");
        for (id, dx) in [(0, 0.0), (1, 10.0), (2, 5.0)] {
            w.spawn(id, x, y);
            let p = w.players[id as usize].as_mut().unwrap();
            (p.x, p.y, p.z, p.vz) = (x + dx, y, 0.0, 0.0);
        }
        let mut events = Vec::new();
        for _ in 0..10 {
            w.simulate(0.01, &[Shot { shooter: 0, aim: 0 }], &mut events);
        }
        assert_eq!(events.first(), Some(&Event::Hit { shooter: 0, target: 2, health: 90 }));
        assert_eq!(events.last(), Some(&Event::Died { who: 2, killer: 0 }));
        assert_eq!(events.len(), 11);
        assert_eq!(w.player(1).unwrap().health, 100, "the nearer player shielded the farther one");
    }

    #[test]
    fn players_move_at_running_speed_and_fall_to_the_ground() {
        let mut w = World::new(1, 600.0);
        w.spawn(0, 4000.0, 4000.0);
        w.apply_input(0, Input { seq: 1, sent_at_us: 0, move_x: 127, move_y: 0, yaw: 0 });
        let x0 = w.player(0).unwrap().x;
        let mut events = Vec::new();
        for _ in 0..100 {
            w.simulate(1.0 / 30.0, &[], &mut events);
        }
        let p = w.player(0).unwrap();
        assert_eq!(p.z, 0.0, "landed after 3 s");
        assert!(p.x > x0 && p.x - x0 <= RUN_MPS * 100.0 / 30.0 + 0.01);
    }
}
