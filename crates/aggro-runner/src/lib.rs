//! The one executor of aggro.
//!
//! Every load shape — open loop at a rate, per-second batches, Poisson
//! arrivals, ramps, closed loop, a fixed count of periods — is a
//! [`Schedule`](aggro_core::Schedule) that [`run`] executes with N loaders. A
//! loader is one in-flight slot (one connection). The executor knows nothing
//! of workloads: a workload is a [`Loader`] that runs request number `seq`.
//!
//! Latency is measured from the *intended* start time, so a stalled backend
//! cannot hide behind a stalled generator (no coordinated omission). Each
//! loader records into its own [`Recorder`](aggro_stats::Recorder); the
//! monitor swaps and merges them at interval boundaries and hands the merged
//! interval to an [`Observer`].
//!
//! # Layout
//! - [`loader`]: the [`Loader`] trait and the [`Steps`] a request records into.
//! - [`plan`]: [`RunPlan`] (what to run) and [`StopReason`] (why it ended).
//! - [`executor`]: [`run`], the loader loop.
//! - [`monitor`]: interval boundaries, backlog, stop rules.
//! - [`shared`]: what the loaders and the monitor share, and the [`RunOutcome`].
//! - `claim`: which slot a loader runs next — its stripe's, or a busy stripe's.
//! - `books`: due, taken, started, finished and backlog, summed over the loaders' stripes.
//! - [`stop`]: [`StopHandle`], for Ctrl-C and other outside stops.
//! - [`search`]: the capacity search (`find-max`) over repeated runs.
#![deny(missing_docs)]

mod books;
mod claim;
pub mod executor;
pub mod loader;
pub mod monitor;
pub mod plan;
pub mod search;
pub mod shared;
pub mod stop;

pub use executor::run;
pub use loader::{Loader, Steps};
pub use monitor::{IntervalReport, Observer};
pub use plan::{BacklogRule, Placement, RunPlan, StopReason, TimerMode};
pub use shared::RunOutcome;
pub use stop::StopHandle;
