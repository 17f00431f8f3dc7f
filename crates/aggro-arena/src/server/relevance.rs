//! Which actors each client considers in a frame: everyone, or those within the interest radius (found
//! through the spatial grid once per occupied cell), with the frames interleaving skips each for.

use super::replication::{Candidate, SkipTable};
use crate::codec::state::ActorState;
use crate::game::grid::{GRID_M, cell_centre, cell_of};
use crate::game::map::MAP_M;
use crate::game::world::World;

/// Who may be relevant to observers in each grid cell this frame: computed once per occupied cell
/// (a square query of the interest radius plus a cell's diagonal, sorted by id), then filtered by
/// exact distance per observer — observers cluster, so most share their cell's list.
#[derive(Debug, Default)]
pub struct Relevance {
    by_cell: std::collections::HashMap<usize, usize>,
    lists: Vec<Vec<u32>>,
    used: usize,
    /// A bit per actor id, to put a list in id order (all clear between uses).
    marks: Vec<u64>,
}

impl Relevance {
    /// Starts a frame: the grid has moved.
    pub fn clear(&mut self) {
        self.by_cell.clear();
        self.used = 0;
    }

    fn near(&mut self, world: &World, x: f32, y: f32, r: f32) -> &[u32] {
        let cell = cell_of(x, y);
        let i = match self.by_cell.get(&cell) {
            Some(i) => *i,
            None => {
                if self.used == self.lists.len() {
                    self.lists.push(Vec::new());
                }
                let list = &mut self.lists[self.used];
                list.clear();
                let (cx, cy) = cell_centre(cell);
                let marks = &mut self.marks;
                world.grid.near(cx, cy, r + GRID_M, |id| {
                    let word = id as usize / 64;
                    if marks.len() <= word {
                        marks.resize(word + 1, 0);
                    }
                    marks[word] |= 1 << (id % 64);
                });
                for (w, bits) in marks.iter_mut().enumerate() {
                    while *bits != 0 {
                        list.push(w as u32 * 64 + bits.trailing_zeros());
                        *bits &= *bits - 1;
                    }
                }
                self.by_cell.insert(cell, self.used);
                self.used += 1;
                self.used - 1
            }
        };
        &self.lists[i]
    }
}

/// The actors one client at (x, y) considers this frame, sorted by id, with the frames interleaving skips each for.
pub fn candidates_for(
    world: &World,
    relevance: &mut Relevance,
    x: f32,
    y: f32,
    interest_m: Option<f32>,
    skips: &SkipTable,
    out: &mut Vec<Candidate>,
) {
    out.clear();
    let (xc, yc) = (x * 100.0, y * 100.0);
    let reach_cm_sq = interest_m.map_or(f32::INFINITY, |r| (r * 100.0).powi(2));
    let states = world.states();
    let mut push = |id: u32, state: &ActorState| {
        let (dx, dy) = (state.x as f32 - xc, state.y as f32 - yc);
        let dist_cm_sq = dx * dx + dy * dy;
        if dist_cm_sq <= reach_cm_sq {
            out.push(Candidate { id, skip: skips.skip(dist_cm_sq) });
        }
    };
    match interest_m {
        None => states.iter().enumerate().for_each(|(id, s)| {
            if let Some((state, _)) = s {
                push(id as u32, state);
            }
        }),
        Some(r) => relevance.near(world, x, y, r.min(MAP_M)).iter().for_each(|&id| {
            if let Some(Some((state, _))) = states.get(id as usize) {
                push(id, state);
            }
        }),
    }
}
