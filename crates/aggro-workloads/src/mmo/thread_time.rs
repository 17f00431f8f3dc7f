//! Where a zone's time goes when it runs on a thread of its own (a blocking store such as stackdb or
//! SQLite): on a core, waiting for a core, or neither — blocked, which for a zone whose store runs on its
//! own thread means waiting on the store (a sync, a lock another zone holds). Read from the kernel's
//! scheduler statistics of the thread (`/proc/thread-self/schedstat`: nanoseconds on a core, nanoseconds
//! runnable but waiting for one); absent where the kernel does not give them.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// A thread's scheduler clock, opened on that thread.
pub struct ThreadClock {
    file: File,
}

/// A thread's time so far, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ThreadTime {
    /// On a core.
    pub on_core: u64,
    /// Runnable, waiting for a core.
    pub waiting_for_core: u64,
}

impl ThreadTime {
    /// Adds `other`'s time to this.
    pub fn add(&mut self, other: ThreadTime) {
        self.on_core += other.on_core;
        self.waiting_for_core += other.waiting_for_core;
    }

    /// The time between `earlier` and this reading.
    pub fn since(self, earlier: ThreadTime) -> ThreadTime {
        ThreadTime {
            on_core: self.on_core.saturating_sub(earlier.on_core),
            waiting_for_core: self.waiting_for_core.saturating_sub(earlier.waiting_for_core),
        }
    }
}

impl ThreadClock {
    /// The calling thread's clock (the file names the thread that opens it, for good), if the kernel
    /// keeps one.
    pub fn of_this_thread() -> Option<ThreadClock> {
        let clock = ThreadClock { file: File::open("/proc/thread-self/schedstat").ok()? };
        clock.read().map(|_| clock)
    }

    /// The thread's time so far.
    pub fn read(&self) -> Option<ThreadTime> {
        let mut buf = [0u8; 96];
        let n = self.file.read_at(&mut buf, 0).ok()?;
        parse(std::str::from_utf8(&buf[..n]).ok()?)
    }
}

/// `schedstat`'s first two fields: ns on a core, ns waiting on a run queue.
fn parse(text: &str) -> Option<ThreadTime> {
    let mut fields = text.split_ascii_whitespace().map(str::parse::<u64>);
    Some(ThreadTime { on_core: fields.next()?.ok()?, waiting_for_core: fields.next()?.ok()? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_is_read_field_by_field() {
        assert_eq!(parse("4272323168 965181890 15835\n"), Some(ThreadTime { on_core: 4272323168, waiting_for_core: 965181890 }));
        assert_eq!(parse("12"), None);
        assert_eq!(parse("x 1 2"), None);
    }

    #[test]
    fn a_busy_thread_s_clock_moves_with_its_work() {
        let Some(clock) = ThreadClock::of_this_thread() else { return };
        let before = clock.read().unwrap();
        let spin = std::time::Instant::now();
        while spin.elapsed() < std::time::Duration::from_millis(20) {
            std::hint::black_box(0u64);
        }
        let spent = clock.read().unwrap().since(before);
        // 20 ms of spinning: on a core or waiting for one nearly all of it (the kernel brings the running
        // thread's figure up to date at its clock's ticks, a few ms apart).
        assert!(spent.on_core + spent.waiting_for_core >= 10_000_000, "{spent:?}");
        assert!(spent.on_core > 0, "{spent:?}");
    }
}
