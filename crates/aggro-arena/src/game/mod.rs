//! The game the arena server runs: map, spatial grid, the match.

pub mod grid;
pub mod map;
pub mod world;
