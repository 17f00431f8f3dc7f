//! A dense table position for each actor id seen: an index by id into a table
//! that holds only the actors seen, so memory follows the actors one end
//! tracks (a bot seeing 100 of 2,000), not the largest id.

/// Actor id → position in the caller's dense table.
#[derive(Debug, Default)]
pub struct IdIndex {
    /// Position + 1 per id (0: not seen).
    index: Vec<u32>,
    len: u32,
}

impl IdIndex {
    /// The position of `id`, and whether it is new (the caller then appends its entry at that position).
    pub fn position(&mut self, id: u32) -> (usize, bool) {
        if self.index.len() <= id as usize {
            self.index.resize(id as usize + 1, 0);
        }
        let cell = &mut self.index[id as usize];
        let new = *cell == 0;
        if new {
            self.len += 1;
            *cell = self.len;
        }
        (*cell as usize - 1, new)
    }

    /// The position of `id`, if seen.
    pub fn get(&self, id: u32) -> Option<usize> {
        self.index.get(id as usize).filter(|p| **p > 0).map(|p| *p as usize - 1)
    }
}
