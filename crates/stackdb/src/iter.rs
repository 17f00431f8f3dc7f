//! A full scan: every live key and value, one bucket at a time.

use crate::db::Database;
use crate::error::Result;
use crate::log::Record;

/// Iterator over every live key and value.
pub struct Iter<'db> {
    db: &'db Database,
    bucket: u64,
    pending: Vec<Record>,
}

impl std::fmt::Debug for Iter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iter").field("bucket", &self.bucket).finish_non_exhaustive()
    }
}

impl<'db> Iter<'db> {
    pub(crate) fn new(db: &'db Database) -> Self {
        Iter { db, bucket: 0, pending: Vec::new() }
    }
}

impl Iterator for Iter<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.pending.pop() {
                return Some(Ok((r.key, r.value)));
            }
            let bucket = self.bucket;
            if bucket >= self.db.buckets() {
                return None;
            }
            // Move on whatever happens, so a damaged bucket is reported once
            // and the rest are still visited.
            self.bucket += 1;
            let read = self.db.bucket_live(bucket);
            match read {
                Ok(live) => self.pending = live,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
