//! Read-only memory maps of the engine's files, so a lookup reads its head
//! entry and its records without a system call or a copy. A file is mapped
//! in fixed windows of 1 GiB that overlap by more than the largest record, so
//! every record (and every head-table page) lies inside the window its
//! offset falls in; a window is mapped the first time it is needed and stays
//! mapped until the file closes. Callers read only bytes inside the file, so
//! no access can fault: log records before the log's end (immutable; freed
//! ranges read as zeros), head-table pages the last checkpoint wrote.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Bytes per window.
const WINDOW: u64 = 1 << 30;
/// Extra bytes each window maps past its end: more than the largest record
/// (24-byte header, 64 KiB key, 16 MiB value).
const OVERLAP: u64 = 32 << 20;
/// Windows a log can have: 4 TiB of log.
const WINDOWS: usize = 4096;

/// A file's windows.
pub(crate) struct FileMap {
    file: File,
    windows: Box<[AtomicPtr<u8>]>,
}

impl FileMap {
    /// Maps nothing yet; keeps its own handle on the file.
    pub(crate) fn new(file: &File) -> io::Result<FileMap> {
        Ok(FileMap { file: file.try_clone()?, windows: (0..WINDOWS).map(|_| AtomicPtr::new(std::ptr::null_mut())).collect() })
    }

    /// The `len` bytes at `offset`. The caller has checked that they lie
    /// before the log's end, and `len` is at most a record's length.
    pub(crate) fn bytes(&self, offset: u64, len: usize) -> io::Result<&[u8]> {
        debug_assert!(len as u64 <= OVERLAP);
        let index = (offset / WINDOW) as usize;
        let slot = self.windows.get(index).ok_or_else(|| io::Error::other("offset beyond the mappable range"))?;
        let mut base = slot.load(Ordering::Acquire);
        if base.is_null() {
            base = self.map(index)?;
        }
        // SAFETY: the window maps WINDOW + OVERLAP bytes from index × WINDOW,
        // and offset − index × WINDOW < WINDOW, len ≤ OVERLAP; the bytes are
        // within the file (the caller's check) and are never written while
        // mapped; the mapping lives as long as `self`.
        Ok(unsafe { std::slice::from_raw_parts(base.add((offset % WINDOW) as usize), len) })
    }

    /// Asks the CPU to start loading the cache line at `offset` if its
    /// window is mapped; never faults and never maps anything.
    pub(crate) fn prefetch(&self, offset: u64) {
        let base = self.windows.get((offset / WINDOW) as usize).map_or(std::ptr::null_mut(), |w| w.load(Ordering::Relaxed));
        if !base.is_null() {
            prefetch(base.wrapping_add((offset % WINDOW) as usize));
        }
    }

    /// Maps window `index`, or takes the mapping another thread made first.
    fn map(&self, index: usize) -> io::Result<*mut u8> {
        let len = (WINDOW + OVERLAP) as usize;
        // SAFETY: a fresh read-only shared mapping of our own descriptor.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, self.file.as_raw_fd(), (index as u64 * WINDOW) as libc::off_t)
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // Lookups jump around the file: read ahead nothing.
        // SAFETY: advice on the mapping just made.
        unsafe { libc::madvise(p, len, libc::MADV_RANDOM) };
        let p = p.cast::<u8>();
        match self.windows[index].compare_exchange(std::ptr::null_mut(), p, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Ok(p),
            Err(theirs) => {
                // SAFETY: our mapping, never shared.
                unsafe { libc::munmap(p.cast(), len) };
                Ok(theirs)
            }
        }
    }
}

/// Asks the CPU to start loading the cache line at `p` (a hint: it cannot
/// fault, and it is dropped on an unmapped address), so that walks of many
/// stacks overlap their memory reads instead of waiting for each in turn.
#[inline]
pub(crate) fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never dereferences `p`.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl Drop for FileMap {
    fn drop(&mut self) {
        for w in self.windows.iter() {
            let p = w.load(Ordering::Acquire);
            if !p.is_null() {
                // SAFETY: a mapping made by `map`, unmapped once; no slice of
                // it outlives `self`.
                unsafe { libc::munmap(p.cast(), (WINDOW + OVERLAP) as usize) };
            }
        }
    }
}
