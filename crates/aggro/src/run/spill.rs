//! Records kept on disk as a run makes them, so a run of hours holds its memory flat: each record is
//! written as one JSON line to an unnamed file beside the result (gone with the process, whatever ends
//! it), and read back once, when the result is written. If the disk refuses a write (full, an I/O
//! error), that record and every later one are kept in memory instead, as their lines — the result is
//! still whole — and [`Spill::into_vec`] says why.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Records of type `T`, in the order pushed: those on disk, then those held in memory.
#[derive(Debug)]
pub struct Spill<T> {
    /// The unnamed file; `None` when it could not be made.
    file: Option<File>,
    /// Bytes of whole lines in the file: a write the disk cut short is cut off.
    written: u64,
    /// How many records the file holds.
    on_disk: usize,
    /// The lines of the records the disk refused, and of every one after them.
    held: Vec<Vec<u8>>,
    /// Why the disk is no longer written, from the first failure.
    trouble: Option<String>,
    /// One record's line, reused.
    line: Vec<u8>,
    kind: std::marker::PhantomData<fn(T) -> T>,
}

impl<T: Serialize + DeserializeOwned> Spill<T> {
    /// Keeps records in an unnamed file in the directory of `result` (the result file to be written, so
    /// the spill lands on the disk the user chose for results, not on a `/tmp` that may be memory); for a
    /// result that is not a regular file (`/dev/null`), in the temporary directory.
    pub fn beside(result: &Path) -> Self {
        let temp = std::env::temp_dir();
        let dir = match result.parent().filter(|d| !d.as_os_str().is_empty()) {
            _ if crate::run::session::special(result) => temp.as_path(),
            Some(dir) => dir,
            None => Path::new("."),
        };
        let file = std::fs::create_dir_all(dir).and_then(|_| tempfile::tempfile_in(dir));
        Self::on(file.map_err(|e| format!("cannot make a spill file in {}: {e}", dir.display())))
    }

    fn on(file: Result<File, String>) -> Self {
        let (file, trouble) = match file {
            Ok(f) => (Some(f), None),
            Err(why) => (None, Some(why)),
        };
        Self { file, written: 0, on_disk: 0, held: Vec::new(), trouble, line: Vec::new(), kind: std::marker::PhantomData }
    }

    /// Keeps `record` after the others (what it serializes: a field skipped is not kept).
    pub fn push(&mut self, record: &T) {
        self.line.clear();
        serde_json::to_writer(&mut self.line, record).expect("a record encodes as JSON");
        self.line.push(b'\n');
        let Some(file) = self.file.as_mut().filter(|_| self.trouble.is_none()) else {
            self.held.push(self.line.clone());
            return;
        };
        match file.write_all(&self.line) {
            Ok(()) => {
                self.written += self.line.len() as u64;
                self.on_disk += 1;
            }
            Err(e) => {
                // Cut off what the disk took of the line, so the file holds whole records only.
                let _ = file.set_len(self.written).and_then(|_| file.seek(SeekFrom::Start(self.written)));
                self.trouble = Some(format!("cannot write the spill file ({e}): later intervals kept in memory"));
                self.held.push(self.line.clone());
            }
        }
    }

    /// How many records are kept.
    fn len(&self) -> usize {
        self.on_disk + self.held.len()
    }

    /// Every record, in order, and why some were kept in memory or lost. If one cannot be read back, the
    /// records before it are kept, and the trouble says how many were lost.
    pub fn into_vec(mut self) -> (Vec<T>, Option<String>) {
        let (total, mut records) = (self.len(), Vec::with_capacity(self.len()));
        let mut read = || -> std::io::Result<()> {
            if let Some(file) = self.file.as_mut().filter(|_| self.on_disk > 0) {
                file.seek(SeekFrom::Start(0))?;
                for line in BufReader::new(file.take(self.written)).split(b'\n') {
                    records.push(serde_json::from_slice(&line?)?);
                }
            }
            for line in &self.held {
                records.push(serde_json::from_slice(line)?);
            }
            Ok(())
        };
        if let Err(e) = read() {
            let lost = total - records.len();
            self.trouble = Some(format!("{lost} of {total} intervals could not be read back: {e}"));
        }
        (records, self.trouble)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_in_order_from_an_unnamed_file_beside_the_result() {
        let dir = tempfile::tempdir().unwrap();
        let mut spill = Spill::beside(&dir.path().join("sub/result.json"));
        for i in 0..1000u64 {
            spill.push(&(i, format!("record {i}")));
        }
        assert_eq!(spill.len(), 1000);
        assert_eq!(std::fs::read_dir(dir.path().join("sub")).unwrap().count(), 0, "the result's directory is made, the spill file has no name");
        let (records, trouble) = spill.into_vec();
        assert_eq!(trouble, None);
        assert_eq!(records, (0..1000u64).map(|i| (i, format!("record {i}"))).collect::<Vec<_>>());
    }

    #[test]
    fn a_full_disk_keeps_the_records_in_memory_and_says_so() {
        let full = std::fs::OpenOptions::new().read(true).write(true).open("/dev/full").map_err(|e| e.to_string());
        let mut spill = Spill::on(full);
        for i in 0..3u32 {
            spill.push(&i);
        }
        let (records, trouble) = spill.into_vec();
        assert_eq!(records, vec![0, 1, 2]);
        assert!(trouble.as_deref().unwrap().contains("No space left on device"), "{trouble:?}");
    }

    #[test]
    fn no_directory_to_spill_in_keeps_them_in_memory() {
        let mut spill = Spill::beside(Path::new("/proc/self/no/such/result.json"));
        spill.push(&"kept".to_string());
        let (records, trouble) = spill.into_vec();
        assert_eq!(records, vec!["kept".to_string()]);
        assert!(trouble.as_deref().unwrap().starts_with("cannot make a spill file in /proc/self/no/such"), "{trouble:?}");
    }
}
