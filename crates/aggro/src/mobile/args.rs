//! `aggro mobile`'s arguments.

use crate::cli::shared::{ExecArgs, RateArgs, SearchArgs};
use aggro_workloads::mobile::{Spread, Workload};
use clap::{Args, Subcommand};
use std::path::PathBuf;

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
    #[arg(long, env = "AGGRO_TARGET", value_parser = crate::cli::target::parse, help = crate::cli::target::HELP)]
    pub target: crate::cli::target::Target,
    /// Number of users (User1..UserN). Populate's default: 100000; other commands take the store's world record and need it only for a store populated by an aggro without one.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000_000))]
    pub users: Option<u32>,
    /// How ids are stored: none, or bit-reverse (32-bit reversal spreads keys across nodes). Populate's default: none; other commands take the store's.
    #[arg(long, value_enum)]
    pub spread: Option<Spread>,
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
    /// Which transaction.
    #[arg(long, value_enum, default_value_t = Workload::Write)]
    pub workload: Workload,
    #[command(flatten)]
    pub exec: ExecArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub drive: DriveArgs,
    #[command(flatten)]
    pub run: RateArgs,
}

#[derive(Debug, Args)]
pub struct FindMaxArgs {
    #[command(flatten)]
    pub drive: DriveArgs,
    #[command(flatten)]
    pub search: SearchArgs,
    /// Result file (default ./aggro-results/TIME-find-max-WORKLOAD.json).
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
