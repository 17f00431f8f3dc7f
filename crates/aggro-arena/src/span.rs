//! Interval bookkeeping shared by the server's and the swarm's profiles: when
//! an interval began, the CPU it used, its histograms, its counters — and the
//! whole run, kept as raw histograms and sums, summarised only when asked.

use aggro_stats::{Histogram, new_histogram};

/// One closed stretch of a run: an interval, or the whole run.
#[derive(Clone, Debug)]
pub struct Span<C> {
    /// Seconds since the run's start.
    pub start_s: f64,
    pub end_s: f64,
    /// CPU time the process used in it, µs.
    pub cpu_us: u64,
    pub histograms: Vec<Histogram>,
    pub counters: C,
}

impl<C> Span<C> {
    /// Its length in seconds (never zero).
    pub fn secs(&self) -> f64 {
        (self.end_s - self.start_s).max(1e-9)
    }

    /// CPU used, % of one core.
    pub fn cpu_pct(&self) -> f64 {
        self.cpu_us as f64 / 1e4 / self.secs()
    }
}

/// The open interval's histograms and clocks, and the run so far.
#[derive(Debug)]
pub struct Spans<C> {
    run_start_us: u64,
    start_us: u64,
    cpu_start_us: u64,
    histograms: Vec<Histogram>,
    totals: Option<Span<C>>,
}

impl<C: Clone + std::ops::AddAssign> Spans<C> {
    /// Opens the first interval at `now_us` with `histograms` empty histograms.
    pub fn new(now_us: u64, histograms: usize) -> Self {
        Self {
            run_start_us: now_us,
            start_us: now_us,
            cpu_start_us: crate::clock::process_cpu_us(),
            histograms: (0..histograms).map(|_| new_histogram()).collect(),
            totals: None,
        }
    }

    /// Records `v` in histogram `i` of the open interval.
    pub fn record(&mut self, i: usize, v: u64) {
        let _ = self.histograms[i].record(v);
    }

    /// Closes the open interval at `now_us` with what it counted, adds it to the run, and opens the next.
    pub fn close(&mut self, now_us: u64, counters: C) -> Span<C> {
        let cpu = crate::clock::process_cpu_us();
        let span = Span {
            start_s: (self.start_us - self.run_start_us) as f64 / 1e6,
            end_s: (now_us - self.run_start_us) as f64 / 1e6,
            cpu_us: cpu - self.cpu_start_us,
            histograms: self.histograms.iter_mut().map(|h| std::mem::replace(h, new_histogram())).collect(),
            counters,
        };
        match &mut self.totals {
            None => self.totals = Some(span.clone()),
            Some(t) => {
                for (a, b) in t.histograms.iter_mut().zip(&span.histograms) {
                    a.add(b).expect("auto-resizing histograms add");
                }
                t.counters += span.counters.clone();
                t.cpu_us += span.cpu_us;
                t.end_s = span.end_s;
            }
        }
        self.start_us = now_us;
        self.cpu_start_us = cpu;
        span
    }

    /// The run so far: every closed interval merged.
    pub fn totals(&self) -> Option<&Span<C>> {
        self.totals.as_ref()
    }
}
