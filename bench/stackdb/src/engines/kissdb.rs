//! A KISSDB-style baseline, from KISSDB's published design as One Hour One
//! Life used it: fixed-size keys and values; the file is a chain of
//! fixed-size hash-table pages, a new page appended whenever a key's slot is
//! taken in every page so far; records appended after them; every page's
//! slots held in RAM. A lookup walks the pages in order — oldest first —
//! reading the key at each occupied slot; an overwrite is in place; nothing
//! is synced or checksummed.

use super::Engine;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Slots per hash-table page (the game opened its map with 80,000).
const SLOTS: usize = 80_000;
const KEY: usize = 16;
/// Values are stored in a fixed 64-byte field after a length byte.
const VALUE: usize = 65;
const HEADER: u64 = 16;

pub struct Kissdb {
    file: File,
    /// Every page's slots (record offsets, 0 = empty) and where the page is.
    pages: Vec<(u64, Vec<u64>)>,
    end: u64,
}

impl Kissdb {
    pub fn open(dir: &Path) -> Self {
        let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(dir.join("kiss.db")).expect("open");
        let mut db = Kissdb { end: file.metadata().expect("stat").len().max(HEADER), file, pages: Vec::new() };
        // Reopening reads the whole chain of pages into RAM, as KISSDB does.
        let mut at = if db.end > HEADER { HEADER } else { 0 };
        while at != 0 {
            let mut raw = vec![0u8; (SLOTS + 1) * 8];
            db.file.read_exact_at(&mut raw, at).expect("read page");
            let words: Vec<u64> = raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
            let next = words[SLOTS];
            db.pages.push((at, words[..SLOTS].to_vec()));
            at = next;
        }
        db
    }

    fn slot(key: &[u8]) -> usize {
        // KISSDB's djb2 hash of the key.
        let mut h: u64 = 5381;
        for &b in key {
            h = h.wrapping_mul(33).wrapping_add(u64::from(b));
        }
        (h % SLOTS as u64) as usize
    }

    fn append(&mut self, bytes: &[u8]) -> u64 {
        let at = self.end;
        self.file.write_all_at(bytes, at).expect("write");
        self.end += bytes.len() as u64;
        at
    }

    fn record(key: &[u8], value: &[u8]) -> Vec<u8> {
        let mut r = vec![0u8; KEY + VALUE];
        r[..KEY].copy_from_slice(key);
        r[KEY] = value.len() as u8;
        r[KEY + 1..KEY + 1 + value.len()].copy_from_slice(value);
        r
    }
}

impl Engine for Kissdb {
    fn put(&mut self, key: &[u8], value: &[u8]) {
        let slot = Self::slot(key);
        let mut found = [0u8; KEY];
        for i in 0..self.pages.len() {
            let (page_at, at) = (self.pages[i].0, self.pages[i].1[slot]);
            if at == 0 {
                let record = self.append(&Self::record(key, value));
                self.file.write_all_at(&record.to_le_bytes(), page_at + slot as u64 * 8).expect("write slot");
                self.pages[i].1[slot] = record;
                return;
            }
            self.file.read_exact_at(&mut found, at).expect("read key");
            if found == key {
                self.file.write_all_at(&Self::record(key, value)[KEY..], at + KEY as u64).expect("overwrite");
                return;
            }
        }
        // Every page's slot is taken: a new page at the end, linked from the last.
        let page_at = self.append(&vec![0u8; (SLOTS + 1) * 8]);
        if let Some(&(last, _)) = self.pages.last() {
            self.file.write_all_at(&page_at.to_le_bytes(), last + SLOTS as u64 * 8).expect("link page");
        }
        self.pages.push((page_at, vec![0; SLOTS]));
        let record = self.append(&Self::record(key, value));
        self.file.write_all_at(&record.to_le_bytes(), page_at + slot as u64 * 8).expect("write slot");
        self.pages.last_mut().expect("just pushed").1[slot] = record;
    }

    fn get(&mut self, key: &[u8]) -> Option<usize> {
        let slot = Self::slot(key);
        let mut record = [0u8; KEY + VALUE];
        for (_, slots) in &self.pages {
            let at = slots[slot];
            if at == 0 {
                return None;
            }
            self.file.read_exact_at(&mut record, at).expect("read record");
            if &record[..KEY] == key {
                return Some(record[KEY] as usize);
            }
        }
        None
    }

    fn commit(&mut self) {}
}
