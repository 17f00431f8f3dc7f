//! Game workloads for aggro, deterministic from a seed.
//!
//! A workload turns request numbers into operations against a store trait of
//! `aggro-core`; the executor (`aggro-runner`) decides when each request runs.
//!
//! # Layout
//! - [`mmo`]: the Versant MMO player-minute workload — profile, zones,
//!   periods, login, population and verification.
//! - [`mobile`]: the DynamoDB/Spanner tool's mobile-game transaction trio — keys and skew,
//!   the loader, and the invariants checked after a run.
//! - [`scenario`]: the user's own workload — scenario files (TOML), pgbench
//!   scripts, YCSB's core workloads — compiled per target family.
//! - [`retry`]: the one policy for retrying a transaction the store refused for a conflict.
#![deny(missing_docs)]

pub mod mmo;
pub mod mobile;
pub mod retry;
pub mod scenario;
