//! `aggro mobile find-max`: the highest rate with backlog 0 and p99 under a bound.

use super::spec::{self, DriveSpec};
use super::{connect_loaders, on_target};
use crate::BadInput;
use crate::cli::FindMaxArgs;
use crate::console::{Console, Verbosity};
use crate::session;
use aggro_core::mobile::MobileTarget;
use aggro_core::world::WorldRecord;
use aggro_core::units::{format_nanos, parse_duration, parse_rate};
use aggro_core::{ErrorSamples, MonotonicClock, Nanos, RatePlan};
use aggro_report::RunRecord;
use aggro_runner::search::{SearchPlan, Trial, find_max};
use aggro_runner::{StopHandle, StopReason};
use aggro_targets::MobileVisitor;
use std::path::PathBuf;
use std::sync::Arc;

/// Errors above this fraction of requests fail a trial.
const MAX_ERROR_RATIO: f64 = 0.001;

struct FindMax {
    drive: DriveSpec,
    /// The world the store's record names, if it has one.
    world: Option<WorldRecord>,
    search: SearchPlan,
    p99_bound_ns: Nanos,
    step_ns: Nanos,
    out: PathBuf,
}

impl MobileVisitor for FindMax {
    type Output = anyhow::Result<RunRecord>;

    async fn visit<T: MobileTarget>(self, target: T) -> anyhow::Result<RunRecord> {
        let d = &self.drive;
        let samples = Arc::new(ErrorSamples::default());
        let mut loaders = connect_loaders(&target, d.exec.loaders, d.workload, d.keys, d.exec.seed, &samples).await?;
        // Logged, but its result file does not claim the id: the file keeps
        // only the last trial's counts, so it cannot account for what every
        // trial committed, and a verify names the search instead of blaming the store.
        crate::world::log_run(&target, &target.describe(), "mobile", "mobile find-max", d.workload.name(), d.workload.commits()).await?;
        let names = d.workload.operations();
        let stop = StopHandle::new();
        stop.stop_on_signals();
        println!(
            "aggro mobile find-max: {} on {}, {} loaders, {:.0}s per trial, p99 ≤ {}",
            d.workload.name(),
            target.describe(),
            d.exec.loaders,
            self.step_ns as f64 / 1e9,
            format_nanos(self.p99_bound_ns)
        );
        println!("{:>12} {:>12} {:>10} {:>8} {:>8}  verdict", "rate/s", "achieved/s", "p99", "backlog", "errors");
        let mut last: Option<RunRecord> = None;
        let started_at = aggro_report::record::now_rfc3339();
        let result = find_max(&self.search, async |rate| {
            if stop.is_stopped() {
                return None;
            }
            // Top up loaders abandoned by a trial that timed out.
            while loaders.len() < d.exec.loaders as usize {
                let more = connect_loaders(&target, 1, d.workload, d.keys, d.exec.seed, &samples).await.ok()?;
                loaders.extend(more);
            }
            let mut p = d.exec.plan(RatePlan::fixed(rate, self.step_ns), None);
            crate::drive::place(&mut p, target.blocking());
            let mut console = Console::new(names, None, Verbosity { quiet: true, per_loader: false });
            let outcome =
                aggro_runner::run(&p, names.len(), std::mem::take(&mut loaders), MonotonicClock::start(), &stop, &mut console)
                    .await;
            let record = session::record("mobile find-max trial", serde_json::json!({ "rate": rate }), String::new(), names, &outcome, console, &samples, d.exec.threads);
            loaders = outcome.loaders;
            if outcome.stop_reason == StopReason::Interrupted {
                return None;
            }
            let total = &record.totals[0];
            let done = total.ok + total.errors;
            let why = if outcome.stop_reason != StopReason::Completed {
                Some(outcome.stop_reason.to_string())
            } else if record.backlog_at_end > 0 {
                Some(format!("backlog {} at the end", record.backlog_at_end))
            } else if total.latency.p99_ns > self.p99_bound_ns {
                Some(format!("p99 {} above {}", format_nanos(total.latency.p99_ns), format_nanos(self.p99_bound_ns)))
            } else if total.errors as f64 > MAX_ERROR_RATIO * done as f64 {
                Some(format!("{} errors", total.errors))
            } else {
                None
            };
            let trial = Trial {
                rate,
                passed: why.is_none(),
                achieved: total.ok as f64 / record.elapsed_s.max(1e-9),
                p99_ns: total.latency.p99_ns,
                backlog: record.backlog_at_end,
                errors: total.errors,
                why,
            };
            println!(
                "{:>12.0} {:>12.0} {:>10} {:>8} {:>8}  {}",
                trial.rate,
                trial.achieved,
                format_nanos(trial.p99_ns),
                trial.backlog,
                trial.errors,
                trial.why.as_deref().unwrap_or("held")
            );
            last = Some(record);
            Some(trial)
        })
        .await;
        match result.best {
            Some(best) if result.reached_max => println!("held every rate up to the ceiling: ≥ {best:.0}/s (raise --max-rate)"),
            Some(best) => println!("maximum rate held: {best:.0}/s (p99 ≤ {}, backlog 0)", format_nanos(self.p99_bound_ns)),
            None => println!("no rate tried was held"),
        }
        let mut record = last.ok_or_else(|| anyhow::anyhow!("interrupted before the first trial finished"))?;
        record.command = "mobile find-max".into();
        record.started_at = started_at;
        record.spec = serde_json::json!({ "drive": d, "search": self.search, "p99_bound_ns": self.p99_bound_ns, "step_ns": self.step_ns, "target": target.describe() });
        record.extra = serde_json::to_value(&result)?;
        record.world = self.world;
        session::write(&record, &self.out, &session::Exports::default())?;
        println!("result: {}", self.out.display());
        Ok(record)
    }
}

pub fn main(a: FindMaxArgs) -> anyhow::Result<()> {
    let data = spec::resolve_data(&a.drive.data)?;
    let mut drive = spec::resolve_drive(&a.drive, &data)?;
    let bad = |e: String| anyhow::Error::from(BadInput(e));
    let search = SearchPlan {
        start_rate: parse_rate(&a.start_rate).map_err(bad)?,
        max_rate: parse_rate(&a.max_rate).map_err(bad)?,
        precision: a.precision,
        max_trials: a.max_trials,
    };
    if !(a.precision > 0.0 && a.precision < 1.0) {
        return Err(bad("--precision must be between 0 and 1".into()));
    }
    let p99_bound_ns = parse_duration(&a.p99).map_err(bad)?.as_nanos() as Nanos;
    let step_ns = parse_duration(&a.step).map_err(bad)?.as_nanos() as Nanos;
    let rt = session::runtime(drive.exec.threads)?;
    let (keys, world) = super::settle(&rt, &data)?;
    drive.keys = keys;
    let cmd = FindMax {
        search,
        p99_bound_ns,
        step_ns,
        out: a.out.unwrap_or_else(|| session::default_out(&format!("find-max-{}", drive.workload.name()))),
        drive,
        world,
    };
    rt.block_on(on_target(&a.drive.data.target, cmd)).map(drop)
}
