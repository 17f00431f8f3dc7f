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
//! - [`host`]: host facts and /proc sampling of the generator's own CPU.
#![deny(missing_docs)]

pub mod csv;
pub mod host;
pub mod record;
pub mod text;

pub use record::{IntervalRecord, OpRecord, RunRecord};
