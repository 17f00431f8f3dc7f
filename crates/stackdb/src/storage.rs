//! The storage seam: nine methods, so the engine runs the same on a file,
//! in memory, or on a backend that fails and tears writes on purpose.

use std::io;
use std::sync::Mutex;

/// Random-access storage for one of the engine's files.
#[allow(clippy::len_without_is_empty)] // a file's emptiness is not a question the engine asks
pub trait StorageBackend: Send + Sync {
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Reads exactly `buf.len()` bytes at `offset`.
    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Writes all of `data` at `offset`, growing the storage if needed.
    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Truncates or extends to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Makes everything written so far durable.
    fn sync_data(&self) -> io::Result<()>;
    /// Starts writing what was written so far to the device without waiting (a later `sync_data` then
    /// has less to wait for); promises nothing. Storage without such a hint does nothing.
    fn start_writeback(&self) -> io::Result<()> {
        Ok(())
    }
    /// Gives back the space of a byte range the engine will never read
    /// again; the length is unchanged and the range reads as zeros (a hole).
    /// Storage that cannot free a range may leave it as it is.
    fn discard(&self, offset: u64, len: u64) -> io::Result<()>;
    /// Bytes of storage actually in use (holes excluded).
    fn allocated(&self) -> io::Result<u64>;
    /// The file behind this storage, if it is one (the log maps it for reads).
    fn file(&self) -> Option<&std::fs::File> {
        None
    }
}

macro_rules! forward {
    ($($wrapper:ty),*) => {$(
        impl<T: StorageBackend + ?Sized> StorageBackend for $wrapper {
            fn len(&self) -> io::Result<u64> { (**self).len() }
            fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> { (**self).read(offset, buf) }
            fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> { (**self).write(offset, data) }
            fn set_len(&self, len: u64) -> io::Result<()> { (**self).set_len(len) }
            fn sync_data(&self) -> io::Result<()> { (**self).sync_data() }
            fn start_writeback(&self) -> io::Result<()> { (**self).start_writeback() }
            fn discard(&self, offset: u64, len: u64) -> io::Result<()> { (**self).discard(offset, len) }
            fn allocated(&self) -> io::Result<u64> { (**self).allocated() }
            fn file(&self) -> Option<&std::fs::File> { (**self).file() }
        }
    )*};
}

// A boxed backend (the database's files) and a shared one (a test keeping a
// handle to crash it later) are backends too.
forward!(Box<T>, std::sync::Arc<T>);

/// A file.
#[derive(Debug)]
pub struct FileBackend {
    file: std::fs::File,
    /// The sync [`start_writeback`](StorageBackend::start_writeback) started, on a thread of its own.
    writeback: Mutex<Option<std::thread::JoinHandle<io::Result<()>>>>,
}

impl FileBackend {
    /// Opens (creating if needed) the file at `path` for reading and writing.
    pub fn open(path: &std::path::Path) -> io::Result<Self> {
        let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        Ok(Self { file, writeback: Mutex::new(None) })
    }

    /// A file already open (to read only, say: then every write fails).
    pub fn reading(file: std::fs::File) -> Self {
        Self { file, writeback: Mutex::new(None) }
    }

