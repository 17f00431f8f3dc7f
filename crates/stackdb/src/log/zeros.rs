//! Zeros written ahead of the log's end, so a synced commit overwrites blocks the file already has:
//! its `fdatasync` then flushes data only, with no size change to journal (half the cost of a synced
//! append on ext4 here). Recovery treats zeros past the last commit as the end.
//!
//! The checkpoint thread keeps them `zeros_ahead` ahead (an option: 16 MiB), a quarter at a time,
//! and syncs each step itself, so the file system records the new size off the commits' path. A
//! commit that finds too few (the thread fell behind, or the database just opened) writes a step
//! itself, as every commit reaching past them once did: 4 MiB of zeros and then a sync that waited
//! for them and journaled the size took ~5.6 ms of a commit every 4 MiB of log here — the one-zone
//! Checkpoint p99.
//!
//! Zeros and records never overlap: an append reaching past the zeros holds `zeroing` while it
//! writes, as does a step, which only writes from the zeros' end up.

use super::{BLOCK, Log};
use crate::error::Result;
use crate::storage::StorageBackend;
use crate::sync::lock;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// The zeros ahead a log keeps unless told ([`Log::with_zeros_ahead`]).
pub(super) const DEFAULT_AHEAD: u64 = 16 << 20;

impl<B: StorageBackend> Log<B> {
    /// Keeps `bytes` of zeros ahead of the end once synced commits begin (0: none).
    pub fn with_zeros_ahead(mut self, bytes: u64) -> Self {
        self.zeros_ahead = bytes.div_ceil(BLOCK) * BLOCK;
        self
    }

    /// Zeros a step writes: a quarter of those kept ahead, in whole blocks.
    fn zeros_step_len(&self) -> u64 {
        (self.zeros_ahead / 4).div_ceil(BLOCK) * BLOCK
    }

    /// Writes a step of zeros past where they end (or the log's end) or past `at_least`, whichever is
    /// further, and starts their writeback so a later sync finds them (mostly) on disk already.
    /// `zeroing` held.
    fn write_zeros_past(&self, at_least: u64) -> Result<()> {
        let from = self.prepared.load(Acquire).max(self.end());
        let to = (from.max(at_least) + self.zeros_step_len()).div_ceil(BLOCK) * BLOCK;
        if to <= from {
            return Ok(());
        }
        static ZEROS: [u8; 1 << 16] = [0; 1 << 16];
        let mut at = from;
        while at < to {
            let n = (to - at).min(ZEROS.len() as u64);
            self.backend.write(at, &ZEROS[..n as usize])?;
            at += n;
        }
        if let Some(file) = self.backend.file() {
            use std::os::fd::AsRawFd;
            // A hint: if it fails, the next sync simply writes the zeros.
            // SAFETY: sync_file_range on an open descriptor with a valid range.
            unsafe { libc::sync_file_range(file.as_raw_fd(), from as i64, (to - from) as i64, libc::SYNC_FILE_RANGE_WRITE) };
        }
        self.prepared.store(to, Release);
        Ok(())
    }

    /// Writes `buf` at `at` (the log's end), first writing zeros past it if `synced` (a commit to be
    /// synced), zeros are kept ahead and it reaches past them. Returns the new end.
    pub(super) fn write_at_end(&self, at: u64, buf: &[u8], synced: bool) -> Result<u64> {
        let end = at + buf.len() as u64;
        // With no zeros kept ahead, a step would only write zeros the batch overwrites at once.
        let synced = synced && self.zeros_ahead > 0;
        if synced {
            self.zeros_wanted.store(true, Relaxed);
        }
        if end <= self.prepared.load(Acquire) {
            // Below the zeros: a step writes only above them.
            self.backend.write(at, buf)?;
            return Ok(end);
        }
        let _zeroing = lock(&self.zeroing);
        if synced {
            self.write_zeros_past(end)?;
        }
        self.backend.write(at, buf)?;
        self.prepared.fetch_max(end, Release);
        Ok(end)
    }

    /// Whether the zeros ahead of the end have run short since synced commits began: the checkpoint
    /// thread's [`Log::zeros_step`] is due.
    pub fn zeros_short(&self) -> bool {
        let step = self.zeros_step_len();
        step > 0 && self.zeros_wanted.load(Relaxed) && self.prepared.load(Acquire) + step <= self.end() + self.zeros_ahead
    }

    /// Writes the next step of zeros ahead of the end and syncs them, if they are short; returns
    /// whether it wrote any.
    pub fn zeros_step(&self) -> Result<bool> {
        let wrote = self.write_zeros_step();
        self.poisoning(wrote)
    }

    fn write_zeros_step(&self) -> Result<bool> {
        if !self.zeros_short() {
            return Ok(false);
        }
        {
            let _zeroing = lock(&self.zeroing);
            self.write_zeros_past(0)?;
        }
        // Not one of the commits' syncs: it writes the zeros and journals the file's new size (~5 ms
        // for 4 MiB), and a commit that waited for it as a sync covering its bytes waited that long
        // (suspected in one-zone Checkpoint p99s of 9–16 ms).
        self.backend.sync_data()?;
        Ok(true)
    }
}
