//! The capacity search every rate-driven workload shares (`mobile find-max`,
//! `scenario find-max`): trials at rates the executor's `search::find_max`
//! bisects, each a fixed-rate run of the same loaders, held when it ends
//! with backlog 0, p99 under the bound and almost no errors.

use crate::cli::shared::SearchArgs;
use crate::console::Verbosity;
use crate::run::Run;
use crate::run::drive::ExecSpec;
use aggro_core::units::format_nanos;
use aggro_core::{ErrorSamples, Nanos, RatePlan};
use aggro_report::{OpCount, RunRecord};
use aggro_runner::search::{SearchPlan, Trial};
use aggro_runner::{Loader, StopHandle, StopReason};
use serde::Serialize;
use std::future::Future;
use std::sync::Arc;

/// Errors above this fraction of requests fail a trial.
const MAX_ERROR_RATIO: f64 = 0.001;

/// The search's flags, resolved; written into the result.
#[derive(Clone, Debug, Serialize)]
pub struct FindMax {
    pub search: SearchPlan,
    pub p99_bound_ns: Nanos,
    pub step_ns: Nanos,
}

impl FindMax {
    /// The search flags, resolved.
    pub fn resolve(a: &SearchArgs) -> Self {
        Self {
            search: SearchPlan { start_rate: a.start_rate, max_rate: a.max_rate, precision: a.precision, max_trials: a.max_trials },
            p99_bound_ns: a.p99.as_nanos() as Nanos,
            step_ns: a.step.as_nanos() as Nanos,
        }
    }

    /// Why a trial's record fails it, if it does.
    fn verdict(&self, record: &RunRecord, stop: StopReason) -> Option<String> {
        let total = &record.totals[0];
        let done = total.ok + total.errors;
        if stop != StopReason::Completed {
            Some(stop.to_string())
        } else if record.backlog_at_end > 0 {
            Some(format!("backlog {} at the end", record.backlog_at_end))
        } else if let Some(worst) = record.intervals.iter().map(|i| i.backlog).max().filter(|b| b * 4 > record.due.max(1)) {
            // A short trial can start its requests late, drain, and still keep its p99 under a loose bound:
            // a quarter of its requests waiting to start at once is not a rate held.
            Some(format!("backlog {worst} during the trial (of {} requests): not started on time", record.due))
        } else if total.latency.p99_ns > self.p99_bound_ns {
            Some(format!("p99 {} above {}", format_nanos(total.latency.p99_ns), format_nanos(self.p99_bound_ns)))
        } else if total.errors as f64 > MAX_ERROR_RATIO * done as f64 {
            Some(format!("{} errors", total.errors))
        } else {
            None
        }
    }

    /// Runs the search with `loaders`, topping them up with `connect_one`
    /// after a trial that abandoned some; prints a line per trial and the
    /// answer. Returns the record of the trial at the best rate held (the
    /// last trial's when none held), the search's result in its `extra`, every
    /// trial's counts in its `all_trials` (its command and spec for the caller
    /// to fill).
    #[allow(clippy::too_many_arguments)]
    pub async fn run<L, F, Fut>(
        &self,
        exec: &ExecSpec,
        blocking: bool,
        names: &'static [&'static str],
        mut loaders: Vec<L>,
        mut connect_one: F,
        samples: &Arc<ErrorSamples>,
    ) -> anyhow::Result<RunRecord>
    where
        L: Loader,
        F: FnMut() -> Fut,
        Fut: Future<Output = anyhow::Result<L>>,
    {
        let stop = StopHandle::new();
        stop.stop_on_signals();
        println!("{:>12} {:>12} {:>10} {:>8} {:>8}  verdict", "rate/s", "achieved/s", "p99", "backlog", "errors");
        // The record of the best rate held (the answer's), else of the last trial run.
        let (mut held, mut last): (Option<(f64, RunRecord)>, Option<RunRecord>) = (None, None);
        // Every trial's counts, for a verify: each trial commits.
        let mut all_trials: Vec<OpCount> = names.iter().map(|n| OpCount { name: n.to_string(), ..OpCount::default() }).collect();
        let started_at = aggro_report::record::now_rfc3339();
        let result = aggro_runner::search::find_max(&self.search, async |rate| {
            if stop.is_stopped() {
                return None;
            }
            while loaders.len() < exec.loaders as usize {
                loaders.push(connect_one().await.ok()?);
            }
            let mut plan = exec.plan(RatePlan::fixed(rate, self.step_ns), None);
            crate::run::drive::place(&mut plan, blocking);
            let run = Run {
                command: "find-max trial",
                spec: serde_json::json!({ "rate": rate }),
                names,
                plan: &plan,
                verbosity: Verbosity { quiet: true },
                samples,
                threads: exec.threads,
                start_at: None,
                live: None,
            };
            let (outcome, record) = run.go(std::mem::take(&mut loaders), &stop).await.ok()?;
            loaders = outcome.loaders;
            for sum in &mut all_trials {
                if let Some(op) = record.total(&sum.name) {
                    sum.add(&OpCount::of(op));
                }
            }
            if outcome.stop_reason == StopReason::Interrupted {
                return None;
            }
            let why = self.verdict(&record, outcome.stop_reason);
            let total = &record.totals[0];
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
            if trial.passed && held.as_ref().is_none_or(|(best, _)| rate > *best) {
                held = Some((rate, record.clone()));
            }
            last = Some(record);
            Some(trial)
        })
        .await;
        match result.best {
            Some(best) if result.reached_max => println!("held every rate up to the ceiling: ≥ {best:.0}/s (raise --max-rate)"),
            Some(best) => println!("maximum rate held: {best:.0}/s (p99 ≤ {}, backlog 0)", format_nanos(self.p99_bound_ns)),
            None => println!("no rate tried was held"),
        }
        let held = held.filter(|(rate, _)| Some(*rate) == result.best).map(|(_, record)| record);
        let mut record = held.or(last).ok_or_else(|| anyhow::anyhow!("interrupted before the first trial finished"))?;
        record.started_at = started_at;
        record.extra = serde_json::to_value(&result)?;
        record.all_trials = all_trials;
        if stop.is_stopped() {
            record.stop_reason = serde_json::to_value(StopReason::Interrupted)?;
            record.stop_message = StopReason::Interrupted.to_string();
        }
        Ok(record)
    }
}
