//! What every rate-driven command shares (`mobile run`, `scenario run`,
//! `pgbench`): the executor flags resolved, the rate, and one run of
//! loaders through the executor into a written result file.

use crate::cli::shared::{ExecArgs, RateArgs};
use crate::cli::values::Rate;
use crate::console::Verbosity;
use crate::exit::{BadInput, Interrupted};
use crate::run::Run;
use crate::run::session;
use aggro_core::{ErrorSamples, Nanos, Pacing, RatePlan};
use aggro_report::RunRecord;
use aggro_runner::{BacklogRule, Loader, Placement, RunPlan, StopHandle, StopReason, TimerMode};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;

fn bad(e: String) -> anyhow::Error {
    BadInput(e).into()
}

/// The executor flags, resolved; written into every result.
#[derive(Clone, Debug, Serialize)]
pub struct ExecSpec {
    pub loaders: u32,
    pub pacing: Pacing,
    pub interval_ns: Nanos,
    pub backlog_rule: BacklogRule,
    pub drain_ns: Nanos,
    pub seed: u64,
    pub threads: usize,
    pub timer: TimerMode,
}

impl ExecSpec {
    /// Resolves the flags (the seed from the clock if not given).
    pub fn resolve(a: &ExecArgs) -> Self {
        Self {
            loaders: a.loaders,
            pacing: a.pacing,
            interval_ns: a.interval.as_nanos() as Nanos,
            backlog_rule: a.stop_on_backlog,
            drain_ns: a.drain.as_nanos() as Nanos,
            seed: session::seed_or_clock(a.seed),
            threads: a.threads,
            timer: a.timer,
        }
    }

    /// The executor plan at `rate` (placement set once the target is known, see [`place`]).
    pub fn plan(&self, rate: RatePlan, limit: Option<u64>) -> RunPlan {
        RunPlan {
            rate,
            pacing: self.pacing,
            limit,
            interval_ns: self.interval_ns,
            backlog_rule: self.backlog_rule,
            drain_ns: self.drain_ns,
            seed: self.seed,
            placement: Placement::Tasks,
            share: aggro_core::Share::WHOLE,
            timer: self.timer,
            per_loader: false,
            each_loader_limit: None,
            keep_stripes: false,
        }
    }
}

/// Loaders of a blocking (embedded) target get threads of their own.
pub fn place(plan: &mut RunPlan, blocking: bool) {
    plan.placement = if blocking { Placement::Threads } else { Placement::Tasks };
}

/// A run's plan and where its results go.
pub struct Outputs {
    pub plan: RunPlan,
    pub verbosity: Verbosity,
    pub out: PathBuf,
    pub exports: session::Exports,
    /// When the schedule starts (`--start-at`), for shards on several machines.
    pub start_at: Option<std::time::SystemTime>,
    pub live: Option<std::net::SocketAddr>,
}

impl Outputs {
    /// Resolves the rate and output flags; `name` names the default result file.
    pub fn resolve(a: RateArgs, exec: &ExecSpec, exec_args: &ExecArgs, name: &str) -> anyhow::Result<Self> {
        let duration_ns = a.duration.as_nanos() as Nanos;
        let rate = match (a.stages, a.rate) {
            (Some(stages), _) => stages,
            (None, Rate::Max) => RatePlan::Max { duration_ns: Some(duration_ns) },
            (None, Rate::PerSecond(r)) => RatePlan::fixed(r, duration_ns),
        };
        if a.shard.worker.is_some() && exec_args.seed.is_none() {
            return Err(bad("--worker needs --seed: every shard of a run must draw the same schedule and requests".into()));
        }
        let mut plan = exec.plan(rate, a.requests);
        plan.share = a.shard.worker.unwrap_or_default();
        plan.per_loader = exec_args.per_loader;
        Ok(Self {
            plan,
            verbosity: Verbosity { quiet: exec_args.quiet },
            out: session::result_path(a.out, name)?,
            exports: a.exports,
            start_at: a.shard.start_at,
            live: a.live,
        })
    }

    /// How the plan's rate reads in a run's first line.
    pub fn describe_rate(&self) -> String {
        let plan = &self.plan;
        let rate = match &plan.rate {
            RatePlan::Max { .. } => "closed loop (as fast as each loader can)".into(),
            RatePlan::Stages { stages } if stages.len() == 1 => {
                format!("{}/s for {:.0}s, {:?} pacing", stages[0].end_rate, stages[0].duration_ns as f64 / 1e9, plan.pacing)
            }
            RatePlan::Stages { stages } => format!("{} ramp stages, {:?} pacing", stages.len(), plan.pacing),
        };
        match plan.share {
            s if s.of > 1 => format!("{rate}, worker {} of {} (one request in {})", s.index + 1, s.of, s.of),
            _ => rate,
        }
    }

    /// Runs `loaders` through the executor (Ctrl-C stops it cleanly) and
    /// returns the run's record; `spec` is recorded verbatim.
    pub async fn run<L: Loader>(
        &self,
        command: &str,
        spec: serde_json::Value,
        names: &'static [&'static str],
        loaders: Vec<L>,
        samples: &Arc<ErrorSamples>,
        threads: usize,
    ) -> anyhow::Result<RunRecord> {
        let stop = StopHandle::new();
        stop.stop_on_signals();
        let run =
            Run { command, spec, names, plan: &self.plan, verbosity: self.verbosity, samples, threads, start_at: self.start_at, live: self.live };
        Ok(run.go(loaders, &stop).await?.1)
    }

    /// Writes `record` (and its exports) and prints its summary.
    pub fn deliver(&self, record: &RunRecord) -> anyhow::Result<()> {
        session::write(record, &self.out, &self.exports)?;
        session::print_summary(record);
        println!("result: {}", self.out.display());
        Ok(())
    }
}

/// Puts a target's own figures into the record (a cluster's per node, `extra.nodes`), where it has
/// any; read after the loaders' connections closed, as they add theirs when they do. A node the
/// target found down as the run ended is named on stderr.
pub fn note_nodes(record: &mut RunRecord, nodes: serde_json::Value) {
    if nodes.is_null() {
        return;
    }
    for node in nodes.as_array().into_iter().flatten().filter(|n| n["down"] == true) {
        eprintln!("aggro: cluster node {} was down when the run ended", node["node"].as_str().unwrap_or("?"));
    }
    record.extra["nodes"] = nodes;
}

/// Why the run ended, as its record says.
fn stop_reason(record: &RunRecord) -> Option<StopReason> {
    serde_json::from_value(record.stop_reason.clone()).ok()
}

/// A run a signal stopped is an error: exit 130 ([`Interrupted`]).
pub fn unless_interrupted(record: &RunRecord) -> anyhow::Result<()> {
    match stop_reason(record) {
        Some(StopReason::Interrupted) => Err(Interrupted.into()),
        _ => Ok(()),
    }
}

/// The exit status of a finished run: a signal's stop, failed requests or
/// an early stop are an error (the result file is written either way).
pub fn exit_status(record: &RunRecord) -> anyhow::Result<()> {
    let errors: u64 = record.totals.first().map_or(0, |t| t.errors);
    match stop_reason(record) {
        Some(StopReason::Interrupted) => Err(Interrupted.into()),
        Some(StopReason::Completed) if errors == 0 => Ok(()),
        _ if errors > 0 => anyhow::bail!("{} requests failed (the result file was written)", errors),
        _ => anyhow::bail!("{} (the result file was written)", record.stop_message),
    }
}
