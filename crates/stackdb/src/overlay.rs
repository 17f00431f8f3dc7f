//! Storage that reads a file and keeps every change in RAM: a database opened read-only runs its
//! recovery (cutting a torn tail, redoing a doublewrite, replaying the log) on this, so it sees the
//! store as a writer would while the files stay exactly as they were.

use crate::storage::StorageBackend;
use std::collections::BTreeMap;
use std::io;
use std::sync::Mutex;

/// Changes are kept in pages of this size.
const PAGE: u64 = 4096;

/// A file seen through the changes made to it in RAM.
#[derive(Debug)]
pub struct Overlay<B> {
    file: B,
    changes: Mutex<Changes>,
}

#[derive(Debug)]
struct Changes {
    /// The length as changed (the file's until a change).
    len: u64,
    /// The shortest length it was ever cut to: the file's bytes from here on are no longer seen (they
    /// read as zeros if it grows again).
    cut: u64,
    /// Pages written, whole (what lay under them read first).
    pages: BTreeMap<u64, Box<[u8]>>,
}

impl Overlay<Box<dyn StorageBackend>> {
    /// The file at `path`, opened to read only; a missing one reads as empty.
    pub fn over_file(path: &std::path::Path) -> io::Result<Self> {
        let file: Box<dyn StorageBackend> = match std::fs::File::open(path) {
            Ok(file) => Box::new(crate::storage::FileBackend::reading(file)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Box::new(crate::storage::MemBackend::new()),
            Err(e) => return Err(e),
        };
        Self::new(file)
    }
}

impl<B: StorageBackend> Overlay<B> {
    /// `file`, every change to it to be kept in RAM.
    pub fn new(file: B) -> io::Result<Self> {
        let len = file.len()?;
        Ok(Self { file, changes: Mutex::new(Changes { len, cut: len, pages: BTreeMap::new() }) })
    }

    fn changes(&self) -> std::sync::MutexGuard<'_, Changes> {
        self.changes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `buf.len()` bytes at `at` as the file holds them, but for what was cut off (zeros).
    fn read_file(&self, c: &Changes, at: u64, buf: &mut [u8]) -> io::Result<()> {
        let seen = c.cut.saturating_sub(at).min(buf.len() as u64) as usize;
        if seen > 0 {
            self.file.read(at, &mut buf[..seen])?;
        }
        buf[seen..].fill(0);
        Ok(())
    }
}

impl<B: StorageBackend> StorageBackend for Overlay<B> {
    fn len(&self) -> io::Result<u64> {
        Ok(self.changes().len)
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let c = self.changes();
        if offset.checked_add(buf.len() as u64).is_none_or(|end| end > c.len) {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end"));
        }
        let mut done = 0usize;
        while done < buf.len() {
            let at = offset + done as u64;
            let (n, within) = (at / PAGE, (at % PAGE) as usize);
            let take = (PAGE as usize - within).min(buf.len() - done);
            match c.pages.get(&n) {
                Some(page) => buf[done..done + take].copy_from_slice(&page[within..within + take]),
                None => self.read_file(&c, at, &mut buf[done..done + take])?,
            }
            done += take;
        }
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut c = self.changes();
        let mut done = 0usize;
        while done < data.len() {
            let at = offset + done as u64;
            let (n, within) = (at / PAGE, (at % PAGE) as usize);
            let take = (PAGE as usize - within).min(data.len() - done);
            if !c.pages.contains_key(&n) {
                let mut page = vec![0u8; PAGE as usize].into_boxed_slice();
                self.read_file(&c, n * PAGE, &mut page)?;
                c.pages.insert(n, page);
            }
            let page = c.pages.get_mut(&n).expect("inserted above");
            page[within..within + take].copy_from_slice(&data[done..done + take]);
            done += take;
        }
        c.len = c.len.max(offset + data.len() as u64);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut c = self.changes();
        if len < c.len {
            c.cut = c.cut.min(len);
            c.pages.retain(|&n, _| n * PAGE < len);
            if let Some(page) = c.pages.get_mut(&(len / PAGE)) {
                page[(len % PAGE) as usize..].fill(0);
            }
        }
        c.len = len;
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }

    /// Left as it is, as the trait allows: a range given back is never read again, and writing it as
    /// zeros in RAM cost a read-only open of a swept log hundreds of MB of pages (the space below its
    /// floor), which the allocator then gave back in the middle of the next run's game periods.
    fn discard(&self, _offset: u64, _len: u64) -> io::Result<()> {
        Ok(())
    }

    fn allocated(&self) -> io::Result<u64> {
        self.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemBackend;

    fn read(o: &Overlay<MemBackend>, at: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0; n];
        o.read(at, &mut b).unwrap();
        b
    }

    #[test]
    fn changes_are_seen_and_the_file_is_untouched() {
        let file = MemBackend::new();
        file.write(0, &vec![7u8; 10_000]).unwrap();
        let o = Overlay::new(file).unwrap();
        o.write(4090, b"abcdefghij").unwrap();
        assert_eq!(read(&o, 4088, 14), b"\x07\x07abcdefghij\x07\x07");
        o.set_len(5000).unwrap();
        assert!(o.read(4999, &mut [0; 2]).is_err(), "cut at 5000");
        o.set_len(9000).unwrap();
        assert_eq!(read(&o, 4999, 3), [7, 0, 0], "past the cut reads as zeros when it grows again");
        assert_eq!(read(&o, 8990, 10), [0; 10]);
        o.write(12_000, b"z").unwrap();
        assert_eq!(o.len().unwrap(), 12_001);
        let file = o.file;
        assert_eq!(file.len().unwrap(), 10_000);
        let mut b = vec![0; 10_000];
        file.read(0, &mut b).unwrap();
        assert!(b.iter().all(|&x| x == 7), "the file itself never changed");
    }
}
