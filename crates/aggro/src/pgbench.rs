//! `aggro pgbench`: pgbench's scripts and options, aggro's executor.

use crate::cli::shared::{ExecArgs, RateArgs};
use crate::cli::values::{self, Rate};
use crate::exit::BadInput;
use crate::run::drive::{self, ExecSpec, Outputs};
use crate::scenario::{Input, Populate, Run, on_target};
use aggro_core::scenario::SqlProtocol;
use aggro_targets::TargetUrl;
use aggro_workloads::scenario::file::parse_override;
use aggro_workloads::scenario::pgbench::Script;
use clap::{Args, ValueEnum};
use std::time::Duration;

/// pgbench's own run flags in aggro's terms: `-c`, `-j`, `-T`, `-t` and
/// `-R`; with `-T` or `-t` and no `-R` the run is closed loop, as pgbench's.
fn as_pgbench_runs(a: &mut PgbenchArgs) {
    if let Some(c) = a.clients {
        a.exec.loaders = c.max(1);
    }
    if let Some(j) = a.jobs {
        a.exec.threads = j;
    }
    if let Some(t) = a.time {
        a.run.duration = Duration::from_secs(t);
    }
    if let Some(n) = a.transactions {
        a.run.requests = Some(n * u64::from(a.exec.loaders));
        // Until the transactions are done, as pgbench -t.
        a.run.duration = Duration::from_secs(365 * 86_400);
    }
    match a.target_rate {
        Some(r) => a.run.rate = Rate::PerSecond(r),
        None if a.time.is_some() || a.transactions.is_some() => a.run.rate = Rate::Max,
        None => {}
    }
}

/// The protocol `-M` names.
fn protocol(mode: QueryMode) -> SqlProtocol {
    match mode {
        QueryMode::Simple => SqlProtocol::Simple,
        QueryMode::Extended => SqlProtocol::Extended,
        QueryMode::Prepared => SqlProtocol::Prepared,
    }
}

pub fn main(mut a: PgbenchArgs) -> anyhow::Result<()> {
    let bad = |e: String| anyhow::Error::from(BadInput(e));
    as_pgbench_runs(&mut a);
    if !matches!(a.target.url, TargetUrl::Postgres { .. }) {
        return Err(bad(format!(
            "aggro pgbench runs on postgres:// targets (pgbench's scripts and schema are PostgreSQL's), not {}",
            a.target.masked()
        )));
    }
    let mut scripts = Vec::new();
    for f in a.scripts.iter().chain(&a.files) {
        scripts.push(Script::file(f).map_err(bad)?);
    }
    for b in &a.builtins {
        scripts.push(Script::builtin(b).map_err(bad)?);
    }
    if scripts.is_empty() {
        scripts.push(Script::builtin("tpcb-like").map_err(bad)?);
    }
    let defines = a.defines.iter().map(|d| parse_override(d).map_err(|e| format!("-D {e}"))).collect::<Result<Vec<_>, _>>().map_err(bad)?;
    if let Some(s) = a.scale
        && s < 1
    {
        return Err(bad(format!("--scale must be at least 1, not {s}")));
    }
    let exec = ExecSpec::resolve(&a.exec);
    let rt = crate::run::session::runtime(exec.threads)?;
    if a.init {
        let input = Input::Pgbench { scripts, scale: Some(a.scale.unwrap_or(1)), defines, per_command: false, protocol: protocol(a.mode) };
        return rt.block_on(on_target(&a.target, Populate { input, seed: exec.seed }));
    }
    let input = Input::Pgbench { scripts, scale: a.scale, defines, per_command: a.report_per_command, protocol: protocol(a.mode) };
    let mut outputs = Outputs::resolve(a.run, &exec, &a.exec, "pgbench")?;
    // -t N: each client runs N, as pgbench's (not N × clients shared by whoever is free).
    outputs.plan.each_loader_limit = a.transactions;
    let run = Run { command: "pgbench", input, exec, connections: None, outputs, check: true };
    let record = rt.block_on(on_target(&a.target, run))?;
    drive::exit_status(&record)
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
    /// Target URL: postgres://USER@HOST:PORT/DB, or postgres://USER:PASSWORD@HOST:PORT/DB (or a wire-compatible server).
    #[arg(long, env = "AGGRO_TARGET", value_parser = crate::cli::target::parse)]
    pub target: crate::cli::target::Target,
    #[command(flatten)]
    pub exec: ExecArgs,
    #[command(flatten)]
    pub run: RateArgs,
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
