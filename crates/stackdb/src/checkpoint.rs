//! Checkpoint rounds: the head table reaches the disk a slice of pages at a
//! time, alongside the commits, so that no commit waits for the whole table
//! (`docs/stackdb-format.md`, "Checkpoints").
//!
//! A round begins between two commits at log offset `C`, and walks the
//! table's pages in order, writing those holding waiting entries — with the
//! entries as they are when the page is written, which may be newer than
//! `C`. That is sound because replaying the log from `C` over any page
//! version since `C` ends in the same table: a user batch sets each bucket's
//! head to its newest record and ORs Bloom bits, a split or rewrite clears
//! its buckets first. Every commit a written page reflects is synced first.
//! Each slice goes through the doublewrite file (a torn page in place is
//! redone from it at open); a slice before the last carries the header in
//! place, so recovery redoes its pages and keeps that header; the last
//! slice carries the round's header (`C`, sequence + 1), written in place
//! after it.

use crate::error::{Error, Result};
use crate::heads::{Heads, STATE_LEN, State};
use crate::page::{self, PAGE};

const DW_MAGIC: &[u8; 8] = b"STACKDW1";
/// Bytes of the doublewrite file before its pages: magic, CRC, 4 zero bytes, page count, state.
const DW_BODY: u64 = 24 + STATE_LEN as u64;
/// The doublewrite file is read this many bytes (64 pages with their numbers) at a time.
const DW_CHUNK: usize = 64 * (8 + PAGE);

/// Pages a whole round written at once writes per slice (2 MiB: fewer,
/// larger doublewrite writes and syncs than a step's slices).
const WHOLE_ROUND_SLICE: usize = 512;

/// A round under way.
#[derive(Debug)]
pub(crate) struct Round {
    /// The header the round ends with: the state as of its beginning,
    /// checkpoint sequence + 1.
    next: State,
    /// The next page to consider; the round ends at `next.pages`.
    cursor: u64,
    /// Bytes of RAM taken by entries set since the round began.
    pub(crate) added: usize,
}

impl Heads {
    /// One step of checkpointing after a commit (writer held, the table as
    /// of the log's end `log_end`): begins a round when waiting entries fill
    /// a quarter of their RAM or the log has grown half of
    /// `checkpoint_every` since the last header, then writes the pages the
    /// round is due to have written — paced to end before the entries that
    /// start waiting meanwhile fill half their RAM, or the log grows the
    /// other half — once a whole slice is due or the rest ends the round.
    /// Returns the header written if the round ended. `sync_log` makes every
    /// commit so far durable.
    pub(crate) fn checkpoint_step(&mut self, log_end: u64, checkpoint_every: u64, sync_log: impl Fn() -> Result<()>) -> Result<Option<State>> {
        let half_log = (checkpoint_every / 2).max(1);
        if self.round.is_none() {
            let due = self.waiting_bytes * 4 >= self.budget() || log_end - self.written.log_end >= half_log;
            if !due {
                return Ok(None);
            }
            self.begin_round(log_end);
        }
        let round = self.round.as_ref().expect("begun above");
        let by_entries = round.added as f64 / (self.budget() / 2).max(1) as f64;
        let by_log = (log_end - round.next.log_end) as f64 / half_log as f64;
        let end = round.next.pages;
        let due = 1 + ((end - 1) as f64 * by_entries.max(by_log).min(1.0)).ceil() as u64;
        self.write_slice(due, self.slice_pages, self.slice_pages, &sync_log)
    }

    /// Writes a whole round as of `log_end` at once, so that the header on
    /// disk reflects the log up to there. A round under way is dropped (its
    /// header never written): the pages it wrote are versions since the
    /// header in place, and the new round writes every page still waiting.
    pub(crate) fn checkpoint_all(&mut self, log_end: u64, sync_log: impl Fn() -> Result<()>) -> Result<State> {
        self.begin_round(log_end);
        let end = self.round.as_ref().expect("begun above").next.pages;
        let slice = self.slice_pages.max(WHOLE_ROUND_SLICE);
        loop {
            if let Some(header) = self.write_slice(end, slice, 1, &sync_log)? {
                return Ok(header);
            }
        }
    }

    fn begin_round(&mut self, log_end: u64) {
        let mut next = self.state;
        next.checkpoint = self.written.checkpoint + 1;
        next.log_end = log_end;
        next.pages = next.pages.max(next.pages_needed());
        self.state.pages = next.pages;
        // The header will promise every page below `next.pages` on disk.
        for n in self.disk_pages..next.pages {
            self.waiting_pages.insert(n);
        }
        self.round = Some(Round { next, cursor: 1, added: 0 });
    }

