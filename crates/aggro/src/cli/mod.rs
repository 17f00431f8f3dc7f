//! The command line: the commands, each one's arguments beside its handler (`mmo/args.rs`,
//! `mobile/args.rs`, `scenario/args.rs`, `arena/args.rs`, `plan/args.rs`, and at the end of
//! `pgbench.rs`, `results.rs`, `tour.rs`); the groups several commands share in [`shared`], and
//! every flag's value parser in [`values`], so bad input is refused as the line is read.

#[cfg(test)]
mod documented;
#[cfg(test)]
mod flags_tested;
pub mod shared;
pub mod target;
pub mod values;

use crate::arena::args::ArenaCommand;
use crate::mmo::args::MmoCommand;
use crate::mobile::args::MobileCommand;
use crate::pgbench::PgbenchArgs;
use crate::plan::args::PlanArgs;
use crate::results::{CompareArgs, MergeArgs, ReportArgs};
use crate::scenario::args::ScenarioCommand;
use crate::tour::TourArgs;
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
    /// The MMO player-minute benchmark (the Versant paper): populate, login, play, verify.
    #[command(subcommand)]
    Mmo(Box<MmoCommand>),
    /// The mobile-game transaction benchmark (after the DynamoDB/Spanner tool): write, consistent-read, read.
    #[command(subcommand)]
    Mobile(Box<MobileCommand>),
    /// Your own workload: a scenario file (TOML; YCSB's core workloads ship in scenarios/ycsb) or a YCSB workload file, on any target.
    #[command(subcommand)]
    Scenario(Box<ScenarioCommand>),
    /// pgbench's scripts run unchanged (tpcb-like, simple-update, select-only, or your own -f files) through aggro's executor.
    Pgbench(Box<PgbenchArgs>),
    /// The realtime arena (after the PUBG article and the Photon guide): a reference UDP game server, a room relay server, a bot swarm, and the bench that runs them.
    #[command(subcommand)]
    Arena(Box<ArenaCommand>),
    /// The capacity planner (after Photon's load tests): the Photon arithmetic for a room profile, or CCU per server from measured sweeps.
    Plan(PlanArgs),
    /// A result file as one self-contained HTML page (charts, thresholds), and its data as an HdrHistogram log or CSV.
    Report(ReportArgs),
    /// Two or more result files side by side in one HTML page, with the ratios of their figures.
    Compare(CompareArgs),
    /// The result files of a run's shards (--worker I/N) combined into one, histograms merged.
    Merge(MergeArgs),
    /// A stackdb store's integrity checked without changing it, or what it can prove salvaged into a new one.
    #[command(subcommand)]
    Store(StoreCommand),
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Open read-only, walk every stack and checksum every record; exit 1 if anything is damaged.
    Check(StoreCheckArgs),
    /// Copy every key a damaged store can prove into a new directory — what it reads, the rest from its log; the original is only read.
    Salvage(StoreSalvageArgs),
}

#[derive(Debug, Args, Clone)]
pub struct StoreCheckArgs {
    /// The store's directory (what `stackdb:DIR` names).
    pub dir: PathBuf,
}

#[derive(Debug, Args, Clone)]
pub struct StoreSalvageArgs {
    /// The damaged store's directory.
    pub dir: PathBuf,
    /// A new directory for the salvaged store (must not hold one).
    #[arg(long)]
    pub to: PathBuf,
}
