//! Locks taken the same way everywhere: the bottom of the crate, imported by every layer.

use std::sync::{Mutex, MutexGuard};

/// Takes a lock; one a panicking thread held is taken all the same (the
/// state behind it is only ever changed after the fallible work is done).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
