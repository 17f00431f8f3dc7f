//! The checkpoint thread: writes the slices a round is due to have written while the committing
//! threads go on, so no commit waits for the head table's I/O (`docs/stackdb-format.md`,
//! "Checkpoints"). A commit's step only paces the round and wakes the thread. The thread also keeps
//! zeros written ahead of the log's end (`log/zeros.rs`) and gives back the log below the floor.

use crate::checkpoint::{CheckpointLog, write_round, write_slices};
use crate::error::Result;
use crate::heads::Heads;
use crate::log::DISCARD_STEP;
use crate::stack::LogFile;
use crate::sync::lock;
use crate::worker::Worker;
use std::sync::{Arc, Mutex};

impl CheckpointLog for LogFile {
    fn end(&self) -> u64 {
        LogFile::end(self)
    }

    fn sync_to(&self, end: u64) -> Result<()> {
        LogFile::sync_to(self, end)
    }

    fn raise_floor(&self, floor: u64) {
        LogFile::raise_floor(self, floor);
    }

    fn give_back(&self, hole: std::ops::Range<u64>) {
        LogFile::give_back(self, hole);
    }
}

/// What the thread and the committing threads share.
struct Shared {
    log: Arc<LogFile>,
    heads: Arc<Mutex<Heads>>,
    /// Held while slices are written: one writer of the table at a time.
    busy: Mutex<()>,
}

impl Shared {
    /// Writes the slices of the round under way that are due, after the slice being written, if any:
    /// only whole slices (or the rest, which ends the round) if `whole_slices`, else to its due page.
    fn write_slices(&self, whole_slices: bool) -> Result<()> {
        let _busy = lock(&self.busy);
        let slice = lock(&self.heads).slice_pages;
        write_slices(&self.heads, self.log.as_ref(), slice, if whole_slices { slice } else { 1 })?;
        Ok(())
    }

    /// Writes every slice due, the zeros ahead of the log's end if short, and gives back the log below
    /// the floor of the rounds that ended, a step at a time, the slices that fall due meanwhile first;
    /// `pace`: resting [`REST`] times as long as each step took before the next.
    fn write_due(&self, pace: bool) -> Result<()> {
        loop {
            self.write_slices(true)?;
            let started = std::time::Instant::now();
            let zeroed = self.log.zeros_step()?;
            if !self.log.discard_step(DISCARD_STEP)? && !zeroed {
                return Ok(());
            }
            if pace {
                std::thread::sleep(started.elapsed() * REST);
            }
        }
    }
}

/// How many times as long as a step of giving the log back took the checkpoint thread rests before
/// the next. The commits' syncs wait for the file system's record of the holes punched meanwhile:
/// 570 MB at once kept a commit waiting 120 ms on ext4 here; 16 MiB steps back to back made a
/// 110–123 ms period, and resting as long as each took left the one-zone Checkpoint p99 at ~5.1 ms
/// and its longest at ~8.6 ms against 4.3 and 5–6 ms with no hole punched; 4 MiB steps resting three
/// times as long, 4.6–5.0 and 5.6–6.4 ms (1 MiB resting four times as long: no better).
const REST: u32 = 3;

/// The checkpoint thread, woken when a slice is due or the zeros ahead run short.
pub(crate) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Worker,
}

impl Checkpointer {
    /// Starts the thread.
    pub(crate) fn start(log: Arc<LogFile>, heads: Arc<Mutex<Heads>>) -> std::io::Result<Checkpointer> {
        let shared = Arc::new(Shared { log, heads, busy: Mutex::new(()) });
        let on_thread = Arc::clone(&shared);
        let thread = Worker::start("stackdb-checkpoint", move || on_thread.write_due(true))?;
        Ok(Checkpointer { shared, thread })
    }

    /// Wakes the thread to write the slices due (a commit's step found one), after reporting the
    /// error it met since the last call, if any.
    pub(crate) fn wake(&self) -> Result<()> {
        self.thread.wake()
    }

    /// Writes the rest of the round under way now, after the slice being written, if any (writer
    /// held: a commit found it overdue); if it ends, the thread gives back the log below its floor.
    pub(crate) fn rest_of_round(&self) -> Result<()> {
        self.shared.write_slices(false)?;
        self.wake()
    }

    /// Writes a whole round now, after the slice being written, if any (no commit under way: the
    /// writer is held, or the database is opening); the thread gives back the log below its floor.
    pub(crate) fn whole_round(&self) -> Result<()> {
        {
            let _busy = lock(&self.shared.busy);
            write_round(&self.shared.heads, self.shared.log.as_ref())?;
        }
        self.wake()
    }

    /// Does now, on the caller's thread, what the checkpoint thread has yet to do: the slices due
    /// and giving back the log below the floor.
    pub(crate) fn catch_up(&self) -> Result<()> {
        self.shared.write_due(false)
    }

    /// Waits for the slice being written, if any, then runs `f` with the table's writes held off.
    pub(crate) fn quiet<T>(&self, f: impl FnOnce() -> T) -> T {
        let _busy = lock(&self.shared.busy);
        f()
    }
}
