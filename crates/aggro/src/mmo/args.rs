//! `aggro mmo`'s arguments.

use crate::cli::shared::ShardArgs;
use crate::cli::values::{self, percent, threads};
use clap::{Args, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Subcommand)]
pub enum MmoCommand {
    /// Create the world: accounts, 5 players each with their parts and 100 items, guilds, quests, descriptors.
    Populate(WorldArgs),
    /// The login test: N clients each run L logins (query by user name, load, update).
    Login(LoginArgs),
    /// The game operations test: zones of players run the profile period by period.
    Play(PlayArgs),
    /// Check the world's invariants (no duplicated item, counts, ledger, no lease held).
    Verify(MmoVerifyArgs),
}

/// Which world, where.
#[derive(Debug, Args, Clone)]
pub struct WorldArgs {
    #[arg(long, env = "AGGRO_TARGET", value_parser = crate::cli::target::parse, help = crate::cli::target::HELP)]
    pub target: crate::cli::target::Target,
    /// Accounts in the world (5 players each, 100 items per player; the paper used 50,000). Populate's default: 5000; other commands take the store's world record and need it only for a store populated by an aggro without one.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000_000))]
    pub accounts: Option<u32>,
    /// Seed of the world's generated content. Populate's default: 1; other commands take the store's.
    #[arg(long)]
    pub world_seed: Option<u64>,
}

/// What every MMO run shares.
#[derive(Debug, Args, Clone)]
pub struct MmoRunArgs {
    #[command(flatten)]
    pub world: WorldArgs,
    /// Seed of the run's random choices (default: from the clock; always recorded).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Seconds between interval records.
    #[arg(long, default_value = "5s", value_parser = values::interval)]
    pub interval: Duration,
    /// Worker threads of the generator (0 = one per CPU; at most 1024).
    #[arg(long, default_value_t = 0, value_parser = threads)]
    pub threads: usize,
    /// Result file (default ./aggro-results/TIME-mmo-TEST.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print only the summary.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args, Clone)]
pub struct LoginArgs {
    #[command(flatten)]
    pub run: MmoRunArgs,
    /// Login clients (connections), or auto: double them until logins/s stops rising.
    #[arg(long, default_value = "8", value_parser = login_clients)]
    pub clients: LoginClients,
    /// Logins per client.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub logins: u64,
}

#[derive(Debug, Args, Clone)]
pub struct PlayArgs {
    #[command(flatten)]
    pub run: MmoRunArgs,
    /// Players per zone (the profile's counts scale with it).
    #[arg(long, default_value_t = 250, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub players: u32,
    /// Zones (game-server clients) running at once against the same store.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub clients: u32,
    /// Periods per zone (closed loop).
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub periods: u64,
    /// Action profile (TOML; default: the paper's 250-player table, profiles/mmo-250.toml).
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Pace one period per game-minute per zone (open loop) instead of running periods back to back.
    #[arg(long)]
    pub realtime: bool,
    /// Length of a realtime run.
    #[arg(long, default_value = "10m", value_parser = values::span)]
    pub duration: Duration,
    /// Real length of a game-minute in a realtime run.
    #[arg(long, default_value = "60s", value_parser = values::span)]
    pub game_minute: Duration,
    /// How long a LoadPlayer lease lasts unless renewed (by any push of the player; at least 1ms).
    #[arg(long, default_value = "5m", value_parser = values::span)]
    pub lease: Duration,
    /// Print the per-action table every this many periods (0: only at the end).
    #[arg(long, default_value_t = 100)]
    pub table_every: u64,
    /// Largest share of periods with a failed action (in %) from which a capacity figure is still
    /// given; past it the run prints why there is none and exits 3.
    #[arg(long, default_value_t = 0.0, value_name = "PERCENT", value_parser = percent)]
    pub max_errors: f64,
    /// Serve the report on this loopback address while the run goes (open http://ADDR/).
    #[arg(long, value_name = "ADDR", value_parser = values::loopback)]
    pub live: Option<SocketAddr>,
    /// With --worker I/N this process runs zones I-1, I-1+N, … and takes every N-th period of the whole run.
    #[command(flatten)]
    pub shard: ShardArgs,
}

#[derive(Debug, Args, Clone)]
pub struct MmoVerifyArgs {
    #[command(flatten)]
    pub world: WorldArgs,
    /// Result files of the play runs since population: every player must hold population + what they committed.
    #[arg(long = "result")]
    pub results: Vec<PathBuf>,
}

/// `mmo login --clients`: a count, or `auto` to double them until logins/s stops rising.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoginClients {
    /// Double from one until throughput stops rising.
    Auto,
    /// This many.
    Count(u32),
}

fn login_clients(text: &str) -> Result<LoginClients, String> {
    match text {
        "auto" => Ok(LoginClients::Auto),
        n => match n.parse::<u32>() {
            Ok(c) if (1..=100_000).contains(&c) => Ok(LoginClients::Count(c)),
            _ => Err(format!("{text:?} is not auto or a count of clients from 1 to 100000")),
        },
    }
}
