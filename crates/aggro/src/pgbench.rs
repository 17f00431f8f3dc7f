//! `aggro pgbench`: pgbench's scripts and options, aggro's executor.

use crate::BadInput;
use crate::cli::values::Rate;
use crate::cli::{PgbenchArgs, QueryMode};
use crate::drive::{self, ExecSpec, Outputs};
use crate::scenario::{Input, Populate, Run, on_target};
use aggro_core::scenario::SqlProtocol;
use aggro_targets::TargetUrl;
use aggro_workloads::scenario::file::parse_override;
use aggro_workloads::scenario::pgbench::Script;
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
    if !matches!(TargetUrl::parse(&a.target).map_err(|e| bad(e.to_string()))?, TargetUrl::Postgres { .. }) {
        return Err(bad(format!("aggro pgbench runs on postgres:// targets (pgbench's scripts and schema are PostgreSQL's), not {}", a.target)));
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
    let rt = crate::session::runtime(exec.threads)?;
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