    /// Waits for the sync `start_writeback` started, if any, and returns its outcome.
    fn finish_writeback(&self) -> io::Result<()> {
        let started = self.writeback.lock().unwrap_or_else(|e| e.into_inner()).take();
        match started {
            Some(sync) => sync.join().unwrap_or_else(|_| Err(io::Error::other("the writeback thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for FileBackend {
    fn drop(&mut self) {
        // Nothing waits for it any more; what it did not make durable, the doublewrite file still holds.
        let _ = self.finish_writeback();
    }
}

impl StorageBackend for FileBackend {
    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, offset)
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(&self.file, data, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.finish_writeback()?;
        self.file.sync_data()
    }

    /// A sync on a thread of its own (`sync_file_range` waits when the device's queue fills, as a
    /// checkpoint's thousands of scattered pages do); `sync_data` waits for it and reports its error.
    fn start_writeback(&self) -> io::Result<()> {
        self.finish_writeback()?;
        let file = self.file.try_clone()?;
        let sync = std::thread::Builder::new().name("stackdb-writeback".into()).spawn(move || file.sync_data())?;
        *self.writeback.lock().unwrap_or_else(|e| e.into_inner()) = Some(sync);
        Ok(())
    }

    fn discard(&self, offset: u64, len: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "range beyond the file size limit"));
        };
        // SAFETY: fallocate on a descriptor we own; no memory is passed.
        let done = unsafe { libc::fallocate(self.file.as_raw_fd(), libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, offset, len) };
        match done {
            0 => Ok(()),
            _ => match io::Error::last_os_error() {
                // A file system without holes keeps the bytes: correct, only larger.
                e if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(()),
                e => Err(e),
            },
        }
    }

    fn allocated(&self) -> io::Result<u64> {
        Ok(std::os::unix::fs::MetadataExt::blocks(&self.file.metadata()?) * 512)
    }

    fn file(&self) -> Option<&std::fs::File> {
        Some(&self.file)
    }
}

/// In-memory storage that remembers what was synced, so a test can "crash"
/// it: [`MemBackend::crash`] keeps the synced bytes and, of the writes made
/// since, exactly the first `survive` bytes in write order (a torn write).
/// Writes can also be made to fail after a number of bytes.
#[derive(Debug, Default)]
pub struct MemBackend {
    state: Mutex<MemState>,
}

#[derive(Debug, Default, Clone)]
struct MemState {
    /// What a reader sees now.
    live: Vec<u8>,
    /// What survives a crash.
    durable: Vec<u8>,
    /// Writes since the last sync, in order.
    pending: Vec<(u64, Vec<u8>)>,
    /// Remaining bytes before writes fail (None = never).
    fail_after: Option<u64>,
    /// Ranges given back with `discard` (holes), disjoint and sorted.
    holes: Vec<std::ops::Range<u64>>,
    /// Operations that change the storage (write, set_len, sync_data) so far.
    ops: u64,
    /// The operation that fails, and with which OS error ([`MemBackend::fail_op`]).
    failing_op: Option<(u64, i32)>,
}

impl MemBackend {
    /// Empty storage.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, MemState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes written since the last sync (what a crash could tear).
    pub fn unsynced_bytes(&self) -> u64 {
        self.state().pending.iter().map(|(_, d)| d.len() as u64).sum()
    }

    /// The storage as a crash would leave it: synced bytes plus the first
    /// `survive` bytes of the writes made since the last sync.
    pub fn crash(&self, survive: u64) -> MemBackend {
        let mut left = survive;
        self.crash_with(|len| {
            let n = len.min(left);
            left -= n;
            n
        })
    }

    /// The storage as a crash would leave it when the device reorders writes: synced bytes plus, of each
    /// write made since the last sync (in order, `survive` told its length), the first `survive(len)` bytes
    /// — all, none or a torn part of each, whatever came before or after it.
    pub fn crash_with(&self, mut survive: impl FnMut(u64) -> u64) -> MemBackend {
        let s = self.state();
        let mut image = s.durable.clone();
        for (offset, data) in &s.pending {
            let n = survive(data.len() as u64).min(data.len() as u64) as usize;
            if n > 0 {
                apply(&mut image, *offset, &data[..n]);
            }
        }
        let holes = s.holes.clone();
        MemBackend { state: Mutex::new(MemState { live: image.clone(), durable: image, holes, ..MemState::default() }) }
    }

    /// Makes every write fail once `bytes` more bytes have been written (the
    /// write that crosses the limit is applied up to it, then fails).
    pub fn fail_after(&self, bytes: u64) {
        self.state().fail_after = Some(bytes);
    }

    /// Makes the operation that changes the storage numbered `op` (counted from the first: writes,
    /// `set_len`s and syncs alike; see [`MemBackend::ops`]) fail with the OS error `errno` (ENOSPC,
    /// EIO…). A failing write applies half its bytes first; a failing sync makes nothing durable and
    /// forgets the writes it was to make durable, as Linux may drop the pages of a failed `fsync` and
    /// report the next one clean.
    pub fn fail_op(&self, op: u64, errno: i32) {
        self.state().failing_op = Some((op, errno));
    }

    /// Operations that changed the storage so far (writes, `set_len`s, syncs).
    pub fn ops(&self) -> u64 {
        self.state().ops
    }

