//! `aggro mobile run`.

use super::spec::{self, DriveSpec};
use super::{connect_loaders, on_target};
use crate::BadInput;
use crate::cli::RunArgs;
use crate::console::{Console, Verbosity};
use crate::live::Live;
use crate::session;
use aggro_core::mobile::MobileTarget;
use aggro_core::world::WorldRecord;
use aggro_core::units::{parse_duration, parse_rate};
use aggro_core::{ErrorSamples, MonotonicClock, Nanos, RatePlan};
use aggro_report::RunRecord;
use aggro_runner::{Placement, RunPlan, StopHandle, StopReason};
use aggro_targets::MobileVisitor;
use std::path::PathBuf;
use std::sync::Arc;

struct Run {
    drive: DriveSpec,
    /// The world the store's record names, if it has one.
    world: Option<WorldRecord>,
    /// The executor plan; its placement is set once the target is known.
    plan: RunPlan,
    verbosity: Verbosity,
    out: PathBuf,
    exports: session::Exports,
    /// When the schedule starts (`--start-at`), for shards on several machines.
    start_at: Option<std::time::SystemTime>,
    live: Option<std::net::SocketAddr>,
}

/// The executor plan for a drive at `rate` (already resolved).
pub fn plan(drive: &DriveSpec, rate: RatePlan, limit: Option<u64>) -> RunPlan {
    RunPlan {
        rate,
        pacing: drive.pacing,
        limit,
        interval_ns: drive.interval_ns,
        backlog_rule: drive.backlog_rule,
        drain_ns: drive.drain_ns,
        seed: drive.seed,
        placement: Placement::Tasks,
        share: aggro_core::Share::WHOLE,
        timer: drive.timer,
    }
}

/// Loaders of a blocking (embedded) target get threads of their own.
pub fn place<T: MobileTarget>(plan: &mut RunPlan, target: &T) {
    plan.placement = if target.blocking() { Placement::Threads } else { Placement::Tasks };
}

impl MobileVisitor for Run {
    type Output = anyhow::Result<RunRecord>;

    async fn visit<T: MobileTarget>(mut self, target: T) -> anyhow::Result<RunRecord> {
        place(&mut self.plan, &target);
        let d = &self.drive;
        let samples = Arc::new(ErrorSamples::default());
        let loaders = connect_loaders(&target, d.loaders, d.workload, d.keys, d.seed, &samples).await?;
        let run_id = crate::world::log_run(&target, &target.describe(), "mobile", "mobile run", d.workload.name(), d.workload.commits()).await?;
        let names = d.workload.operations();
        let stop = StopHandle::new();
        stop.stop_on_signals();
        let share = match self.plan.share {
            s if s.of > 1 => format!(", worker {} of {} (one request in {})", s.index + 1, s.of, s.of),
            _ => String::new(),
        };
        eprintln!(
            "aggro mobile run: {} on {}, {} loaders, {}, seed {}{share}",
            d.workload.name(),
            target.describe(),
            d.loaders,
            describe_rate(&self.plan),
            d.seed
        );
        let spec = serde_json::json!({ "drive": d, "plan": self.plan, "target": target.describe() });
        let mut console = Console::new(names, self.plan.rate.duration_ns(), self.verbosity);
        session::wait_until(self.start_at).await;
        let started_at = aggro_report::record::now_rfc3339();
        console.live = self.live.map(|addr| Live::start(addr, "mobile run", &spec, &started_at, names)).transpose()?;
        let outcome =
            aggro_runner::run(&self.plan, names.len(), loaders, MonotonicClock::start(), &stop, &mut console).await;
        console.finish();
        let mut record = session::record("mobile run", spec, started_at, names, &outcome, console, &samples, d.threads);
        record.world = self.world;
        record.run_ids = vec![run_id];
        session::write(&record, &self.out, &self.exports)?;
        session::print_summary(&record);
        println!("result: {}", self.out.display());
        Ok(record)
    }
}

fn describe_rate(plan: &RunPlan) -> String {
    match &plan.rate {
        RatePlan::Max { .. } => "closed loop (as fast as each loader can)".into(),
        RatePlan::Stages { stages } if stages.len() == 1 => {
            format!("{}/s for {:.0}s, {:?} pacing", stages[0].end_rate, stages[0].duration_ns as f64 / 1e9, plan.pacing)
        }
        RatePlan::Stages { stages } => format!("{} ramp stages, {:?} pacing", stages.len(), plan.pacing),
    }
}

pub fn main(a: RunArgs) -> anyhow::Result<()> {
    let data = spec::resolve_data(&a.drive.data)?;
    let mut drive = spec::resolve_drive(&a.drive, &data)?;
    let bad = |e: String| anyhow::Error::from(BadInput(e));
    let rate = match (&a.stages, a.rate.as_str()) {
        (Some(stages), _) => RatePlan::parse_stages(stages, 0.0).map_err(bad)?,
        (None, "max") => RatePlan::Max { duration_ns: Some(parse_duration(&a.duration).map_err(bad)?.as_nanos() as Nanos) },
        (None, r) => RatePlan::fixed(parse_rate(r).map_err(bad)?, parse_duration(&a.duration).map_err(bad)?.as_nanos() as Nanos),
    };
    if a.shard.worker.is_some() && a.drive.seed.is_none() {
        return Err(bad("--worker needs --seed: every shard of a run must draw the same schedule and requests".into()));
    }
    let mut plan = plan(&drive, rate, a.requests);
    plan.share = a.shard.worker.as_deref().map(session::worker).transpose()?.unwrap_or_default();
    let start_at = session::start_at(a.shard.start_at.as_deref())?;
    let live = a.live.as_deref().map(crate::live::address).transpose()?;
    let rt = session::runtime(drive.threads)?;
    let (keys, world) = super::settle(&rt, &data)?;
    drive.keys = keys;
    let run = Run {
        world,
        plan,
        verbosity: Verbosity { quiet: a.drive.quiet, per_loader: a.drive.per_loader },
        out: a.out.unwrap_or_else(|| session::default_out(drive.workload.name())),
        exports: a.exports,
        start_at,
        live,
        drive,
    };
    let record = rt.block_on(on_target(&a.drive.data.target, run))?;
    let errors: u64 = record.totals.first().map_or(0, |t| t.errors);
    match serde_json::from_value::<StopReason>(record.stop_reason.clone()) {
        Ok(StopReason::Completed | StopReason::Interrupted) if errors == 0 => Ok(()),
        _ if errors > 0 => anyhow::bail!("{} requests failed (the result file was written)", errors),
        _ => anyhow::bail!("{} (the result file was written)", record.stop_message),
    }
}
