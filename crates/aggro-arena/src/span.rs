//! Interval bookkeeping shared by the game server's, the relay's and the
//! swarm's profiles: when an interval began, the CPU it used, its histograms,
//! its counters — and the whole run, kept as raw histograms and sums,
//! summarised only when asked. [`Profile`] is the one profile; each process
//! says what its [`Record`] is made of.

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
    /// Reads the CPU time this span counts, µs.
    cpu: fn() -> u64,
}

impl<C: Clone + std::ops::AddAssign> Spans<C> {
    /// Opens the first interval at `now_us` with `histograms` empty histograms.
    pub fn new(now_us: u64, histograms: usize, cpu: fn() -> u64) -> Self {
        Self {
            run_start_us: now_us,
            start_us: now_us,
            cpu_start_us: cpu(),
            cpu,
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
        let cpu = (self.cpu)();
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

/// One kind of process's interval record: what it counts, what it reads when an interval closes, and how
/// a closed span becomes the record.
pub trait Record: Sized {
    type Counters: Clone + Default + std::ops::AddAssign;
    /// Read at an interval's close (sessions, queues, memory…), not summed.
    type Gauges;
    /// Histograms per interval.
    const HISTOGRAMS: usize;
    /// Reads the CPU time an interval counts, µs: the process's by default.
    const CPU: fn() -> u64 = crate::clock::process_cpu_us;
    fn summarise(span: Span<Self::Counters>, gauges: &Self::Gauges) -> Self;
}

/// The open interval (its histograms and the counters it has so far) and the run so far, of a process
/// whose intervals are `R`s.
#[derive(Debug)]
pub struct Profile<R: Record> {
    spans: Spans<R::Counters>,
    /// What the open interval has counted so far.
    pub counters: R::Counters,
}

impl<R: Record> Profile<R> {
    /// Opens the first interval at `now_us`.
    pub fn new(now_us: u64) -> Self {
        Self { spans: Spans::new(now_us, R::HISTOGRAMS, R::CPU), counters: R::Counters::default() }
    }

    /// Records `v` in histogram `i` of the open interval.
    pub fn record(&mut self, i: usize, v: u64) {
        self.spans.record(i, v);
    }

    /// Closes the open interval at `now_us` with its counters and the gauges read now, and opens the next.
    pub fn close(&mut self, now_us: u64, gauges: &R::Gauges) -> R {
        R::summarise(self.spans.close(now_us, std::mem::take(&mut self.counters)), gauges)
    }

    /// The whole run so far (intervals merged: histograms added, counters summed) with `gauges` (as of its
    /// end, or whatever the process reports for a whole run); None before the first close.
    pub fn totals(&self, gauges: &R::Gauges) -> Option<R> {
        Some(R::summarise(self.spans.totals()?.clone(), gauges))
    }
}
