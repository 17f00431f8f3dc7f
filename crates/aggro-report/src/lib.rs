//! The serialized run record of aggro and its text and CSV views.
//!
//! Every run writes one [`RunRecord`] (JSON, schema in
//! `docs/result.schema.json`): the resolved run spec, the host, and for each
//! interval and operation the counts, a summary and the HdrHistograms in
//! their standard compressed encoding, so percentiles can always be
//! recomputed from merged histograms.
//!
//! # Layout
//! - [`record`]: [`RunRecord`] and its parts, built from interval reports.
//! - [`text`]: the one-line-per-interval console view (and the per-loader view).
//! - [`csv`]: the interval table as CSV.
//! - [`hdrlog`]: the run as a standard HdrHistogram interval log.
//! - [`host`]: host facts and /proc sampling of the generator's own CPU, and of a watched server's resources.
//! - [`generator`]: the evidence that a run's figures describe the generator, signal by signal;
//!   [`signal`]: one such finding, with its figure and limit.
//! - [`identity`]: which run a result file is, and which shard: verify and merge refuse a file given
//!   twice or shards of different runs.
//! - [`timeline`]: intervals grouped into chart points, histograms merged.
//! - [`html`]: the self-contained HTML report and the comparison of runs.
//! - [`merge`]: the shards of a run (`--worker I/N`) combined exactly.
//! - [`slo`]: pass/fail thresholds (`p99<50ms,errors<0.1%`).
//! - [`soak`]: a watched server's resources per interval, and the trends that find leaks.
//! - [`http`]: the loopback page server of the live report and of a server's `/metrics`.
#![deny(missing_docs)]

pub mod csv;
pub mod generator;
pub mod hdrlog;
pub mod host;
pub mod html;
pub mod http;
pub mod identity;
pub mod merge;
pub mod record;
pub mod signal;
pub mod slo;
pub mod soak;
pub mod text;
pub mod timeline;

pub use record::{IntervalRecord, OpCount, OpRecord, RunRecord};
