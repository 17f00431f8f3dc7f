//! A store's integrity, checked without changing it; and (`salvage.rs`) what it can prove copied into a
//! new one.
//!
//! `check` opens read-only (recovery's own checks included: a damaged record before the proven
//! synced end is refused there) and walks every bucket's stack, every record's checksum checked,
//! then compares the live keys found with the count the commits keep. The original is never written.

use crate::db::{Database, Options};
use crate::error::Result;
pub use crate::salvage::{Salvaged, salvage};
use std::path::Path;

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// Live keys read back, every record on the way checksum-checked.
    pub keys: u64,
    /// Live keys the commits count.
    pub counted: u64,
    /// Buckets walked.
    pub buckets: u64,
    /// What could not be read: each damaged bucket's error.
    pub damage: Vec<String>,
}

impl Checked {
    /// Whether the store is whole: nothing damaged and every counted key found.
    pub fn ok(&self) -> bool {
        self.damage.is_empty() && self.keys == self.counted
    }
}

/// Checks the database in `dir` without changing it; an error if it cannot even be opened (damage
/// before its synced end included).
pub fn check(dir: &Path) -> Result<Checked> {
    let db = Database::open_read_only(dir, Options::default())?;
    let stats = db.stats()?;
    let mut found = Checked { keys: 0, counted: stats.records, buckets: stats.buckets, damage: Vec::new() };
    for item in db.iter() {
        match item {
            Ok(_) => found.keys += 1,
            Err(e) => found.damage.push(e.to_string()),
        }
    }
    Ok(found)
}
