//! Shared vocabulary of aggro.
//!
//! Everything the other crates agree on lives here, and nothing else: the
//! executor (`aggro-runner`) knows schedules and outcomes, the workloads know
//! the store traits, the targets implement them.
//!
//! # Layout
//! - [`clock`]: a monotonic clock in nanoseconds since the run's origin, with a
//!   precise (timerfd) waiter for real runs and a tokio-time one for tests on a
//!   paused clock.
//! - [`schedule`]: load shapes — fixed rate, ramps, closed loop — as one iterator
//!   of intended start times.
//! - [`outcome`]: error classes; a failed request is a measurement, not a crash.
//! - [`rng`]: a small seeded generator whose sequence never changes with a
//!   dependency upgrade, so `--seed` reproduces a run.
//! - [`mobile`]: the store interface of the mobile-game transaction workload.
//! - [`mmo`]: the store interface of the MMO player-minute workload and its game model.
//! - [`scenario`]: the store interface of scenario files: prepared commands
//!   per target family, executed with computed arguments.
//! - [`units`]: parsing durations and rates the way users type them.
//! - [`world`]: the world record population leaves in the store, and the
//!   `WorldStore` trait every target implements to keep it.
#![deny(missing_docs)]

pub mod clock;
pub mod mmo;
pub mod mobile;
pub mod outcome;
pub mod rng;
pub mod scenario;
pub mod schedule;
pub mod units;
pub mod world;

pub use clock::{Clock, MonotonicClock, Nanos, TokioClock, Waiter};
pub use outcome::{ErrorClass, ErrorSamples, StoreError};
pub use schedule::{DueCounter, Pacing, RatePlan, Schedule, Share, Slot, Stage, Take};
