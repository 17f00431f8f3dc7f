//! Checkpoint rounds: the head table reaches the disk a slice of pages at a
//! time, alongside the commits, so that no commit waits for the whole table
//! (`docs/stackdb-format.md`, "Checkpoints").
//!
//! A round begins between two commits at log offset `C`, and walks the
//! table's pages in order, writing those holding waiting entries — with the
//! entries as they are when the page's slice is taken, which may be newer
//! than `C`. That is sound because replaying the log from `C` over any page
//! version since `C` ends in the same table: a user batch sets each bucket's
//! head to its newest record and ORs Bloom bits, a split or rewrite clears
//! its buckets first. Every commit a written page reflects is synced first.
//! Each slice goes through the doublewrite file (a torn page in place is
//! redone from it at open); a slice before the last carries the header in
//! place, so recovery redoes its pages and keeps that header; the last
//! slice carries the round's header (`C`, sequence + 1), written in place
//! after it.
//!
//! A slice is *taken* under the table's lock (its pages copied with their
//! waiting entries) and *written* without it, so commits and readers go on
//! meanwhile; once written, a page whose entries were not set again since
//! stops waiting ([`write_slices`]).

use crate::error::{Error, Result};
use crate::heads::{Heads, Round, STATE_LEN, State};
use crate::page::{self, PAGE};
use crate::storage::StorageBackend;
use crate::sync::lock;
use std::sync::{Arc, Mutex};

const DW_MAGIC: &[u8; 8] = b"STACKDW1";
/// Bytes of the doublewrite file before its pages: magic, CRC, 4 zero bytes, page count, state.
const DW_BODY: u64 = 24 + STATE_LEN as u64;
/// The doublewrite file is read this many bytes (64 pages with their numbers) at a time.
const DW_CHUNK: usize = 64 * (8 + PAGE);

/// Pages a whole round written at once writes per slice (2 MiB: fewer,
/// larger doublewrite writes and syncs than a step's slices).
const WHOLE_ROUND_SLICE: usize = 512;

/// The pages a slice takes: their numbers, where the round's cursor goes after them, and whether
/// they end the round.
struct Pick {
    pages: Vec<u64>,
    cursor: u64,
    last: bool,
}

/// A slice of a round taken under the table's lock, to be written without it.
pub(crate) struct Slice {
    pages: Vec<u64>,
    /// The table's count of entries set when the slice was taken.
    set_at: u64,
    /// Each page with its number before it, sealed.
    body: Vec<u8>,
    /// The header the doublewrite file carries: the round's, if the slice ends it.
    header: State,
    last: bool,
    /// The log's end when the slice was taken: every commit its pages reflect lies below.
    log_end: u64,
    file: Arc<dyn StorageBackend>,
    doublewrite: Arc<dyn StorageBackend>,
}

/// What a commit's checkpoint step found due.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Due {
    /// Nothing to write yet.
    Nothing,
    /// A slice, for the checkpoint thread.
    Slice,
    /// The rest of a round the log has outgrown twice its pace: the commit writes it itself.
    Overdue,
}

impl Heads {
    /// One step of checkpointing after a commit (writer held, the table as
    /// of the log's end `log_end`): begins a round when waiting entries fill
    /// a quarter of their RAM, the log has grown half of `checkpoint_every`
    /// since the last header, or a sweep raised the floor above the header's
    /// or left a hole; then moves the page the round is due to have reached —
    /// paced to end before the entries that start waiting meanwhile fill half
    /// their RAM, or the log grows the other half; at once while the floor is
    /// above the header's or a hole waits, so that log can be given back soon.
    pub(crate) fn checkpoint_step(&mut self, log_end: u64, checkpoint_every: u64) -> Due {
        let half_log = (checkpoint_every / 2).max(1);
        let hurry = self.state.floor > self.written.floor || !self.holes.is_empty();
        if self.round.is_none() {
            let due = self.waiting_bytes * 4 >= self.budget() || log_end - self.written.log_end >= half_log || hurry;
            if !due {
                return Due::Nothing;
            }
            self.begin_round(log_end);
        }
        let budget = self.budget();
        let round = self.round.as_mut().expect("begun above");
        let by_entries = round.added as f64 / (budget / 2).max(1) as f64;
        let by_log = (log_end - round.next.log_end) as f64 / half_log as f64;
        let end = round.next.pages;
        let paced = 1 + ((end - 1) as f64 * by_entries.max(by_log).min(1.0)).ceil() as u64;
        round.due = round.due.max(if hurry { end } else { paced });
        if by_log >= 2.0 {
            Due::Overdue
        } else if self.slice_due() {
            Due::Slice
        } else {
            Due::Nothing
        }
    }

