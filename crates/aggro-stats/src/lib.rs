//! Latency statistics for aggro: HdrHistograms per loader per interval per
//! operation, merged at interval boundaries.
//!
//! Percentiles are always read from a merged histogram, never averaged
//! across loaders or intervals (the mistake the DynamoDB/Spanner tool's author made by hand).
//! Recording costs a few nanoseconds and never sends a message: each loader
//! owns a [`Recorder`], and the monitor swaps it for an empty one at each
//! interval boundary.
//!
//! # Layout
//! - [`recorder`]: [`Recorder`] and [`OpStats`], recording and merging.
//! - [`summary`]: [`Summary`], the figures one interval line prints.
//! - [`encode`]: HdrHistogram's compressed base64 form, for result files.
#![deny(missing_docs)]

pub mod encode;
pub mod recorder;
pub mod summary;

pub use recorder::{OpId, OpStats, Recorder};
pub use summary::Summary;

/// The histogram type used throughout: nanoseconds, 3 significant digits,
/// growing its range only as far as the values seen.
pub type Histogram = hdrhistogram::Histogram<u64>;

/// A new empty histogram (auto-resizing, so a loader that only sees
/// microsecond latencies never allocates buckets for minutes).
pub fn new_histogram() -> Histogram {
    let mut h = Histogram::new(3).expect("3 significant digits is a valid precision");
    h.auto(true);
    h
}
