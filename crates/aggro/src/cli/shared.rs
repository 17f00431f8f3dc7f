//! Argument groups several commands flatten into theirs: how the executor runs loaders, a run's rate and
//! outputs, a shard of a run, a capacity search's bounds.

use crate::cli::values::{self, Rate, threads};
use aggro_core::{Pacing, RatePlan, Share};
use aggro_runner::{BacklogRule, TimerMode};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// How the executor runs the loaders: every rate-driven command shares these.
#[derive(Debug, Args, Clone)]
pub struct ExecArgs {
    /// Loaders: connections, each with one request in flight.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub loaders: u32,
    /// Spacing of requests.
    #[arg(long, value_enum, default_value_t = Pacing::Even)]
    pub pacing: Pacing,
    /// Seconds between report lines (at least 10ms).
    #[arg(long, default_value = "10s", value_parser = values::interval)]
    pub interval: Duration,
    /// Stop when backlog exceeds: rate (the planned per-second rate), off, or a count.
    #[arg(long, default_value = "rate", value_parser = BacklogRule::parse)]
    pub stop_on_backlog: BacklogRule,
    /// How long in-flight requests may finish after the schedule ends.
    #[arg(long, default_value = "10s", value_parser = values::span_or_zero)]
    pub drain: Duration,
    /// Seed for every random choice (default: from the clock; always recorded).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Worker threads of the generator (0 = one per CPU; at most 1024).
    #[arg(long, default_value_t = 0, value_parser = threads)]
    pub threads: usize,
    /// No interval lines or progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Also print one line per loader per interval (the DynamoDB/Spanner tool's view).
    #[arg(long)]
    pub per_loader: bool,
    /// How loaders wait for a request's intended time.
    #[arg(long, value_enum, default_value_t = TimerMode::Auto)]
    pub timer: TimerMode,
}

/// A run's rate and outputs: shared by `mobile run`, `scenario run` and `pgbench`.
#[derive(Debug, Args)]
pub struct RateArgs {
    /// Requests per second, or max for a closed loop (each loader as fast as it can).
    #[arg(long, default_value = "1000", conflicts_with = "stages", value_parser = values::rate_or_max)]
    pub rate: Rate,
    /// Ramp stages instead of a fixed rate: 30s:500,60s:2000 (each ramps from the previous rate).
    #[arg(long, value_parser = stages)]
    pub stages: Option<RatePlan>,
    /// Run length (with --rate).
    #[arg(long, default_value = "30s", conflicts_with = "stages", value_parser = values::span)]
    pub duration: Duration,
    /// Stop after this many requests.
    #[arg(long)]
    pub requests: Option<u64>,
    /// Result file (default ./aggro-results/TIME-WORKLOAD.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub exports: crate::run::session::Exports,
    /// Serve the report on this loopback address while the run goes (open http://ADDR/).
    #[arg(long, value_name = "ADDR", value_parser = values::loopback)]
    pub live: Option<SocketAddr>,
    #[command(flatten)]
    pub shard: ShardArgs,
}

/// One shard of a run split across generators.
#[derive(Debug, Args, Clone, Default)]
pub struct ShardArgs {
    /// Run as shard I of N (1 <= I <= N): take every N-th request of the whole run's schedule; combine the shards' files with `aggro merge`.
    #[arg(long, value_name = "I/N", value_parser = values::worker)]
    pub worker: Option<Share>,
    /// Start the schedule at this wall-clock time (RFC 3339, such as 2026-11-22T10:00:00Z), so shards on several machines start together.
    #[arg(long, value_name = "TIME", value_parser = values::start_at)]
    pub start_at: Option<SystemTime>,
}

/// The capacity search's bounds: shared by every `find-max`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The p99 latency a rate must stay under.
    #[arg(long, default_value = "50ms", value_parser = values::span)]
    pub p99: Duration,
    /// Length of each trial.
    #[arg(long, default_value = "30s", value_parser = values::span)]
    pub step: Duration,
    /// First rate tried.
    #[arg(long, default_value = "1000", value_parser = values::rate)]
    pub start_rate: f64,
    /// Highest rate tried.
    #[arg(long, default_value = "10m", value_parser = values::rate)]
    pub max_rate: f64,
    /// Stop when the bracket is narrower than this fraction (between 0 and 1).
    #[arg(long, default_value_t = 0.05, value_parser = values::fraction)]
    pub precision: f64,
    /// Most trials in all.
    #[arg(long, default_value_t = 20)]
    pub max_trials: usize,
}

/// `--stages`: ramp stages, each from the previous rate.
fn stages(text: &str) -> Result<RatePlan, String> {
    RatePlan::parse_stages(text, 0.0)
}