    /// Writes the round's waiting pages below `due`, up to `most` of them,
    /// if at least `least` are there or they end the round; returns the
    /// round's header if they did.
    fn write_slice(&mut self, due: u64, most: usize, least: usize, sync_log: &impl Fn() -> Result<()>) -> Result<Option<State>> {
        let round = self.round.as_ref().expect("a round is under way");
        let (end, next) = (round.next.pages, round.next);
        let due = due.min(end);
        let mut pages = Vec::new();
        let mut at = round.cursor;
        while pages.len() < most {
            match self.waiting_pages.next_in(at, due) {
                Some(n) => {
                    pages.push(n);
                    at = n + 1;
                }
                None => {
                    at = due;
                    break;
                }
            }
        }
        let last = at >= end;
        if !last && pages.len() < least {
            return Ok(None);
        }
        sync_log()?;
        // The previous slice's pages (and header) in place reach the disk before the doublewrite file
        // stops holding them.
        self.file.sync_data()?;
        let mut body = std::mem::take(&mut self.slice);
        body.clear();
        for &n in &pages {
            body.extend_from_slice(&n.to_le_bytes());
            let at = body.len();
            if n < self.disk_pages {
                body.extend_from_slice(self.disk_page(n)?);
            } else {
                body.resize(at + PAGE, 0);
            }
            let page = &mut body[at..at + PAGE];
            for (slot, entry) in self.waiting.get(&n).into_iter().flat_map(|w| w.iter()) {
                page::write_entry(page, slot, entry);
            }
            page::seal(page, n);
        }
        let header = if last { next } else { self.written };
        self.write_doublewrite(&header, pages.len(), &body)?;
        // From here a crash redoes this slice from the doublewrite file: its pages (and the round's header)
        // go in place without waiting for the disk, which starts on them now.
        for (i, &n) in pages.iter().enumerate() {
            let at = i * (8 + PAGE) + 8;
            self.file.write(n * PAGE as u64, &body[at..at + PAGE])?;
        }
        if last {
            self.write_header(&header)?;
        }
        self.slice = body;
        self.file.start_writeback()?;
        for &n in &pages {
            if let Some(waiting) = self.waiting.remove(&n) {
                self.waiting_bytes -= waiting.bytes();
            }
            self.waiting_pages.remove(n);
            if n == self.disk_pages {
                self.disk_pages = n + 1;
            }
        }
        if last {
            self.written = header;
            self.round = None;
            Ok(Some(header))
        } else {
            self.round.as_mut().expect("under way").cursor = at;
            Ok(None)
        }
    }

    /// Writes the doublewrite file: `count` pages with their numbers
    /// (`body`), the header `state`, its checksum last, and syncs it: torn
    /// anywhere, it is ignored. Written over the last slice's copy, not
    /// truncated first (that freed and allocated its blocks every time):
    /// until the new checksum is written last, the old one does not match
    /// what is there.
    fn write_doublewrite(&self, state: &State, count: usize, body: &[u8]) -> Result<()> {
        let mut start = Vec::with_capacity(DW_BODY as usize - 16);
        start.extend_from_slice(&(count as u64).to_le_bytes());
        start.extend_from_slice(&state.encode());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&start);
        crc.update(body);
        self.doublewrite.write(16, &start)?;
        self.doublewrite.write(DW_BODY, body)?;
        let mut head = [0u8; 16];
        head[..8].copy_from_slice(DW_MAGIC);
        head[8..12].copy_from_slice(&crc.finalize().to_le_bytes());
        self.doublewrite.write(0, &head)?;
        self.doublewrite.sync_data()?;
        Ok(())
    }

    /// Makes the pages in place what the doublewrite file says, if it holds
    /// a slice of the round after the header in place (its header is that
    /// header: the slice's pages in place were not waited for) or that
    /// round's last slice (its header is the next one, which the crash may
    /// have kept from reaching its slot: adopted). Pages that differ are
    /// copied in place again (idempotent). The file is read a chunk at a
    /// time, twice: its checksum first, then the pages.
    pub(crate) fn redo_doublewrite(&mut self) -> Result<()> {
        let Some((next, count)) = self.complete_doublewrite()? else { return Ok(()) };
        let adopt = next.checkpoint == self.state.checkpoint + 1;
        if !adopt && next != self.state {
            return Ok(()); // an older round's: what it holds is in place and synced
        }
        let mut rewrote = false;
        let mut in_place = vec![0u8; PAGE];
        for_each_chunk(self.doublewrite.as_ref(), DW_BODY, count * (8 + PAGE) as u64, |chunk| {
            for entry in chunk.chunks_exact(8 + PAGE) {
                let page_no = u64::from_le_bytes(entry[..8].try_into().expect("8 bytes"));
                let page = &entry[8..];
                let Some(offset) = page_no.checked_mul(PAGE as u64).filter(|_| page_no > 0) else {
                    return Err(Error::Corrupt { what: "doublewrite page number", offset: page_no });
                };
                if page_no >= next.pages {
                    continue; // beyond the header's pages: read as empty, rebuilt by the replay
                }
                if self.file.read(offset, &mut in_place).is_err() || in_place != page {
                    self.file.write(offset, page)?;
                    rewrote = true;
                }
            }
            Ok(())
        })?;
        if rewrote || adopt {
            self.file.sync_data()?;
        }
        if adopt {
            self.write_header(&next)?;
            self.file.sync_data()?;
            self.state = next;
        }
        Ok(())
    }

    /// The state and page count in the doublewrite file, if it is complete (its checksum holds).
    fn complete_doublewrite(&self) -> Result<Option<(State, u64)>> {
        let len = self.doublewrite.len()?;
        if len < DW_BODY {
            return Ok(None);
        }
        let mut head = [0u8; DW_BODY as usize];
        self.doublewrite.read(0, &mut head)?;
        let count = u64::from_le_bytes(head[16..24].try_into().expect("8 bytes"));
        // A damaged count can be anything: only pages that fit the file count.
        let pages_len = count.checked_mul((8 + PAGE) as u64).filter(|b| *b <= len - DW_BODY);
        let Some(pages_len) = pages_len else { return Ok(None) };
        if &head[..8] != DW_MAGIC {
            return Ok(None);
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(&head[16..]);
        for_each_chunk(self.doublewrite.as_ref(), DW_BODY, pages_len, |chunk| {
            crc.update(chunk);
            Ok(())
        })?;
        if crc.finalize() != u32::from_le_bytes(head[8..12].try_into().expect("4 bytes")) {
            return Ok(None); // torn before its checksum was written: the table in place is intact
        }
        Ok(State::decode(&head[24..]).map(|s| (s, count)))
    }

    /// Waits for the last slice's pages and header to reach the disk and
    /// empties the doublewrite file, so the next open has nothing to compare
    /// or redo (on close).
    pub fn settle(&mut self) -> Result<()> {
        self.file.sync_data()?;
        self.doublewrite.set_len(0)?;
        self.doublewrite.sync_data()?;
        Ok(())
    }
}

