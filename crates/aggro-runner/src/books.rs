//! The schedule's books at one instant: what was due, taken, started and finished, summed over the
//! loaders' stripes. The monitor reads them without stopping a loader: each stripe's taken count and
//! each loader's counts sit on their own lines, and a [`DueCounter`] counts each stripe's due slots.

use crate::shared::LoaderSlot;
use aggro_core::DueCounter;
use std::sync::atomic::Ordering::Relaxed;

/// The books of a run at one reading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Books {
    /// Requests intended by now (at least those taken).
    pub due: u64,
    pub issued: u64,
    pub started: u64,
    pub completed: u64,
    /// Due slots no loader has taken.
    pub backlog: u64,
    /// The part of `backlog` whose loaders sat idle (nothing in flight): the generator's delay, not
    /// the backend's.
    pub idle_backlog: u64,
}

impl Books {
    /// Reads the loaders' counts against `due`, which counts each one's stripe (loader `k`'s is its
    /// share `k`) up to now; in a closed loop due is what was taken.
    pub fn read(loaders: &[LoaderSlot], due: &DueCounter) -> Books {
        let mut books = Books::default();
        for (k, slot) in loaders.iter().enumerate() {
            // Completions before starts before slots taken: a request that ends between two reads
            // cannot make in-flight or backlog figures negative.
            let completed = slot.completed.load(Relaxed);
            let started = slot.started.load(Relaxed);
            let issued = slot.issued.load(Relaxed);
            let intended = match due.due(k) {
                Some(due) if !slot.retired.load(Relaxed) => due,
                _ => issued,
            };
            let due = intended.max(issued);
            let backlog = due - issued;
            books.due += due;
            books.issued += issued;
            books.started += started;
            books.completed += completed;
            books.backlog += backlog;
            if started <= completed {
                books.idle_backlog += backlog;
            }
        }
        books
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aggro_core::{Pacing, RatePlan, Share};

    /// 1,000/s for 10 s, counted to `now_ms`, for `shares`.
    fn counted(shares: Vec<Share>, now_ms: u64) -> DueCounter {
        let mut due = DueCounter::new(&RatePlan::fixed(1_000.0, 10_000_000_000), Pacing::Even, None, 1, shares);
        due.advance(now_ms * 1_000_000);
        due
    }

    fn slot(stripe: Share, issued: u64, started: u64, completed: u64) -> LoaderSlot {
        let schedule = aggro_core::Schedule::new(&RatePlan::fixed(1_000.0, 10_000_000_000), Pacing::Even, None, 1).shared(stripe);
        let s = LoaderSlot::new(schedule, stripe);
        s.issued.store(issued, Relaxed);
        s.started.store(started, Relaxed);
        s.completed.store(completed, Relaxed);
        s
    }

    #[test]
    fn stripes_split_the_due_count_and_idle_loaders_show_apart() {
        let whole = Share::WHOLE;
        // 10 slots due (0…9): stripe 0 owns 0,2,4,6,8 and stripe 1 owns 1,3,5,7,9.
        let loaders = [slot(whole.stripe(0, 2), 5, 5, 4), slot(whole.stripe(1, 2), 2, 2, 2)];
        let due = counted(vec![whole.stripe(0, 2), whole.stripe(1, 2)], 9);
        let b = Books::read(&loaders, &due);
        assert_eq!((b.due, b.issued, b.backlog), (10, 7, 3));
        // Loader 0 is busy (its slots are on time); loader 1 sits idle with 3 of its slots due.
        assert_eq!(b.idle_backlog, 3);
        // A retired loader intends nothing more.
        loaders[1].retired.store(true, Relaxed);
        assert_eq!(Books::read(&loaders, &due).backlog, 0);
        // A closed loop is due what it took.
        let closed = DueCounter::new(&RatePlan::Max { duration_ns: None }, Pacing::Even, Some(10), 1, vec![Share::WHOLE; 2]);
        assert_eq!(Books::read(&loaders, &closed).due, 7);
    }

    #[test]
    fn a_worker_share_of_stripes_counts_only_its_slots() {
        // Worker 1 of 4, two loaders: 501 slots of the whole run due; the worker's are 1, 5, … 497.
        let worker = Share::new(1, 4).unwrap();
        let loaders = [slot(worker.stripe(0, 2), 0, 0, 0), slot(worker.stripe(1, 2), 0, 0, 0)];
        assert_eq!(Books::read(&loaders, &counted(vec![worker.stripe(0, 2), worker.stripe(1, 2)], 500)).due, 125);
    }
}
