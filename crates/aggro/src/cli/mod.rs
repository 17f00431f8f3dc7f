//! The command line: parsed and checked here, resolved into run plans by
//! each command.

mod arena;
pub mod values;

pub use arena::*;

use aggro_core::{Pacing, RatePlan, Share};
use aggro_runner::{BacklogRule, TimerMode};
use aggro_workloads::mobile::{Spread, Workload};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};
use values::{Rate, percent, threads};

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
    /// The realtime arena (seeds 002, 003): a reference UDP game server, a room relay server, a bot swarm, and the bench that runs them.
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
    /// A stackdb store's integrity checked without changing it, or its intact commits salvaged into a new one.
    #[command(subcommand)]
    Store(StoreCommand),
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Open read-only, walk every stack and checksum every record; exit 1 if anything is damaged.
    Check(StoreCheckArgs),
    /// Copy every intact commit of a damaged store, in order, into a new directory; the original is only read.
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
    /// Target URL: stackdb:DIR, sqlite:PATH, postgres://USER@HOST:PORT/DB, redis://HOST:PORT[/DB], dynamodb://HOST:PORT[/TABLE].
    #[arg(long, env = "AGGRO_TARGET")]
    pub target: String,
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
    pub exports: crate::session::Exports,
    /// Serve the report on this loopback address while the run goes (open http://ADDR/).
    #[arg(long, value_name = "ADDR", value_parser = values::loopback)]
    pub live: Option<SocketAddr>,
    #[command(flatten)]
    pub shard: ShardArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub drive: DriveArgs,
    #[command(flatten)]
    pub run: RateArgs,
}

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
    /// Target URL: null:, stackdb:DIR, sqlite:PATH, postgres://USER@HOST:PORT/DB, redis://HOST:PORT[/DB], dynamodb://HOST:PORT[/TABLE].
    #[arg(long, env = "AGGRO_TARGET")]
    pub target: String,
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

/// `aggro pgbench`: pgbench's options where they mean the same.
#[derive(Debug, Args)]
pub struct PgbenchArgs {
    /// Script files, `FILE[@WEIGHT]` (as pgbench's -f).
    #[arg(value_name = "FILE[@WEIGHT]")]
    pub scripts: Vec<String>,
    /// A script file, `FILE[@WEIGHT]` (repeatable).
    #[arg(short = 'f', long = "file", value_name = "FILE[@WEIGHT]")]
    pub files: Vec<String>,
    /// A built-in script, `NAME[@WEIGHT]`: tpcb-like (the default), simple-update, select-only.
    #[arg(short = 'b', long = "builtin", value_name = "NAME[@WEIGHT]")]
    pub builtins: Vec<String>,
    /// Create pgbench's tables and rows (as pgbench -i, generated on the server) and exit.
    #[arg(short = 'i', long)]
    pub init: bool,
    /// Scale factor: with -i the size made (default 1); otherwise read from pgbench_branches, as pgbench does.
    #[arg(short = 's', long)]
    pub scale: Option<i64>,
    /// Also time each statement apart (as pgbench's -r): a step per statement in the result.
    #[arg(short = 'r', long)]
    pub report_per_command: bool,
    /// A variable for the scripts: NAME=VALUE (repeatable, as pgbench's -D).
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE")]
    pub defines: Vec<String>,
    /// Clients, one connection each (as pgbench's -c; aggro's --loaders).
    #[arg(short = 'c', value_name = "CLIENTS", conflicts_with = "loaders")]
    pub clients: Option<u32>,
    /// Threads (as pgbench's -j; aggro's --threads).
    #[arg(short = 'j', value_name = "THREADS", conflicts_with = "threads")]
    pub jobs: Option<usize>,
    /// Run length in seconds (as pgbench's -T); without -R, as fast as possible, as pgbench runs.
    #[arg(short = 'T', value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..), conflicts_with_all = ["transactions", "rate", "duration", "stages"])]
    pub time: Option<u64>,
    /// Transactions per client (as pgbench's -t): the run ends after clients × N; without -R, as fast as possible.
    #[arg(short = 't', value_name = "N", conflicts_with_all = ["rate", "duration", "stages", "requests"])]
    pub transactions: Option<u64>,
    /// Transactions per second, open loop (as pgbench's -R; aggro's --rate).
    #[arg(short = 'R', value_name = "RATE", conflicts_with_all = ["rate", "stages"], value_parser = values::rate)]
    pub target_rate: Option<f64>,
    /// Accepted for pgbench's command lines: aggro never vacuums (as pgbench's -n).
    #[arg(short = 'n')]
    pub no_vacuum: bool,
    /// How statements are sent (as pgbench's -M): simple writes the values into the text, extended
    /// parses with every transaction, prepared once per connection.
    #[arg(short = 'M', value_name = "MODE", value_enum, default_value_t = QueryMode::Simple)]
    pub mode: QueryMode,
    /// Target URL: postgres://USER@HOST:PORT/DB (or a wire-compatible server).
    #[arg(long, env = "AGGRO_TARGET")]
    pub target: String,
    #[command(flatten)]
    pub exec: ExecArgs,
    #[command(flatten)]
    pub run: RateArgs,
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

/// `aggro report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The result file.
    pub file: PathBuf,
    /// The HTML file (default: the result file's name with .html).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Pass/fail thresholds on the whole run, such as p99<50ms,errors<0.1% (exit code 3 when one fails).
    #[arg(long, value_parser = thresholds)]
    pub slo: Option<Thresholds>,
    #[command(flatten)]
    pub exports: crate::session::Exports,
}

/// `aggro compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two or more result files; the first is the baseline of the ratios.
    #[arg(num_args = 2.., required = true)]
    pub files: Vec<PathBuf>,
    /// The HTML file.
    #[arg(long, short, default_value = "compare.html")]
    pub out: PathBuf,
}

/// `aggro merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' result files.
    #[arg(num_args = 1.., required = true)]
    pub files: Vec<PathBuf>,
    /// The merged result file.
    #[arg(long, short)]
    pub out: PathBuf,
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
    /// Accounts in the temporary world (5 players and 500 items each).
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub accounts: u32,
    /// Periods of the one-zone play test (the two-zone test runs half as many per zone).
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(2..))]
    pub periods: u64,
    /// Logins per client in the login test (4 clients).
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub logins: u64,
    /// Keep the database and results here instead of a temporary directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// pgbench's `-M`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum QueryMode {
    /// Values written into the statement's text, one simple query (pgbench's default).
    Simple,
    /// The statement parsed with every request, its values bound apart.
    Extended,
    /// Prepared once per connection.
    Prepared,
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

/// `--stages`: ramp stages, each from the previous rate.
fn stages(text: &str) -> Result<RatePlan, String> {
    RatePlan::parse_stages(text, 0.0)
}

/// `--slo`: the run's thresholds.
#[derive(Clone, Debug)]
pub struct Thresholds(pub Vec<aggro_report::slo::Threshold>);

fn thresholds(text: &str) -> Result<Thresholds, String> {
    aggro_report::slo::parse(text).map(Thresholds)
}
