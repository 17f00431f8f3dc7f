//! The run layer every command goes through, bottom to top: [`session`] (the runtime, Ctrl-C, the
//! result record and where it is written — every run command, the arena's included), this module's
//! [`Run`] (one run of loaders through the executor into a record — `mobile run`, `scenario run`,
//! `pgbench`, each `find-max` trial, `mmo login` and `mmo play`, so `aggro run` too), [`drive`] (the
//! rate-driven commands' flags resolved into one such run and its written file) and [`find_max`] (the
//! capacity search: trials of such runs at rates the executor bisects). [`spill`] keeps a long run's
//! interval records on disk until its result is written, so its memory stays flat (the arena's
//! processes).

pub mod drive;
pub mod find_max;
pub mod session;
pub mod spill;

use crate::console::{Console, Verbosity};
use crate::live::Live;
use aggro_core::{ErrorSamples, MonotonicClock};
use aggro_report::RunRecord;
use aggro_runner::{Loader, RunOutcome, RunPlan, StopHandle};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

/// What one run is and how it is shown.
pub struct Run<'a> {
    /// The command as the record names it (`mobile run`, `find-max trial`).
    pub command: &'a str,
    /// Recorded verbatim.
    pub spec: serde_json::Value,
    /// The operations the loaders time.
    pub names: &'static [&'static str],
    pub plan: &'a RunPlan,
    pub verbosity: Verbosity,
    /// The loaders' first errors, shared with them.
    pub samples: &'a Arc<ErrorSamples>,
    /// `--threads` (0: one per CPU), for the record's generator figures.
    pub threads: usize,
    /// `--start-at`: the schedule starts then (shards on several machines together).
    pub start_at: Option<SystemTime>,
    /// `--live`: the report served while the run goes.
    pub live: Option<SocketAddr>,
}

impl Run<'_> {
    /// Runs `loaders` until the plan ends or `stop` is pulled, and returns the executor's outcome (the
    /// loaders come back in it, for the caller to close) with the run's record.
    pub async fn go<L: Loader>(self, loaders: Vec<L>, stop: &StopHandle) -> anyhow::Result<(RunOutcome<L>, RunRecord)> {
        let mut console = Console::new(self.names, self.plan.rate.duration_ns(), self.verbosity);
        session::wait_until(self.start_at).await;
        let started_at = aggro_report::record::now_rfc3339();
        console.live = self.live.map(|addr| Live::start(addr, self.command, &self.spec, &started_at, self.names)).transpose()?;
        let outcome = aggro_runner::run(self.plan, self.names.len(), loaders, MonotonicClock::start(), stop, &mut console).await;
        console.finish();
        let record = session::record(self.command, self.spec, started_at, self.names, &outcome, console, self.samples, self.threads);
        Ok((outcome, record))
    }
}