    /// Begins a round as of `log_end` that is due to write every waiting page at once. A round under
    /// way is dropped (its header never written): the pages it wrote are versions since the header in
    /// place, and the new round writes every page still waiting.
    fn begin_whole_round(&mut self, log_end: u64) {
        self.begin_round(log_end);
        let round = self.round.as_mut().expect("begun above");
        round.due = round.next.pages;
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
        self.round = Some(Round { next, cursor: 1, due: 1, ending: false, added: 0 });
    }

    /// The round's waiting pages from its cursor below its due page, with that page and the page the
    /// round ends at; none once its last slice is taken.
    fn due_pages(&self) -> Option<(impl Iterator<Item = u64> + '_, u64, u64)> {
        let round = self.round.as_ref().filter(|r| !r.ending)?;
        let (end, due) = (round.next.pages, round.due.min(round.next.pages));
        let pages = std::iter::successors(self.waiting_pages.next_in(round.cursor, due), move |&n| self.waiting_pages.next_in(n + 1, due));
        Some((pages, due, end))
    }

    /// Whether a slice is due: a whole one, or the rest, which ends the round.
    fn slice_due(&self) -> bool {
        let Some((pages, due, end)) = self.due_pages() else { return false };
        pages.take(self.slice_pages).count() == self.slice_pages || due >= end
    }

    /// The round's waiting pages below its due page, up to `most` of them, if at least `least` are
    /// there or they end the round (and its last slice is not taken already).
    fn pick(&self, most: usize, least: usize) -> Option<Pick> {
        let (pages, due, end) = self.due_pages()?;
        let pages: Vec<u64> = pages.take(most).collect();
        let cursor = match pages.last() {
            Some(&n) if pages.len() == most => n + 1,
            _ => due,
        };
        let last = cursor >= end;
        (last || pages.len() >= least).then_some(Pick { pages, cursor, last })
    }

    /// Takes the round's next slice (see [`Heads::pick`]): copies its pages as they are on disk with
    /// their waiting entries, sealed. `log_end`: the log's end now.
    fn take_slice(&mut self, most: usize, least: usize, log_end: u64) -> Result<Option<Slice>> {
        let Some(Pick { pages, cursor, last }) = self.pick(most, least) else { return Ok(None) };
        let mut body = std::mem::take(&mut self.slice);
        body.clear();
        for &n in &pages {
            body.extend_from_slice(&n.to_le_bytes());
            let at = body.len();
            if n < self.disk_pages {
                body.extend_from_slice(self.disk_page(n)?);
                // Readers skip the check of a page being rewritten (they would race the write).
                self.checked.insert(n);
            } else {
                body.resize(at + PAGE, 0);
            }
            let page = &mut body[at..at + PAGE];
            for (slot, entry) in self.waiting.get(&n).into_iter().flat_map(|w| w.iter()) {
                page::write_entry(page, slot, entry);
            }
            page::seal(page, n);
        }
        let round = self.round.as_mut().expect("picked from it");
        round.cursor = cursor;
        round.ending = last;
        let header = if last { round.next } else { self.written };
        let (file, doublewrite) = (Arc::clone(&self.file), Arc::clone(&self.doublewrite));
        Ok(Some(Slice { pages, set_at: self.recent.mark(), body, header, last, log_end, file, doublewrite }))
    }

    /// Takes the holes young sweeps left that a header reflecting the log up to `log_end` no longer
    /// points into.
    fn holes_behind(&mut self, log_end: u64) -> Vec<std::ops::Range<u64>> {
        self.holes.extract_if(.., |h| h.done_at < log_end).map(|h| h.range).collect()
    }

    /// Takes note that `slice` is on disk: its pages stop waiting unless set again since it was
    /// taken, and the table beyond the disk's pages grows. Returns the round's header if it ended.
    fn finish_slice(&mut self, slice: Slice) -> Option<State> {
        for &n in &slice.pages {
            if self.waiting.get(&n).is_none_or(|w| w.set_at <= slice.set_at) {
                if let Some(waiting) = self.waiting.remove(&n) {
                    self.waiting_bytes -= waiting.bytes();
                }
                self.waiting_pages.remove(n);
            }
            if n == self.disk_pages {
                self.disk_pages = n + 1;
            }
        }
        self.slice = slice.body;
        if !slice.last {
            return None;
        }
        self.written = slice.header;
        self.round = None;
        Some(slice.header)
    }
}

