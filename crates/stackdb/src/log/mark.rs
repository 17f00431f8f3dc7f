//! The synced end, recorded in the log's header: how far the log is known to have been synced, so a
//! log found shorter — cut by `truncate`, a copy that stopped early, a failing disk — is corruption,
//! refused, however cleanly it ends (a cut at a commit's end leaves nothing else to see).
//!
//! The header's bytes 16..24 hold the offset, 24..28 its CRC-32 (a mark that fails it is ignored, as
//! are the zeros older builds left). A sync that takes the synced end [`EVERY`] past the mark writes
//! the new end there, not synced: the next sync of the log makes it durable with what it covers. So
//! the mark trails the synced end by [`EVERY`] and a sync, and costs a 12-byte write per [`EVERY`] of
//! log and one more block in the sync after it. An older mark is always safe (it only proves less): a
//! write of it that fails is let be.

use super::Log;
use crate::storage::StorageBackend;

/// Where in the log's header the mark lies.
const AT: usize = 16;
/// The mark's bytes: the offset and its checksum.
const LEN: usize = 12;
/// Log synced between marks.
pub(super) const EVERY: u64 = 256 << 10;

/// The synced end a log header records (0: none, or a damaged one).
pub(super) fn read(header: &[u8]) -> u64 {
    let mark = &header[AT..AT + LEN];
    let crc = u32::from_le_bytes(mark[8..].try_into().expect("4 bytes"));
    if crc32fast::hash(&mark[..8]) == crc { u64::from_le_bytes(mark[..8].try_into().expect("8 bytes")) } else { 0 }
}

fn encode(end: u64) -> [u8; LEN] {
    let mut mark = [0u8; LEN];
    mark[..8].copy_from_slice(&end.to_le_bytes());
    let crc = crc32fast::hash(&mark[..8]);
    mark[8..].copy_from_slice(&crc.to_le_bytes());
    mark
}

impl<B: StorageBackend> Log<B> {
    /// Writes `synced`, the end a finished sync reached, into the header if it is [`EVERY`] past the
    /// mark (not synced: the next sync makes it durable). Called with the syncs' lock held, so marks
    /// are written one at a time.
    pub(super) fn mark_synced(&self, synced: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        if synced >= self.marked.load(Relaxed) + EVERY && self.backend.write(AT as u64, &encode(synced)).is_ok() {
            self.marked.store(synced, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_reads_back_and_a_damaged_one_reads_as_none() {
        let mut header = [0u8; 64];
        assert_eq!(read(&header), 0, "older builds' zeros");
        header[AT..AT + LEN].copy_from_slice(&encode(123_456));
        assert_eq!(read(&header), 123_456);
        header[AT + 2] ^= 1;
        assert_eq!(read(&header), 0);
    }
}
