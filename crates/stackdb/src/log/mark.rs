//! The synced end and the floor, recorded in the log's header: how far the log is known to have been
//! synced, so a log found shorter — cut by `truncate`, a copy that stopped early, a failing disk — is
//! corruption, refused, however cleanly it ends (a cut at a commit's end leaves nothing else to see);
//! and the floor below which the log was given back, so a head table older than that (restored from a
//! backup, or another store's) is told apart from a damaged log.
//!
//! The header's bytes 16..24 hold the synced end, 24..32 the floor, 32..36 their CRC-32 (a mark that
//! fails it is ignored, as are the zeros older builds left). A sync that takes the synced end [`EVERY`]
//! past the mark writes the new mark there, not synced: the next sync of the log makes it durable with
//! what it covers. So the mark trails the synced end by [`EVERY`] and a sync, and costs a 20-byte write
//! per [`EVERY`] of log and one more block in the sync after it. The floor it records was raised only
//! once a head table not pointing below it was durable. An older mark is always safe (it only proves
//! less): a write of it that fails is let be.

use super::Log;
use crate::storage::StorageBackend;

/// Where in the log's header the mark lies.
const AT: usize = 16;
/// The mark's bytes: the synced end, the floor and their checksum.
const LEN: usize = 20;
/// Log synced between marks.
pub(super) const EVERY: u64 = 256 << 10;

/// What a log's header records of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Marks {
    /// The log was synced at least this far (0: no mark).
    pub synced: u64,
    /// Everything below this offset had been given back, a durable head table pointing above it.
    pub floor: u64,
}

/// What a log header (its first bytes) records: nothing when there is no mark, or a damaged one.
pub(crate) fn read(header: &[u8]) -> Marks {
    let mark = &header[AT..AT + LEN];
    let u64_at = |i: usize| u64::from_le_bytes(mark[i..i + 8].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(mark[16..].try_into().expect("4 bytes"));
    if crc32fast::hash(&mark[..16]) == crc { Marks { synced: u64_at(0), floor: u64_at(8) } } else { Marks::default() }
}

fn encode(marks: Marks) -> [u8; LEN] {
    let mut mark = [0u8; LEN];
    mark[..8].copy_from_slice(&marks.synced.to_le_bytes());
    mark[8..16].copy_from_slice(&marks.floor.to_le_bytes());
    let crc = crc32fast::hash(&mark[..16]);
    mark[16..].copy_from_slice(&crc.to_le_bytes());
    mark
}

impl<B: StorageBackend> Log<B> {
    /// Writes `synced`, the end a finished sync reached, and the floor into the header if it is
    /// [`EVERY`] past the mark (not synced: the next sync makes it durable). Called with the syncs'
    /// lock held, so marks are written one at a time.
    pub(super) fn mark_synced(&self, synced: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let marks = Marks { synced, floor: self.floor() };
        if synced >= self.marked.load(Relaxed) + EVERY && self.backend.write(AT as u64, &encode(marks)).is_ok() {
            self.marked.store(synced, Relaxed);
        }
    }

    /// What the header recorded when the log was opened.
    pub fn marks(&self) -> Marks {
        self.marks_at_open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_reads_back_and_a_damaged_one_reads_as_none() {
        let mut header = [0u8; 64];
        assert_eq!(read(&header), Marks::default(), "older builds' zeros");
        let marks = Marks { synced: 123_456, floor: 4096 };
        header[AT..AT + LEN].copy_from_slice(&encode(marks));
        assert_eq!(read(&header), marks);
        header[AT + 2] ^= 1;
        assert_eq!(read(&header), Marks::default());
    }
}
