//! End-to-end tests of the arena.
