//! The head table: for each bucket, the offset of its newest record and a
//! Bloom word of its keys, in checksummed 4 KiB pages on disk, read through
//! a memory map. Entries set since their page was last written wait in RAM,
//! within the budget, until a checkpoint round writes their pages through
//! the doublewrite file (`checkpoint.rs`; `docs/stackdb-format.md`, "The
//! head table").

use crate::error::{Error, Result};
use crate::hash::FastMap;
use crate::map::FileMap;
use crate::page::{self, ENTRIES_PER_PAGE, PAGE, PageSet, WAITING_PAGE_BYTES, Waiting};
pub use crate::page::{Entry, MAX_SHARED};
use crate::recent::RecentSets;
use crate::storage::StorageBackend;
use std::sync::Arc;

pub(crate) const SLOT: usize = 256;
pub(crate) const STATE_LEN: usize = 96;

/// Pages a new table is written in at a time (1 MiB).
const CREATE_CHUNK_PAGES: u64 = 256;

/// What a header slot records: the table as of a checkpoint (and, in RAM,
/// as of the last commit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct State {
    /// Checkpoint sequence (+1 per checkpoint).
    pub checkpoint: u64,
    /// Log offset up to which this state reflects the log.
    pub log_end: u64,
    /// Sequence of the last commit applied.
    pub commit_seq: u64,
    /// Linear-hashing level.
    pub level: u32,
    /// Linear-hashing split pointer.
    pub split: u64,
    /// Live keys.
    pub records: u64,
    /// Pages the head-table file holds as of this checkpoint (header page
    /// included); every one was written with a valid trailer.
    pub pages: u64,
    /// Bytes of the live records (puts that are their key's newest version).
    pub live_bytes: u64,
    /// No stack reaches below this log offset.
    pub floor: u64,
    /// Where the compaction sweep in progress began (0 = none in progress).
    pub sweep_from: u64,
    /// The next bucket the sweep rewrites.
    pub sweep_cursor: u64,
    /// Records at or past this log offset are young: written since the last sweep ended. A young
    /// sweep rewrites them alone (`sweep.rs`); 0 while a full sweep is in progress, which is how a
    /// header tells the two kinds apart.
    pub young: u64,
}

impl State {
    /// Pages (header included) needed for the current buckets.
    pub fn pages_needed(&self) -> u64 {
        1 + self.buckets().div_ceil(ENTRIES_PER_PAGE)
    }

    /// Buckets in use.
    pub fn buckets(&self) -> u64 {
        (1u64 << self.level) + self.split
    }

    /// The bucket of hash `h`.
    pub fn address(&self, h: u64) -> u64 {
        let b = h & ((1u64 << self.level) - 1);
        if b < self.split { h & ((1u64 << (self.level + 1)) - 1) } else { b }
    }

