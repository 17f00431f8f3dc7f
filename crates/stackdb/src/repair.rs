//! A store's integrity, checked without changing it, and its intact commits salvaged into a new one.
//!
//! `check` opens read-only (recovery's own checks included: a damaged record before the proven
//! synced end is refused there) and walks every bucket's stack, every record's checksum checked,
//! then compares the live keys found with the count the commits keep. `salvage` reads the log from
//! its header to its end, an 8-byte boundary at a time past damage, and replays every batch whose
//! records and commit record are intact, in log order, into a new database — skipping the damaged
//! ones, which it reports. The original is never written.

use crate::db::{Database, Options};
use crate::error::{Error, Result};
use crate::log::{ChunkReader, CommitValue, LOG_HEADER_LEN, Record};
use crate::record::{HEADER_LEN, Kind};
use crate::storage::StorageBackend;
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

/// What [`salvage`] copied and skipped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Salvaged {
    /// Intact batches replayed into the new database (splits' and sweeps' copies included).
    pub commits: u64,
    /// Damaged stretches of the log skipped: where each began and how many bytes it spans (a batch
    /// whose records or commit were damaged among them).
    pub skipped: Vec<(u64, u64)>,
    /// Live keys in the new database.
    pub keys: u64,
}

impl Salvaged {
    /// Notes `from..to` skipped, joined to the stretch before it if they touch.
    fn skip(&mut self, from: u64, to: u64) {
        match self.skipped.last_mut() {
            Some((began, span)) if *began + *span >= from => *span = to - *began,
            _ => self.skipped.push((from, to - from)),
        }
    }
}

/// Replays every intact batch of the log in `from` into a new database in `to` (a directory that does
/// not exist yet, or an empty one), in log order; the original is only read. The new database is built
/// beside `to` under a hidden name and renamed to `to` only once complete: a salvage killed half-way
/// leaves nothing at `to` that could pass for a store (and the next salvage starts its hidden one afresh).
pub fn salvage(from: &Path, to: &Path) -> Result<Salvaged> {
    if std::fs::read_dir(to).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(Error::Format(format!("{} is not empty: salvage writes into a new directory", to.display())));
    }
    let building = hidden_beside(to)?;
    // Damage is what salvage is for; another process writing is not.
    match Database::open_read_only(from, Options::default()) {
        Ok(_) | Err(Error::Damaged { .. } | Error::Corrupt { .. }) => {}
        Err(e) => return Err(e),
    }
    let file = crate::storage::FileBackend::reading(std::fs::File::open(from.join("log"))?);
    let len = file.len()?;
    let mut log = ChunkReader::new(&file, len);
    let new = Database::create(&building, Options { durability: crate::log::Durability::Eventual, ..Options::default() })?;
    let mut out = Salvaged::default();
    let mut pending: Vec<Record> = Vec::new();
    let mut batch_start = LOG_HEADER_LEN;
    let mut damage: Option<u64> = None;
    let mut pos = LOG_HEADER_LEN;
    while pos + HEADER_LEN as u64 <= len {
        let Some(rec) = log.record_at(pos)? else {
            // A hole or the zeros written ahead of the end is not damage; anything else loses the batch
            // under way with it.
            let zeros = pending.is_empty() && damage.is_none() && log.bytes(pos, 8)?.is_some_and(|w| w == [0; 8]);
            if !zeros {
                damage.get_or_insert(if pending.is_empty() { pos } else { batch_start });
                pending.clear();
            }
            pos += 8;
            continue;
        };
        if let Some(began) = damage.take() {
            out.skip(began, pos);
        }
        if pending.is_empty() {
            batch_start = pos;
        }
        pos += rec.header.padded_len() as u64;
        if rec.header.kind != Kind::Commit {
            pending.push(rec);
            continue;
        }
        if CommitValue::parse(&rec, batch_start, pending.len()).is_some() {
            let mut w = new.begin_write();
            for r in pending.drain(..) {
                match r.header.kind {
                    _ if r.key.is_empty() => {} // a split's or a sweep's entries, not data
                    Kind::Put => w.put(&r.key, &r.value)?,
                    _ => w.delete(&r.key)?,
                }
            }
            w.commit()?;
            out.commits += 1;
        } else {
            out.skip(batch_start, pos);
            pending.clear();
        }
    }
    if let Some(began) = damage {
        out.skip(began, len);
    }
    out.keys = new.stats()?.records;
    new.close()?;
    std::fs::rename(&building, to)?;
    if let Some(parent) = to.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::File::open(parent)?.sync_all()?;
    }
    Ok(out)
}

/// Where a salvage into `to` builds its database: `.NAME.salvaging` beside it, emptied of what a killed
/// salvage left (only stackdb's own files; anything else there is refused).
fn hidden_beside(to: &Path) -> Result<std::path::PathBuf> {
    let name = to.file_name().ok_or_else(|| Error::Format(format!("{} names no directory to salvage into", to.display())))?;
    let building = to.with_file_name(format!(".{}.salvaging", name.to_string_lossy()));
    if let Ok(entries) = std::fs::read_dir(&building) {
        for entry in entries {
            let entry = entry?;
            if !["LOCK", "log", "heads", "heads.dw"].contains(&entry.file_name().to_string_lossy().as_ref()) {
                return Err(Error::Format(format!("{} holds files a salvage did not make: remove it first", building.display())));
            }
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(building)
}
