//! The head table: for each bucket, the offset of its newest record and a
//! Bloom word of its keys, in checksummed 4 KiB pages cached within the RAM
//! budget and written only at checkpoints, through a doublewrite file
//! (`docs/stackdb-format.md`, "The head table").

use crate::error::{Error, Result};
use crate::map::FileMap;
use crate::storage::StorageBackend;
use crate::hash::FastMap;

/// Bytes per page.
pub const PAGE: usize = 4096;
/// Bucket entries per page.
pub const ENTRIES_PER_PAGE: u64 = 255;
const ENTRY: usize = 16;
const SLOT: usize = 256;
const STATE_LEN: usize = 96;
const DW_MAGIC: &[u8; 8] = b"STACKDW1";
/// Bytes of the doublewrite file before its pages: magic, CRC, 4 zero bytes, page count, state.
const DW_BODY: u64 = 24 + STATE_LEN as u64;
/// The doublewrite file is written and read this many bytes (64 pages with their numbers) at a time.
const DW_CHUNK: usize = 64 * (8 + PAGE);

/// One bucket's entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// Offset of the bucket's newest record (0 = empty).
    pub head: u64,
    /// Two bits per key ever pushed on the stack since its last rebuild.
    pub bloom: u64,
}

impl Entry {
    /// Whether the stack may hold a key of hash `h`: it is not empty and
    /// its Bloom word has the key's two bits.
    pub fn may_hold(&self, h: u64) -> bool {
        let bits = crate::hash::bloom_bits(h);
        self.head != 0 && self.bloom & bits == bits
    }
}

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

    fn encode(&self) -> [u8; STATE_LEN] {
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
        let crc = crc32fast::hash(&b[4..]);
        b[..4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Option<State> {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if crc32fast::hash(&b[4..STATE_LEN]) != u32::from_le_bytes(b[..4].try_into().expect("4 bytes")) {
            return None;
        }
        let level = u32::from_le_bytes(b[32..36].try_into().expect("4 bytes"));
        let state = State {
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
        };
        let sane = state.checkpoint > 0
            && level < 48
            && state.split < (1u64 << level)
            && state.pages >= 1
            && state.floor <= state.log_end.max(crate::log::LOG_HEADER_LEN)
            && state.sweep_cursor <= state.buckets();
        sane.then_some(state)
    }
}

struct Cached {
    page: Box<[u8; PAGE]>,
    dirty: bool,
    referenced: bool,
}

/// The head table with its page cache.
pub struct Heads {
    file: Box<dyn StorageBackend>,
    /// The file mapped for reads of pages the cache does not hold.
    map: Option<FileMap>,
    /// One bit per page: its checksum was checked through the map since
    /// open (8 bytes per 64 pages, i.e. per 16,320 buckets).
    checked: Vec<u64>,
    doublewrite: Box<dyn StorageBackend>,
    /// The state as of the last commit applied.
    pub state: State,
    cache: FastMap<u64, Cached>,
    clock: Vec<u64>,
    hand: usize,
    capacity: usize,
    dirty: usize,
}

impl std::fmt::Debug for Heads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Heads").field("state", &self.state).field("cached", &self.cache.len()).finish_non_exhaustive()
    }
}

/// Whether a page read back is page `page_no`, intact.
fn page_holds(page: &[u8], page_no: u64) -> bool {
    let stored = u32::from_le_bytes(page[PAGE - 16..PAGE - 12].try_into().expect("4 bytes"));
    let number = u64::from_le_bytes(page[PAGE - 8..].try_into().expect("8 bytes"));
    number == page_no && stored == page_crc(page.try_into().expect("a page"), page_no)
}

fn page_crc(page: &[u8; PAGE], page_no: u64) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&page[..PAGE - 16]);
    h.update(&page_no.to_le_bytes());
    h.finalize()
}

/// Writes a page's trailer: its CRC and number.
fn seal(page: &mut [u8; PAGE], page_no: u64) {
    page[PAGE - 8..].copy_from_slice(&page_no.to_le_bytes());
    let crc = page_crc(page, page_no);
    page[PAGE - 16..PAGE - 12].copy_from_slice(&crc.to_le_bytes());
}