    pub(crate) fn encode(&self) -> [u8; STATE_LEN] {
        let mut b = [0u8; STATE_LEN];
        b[8..16].copy_from_slice(&self.checkpoint.to_le_bytes());
        b[16..24].copy_from_slice(&self.log_end.to_le_bytes());
        b[24..32].copy_from_slice(&self.commit_seq.to_le_bytes());
        b[32..36].copy_from_slice(&self.level.to_le_bytes());
        b[40..48].copy_from_slice(&self.split.to_le_bytes());
        b[48..56].copy_from_slice(&self.records.to_le_bytes());
        b[56..64].copy_from_slice(&self.pages.to_le_bytes());
        b[64..72].copy_from_slice(&self.live_bytes.to_le_bytes());
        b[72..80].copy_from_slice(&self.floor.to_le_bytes());
        b[80..88].copy_from_slice(&self.sweep_from.to_le_bytes());
        b[88..96].copy_from_slice(&self.sweep_cursor.to_le_bytes());
        // `young` in the two words older headers left zero: low half at 36, high half at 4.
        b[36..40].copy_from_slice(&(self.young as u32).to_le_bytes());
        b[4..8].copy_from_slice(&((self.young >> 32) as u32).to_le_bytes());
        let crc = crc32fast::hash(&b[4..]);
        b[..4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Option<State> {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if crc32fast::hash(&b[4..STATE_LEN]) != u32::from_le_bytes(b[..4].try_into().expect("4 bytes")) {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let level = u32_at(32);
        let mut state = State {
            checkpoint: u64_at(8),
            log_end: u64_at(16),
            commit_seq: u64_at(24),
            level,
            split: u64_at(40),
            records: u64_at(48),
            pages: u64_at(56),
            live_bytes: u64_at(64),
            floor: u64_at(72),
            sweep_from: u64_at(80),
            sweep_cursor: u64_at(88),
            young: u64::from(u32_at(36)) | u64::from(u32_at(4)) << 32,
        };
        // A header from before young sweeps: what the log held then counts as old.
        if state.young == 0 && state.sweep_from == 0 {
            state.young = state.log_end.max(crate::log::LOG_HEADER_LEN);
        }
        let sane = state.checkpoint > 0
            && level < 48
            && state.split < (1u64 << level)
            && state.pages >= 1
            && state.floor <= state.log_end.max(crate::log::LOG_HEADER_LEN)
            && state.sweep_cursor <= state.buckets()
            && (state.young == 0 || state.young >= state.floor);
        sane.then_some(state)
    }
}

/// Log a young sweep left unreferenced: given back once a header on disk reflects the sweep's end
/// (a checkpoint from before it still points into it, and recovery would replay from there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hole {
    pub(crate) range: std::ops::Range<u64>,
    /// The offset of the sweep's last commit record: a header reflecting the log past it no longer
    /// needs the hole.
    pub(crate) done_at: u64,
}

/// A checkpoint round under way (`checkpoint.rs` runs it; the table holds it, under its lock).
#[derive(Debug)]
pub(crate) struct Round {
    /// The header the round ends with: the state as of its beginning,
    /// checkpoint sequence + 1.
    pub(crate) next: State,
    /// The next page to consider; the round ends at `next.pages`.
    pub(crate) cursor: u64,
    /// The page below which the round is due to have written every waiting page.
    pub(crate) due: u64,
    /// Its last slice is taken: it ends when that slice is written.
    pub(crate) ending: bool,
    /// Bytes of RAM taken by entries set since the round began.
    pub(crate) added: usize,
}

/// What the sweeps' policy (`compaction.rs`) estimates beside a header's [`State`], kept in RAM only
/// (in [`Heads`]): a header records where sweeps stand, not what they gave back or copied.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Estimates {
    /// Bytes between the floor and the young bound that young sweeps have given back (holes):
    /// estimated at open from the space the log occupies.
    pub freed: u64,
    /// The share of its young records the last young sweep copied (0: none yet).
    pub survival: f64,
    /// Bytes the sweep in progress has appended (since open).
    pub copied: u64,
    /// Bytes of the copies the last young sweep made, which lie past the young bound but are old
    /// (0 at open).
    pub islands: u64,
}

/// The head table.
pub struct Heads {
    pub(crate) file: Arc<dyn StorageBackend>,
    /// The file mapped for reads (when it is a file).
    map: Option<FileMap>,
    /// The pages whose checksum was checked through the map since open
    /// (8 bytes per 64 pages, i.e. per 16,320 buckets).
    pub(crate) checked: PageSet,
    pub(crate) doublewrite: Arc<dyn StorageBackend>,
    /// The state as of the last commit applied.
    pub state: State,
    /// What the sweeps' policy estimates beside it, never stored.
    pub(crate) estimates: Estimates,
    /// The state the newest header written in place records.
    pub(crate) written: State,
    /// Entries set since their page was last written, by page.
    pub(crate) waiting: FastMap<u64, Waiting>,
    /// The pages holding waiting entries, walked in order by a round.
    pub(crate) waiting_pages: PageSet,
    /// Bytes of RAM the waiting entries hold.
    pub(crate) waiting_bytes: usize,
    /// The buckets set lately, for a write transaction's confirmation of what it looked up, and how
    /// many entries were set since open ([`RecentSets::mark`]: a page's waiting entries carry the
    /// count when last set).
    pub(crate) recent: RecentSets,
    /// Bytes of RAM they may hold.
    budget: usize,
    /// Pages below this are on disk, each written whole with its trailer.
    pub(crate) disk_pages: u64,
    /// The checkpoint round under way.
    pub(crate) round: Option<Round>,
    /// Holes young sweeps left, not yet given back.
    pub(crate) holes: Vec<Hole>,
    /// Pages a round writes at once at most.
    pub(crate) slice_pages: usize,
    /// A page read without a map.
    scratch: Box<[u8; PAGE]>,
    /// A slice's pages with their numbers, kept between slices.
    pub(crate) slice: Vec<u8>,
}

impl std::fmt::Debug for Heads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Heads").field("state", &self.state).field("waiting_bytes", &self.waiting_bytes).finish_non_exhaustive()
    }
}

/// Bytes of the table's two header slots, at its start.
pub(crate) const HEADER_SLOTS: usize = 2 * SLOT;

/// The newer of the two header slots in `slots` (the table's first [`HEADER_SLOTS`] bytes) that is
/// intact, if either is.
pub(crate) fn newest_state(slots: &[u8]) -> Option<State> {
    [State::decode(&slots[..SLOT]), State::decode(&slots[SLOT..])].into_iter().flatten().max_by_key(|s| s.checkpoint)
}

