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
use crate::log::LOG_HEADER_LEN;
use crate::record::{self, HEADER_LEN, Header, Kind};
use std::os::unix::fs::FileExt;
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

/// Replays every intact batch of the log in `from` into a new database in `to` (which must not hold
/// one), in log order; the original is only read.
pub fn salvage(from: &Path, to: &Path) -> Result<Salvaged> {
    if to.join("log").exists() {
        return Err(Error::Format(format!("{} already holds a database: salvage writes into a new directory", to.display())));
    }
    // Damage is what salvage is for; another process writing is not.
    match Database::open_read_only(from, Options::default()) {
        Ok(_) | Err(Error::Damaged { .. } | Error::Corrupt { .. }) => {}
        Err(e) => return Err(e),
    }
    let log = std::fs::File::open(from.join("log"))?;
    let len = log.metadata()?.len();
    let new = Database::create(to, Options { durability: crate::log::Durability::Eventual, ..Options::default() })?;
    let mut out = Salvaged::default();
    let mut pending: Vec<(Header, Vec<u8>)> = Vec::new();
    let mut batch_start = LOG_HEADER_LEN;
    let mut damage: Option<u64> = None;
    let mut pos = LOG_HEADER_LEN;
    while pos + HEADER_LEN as u64 <= len {
        let Some((header, bytes)) = intact_record(&log, pos, len)? else {
            if pending.is_empty() && damage.is_none() && is_zero(&log, pos)? {
                // A hole or the zeros written ahead of the end: not damage.
                pos = past_zeros(&log, pos, len)?;
            } else {
                // Damage: the batch under way is lost with it.
                damage.get_or_insert(if pending.is_empty() { pos } else { batch_start });
                pending.clear();
                pos += 8;
            }
            continue;
        };
        if let Some(began) = damage.take() {
            out.skip(began, pos);
        }
        if pending.is_empty() {
            batch_start = pos;
        }
        pos += header.padded_len() as u64;
        if header.kind != Kind::Commit {
            pending.push((header, bytes));
            continue;
        }
        if commit_matches(&bytes[HEADER_LEN..], batch_start, pending.len()) {
            let mut w = new.begin_write();
            for (h, b) in pending.drain(..) {
                let key = &b[HEADER_LEN..HEADER_LEN + h.key_len];
                match h.kind {
                    _ if key.is_empty() => {} // a split's or a sweep's entries, not data
                    Kind::Put => w.put(key, &b[HEADER_LEN + h.key_len..])?,
                    _ => w.delete(key)?,
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
    Ok(out)
}

/// The intact record at `pos`: its header and bytes (header, key, value), or None.
fn intact_record(log: &std::fs::File, pos: u64, len: u64) -> Result<Option<(Header, Vec<u8>)>> {
    let mut head = [0u8; HEADER_LEN];
    log.read_exact_at(&mut head, pos)?;
    let Ok(header) = Header::decode(&head, pos) else { return Ok(None) };
    if pos + header.padded_len() as u64 > len {
        return Ok(None);
    }
    let mut bytes = vec![0u8; HEADER_LEN + header.key_len + header.value_len];
    log.read_exact_at(&mut bytes, pos)?;
    Ok(record::checksum_holds(&header, &bytes).then_some((header, bytes)))
}

/// Whether the 8 bytes at `pos` are zeros (a hole or zeros written ahead, not damage).
fn is_zero(log: &std::fs::File, pos: u64) -> Result<bool> {
    let mut word = [0u8; 8];
    log.read_exact_at(&mut word, pos)?;
    Ok(word == [0; 8])
}

/// The first 8-byte boundary from `pos` whose word is not zero (or `len`).
fn past_zeros(log: &std::fs::File, mut pos: u64, len: u64) -> Result<u64> {
    let mut chunk = vec![0u8; 1 << 16];
    while pos < len {
        let n = chunk.len().min((len - pos) as usize);
        log.read_exact_at(&mut chunk[..n], pos)?;
        match chunk[..n].chunks(8).position(|w| w.iter().any(|&b| b != 0)) {
            Some(i) => return Ok(pos + 8 * i as u64),
            None => pos += n as u64,
        }
    }
    Ok(len)
}

/// Whether a commit record's value closes the `count` records from `start`.
fn commit_matches(value: &[u8], start: u64, count: usize) -> bool {
    let field = |i: usize| value.get(i * 8..i * 8 + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    (value.len() == 48 || value.len() == 56) && field(0) == Some(start) && field(2) == Some(count as u64)
}