impl Slice {
    /// Writes the slice: the commits its pages reflect are synced, the previous slice's pages in place
    /// reach the disk, then the doublewrite file, the pages in place and, if the slice ends the round,
    /// its header.
    fn write(&self, log: &dyn CheckpointLog) -> Result<()> {
        log.sync_to(self.log_end)?;
        // The previous slice's pages (and header) in place reach the disk before the doublewrite file
        // stops holding them.
        self.file.sync_data()?;
        write_doublewrite(self.doublewrite.as_ref(), &self.header, self.pages.len(), &self.body)?;
        // From here a crash redoes this slice from the doublewrite file: its pages (and the round's
        // header) go in place without waiting for the disk, which starts on them now.
        for (i, &n) in self.pages.iter().enumerate() {
            let at = i * (8 + PAGE) + 8;
            self.file.write(n * PAGE as u64, &self.body[at..at + PAGE])?;
        }
        if self.last {
            crate::heads::write_header(self.file.as_ref(), &self.header)?;
        }
        self.file.start_writeback()?;
        Ok(())
    }
}

/// The log as a checkpoint needs it: its end, a sync of every commit up to an offset, and its floor
/// raised once a round's header no longer points below it.
pub(crate) trait CheckpointLog {
    fn end(&self) -> u64;
    fn sync_to(&self, end: u64) -> Result<()>;
    fn raise_floor(&self, floor: u64);
    fn give_back(&self, hole: std::ops::Range<u64>);
}

/// Writes the slices of the round under way that are due — each taken under the table's lock,
/// written with the lock released — up to `most` pages each, a slice of fewer than `least` only if it
/// ends the round; returns the round's header if it ended, the log's floor raised to the header's.
/// One caller at a time.
pub(crate) fn write_slices(heads: &Mutex<Heads>, log: &dyn CheckpointLog, most: usize, least: usize) -> Result<Option<State>> {
    loop {
        let Some(slice) = ({
            let mut heads = lock(heads);
            heads.take_slice(most, least, log.end())?
        }) else {
            return Ok(None);
        };
        slice.write(log)?;
        let ended = {
            let mut heads = lock(heads);
            heads.finish_slice(slice).map(|header| (header, heads.holes_behind(header.log_end)))
        };
        if let Some((header, holes)) = ended {
            log.raise_floor(header.floor);
            holes.into_iter().for_each(|hole| log.give_back(hole));
            return Ok(Some(header));
        }
    }
}

/// Writes a whole round as of the log's end at once (no commit under way: the table is as of that
/// end), so that the header on disk reflects the whole log. One caller at a time.
pub(crate) fn write_round(heads: &Mutex<Heads>, log: &dyn CheckpointLog) -> Result<State> {
    let most = {
        let mut heads = lock(heads);
        heads.begin_whole_round(log.end());
        heads.slice_pages.max(WHOLE_ROUND_SLICE)
    };
    Ok(write_slices(heads, log, most, 1)?.expect("a whole round ends once every waiting page is written"))
}

/// Writes the doublewrite file: `count` pages with their numbers (`body`), the header `state`, its
/// checksum last, and syncs it: torn anywhere, it is ignored. Written over the last slice's copy, not
/// truncated first (that freed and allocated its blocks every time): until the new checksum is written
/// last, the old one does not match what is there.
fn write_doublewrite(doublewrite: &dyn StorageBackend, state: &State, count: usize, body: &[u8]) -> Result<()> {
    let mut start = Vec::with_capacity(DW_BODY as usize - 16);
    start.extend_from_slice(&(count as u64).to_le_bytes());
    start.extend_from_slice(&state.encode());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&start);
    crc.update(body);
    doublewrite.write(16, &start)?;
    doublewrite.write(DW_BODY, body)?;
    let mut head = [0u8; 16];
    head[..8].copy_from_slice(DW_MAGIC);
    head[8..12].copy_from_slice(&crc.finalize().to_le_bytes());
    doublewrite.write(0, &head)?;
    doublewrite.sync_data()?;
    Ok(())
}

impl Heads {
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
            crate::heads::write_header(self.file.as_ref(), &next)?;
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
    use crate::page::Entry;
    use crate::storage::MemBackend;
    use std::sync::Arc;

    fn open(heads: &Arc<MemBackend>, dw: &Arc<MemBackend>, ram: usize) -> Heads {
        Heads::open(Box::new(heads.clone()), Box::new(dw.clone()), ram, 14).unwrap()
    }

