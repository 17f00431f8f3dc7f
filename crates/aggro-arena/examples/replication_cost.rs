//! The flush's own work — choosing each client's actors and writing its snapshot — for the base server and
//! for interleaving, side by side on the same frames in one process, so a drift in the machine's speed falls
//! on both alike. A world of players in hot-drop clusters runs between waypoints; every frame each variant
//! writes every client's snapshot (the order of the two alternating), and its packets are acknowledged two
//! frames later. No sockets: this is the part of the flush that sendmmsg's fixed cost per datagram hides
//! in `aggro arena bench`.
//!
//! cargo run --release -p aggro-arena --example replication_cost -- [PLAYERS] [FRAMES] [INTEREST_M]

use aggro_arena::codec::msg::Input;
use aggro_arena::game::world::World;
use aggro_arena::server::bodies::SharedBodies;
use aggro_arena::server::history::StateHistory;
use aggro_arena::server::relevance::{Relevance, candidates_for};
use aggro_arena::server::replication::{ClientReplication, SkipTable, SnapshotFrame};
use aggro_arena::server::{Tier, replication::Candidate};
use aggro_core::rng::Rng;
use std::time::Instant;

const HZ: u32 = 60;
/// Frames before measuring: the players land (150 m at 50 m/s) and spread.
const WARMUP: u32 = 300;

/// One server variant's replication state for every client.
struct Variant {
    name: &'static str,
    skips: SkipTable,
    clients: Vec<ClientReplication>,
    bodies: SharedBodies,
    relevance: Relevance,
    candidates: Vec<Candidate>,
    /// (frame the ack arrives, client, packet) in sending order.
    acks: std::collections::VecDeque<(u32, usize, u32)>,
    next_seq: u32,
    ns: u128,
    entries: u64,
    skipped: u64,
}

impl Variant {
    fn new(name: &'static str, tiers: &[Tier], players: usize) -> Self {
        let clients = (0..players).map(|_| ClientReplication::default()).collect();
        Self {
            name,
            skips: SkipTable::new(tiers),
            clients,
            bodies: SharedBodies::default(),
            relevance: Relevance::default(),
            candidates: Vec::new(),
            acks: Default::default(),
            next_seq: 0,
            ns: 0,
            entries: 0,
            skipped: 0,
        }
    }

    /// Writes every client's snapshot of `frame`; times it when `measure`.
    fn flush(&mut self, world: &World, history: &StateHistory, frame: u32, interest_m: Option<f32>, measure: bool) {
        while self.acks.front().is_some_and(|(at, _, _)| *at <= frame) {
            let (_, client, seq) = self.acks.pop_front().unwrap();
            self.clients[client].acked(seq);
        }
        let at = SnapshotFrame { frame, hz: HZ, zone_radius_cm: 0, states: world.states(), history };
        let t0 = Instant::now();
        self.relevance.clear();
        for (id, client) in self.clients.iter_mut().enumerate() {
            let Some(me) = world.player(id as u32) else { continue };
            candidates_for(world, &mut self.relevance, me.x, me.y, interest_m, &self.skips, &mut self.candidates);
            let (acks, next_seq) = (&mut self.acks, &mut self.next_seq);
            let fig = client.write_snapshot(
                &at,
                &mut self.bodies,
                &self.candidates,
                |_| {},
                |_| {
                    *next_seq += 1;
                    acks.push_back((frame + 2, id, *next_seq));
                    *next_seq
                },
            );
            if measure {
                (self.entries, self.skipped) = (self.entries + fig.entries, self.skipped + fig.skipped);
            }
        }
        if measure {
            self.ns += t0.elapsed().as_nanos();
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_string());
    let players: usize = arg(0, "100").parse().expect("PLAYERS: a whole number");
    let frames: u32 = arg(1, "3000").parse().expect("FRAMES: a whole number");
    let interest_m: Option<f32> = args.get(2).map(|r| r.trim_end_matches('m').parse().expect("INTEREST_M: metres"));
    let tiers = [Tier { beyond_m: 70.0, skip: 1 }, Tier { beyond_m: 400.0, skip: 2 }];
    let mut rng = Rng::seeded(7);
    let mut unit = move || rng.unit() as f32;
    let mut world = World::new(7, 600.0);
    // Hot drops: clusters of 25 anywhere but the island's outer 600 m, each player within 100 m of its spot.
    let spots: Vec<(f32, f32)> = (0..players.div_ceil(25)).map(|_| (4096.0 + (unit() - 0.5) * 7000.0, 4096.0 + (unit() - 0.5) * 7000.0)).collect();
    for id in 0..players {
        let (x, y) = spots[id / 25];
        world.spawn(id as u32, x + (unit() - 0.5) * 200.0, y + (unit() - 0.5) * 200.0);
    }
    let mut variants = [Variant::new("base", &[], players), Variant::new("interleave", &tiers, players)];
    let (mut history, mut events) = (StateHistory::default(), Vec::new());
    let mut heading: Vec<(i8, i8)> = vec![(0, 0); players];
    for frame in 1..=WARMUP + frames {
        for (id, h) in heading.iter_mut().enumerate() {
            // A new waypoint direction every three seconds or so.
            if *h == (0, 0) || unit() < 1.0 / (3.0 * HZ as f32) {
                *h = (((unit() - 0.5) * 254.0) as i8, ((unit() - 0.5) * 254.0) as i8);
            }
            world.apply_input(id as u32, Input { seq: frame, sent_at_us: 0, move_x: h.0, move_y: h.1, yaw: (frame % 256) as u8 });
        }
        world.simulate(1.0 / HZ as f32, &[], &mut events);
        events.clear();
        history.record(frame, world.states());
        let measure = frame > WARMUP;
        let (first, second) = variants.split_at_mut(1);
        let (a, b) = if frame % 2 == 0 { (&mut first[0], &mut second[0]) } else { (&mut second[0], &mut first[0]) };
        a.flush(&world, &history, frame, interest_m, measure);
        b.flush(&world, &history, frame, interest_m, measure);
    }
    let interest = interest_m.map_or("everyone".to_string(), |r| format!("{r} m"));
    println!("{players} players, interest {interest}, {frames} frames measured at {HZ} Hz:");
    let base_ns = variants[0].ns as f64 / frames as f64;
    for v in &variants {
        let per_frame = v.ns as f64 / frames as f64;
        let candidates = (v.entries + v.skipped).max(1) as f64;
        println!(
            "  {:<10} {:8.1} µs a frame ({:+5.1}%), {:5.1} ns a candidate, {:.0} entries a frame, {:.0}% of candidates skipped",
            v.name,
            per_frame / 1e3,
            (per_frame / base_ns - 1.0) * 100.0,
            per_frame / (candidates / frames as f64),
            v.entries as f64 / frames as f64,
            v.skipped as f64 / candidates * 100.0
        );
    }
}