/// Writes `state` to its header slot in the table's `file` (not synced).
pub(crate) fn write_header(file: &dyn StorageBackend, state: &State) -> Result<()> {
    let slot = (state.checkpoint % 2) as usize * SLOT;
    file.write(slot as u64, &state.encode())?;
    Ok(())
}

impl Heads {
    /// Opens the table, creating it with `2^initial_level` buckets if empty,
    /// and redoes from the doublewrite file the in-place writes a crash may
    /// have lost or torn (see `checkpoint.rs`). `ram` bytes hold entries
    /// waiting to be written.
    pub fn open(file: Box<dyn StorageBackend>, doublewrite: Box<dyn StorageBackend>, ram: usize, initial_level: u32) -> Result<Heads> {
        Self::open_beside(file, doublewrite, ram, initial_level, || Ok(false))
    }

    /// [`Heads::open`], beside a log that `log_is_blank` tells holds no record yet: then a table
    /// without a valid header is one whose creation failed before its header was written (a full
    /// disk, an I/O error), and it is created again rather than refused as damaged.
    pub fn open_beside(
        file: Box<dyn StorageBackend>,
        doublewrite: Box<dyn StorageBackend>,
        ram: usize,
        initial_level: u32,
        log_is_blank: impl FnOnce() -> Result<bool>,
    ) -> Result<Heads> {
        let map = file.file().map(FileMap::new).transpose()?;
        let mut heads = Heads {
            file: Arc::from(file),
            map,
            checked: PageSet::default(),
            doublewrite: Arc::from(doublewrite),
            state: State::default(),
            estimates: Estimates::default(),
            written: State::default(),
            waiting: FastMap::default(),
            waiting_pages: PageSet::default(),
            waiting_bytes: 0,
            recent: RecentSets::default(),
            budget: ram,
            disk_pages: 0,
            round: None,
            holes: Vec::new(),
            slice_pages: (ram / 32 / PAGE).clamp(1, 256),
            scratch: Box::new([0u8; PAGE]),
            slice: Vec::new(),
        };
        let unfinished = heads.file.len()? > 0 && heads.read_header().is_err() && log_is_blank()?;
        if unfinished {
            heads.file.set_len(0)?;
        }
        if heads.file.len()? == 0 {
            let mut state = State {
                checkpoint: 1,
                level: initial_level,
                pages: 1,
                floor: crate::log::LOG_HEADER_LEN,
                young: crate::log::LOG_HEADER_LEN,
                ..State::default()
            };
            state.pages = state.pages_needed();
            // Every page of the table is written, with its trailer, from the
            // start: within `pages`, a blank page can only be damage. A
            // bounded chunk at a time (a table sized for a bulk load may be
            // large), and the header last, once the pages are synced: a
            // header on disk means the whole table is.
            let mut chunk = vec![0u8; CREATE_CHUNK_PAGES as usize * PAGE];
            for first in (1..state.pages).step_by(CREATE_CHUNK_PAGES as usize) {
                let n = CREATE_CHUNK_PAGES.min(state.pages - first);
                for (k, p) in chunk.chunks_exact_mut(PAGE).take(n as usize).enumerate() {
                    p.fill(0);
                    page::seal(p, first + k as u64);
                }
                heads.file.write(first * PAGE as u64, &chunk[..n as usize * PAGE])?;
            }
            let header = &mut chunk[..PAGE];
            header.fill(0);
            header[SLOT..SLOT + STATE_LEN].copy_from_slice(&state.encode());
            heads.file.sync_data()?;
            heads.file.write(0, header)?;
            heads.file.sync_data()?;
            heads.state = state;
        } else {
            heads.state = heads.read_header()?;
            heads.redo_doublewrite()?;
            let len = heads.file.len()?;
            if heads.state.pages.checked_mul(PAGE as u64).is_none_or(|needed| len < needed) {
                return Err(Error::Corrupt { what: "head table (shorter than its last checkpoint)", offset: len });
            }
        }
        heads.written = heads.state;
        heads.disk_pages = heads.state.pages;
        Ok(heads)
    }

    fn read_header(&self) -> Result<State> {
        let mut page0 = vec![0u8; HEADER_SLOTS];
        self.file.read(0, &mut page0).map_err(|_| Error::Corrupt { what: "head table header", offset: 0 })?;
        newest_state(&page0).ok_or(Error::Corrupt { what: "head table header (both slots)", offset: 0 })
    }

