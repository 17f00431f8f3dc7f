//! The 8 × 8 km island: a static grid of blocked 8 m cells (buildings, rocks),
//! generated from a seed, that movement collides with and shots stop at.

use aggro_core::rng::Rng;

/// Side of the map in metres.
pub const MAP_M: f32 = 8192.0;
/// Side of an obstacle cell in metres.
pub const CELL_M: f32 = 8.0;
const CELLS: usize = (MAP_M / CELL_M) as usize;

/// The obstacle grid.
#[derive(Clone, Debug)]
pub struct Map {
    blocked: Vec<u64>,
}

impl Map {
    /// About 6% of the island covered by rectangular obstacles of 1–5 cells a side, placed from `seed`.
    pub fn generate(seed: u64) -> Self {
        let mut map = Self { blocked: vec![0; CELLS * CELLS / 64] };
        let mut rng = Rng::seeded(seed);
        let mut next = move |n: usize| rng.range_inclusive(0, n as u64 - 1) as usize;
        let target = CELLS * CELLS * 6 / 100;
        let mut covered = 0;
        while covered < target {
            let (x0, y0, w, h) = (next(CELLS), next(CELLS), 1 + next(5), 1 + next(5));
            for y in y0..(y0 + h).min(CELLS) {
                for x in x0..(x0 + w).min(CELLS) {
                    let i = y * CELLS + x;
                    covered += (map.blocked[i / 64] >> (i % 64) & 1 == 0) as usize;
                    map.blocked[i / 64] |= 1 << (i % 64);
                }
            }
        }
        map
    }

    /// Whether the point (metres) is inside an obstacle or off the map.
    pub fn blocked(&self, x: f32, y: f32) -> bool {
        if !(0.0..MAP_M).contains(&x) || !(0.0..MAP_M).contains(&y) {
            return true;
        }
        let i = (y / CELL_M) as usize * CELLS + (x / CELL_M) as usize;
        self.blocked[i / 64] >> (i % 64) & 1 == 1
    }

    /// The nearest free point to (x, y), searching outward cell by cell (spawn points).
    pub fn free_near(&self, x: f32, y: f32) -> (f32, f32) {
        let (x, y) = (x.clamp(1.0, MAP_M - 1.0), y.clamp(1.0, MAP_M - 1.0));
        for r in 0..64 {
            for (dx, dy) in [(r, 0), (-r, 0), (0, r), (0, -r), (r, r), (-r, -r)] {
                let (px, py) = (x + dx as f32 * CELL_M, y + dy as f32 * CELL_M);
                if !self.blocked(px, py) {
                    return (px, py);
                }
            }
        }
        (x, y)
    }

    /// How far along the segment from (x, y) in direction (dx, dy) (unit) one can see, up to `range` metres.
    pub fn clear_distance(&self, x: f32, y: f32, dx: f32, dy: f32, range: f32) -> f32 {
        let step = CELL_M / 2.0;
        let mut t = step;
        while t < range {
            if self.blocked(x + dx * t, y + dy * t) {
                return t;
            }
            t += step;
        }
        range
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_is_deterministic_and_partly_blocked() {
        let (a, b) = (Map::generate(1), Map::generate(1));
        assert_eq!(a.blocked, b.blocked);
        let blocked = (0..10_000).filter(|i| a.blocked((i % 100) as f32 * 81.0 + 3.0, (i / 100) as f32 * 81.0 + 3.0)).count();
        assert!((300..1200).contains(&blocked), "about 6% blocked: {blocked} of 10,000");
        assert!(a.blocked(-1.0, 5.0) && a.blocked(5.0, MAP_M));
        let (x, y) = a.free_near(4000.0, 4000.0);
        assert!(!a.blocked(x, y));
    }
}
