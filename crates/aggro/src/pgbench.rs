//! `aggro pgbench`: pgbench's scripts and options, aggro's executor.

use crate::BadInput;
use crate::cli::PgbenchArgs;
use crate::drive::{self, ExecSpec, Outputs};
use crate::scenario::{Input, Populate, Run, on_target};
use aggro_targets::TargetUrl;
use aggro_workloads::scenario::file::parse_override;
use aggro_workloads::scenario::pgbench::Script;

pub fn main(a: PgbenchArgs) -> anyhow::Result<()> {
    let bad = |e: String| anyhow::Error::from(BadInput(e));
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
    let defines = a.defines.iter().map(|d| parse_override(d)).collect::<Result<Vec<_>, _>>().map_err(bad)?;
    if let Some(s) = a.scale
        && s < 1
    {
        return Err(bad(format!("--scale must be at least 1, not {s}")));
    }
    let exec = ExecSpec::resolve(&a.exec)?;
    let rt = crate::session::runtime(exec.threads)?;
    if a.init {
        let input = Input::Pgbench { scripts, scale: Some(a.scale.unwrap_or(1)), defines, per_command: false };
        return rt.block_on(on_target(&a.target, Populate { input, seed: exec.seed }));
    }
    let input = Input::Pgbench { scripts, scale: a.scale, defines, per_command: a.report_per_command };
    let outputs = Outputs::resolve(a.run, &exec, &a.exec, "pgbench")?;
    let run = Run { command: "pgbench", input, exec, outputs, check: true };
    let record = rt.block_on(on_target(&a.target, run))?;
    drive::exit_status(&record)
}