    /// A log that only has an end: its syncs and floor are the test's to ignore.
    struct Ends(std::sync::atomic::AtomicU64);

    impl CheckpointLog for Ends {
        fn end(&self) -> u64 {
            self.0.load(std::sync::atomic::Ordering::Relaxed)
        }
        fn sync_to(&self, _end: u64) -> Result<()> {
            Ok(())
        }
        fn raise_floor(&self, _floor: u64) {}
        fn give_back(&self, _hole: std::ops::Range<u64>) {}
    }

    /// A round goes a slice per step and, crashed after any step, leaves a table whose every
    /// entry is the one set or the one before it (what the replay from the old header fixes).
    #[test]
    fn a_round_writes_a_slice_per_step_and_survives_a_crash_between_them() {
        let (file, dw) = (Arc::new(MemBackend::new()), Arc::new(MemBackend::new()));
        let ram = 8 * PAGE * 32; // slices of 8 pages
        let heads = Mutex::new(open(&file, &dw, ram));
        assert_eq!(lock(&heads).slice_pages, 8);
        let buckets: Vec<u64> = (0..60).map(|i| i * 255 + 3).collect(); // one entry on each of 60 pages
        for &b in &buckets {
            lock(&heads).set(b, Entry::new((1000 + b) * 8, 1, 0));
        }
        let log = Ends(64.into());
        let (mut steps, mut began) = (0, None);
        let header = loop {
            // Each commit grows the log 20 KiB: a round is due over 512 KiB.
            let log_end = log.0.fetch_add(20 << 10, std::sync::atomic::Ordering::Relaxed) + (20 << 10);
            let written_before = lock(&heads).disk_pages;
            let due = lock(&heads).checkpoint_step(log_end, 1 << 20);
            let ended = if due == Due::Nothing { None } else { write_slices(&heads, &log, 8, 8).unwrap() };
            steps += 1;
            if began.is_none() && (lock(&heads).round.is_some() || ended.is_some()) {
                began = Some(steps);
            }
            assert!(lock(&heads).disk_pages >= written_before);
            // Crash here: whatever is on disk reads as the new entry or the empty one.
            let mut after = open(&Arc::new(file.crash(0)), &Arc::new(dw.crash(0)), ram);
            for &b in &buckets {
                let e = after.entry(b).unwrap();
                assert!(e == Entry::default() || e == Entry::new((1000 + b) * 8, 1, 0), "step {steps}: bucket {b}: {e:?}");
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
            assert_eq!(reopened.entry(b).unwrap(), Entry::new((1000 + b) * 8, 1, 0));
        }
    }

    /// A page set again while its slice was being written keeps waiting, with its newer entry; one
    /// left alone stops waiting.
    #[test]
    fn a_page_set_during_its_slice_stays_waiting() {
        let (file, dw) = (Arc::new(MemBackend::new()), Arc::new(MemBackend::new()));
        let mut heads = open(&file, &dw, 8 * PAGE * 32);
        let (a, b) = (3, 255 + 3); // pages 1 and 2
        heads.set(a, Entry::new(800, 1, 0));
        heads.set(b, Entry::new(1600, 1, 0));
        heads.begin_whole_round(64);
        let slice = heads.take_slice(8, 1, 64).unwrap().expect("both pages are due");
        heads.set(b, Entry::new(1608, 1, 0));
        slice.write(&Ends(64.into())).unwrap();
        let header = heads.finish_slice(slice).expect("the slice ends the round");
        assert_eq!(header.checkpoint, 2);
        assert!(!heads.waiting.contains_key(&1), "page 1 was written as it was");
        assert_eq!(heads.entry(b).unwrap().head(), 1608, "page 2 keeps its newer entry waiting");
        // Read together, page by page: page 1 from disk, page 2 waiting and on disk, page 3 not on disk.
        let buckets = [a - 1, a, b - 1, b, b + 1, 2 * 255 + 7];
        let one_by_one: Vec<Entry> = buckets.iter().map(|&x| heads.entry(x).unwrap()).collect();
        assert_eq!(heads.entries(&buckets).unwrap(), one_by_one);
        assert_eq!(one_by_one[1].head(), 800);
        let mut reopened = open(&Arc::new(file.crash(0)), &Arc::new(dw.crash(0)), 8 * PAGE * 32);
        assert_eq!((reopened.entry(a).unwrap().head(), reopened.entry(b).unwrap().head()), (800, 1600));
    }
}