    /// Page `page_no` as it is on disk (below `disk_pages`), its checksum
    /// checked: through the map the first time after open, else on every
    /// read.
    pub(crate) fn disk_page(&mut self, page_no: u64) -> Result<&[u8]> {
        let offset = page_no * PAGE as u64;
        let corrupt = || Error::Corrupt { what: "head table page", offset };
        let Some(map) = &self.map else {
            self.file.read(offset, &mut self.scratch[..]).map_err(|_| corrupt())?;
            return if page::holds(&self.scratch[..], page_no) { Ok(&self.scratch[..]) } else { Err(corrupt()) };
        };
        let page = map.bytes(offset, PAGE)?;
        if !self.checked.contains(page_no) {
            if !page::holds(page, page_no) {
                return Err(corrupt());
            }
            self.checked.insert(page_no);
        }
        Ok(page)
    }

    /// The entry of `bucket`: the one waiting to be written, else the one on
    /// disk (a page not on disk yet holds only empty buckets).
    pub fn entry(&mut self, bucket: u64) -> Result<Entry> {
        let (page_no, slot) = page::locate(bucket);
        if let Some(e) = self.waiting.get(&page_no).and_then(|w| w.get(slot)) {
            return Ok(e);
        }
        if page_no >= self.disk_pages {
            return Ok(Entry::default());
        }
        Ok(page::read_entry(self.disk_page(page_no)?, slot))
    }

    /// The state as of the last commit, with the sweeps' estimates beside it: what their policy reads.
    pub(crate) fn with_estimates(&self) -> (State, Estimates) {
        (self.state, self.estimates)
    }

    /// The bucket each of `hashes` addresses now, with its entry (read as [`entries`](Self::entries)).
    pub fn places(&mut self, hashes: impl IntoIterator<Item = u64>) -> Result<Vec<(u64, Entry)>> {
        let buckets: Vec<u64> = hashes.into_iter().map(|h| self.state.address(h)).collect();
        let entries = self.entries(&buckets)?;
        Ok(buckets.into_iter().zip(entries).collect())
    }

    /// The entries of `buckets`, all asked of the CPU's cache before the
    /// first is read, so their memory reads overlap.
    pub fn entries(&mut self, buckets: &[u64]) -> Result<Vec<Entry>> {
        if let Some(map) = &self.map {
            for &b in buckets.iter().filter(|&&b| page::locate(b).0 < self.disk_pages) {
                map.prefetch(page::entry_offset(b));
            }
        }
        // Waiting entries too: each bucket's page is found in the map (independent look-ups the CPU
        // overlaps) and its entry asked of the cache, before any is read.
        for &b in buckets {
            let (page_no, slot) = page::locate(b);
            if let Some(w) = self.waiting.get(&page_no) {
                w.prefetch(slot);
            }
        }
        // Buckets on one page one after another (a split's, a sweep's) find its waiting entries once.
        let mut entries = Vec::with_capacity(buckets.len());
        // (index in `entries`, slot) of a run's buckets with no entry waiting: read from the page on disk.
        let mut unset = Vec::new();
        let mut rest = buckets;
        while let Some(&first) = rest.first() {
            let page_no = page::locate(first).0;
            let run = rest.iter().take_while(|&&b| page::locate(b).0 == page_no).count();
            let waiting = self.waiting.get(&page_no);
            unset.clear();
            for &b in &rest[..run] {
                let slot = page::locate(b).1;
                match waiting.and_then(|w| w.get(slot)) {
                    Some(e) => entries.push(e),
                    None => {
                        unset.push((entries.len(), slot));
                        entries.push(Entry::default());
                    }
                }
            }
            if !unset.is_empty() && page_no < self.disk_pages {
                let page = self.disk_page(page_no)?;
                for &(i, slot) in &unset {
                    entries[i] = page::read_entry(page, slot);
                }
            }
            rest = &rest[run..];
        }
        Ok(entries)
    }

    /// Sets the entry of `bucket` (in RAM; on disk when a checkpoint round
    /// writes its page).
    pub fn set(&mut self, bucket: u64, entry: Entry) {
        let (page_no, slot) = page::locate(bucket);
        let mut grew = 0;
        let waiting = self.waiting.entry(page_no).or_insert_with(|| {
            self.waiting_pages.insert(page_no);
            grew += WAITING_PAGE_BYTES;
            Waiting::default()
        });
        grew += waiting.set(slot, entry);
        self.recent.note(bucket);
        waiting.set_at = self.recent.mark();
        self.waiting_bytes += grew;
        if let Some(round) = &mut self.round {
            round.added += grew;
        }
    }

    /// Bytes of RAM the entries waiting to be written hold.
    pub fn waiting_bytes(&self) -> usize {
        self.waiting_bytes
    }

    /// Bytes of RAM the waiting entries may hold.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Bytes of the table on disk.
    pub fn file_bytes(&self) -> Result<u64> {
        Ok(self.file.len()?)
    }
}