/// Reads `len` bytes of `file` from `from` a [`DW_CHUNK`] at a time and hands each to `f`.
fn for_each_chunk(file: &dyn StorageBackend, from: u64, len: u64, mut f: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
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

impl Heads {
    /// Opens the table, creating it with `2^initial_level` buckets if empty,
    /// and redoes from the doublewrite file the last checkpoint's in-place
    /// writes a crash may have lost or torn (see [`Heads::checkpoint`]).
    pub fn open(
        file: Box<dyn StorageBackend>,
        doublewrite: Box<dyn StorageBackend>,
        cache_pages: usize,
        initial_level: u32,
    ) -> Result<Heads> {
        let map = file.file().map(FileMap::new).transpose()?;
        let mut heads = Heads {
            file,
            map,
            checked: Vec::new(),
            doublewrite,
            state: State::default(),
            cache: FastMap::default(),
            clock: Vec::new(),
            hand: 0,
            capacity: cache_pages.max(4),
            dirty: 0,
        };
        if heads.file.len()? == 0 {
            let mut state = State {
                checkpoint: 1,
                level: initial_level,
                pages: 1,
                floor: crate::log::LOG_HEADER_LEN,
                ..State::default()
            };
            state.pages = state.pages_needed();
            // Every page of the table is written, with its trailer, from the
            // start: within `pages`, a blank page can only be damage.
            let mut file = vec![0u8; state.pages as usize * PAGE];
            for n in 1..state.pages {
                let page: &mut [u8; PAGE] = (&mut file[n as usize * PAGE..(n as usize + 1) * PAGE]).try_into().expect("a page");
                seal(page, n);
            }
            file[SLOT..SLOT + STATE_LEN].copy_from_slice(&state.encode());
            heads.file.write(0, &file)?;
            heads.file.sync_data()?;
            heads.state = state;
            return Ok(heads);
        }
        heads.state = heads.read_header()?;
        heads.redo_doublewrite()?;
        let len = heads.file.len()?;
        if heads.state.pages.checked_mul(PAGE as u64).is_none_or(|needed| len < needed) {
            return Err(Error::Corrupt { what: "head table (shorter than its last checkpoint)", offset: len });
        }
        Ok(heads)
    }

    fn read_header(&self) -> Result<State> {
        let mut page0 = vec![0u8; 2 * SLOT];
        self.file.read(0, &mut page0).map_err(|_| Error::Corrupt { what: "head table header", offset: 0 })?;
        let a = State::decode(&page0[..SLOT]);
        let b = State::decode(&page0[SLOT..]);
        match (a, b) {
            (Some(a), Some(b)) => Ok(if a.checkpoint > b.checkpoint { a } else { b }),
            (Some(s), None) | (None, Some(s)) => Ok(s),
            (None, None) => Err(Error::Corrupt { what: "head table header (both slots)", offset: 0 }),
        }
    }

    /// Makes the pages in place what the doublewrite file says, if it holds this checkpoint (whose pages
    /// and header were written in place without waiting: they are synced only when the next checkpoint
    /// begins) or the next one (interrupted before its header was written; adopted). Pages that differ
    /// are copied in place again (idempotent). The file is read a chunk at a time, twice: its checksum
    /// first, then the pages.
    fn redo_doublewrite(&mut self) -> Result<()> {
        let Some((next, count)) = self.complete_doublewrite()? else { return Ok(()) };
        let adopt = next.checkpoint == self.state.checkpoint + 1;
        if !adopt && next != self.state {
            return Ok(()); // an older checkpoint's: what it holds is in place and synced
        }
        let mut rewrote = false;
        let mut in_place = vec![0u8; PAGE];
        for_each_chunk(self.doublewrite.as_ref(), DW_BODY, count * (8 + PAGE) as u64, |chunk| {
            for entry in chunk.chunks_exact(8 + PAGE) {
                let page_no = u64::from_le_bytes(entry[..8].try_into().expect("8 bytes"));
                let page = &entry[8..];
                let offset = page_no.checked_mul(PAGE as u64).filter(|_| page_no > 0 && page_no < next.pages);
                let Some(offset) = offset else {
                    return Err(Error::Corrupt { what: "doublewrite page number", offset: page_no });
                };
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

    /// Writes `state` to its header slot (not synced).
    fn write_header(&self, state: &State) -> Result<()> {
        let slot = (state.checkpoint % 2) as usize * SLOT;
        self.file.write(slot as u64, &state.encode())?;
        Ok(())
    }

    fn page_of(bucket: u64) -> (u64, usize) {
        (1 + bucket / ENTRIES_PER_PAGE, (bucket % ENTRIES_PER_PAGE) as usize * ENTRY)
    }

    fn load(&mut self, page_no: u64) -> Result<&mut Cached> {
        if !self.cache.contains_key(&page_no) {
            // The buffer of the page it replaces, if the cache is full: freeing and allocating 4 KiB
            // buffers left the allocator holding more RAM than the cache.
            let mut page = self.evict_if_full().unwrap_or_else(|| Box::new([0u8; PAGE]));
            let offset = page_no * PAGE as u64;
            // Pages the last checkpoint covered must be on disk and intact;
            // pages past them are new since then and start empty.
            // Through the map when there is one (its checksum checked once
            // per open), else read and checked here.
            if let Some(mapped) = self.mapped(page_no)? {
                page.copy_from_slice(mapped);
            } else if page_no < self.state.pages {
                self.file.read(offset, &mut page[..]).map_err(|_| Error::Corrupt { what: "head table page", offset })?;
                if !page_holds(&page[..], page_no) {
                    return Err(Error::Corrupt { what: "head table page", offset });
                }
            } else {
                page.fill(0);
            }
            self.cache.insert(page_no, Cached { page, dirty: false, referenced: true });
            self.clock.push(page_no);
        }
        let cached = self.cache.get_mut(&page_no).expect("inserted above");
        cached.referenced = true;
        Ok(cached)
    }

    /// CLOCK: skip dirty pages (pinned until the next checkpoint) and
    /// recently referenced ones. Returns the evicted page's buffer.
    fn evict_if_full(&mut self) -> Option<Box<[u8; PAGE]>> {
        if self.cache.len() < self.capacity {
            return None;
        }
        for _ in 0..2 * self.clock.len() {
            self.hand %= self.clock.len();
            let page_no = self.clock[self.hand];
            let c = self.cache.get_mut(&page_no).expect("clock and cache agree");
            if !c.dirty && !c.referenced {
                let evicted = self.cache.remove(&page_no).expect("looked up above");
                self.clock.swap_remove(self.hand);
                return Some(evicted.page);
            }
            c.referenced = false;
            self.hand += 1;
        }
        // Every page is dirty: the cache grows until the writer checkpoints (which a commit does
        // first when its pages would not fit, see `Database::checkpoint_if_due`).
        None
    }

    /// Page `page_no` as the last checkpoint wrote it, through the map,
    /// its checksum checked the first time; `None` if the file is not
    /// mapped or the page is newer than the checkpoint. Only for pages the
    /// cache does not hold: those are the same on disk.
    fn mapped(&mut self, page_no: u64) -> Result<Option<&[u8]>> {
        let Some(map) = &self.map else { return Ok(None) };
        if page_no >= self.state.pages {
            return Ok(None);
        }
        let offset = page_no * PAGE as u64;
        let page = map.bytes(offset, PAGE)?;
        let (word, bit) = ((page_no / 64) as usize, page_no % 64);
        if self.checked.get(word).is_none_or(|w| (w >> bit) & 1 == 0) {
            if !page_holds(page, page_no) {
                return Err(Error::Corrupt { what: "head table page", offset });
            }
            if self.checked.len() <= word {
                self.checked.resize(word + 1, 0);
            }
            self.checked[word] |= 1 << bit;
        }
        Ok(Some(page))
    }

    /// The entry of `bucket`.
    pub fn entry(&mut self, bucket: u64) -> Result<Entry> {
        let (page_no, at) = Self::page_of(bucket);
        let read = |page: &[u8]| Entry {
            head: u64::from_le_bytes(page[at..at + 8].try_into().expect("8 bytes")),
            bloom: u64::from_le_bytes(page[at + 8..at + 16].try_into().expect("8 bytes")),
        };
        if let Some(cached) = self.cache.get_mut(&page_no) {
            cached.referenced = true;
            return Ok(read(&cached.page[..]));
        }
        match self.mapped(page_no)? {
            Some(page) => Ok(read(page)),
            None => Ok(read(&self.load(page_no)?.page[..])),
        }
    }

    /// The entries of `buckets`, all asked of the CPU's cache before the
    /// first is read, so their memory reads overlap.
    pub fn entries(&mut self, buckets: &[u64]) -> Result<Vec<Entry>> {
        buckets.iter().for_each(|&b| self.prefetch(b));
        buckets.iter().map(|&b| self.entry(b)).collect()
    }

    /// Starts loading the entry of `bucket` into the CPU's cache (a hint:
    /// reads nothing from disk, checks nothing).
    fn prefetch(&self, bucket: u64) {
        let (page_no, at) = Self::page_of(bucket);
        if let Some(cached) = self.cache.get(&page_no) {
            crate::map::prefetch(cached.page[at..].as_ptr());
        } else if let Some(map) = &self.map
            && page_no < self.state.pages
        {
            map.prefetch(page_no * PAGE as u64 + at as u64);
        }
    }

    /// Sets the entry of `bucket` (in the cache; on disk at the next checkpoint).
    pub fn set(&mut self, bucket: u64, entry: Entry) -> Result<()> {
        let (page_no, at) = Self::page_of(bucket);
        let c = self.load(page_no)?;
        c.page[at..at + 8].copy_from_slice(&entry.head.to_le_bytes());
        c.page[at + 8..at + 16].copy_from_slice(&entry.bloom.to_le_bytes());
        if !c.dirty {
            c.dirty = true;
            self.dirty += 1;
        }
        Ok(())
    }

    /// Pages that setting the entries of `buckets` would newly dirty.
    pub fn pages_to_dirty(&self, buckets: impl IntoIterator<Item = u64>) -> usize {
        let mut pages: Vec<u64> = buckets.into_iter().map(|b| Self::page_of(b).0).collect();
        pages.sort_unstable();
        pages.dedup();
        pages.iter().filter(|n| !self.cache.get(n).is_some_and(|c| c.dirty)).count()
    }

    /// Dirty pages waiting for a checkpoint.
    pub fn dirty_pages(&self) -> usize {
        self.dirty
    }

    /// Pages the cache may hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Pages in the cache now.
    pub fn cached_pages(&self) -> usize {
        self.cache.len()
    }

    /// Bytes of the table on disk.
    pub fn file_bytes(&self) -> Result<u64> {
        Ok(self.file.len()?)
    }

    /// Writes the doublewrite file for checkpoint `next` of the pages
    /// `dirty`, a few pages at a time (never a copy of them all), its
    /// checksum last, and syncs it: torn anywhere, it is ignored.
    fn write_doublewrite(&self, next: &State, dirty: &[u64]) -> Result<()> {
        let mut crc = crc32fast::Hasher::new();
        let mut buf = Vec::with_capacity(DW_CHUNK + 8 + PAGE);
        buf.extend_from_slice(&(dirty.len() as u64).to_le_bytes());
        buf.extend_from_slice(&next.encode());
        // Written over the last checkpoint's copy, not truncated first (that freed and allocated its blocks
        // every time): until the new checksum is written last, the old one does not match what is there.
        let mut at = 16u64;
        for (i, &n) in dirty.iter().enumerate() {
            buf.extend_from_slice(&n.to_le_bytes());
            buf.extend_from_slice(&self.cache[&n].page[..]);
            if buf.len() >= DW_CHUNK || i + 1 == dirty.len() {
                crc.update(&buf);
                self.doublewrite.write(at, &buf)?;
                at += buf.len() as u64;
                buf.clear();
            }
        }
        if !buf.is_empty() {
            crc.update(&buf);
            self.doublewrite.write(at, &buf)?;
        }
        let mut head = [0u8; 16];
        head[..8].copy_from_slice(DW_MAGIC);
        head[8..12].copy_from_slice(&crc.finalize().to_le_bytes());
        self.doublewrite.write(0, &head)?;
        self.doublewrite.sync_data()?;
        Ok(())
    }

    /// Waits for the last checkpoint's pages and header to reach the disk and empties the doublewrite
    /// file, so the next open has nothing to compare or redo (on close).
    pub fn settle(&mut self) -> Result<()> {
        self.file.sync_data()?;
        self.doublewrite.set_len(0)?;
        self.doublewrite.sync_data()?;
        Ok(())
    }

    /// Writes the state as of `log_end` (which the caller has synced): the last checkpoint's in-place
    /// writes synced, the doublewrite file, then pages in place and the other header slot, not waited for.
    pub fn checkpoint(&mut self, log_end: u64) -> Result<()> {
        let mut next = self.state;
        next.checkpoint += 1;
        next.log_end = log_end;
        // Pages the table grew into are written now even if untouched, so the
        // checkpoint covers every page up to its bucket count.
        for n in self.state.pages..next.pages_needed() {
            let c = self.load(n)?;
            if !c.dirty {
                c.dirty = true;
                self.dirty += 1;
            }
        }
        next.pages = next.pages.max(next.pages_needed());
        let mut dirty: Vec<u64> = self.cache.iter().filter(|(_, c)| c.dirty).map(|(n, _)| *n).collect();
        dirty.sort_unstable();
        for &n in &dirty {
            seal(&mut self.cache.get_mut(&n).expect("listed above").page, n);
        }
        // The last checkpoint's pages and header, written without waiting, must be on disk before the
        // doublewrite file stops holding them.
        self.file.sync_data()?;
        self.write_doublewrite(&next, &dirty)?;
        // From here a crash redoes this checkpoint from the doublewrite file: its pages and header go in
        // place without waiting for the disk, which starts on them now and is waited for at the next one.
        for &n in &dirty {
            self.file.write(n * PAGE as u64, &self.cache[&n].page[..])?;
        }
        self.write_header(&next)?;
        self.file.start_writeback()?;
        self.state = next;
        for n in dirty {
            self.cache.get_mut(&n).expect("listed above").dirty = false;
        }
        self.dirty = 0;
        Ok(())
    }
}