    /// Flips the bits of `mask` in the byte at `offset` (live and durable).
    pub fn corrupt(&self, offset: u64, mask: u8) {
        let mut guard = self.state();
        let s = &mut *guard;
        for image in [&mut s.live, &mut s.durable] {
            if let Some(b) = image.get_mut(offset as usize) {
                *b ^= mask;
            }
        }
    }
}

fn apply(image: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let end = offset as usize + data.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[offset as usize..end].copy_from_slice(data);
}

impl MemState {
    /// Counts an operation that changes the storage; the error it is to fail with, if it is the one.
    fn next_op(&mut self) -> Option<io::Error> {
        let op = self.ops;
        self.ops += 1;
        match self.failing_op {
            Some((failing, errno)) if failing == op => Some(io::Error::from_raw_os_error(errno)),
            _ => None,
        }
    }
}

impl StorageBackend for MemBackend {
    fn len(&self) -> io::Result<u64> {
        Ok(self.state().live.len() as u64)
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let s = self.state();
        let start = offset as usize;
        let end = start.checked_add(buf.len()).filter(|e| *e <= s.live.len());
        match end {
            Some(end) => {
                buf.copy_from_slice(&s.live[start..end]);
                Ok(())
            }
            None => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end")),
        }
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut s = self.state();
        if let Some(e) = s.next_op() {
            let half = &data[..data.len() / 2];
            apply(&mut s.live, offset, half);
            s.pending.push((offset, half.to_vec()));
            return Err(e);
        }
        let (data, fail) = match s.fail_after {
            Some(left) if (data.len() as u64) > left => (&data[..left as usize], true),
            _ => (data, false),
        };
        if let Some(left) = s.fail_after.as_mut() {
            *left -= data.len() as u64;
        }
        apply(&mut s.live, offset, data);
        s.pending.push((offset, data.to_vec()));
        if fail {
            return Err(io::Error::other("injected write failure"));
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut s = self.state();
        if let Some(e) = s.next_op() {
            return Err(e);
        }
        s.live.resize(len as usize, 0);
        // A truncation is metadata: treat it as durable at once, like ext4's
        // ordered mode does for a shrinking file followed by a sync.
        let durable_len = s.durable.len().min(len as usize);
        s.durable.truncate(durable_len);
        s.pending.retain(|(o, _)| *o < len);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut s = self.state();
        if let Some(e) = s.next_op() {
            s.pending.clear();
            return Err(e);
        }
        s.durable = s.live.clone();
        s.pending.clear();
        Ok(())
    }

    /// Zeroes the range at once, in what a reader sees and in what survives
    /// a crash: the harshest reading of a hole punched before a crash.
    fn discard(&self, offset: u64, len: u64) -> io::Result<()> {
        let mut guard = self.state();
        let s = &mut *guard;
        for image in [&mut s.live, &mut s.durable] {
            let start = (offset as usize).min(image.len());
            let end = (offset.saturating_add(len) as usize).min(image.len());
            image[start..end].fill(0);
        }
        s.holes.push(offset..offset.saturating_add(len));
        s.holes.sort_by_key(|r| r.start);
        let mut merged: Vec<std::ops::Range<u64>> = Vec::new();
        for r in s.holes.drain(..) {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        s.holes = merged;
        Ok(())
    }

    fn allocated(&self) -> io::Result<u64> {
        let s = self.state();
        let len = s.live.len() as u64;
        let in_holes: u64 = s.holes.iter().map(|r| r.end.min(len).saturating_sub(r.start.min(len))).sum();
        Ok(len - in_holes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_keeps_synced_bytes_and_a_prefix_of_the_rest() {
        let m = MemBackend::new();
        m.write(0, b"hello").unwrap();
        m.sync_data().unwrap();
        m.write(5, b" world").unwrap();
        assert_eq!(m.unsynced_bytes(), 6);
        let c = m.crash(3);
        let mut buf = vec![0; 8];
        c.read(0, &mut buf).unwrap();
        assert_eq!(&buf, b"hello wo");
        assert_eq!(c.len().unwrap(), 8);
        assert_eq!(m.crash(0).len().unwrap(), 5);
    }

    #[test]
    fn a_reordering_crash_keeps_any_part_of_each_write() {
        let m = MemBackend::new();
        m.write(0, b"aaaa").unwrap();
        m.sync_data().unwrap();
        m.write(0, b"bb").unwrap();
        m.write(2, b"cc").unwrap();
        let mut kept = [0u64, 1].into_iter();
        let c = m.crash_with(|_| kept.next().unwrap());
        let mut buf = [0; 4];
        c.read(0, &mut buf).unwrap();
        assert_eq!(&buf, b"aaca", "the first write lost, the second torn after one byte");
    }

    #[test]
    fn a_file_synced_in_the_background_is_synced_again_on_request() {
        let dir = std::env::temp_dir().join(format!("stackdb-writeback-{}", std::process::id()));
        let f = FileBackend::open(&dir).unwrap();
        f.write(0, b"one").unwrap();
        f.start_writeback().unwrap();
        f.write(3, b"two").unwrap();
        f.start_writeback().unwrap(); // waits for the first
        f.sync_data().unwrap();
        assert!(f.writeback.lock().unwrap().is_none(), "the sync thread was waited for");
        let mut buf = [0; 6];
        f.read(0, &mut buf).unwrap();
        assert_eq!(&buf, b"onetwo");
        drop(f);
        std::fs::remove_file(&dir).unwrap();
    }

    #[test]
    fn writes_fail_when_told() {
        let m = MemBackend::new();
        m.fail_after(4);
        assert!(m.write(0, b"abcdef").is_err());
        let mut buf = [0; 4];
        m.read(0, &mut buf).unwrap();
        assert_eq!(&buf, b"abcd");
        assert!(m.read(2, &mut [0; 9]).is_err());
    }
}