/// Reads `len` bytes of `file` from `from` a [`DW_CHUNK`] at a time and hands each to `f`.
fn for_each_chunk(file: &dyn crate::storage::StorageBackend, from: u64, len: u64, mut f: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
    let mut buf = vec![0u8; DW_CHUNK];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(DW_CHUNK as u64) as usize;
        file.read(from + at, &mut buf[..n])?;
        f(&buf[..n])?;
        at += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heads::Entry;
    use crate::storage::MemBackend;
    use std::sync::Arc;

    fn open(heads: &Arc<MemBackend>, dw: &Arc<MemBackend>, ram: usize) -> Heads {
        Heads::open(Box::new(heads.clone()), Box::new(dw.clone()), ram, 14).unwrap()
    }

    /// A round goes a slice per step and, crashed after any step, leaves a table whose every
    /// entry is the one set or the one before it (what the replay from the old header fixes).
    #[test]
    fn a_round_writes_a_slice_per_step_and_survives_a_crash_between_them() {
        let (file, dw) = (Arc::new(MemBackend::new()), Arc::new(MemBackend::new()));
        let ram = 8 * PAGE * 32; // slices of 8 pages
        let mut heads = open(&file, &dw, ram);
        assert_eq!(heads.slice_pages, 8);
        let buckets: Vec<u64> = (0..60).map(|i| i * 255 + 3).collect(); // one entry on each of 60 pages
        for &b in &buckets {
            heads.set(b, Entry { head: 1000 + b, bloom: 1 });
        }
        let (mut steps, mut log_end, mut began) = (0, 64, None);
        let header = loop {
            log_end += 20 << 10; // each commit grows the log 20 KiB: a round is due over 512 KiB
            let written_before = heads.disk_pages;
            let ended = heads.checkpoint_step(log_end, 1 << 20, || Ok(())).unwrap();
            steps += 1;
            if began.is_none() && (heads.round.is_some() || ended.is_some()) {
                began = Some(steps);
            }
            assert!(heads.disk_pages >= written_before);
            // Crash here: whatever is on disk reads as the new entry or the empty one.
            let mut after = open(&Arc::new(file.crash(0)), &Arc::new(dw.crash(0)), ram);
            for &b in &buckets {
                let e = after.entry(b).unwrap();
                assert!(e == Entry::default() || e == Entry { head: 1000 + b, bloom: 1 }, "step {steps}: bucket {b}: {e:?}");
            }
            if let Some(h) = ended {
                break h;
            }
        };
        let round_steps = steps - began.expect("a round began") + 1;
        assert!(round_steps >= 60 / 8, "{round_steps} steps: the round did not go a slice at a time");
        assert_eq!(header.checkpoint, 2);
        let mut reopened = open(&Arc::new(file.crash(0)), &Arc::new(dw.crash(0)), ram);
        assert_eq!(reopened.state.checkpoint, 2);
        for &b in &buckets {
            assert_eq!(reopened.entry(b).unwrap(), Entry { head: 1000 + b, bloom: 1 });
        }
    }
}
