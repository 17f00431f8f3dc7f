//! A uniform spatial grid over the map, rebuilt every frame by counting sort:
//! "who is near here" for interest management, hitscan and gunfire observers.

use super::map::MAP_M;

/// Side of a grid cell in metres.
pub const GRID_M: f32 = 64.0;
const SIDE: usize = (MAP_M / GRID_M) as usize;

/// Actor ids bucketed by cell.
#[derive(Debug)]
pub struct Grid {
    start: Vec<u32>,
    ids: Vec<u32>,
}

impl Default for Grid {
    fn default() -> Self {
        Self { start: vec![0; SIDE * SIDE + 1], ids: Vec::new() }
    }
}

/// The cell holding (x, y) metres (clamped to the map).
pub fn cell_of(x: f32, y: f32) -> usize {
    let c = |v: f32| ((v / GRID_M) as usize).min(SIDE - 1);
    c(y.max(0.0)) * SIDE + c(x.max(0.0))
}

/// The centre of a cell, metres.
pub fn cell_centre(cell: usize) -> (f32, f32) {
    (((cell % SIDE) as f32 + 0.5) * GRID_M, ((cell / SIDE) as f32 + 0.5) * GRID_M)
}

impl Grid {
    /// Rebuilds from (id, x, y) of every actor.
    pub fn rebuild(&mut self, actors: impl Iterator<Item = (u32, f32, f32)> + Clone) {
        self.start.iter_mut().for_each(|s| *s = 0);
        let mut n = 0;
        for (_, x, y) in actors.clone() {
            self.start[cell_of(x, y) + 1] += 1;
            n += 1;
        }
        for i in 1..self.start.len() {
            self.start[i] += self.start[i - 1];
        }
        self.ids.resize(n, 0);
        let mut fill = self.start.clone();
        for (id, x, y) in actors {
            let c = cell_of(x, y);
            self.ids[fill[c] as usize] = id;
            fill[c] += 1;
        }
    }

    /// Calls `f` with every id in the cells overlapping the square of half-side `r` around (x, y).
    pub fn near(&self, x: f32, y: f32, r: f32, mut f: impl FnMut(u32)) {
        let lo = |v: f32| ((v - r).max(0.0) / GRID_M) as usize;
        let hi = |v: f32| (((v + r).max(0.0) / GRID_M) as usize).min(SIDE - 1);
        for cy in lo(y).min(SIDE - 1)..=hi(y) {
            let row = cy * SIDE;
            let (a, b) = (self.start[row + lo(x).min(SIDE - 1)], self.start[row + hi(x) + 1]);
            for &id in &self.ids[a as usize..b as usize] {
                f(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_finds_exactly_the_actors_in_range_cells() {
        let mut g = Grid::default();
        let actors = [(0, 10.0, 10.0), (1, 100.0, 10.0), (2, 4000.0, 4000.0), (3, 8191.0, 8191.0)];
        g.rebuild(actors.iter().copied());
        let mut got = Vec::new();
        g.near(20.0, 20.0, 50.0, |id| got.push(id));
        got.sort();
        assert_eq!(got, vec![0, 1]);
        got.clear();
        g.near(8000.0, 8000.0, 300.0, |id| got.push(id));
        assert_eq!(got, vec![3]);
    }
}
