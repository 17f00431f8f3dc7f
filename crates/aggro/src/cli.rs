//! The command line: parsed and checked here, resolved into run plans by
//! each command.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// aggro: how many players can this game backend hold, and what breaks first?
#[derive(Debug, Parser)]
#[command(name = "aggro", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The main job: a short capacity tour on an embedded database, no server needed.
    Run(TourArgs),
    /// The mobile-game transaction benchmark (seed 001): write, consistent-read, read.
    #[command(subcommand)]
    Mobile(Box<MobileCommand>),
}

#[derive(Debug, Subcommand)]
pub enum MobileCommand {
    /// Create the tables/keys and insert the users (drops earlier data of this workload).
    Populate(PopulateArgs),
    /// Drive one workload at a rate and measure it.
    Run(RunArgs),
    /// Search for the highest rate that keeps backlog at 0 and p99 under a bound.
    FindMax(FindMaxArgs),
    /// Check the store's invariants after runs.
    Verify(VerifyArgs),
}

/// Where the data lives and how it is keyed.
#[derive(Debug, Args, Clone)]
pub struct DataArgs {
    /// Target URL: null:, stackdb:DIR, sqlite:PATH, postgres://USER@HOST:PORT/DB, redis://HOST:PORT[/DB], dynamodb://HOST:PORT[/TABLE].
    #[arg(long, env = "AGGRO_TARGET")]
    pub target: String,
    /// Number of users (User1..UserN).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000_000))]
    pub users: u32,
    /// How ids are stored: none, or bit-reverse (32-bit reversal spreads keys across nodes).
    #[arg(long, default_value = "none")]
    pub spread: String,
}

#[derive(Debug, Args)]
pub struct PopulateArgs {
    #[command(flatten)]
    pub data: DataArgs,
}

/// How requests are driven: shared by `run` and `find-max`.
#[derive(Debug, Args, Clone)]
pub struct DriveArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// write (Gold −5, NumTickets +1), consistent-read (add 5 Gold, then read), or read.
    #[arg(long, default_value = "write")]
    pub workload: String,
    /// Loaders: connections, each with one request in flight.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub loaders: u32,
    /// Spacing of requests: even, second (the seed's per-second batches), or poisson.
    #[arg(long, default_value = "even")]
    pub pacing: String,
    /// Seconds between report lines.
    #[arg(long, default_value = "10s")]
    pub interval: String,
    /// Stop when backlog exceeds: rate (the planned per-second rate), off, or a count.
    #[arg(long, default_value = "rate")]
    pub stop_on_backlog: String,
    /// How long in-flight requests may finish after the schedule ends.
    #[arg(long, default_value = "10s")]
    pub drain: String,
    /// Seed for every random choice (default: from the clock; always recorded).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Worker threads of the generator (0 = one per CPU).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// No interval lines or progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Also print one line per loader per interval (the seed-001 view).
    #[arg(long)]
    pub per_loader: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub drive: DriveArgs,
    /// Requests per second, or max for a closed loop (each loader as fast as it can).
    #[arg(long, default_value = "1000", conflicts_with = "stages")]
    pub rate: String,
    /// Ramp stages instead of a fixed rate: 30s:500,60s:2000 (each ramps from the previous rate).
    #[arg(long)]
    pub stages: Option<String>,
    /// Run length (with --rate).
    #[arg(long, default_value = "30s", conflicts_with = "stages")]
    pub duration: String,
    /// Stop after this many requests.
    #[arg(long)]
    pub requests: Option<u64>,
    /// Result file (default ./aggro-results/<time>-<workload>.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the interval table as CSV.
    #[arg(long)]
    pub csv: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct FindMaxArgs {
    #[command(flatten)]
    pub drive: DriveArgs,
    /// The p99 latency a rate must stay under.
    #[arg(long, default_value = "50ms")]
    pub p99: String,
    /// Length of each trial.
    #[arg(long, default_value = "30s")]
    pub step: String,
    /// First rate tried.
    #[arg(long, default_value = "1000")]
    pub start_rate: String,
    /// Highest rate tried.
    #[arg(long, default_value = "10m")]
    pub max_rate: String,
    /// Stop when the bracket is narrower than this fraction.
    #[arg(long, default_value_t = 0.05)]
    pub precision: f64,
    /// Most trials in all.
    #[arg(long, default_value_t = 20)]
    pub max_trials: usize,
    /// Result file (default ./aggro-results/<time>-find-max-<workload>.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// Result files of the runs since population: their committed counts must all be in the store.
    #[arg(long = "result")]
    pub results: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TourArgs {
    /// Seconds per workload.
    #[arg(long, default_value = "15s")]
    pub duration: String,
    /// Users in the temporary database.
    #[arg(long, default_value_t = 100_000)]
    pub users: u32,
    /// Keep the database and results here instead of a temporary directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}
