//! `aggro scenario`'s arguments.

use crate::cli::shared::{ExecArgs, RateArgs, SearchArgs};
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum ScenarioCommand {
    /// Create the scenario's data: its setup commands, its rows in bulk, its finishing commands.
    Populate(ScenarioPopulateArgs),
    /// Drive the scenario's transaction mix at a rate and measure it.
    Run(Box<ScenarioRunArgs>),
    /// Search for the highest rate of the mix that keeps backlog at 0 and p99 under a bound.
    FindMax(Box<ScenarioFindMaxArgs>),
    /// Check the scenario's invariants against the committed counts of the runs since population.
    Verify(ScenarioVerifyArgs),
}

/// Which scenario, where.
#[derive(Debug, Args, Clone)]
pub struct ScenarioArgs {
    /// The scenario file (TOML; docs/SCENARIOS.md), or a YCSB CoreWorkload property file (such as YCSB's workloads/workloada).
    pub file: PathBuf,
    #[arg(long, env = "AGGRO_TARGET", value_parser = crate::cli::target::parse, help = crate::cli::target::HELP)]
    pub target: crate::cli::target::Target,
    /// Replace a `[vars]` value of the file: NAME=VALUE (repeatable), such as records=100000.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ScenarioPopulateArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Seed of the generated rows (the same seed makes the same data).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct ScenarioRunArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
    #[command(flatten)]
    pub sharing: SharingArgs,
    #[command(flatten)]
    pub run: RateArgs,
}

/// How a scenario's loaders map onto connections.
#[derive(Debug, Args)]
pub struct SharingArgs {
    /// Connections the loaders share (default: one per loader). Fewer than --loaders pipelines: each
    /// connection carries several loaders' requests at once, sent together and answered in order, as
    /// memtier's --pipeline (Redis and PostgreSQL; no step may leave state for a later one: WATCH, an
    /// open MULTI, BEGIN).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub connections: Option<u32>,
}

#[derive(Debug, Args)]
pub struct ScenarioFindMaxArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
    #[command(flatten)]
    pub sharing: SharingArgs,
    #[command(flatten)]
    pub search: SearchArgs,
    /// Result file (default ./aggro-results/TIME-find-max-SCENARIO.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ScenarioVerifyArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Result files of the runs since population: the invariants' committed(…) counts are their sums.
    #[arg(long = "result")]
    pub results: Vec<PathBuf>,
}
