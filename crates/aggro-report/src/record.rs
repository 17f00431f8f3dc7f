//! The run record: what every aggro run writes, and what reports read.

use crate::host::{CpuUse, HostInfo};
use crate::signal::GeneratorSignal;
use aggro_core::ErrorClass;
use aggro_core::world::WorldRecord;
use aggro_stats::{OpStats, Recorder, Summary, encode};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `format` field of every record this version writes.
pub const FORMAT: &str = "aggro-run/1";

/// One operation's figures over an interval (or the whole run).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct OpRecord {
    /// Operation name.
    pub name: String,
    /// Successful requests.
    pub ok: u64,
    /// Failures that are not conflicts.
    pub errors: u64,
    /// Conflicts (retried or final), counted apart.
    pub conflicts: u64,
    /// Failures and conflicts by class name (classes with zero left out).
    pub failures: BTreeMap<String, u64>,
    /// Latency from intended start (open loop) or actual start (closed loop).
    pub latency: Summary,
    /// Service time, from actual start.
    pub service: Summary,
    /// The latency histogram, HdrHistogram V2-DEFLATE, base64.
    pub latency_hdr: String,
    /// The service-time histogram, same encoding.
    pub service_hdr: String,
}

impl OpRecord {
    /// Summarizes and encodes one operation's stats.
    pub fn from_stats(name: &str, s: &OpStats) -> Self {
        let failures = ErrorClass::ALL.iter().filter(|c| s.failures[c.index()] > 0).map(|c| (c.name().to_string(), s.failures[c.index()])).collect();
        Self {
            name: name.to_string(),
            ok: s.ok,
            errors: s.errors(),
            conflicts: s.conflicts(),
            failures,
            latency: Summary::of(&s.latency),
            service: Summary::of(&s.service),
            latency_hdr: encode::to_base64(&s.latency),
            service_hdr: encode::to_base64(&s.service),
        }
    }

    /// Successful requests per second over `elapsed_s`.
    pub fn per_second(&self, elapsed_s: f64) -> f64 {
        self.ok as f64 / elapsed_s.max(1e-9)
    }

    /// `n` as a percentage of this operation's requests (ok + errors; conflicts are retried within them).
    pub fn percent_of_requests(&self, n: u64) -> f64 {
        100.0 * n as f64 / (self.ok + self.errors).max(1) as f64
    }

    /// Failures of one class.
    pub fn failures_of(&self, class: ErrorClass) -> u64 {
        self.failures.get(class.name()).copied().unwrap_or(0)
    }
}

/// Encodes every operation of a recorder.
pub fn op_records(names: &[&str], r: &Recorder) -> Vec<OpRecord> {
    names.iter().zip(&r.ops).map(|(n, s)| OpRecord::from_stats(n, s)).collect()
}

/// One interval of a run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct IntervalRecord {
    /// Start, seconds since the run's start.
    pub start_s: f64,
    /// End, seconds since the run's start.
    pub end_s: f64,
    /// Due requests not started at the end of the interval.
    pub backlog: u64,
    /// Requests the plan meant to have started by the end.
    pub due: u64,
    /// Requests started by the end.
    pub started: u64,
    /// The planned rate at the end (absent in a closed loop).
    pub planned_rate: Option<f64>,
    /// Figures per operation; the first is the whole request.
    pub ops: Vec<OpRecord>,
    /// Timer lateness (actual start − intended start of requests whose loader waited for them).
    pub lag: Summary,
    /// Its histogram (same encoding as `latency_hdr`), so merged shards' lateness is exact; empty when not kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub lag_hdr: String,
    /// CPU and memory of the generator and the machine.
    pub cpu: CpuUse,
    /// The largest backlog seen beside an idle loader (the generator fell
    /// behind its schedule); 0, and absent from the file, when never.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub behind: u64,
    /// The watched server's resources at the close (`--server-pid`); absent when none was watched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::host::ServerUse>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The first message seen for an error class.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ErrorSample {
    /// Class name.
    pub class: String,
    /// The message.
    pub message: String,
}

/// A whole run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    /// Always [`FORMAT`].
    pub format: String,
    /// aggro's version.
    pub aggro_version: String,
    /// The command that ran, such as `mobile run`.
    pub command: String,
    /// The fully resolved run description.
    pub spec: serde_json::Value,
    /// The machine.
    pub host: HostInfo,
    /// Wall-clock start, RFC 3339.
    pub started_at: String,
    /// Operation names; the first is the whole request.
    pub operations: Vec<String>,
    /// Every interval in order.
    pub intervals: Vec<IntervalRecord>,
    /// The whole run, merged from the intervals' histograms.
    pub totals: Vec<OpRecord>,
    /// Timer lateness over the whole run.
    pub lag: Summary,
    /// Its histogram; empty when not kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub lag_hdr: String,
    /// Why the run ended, machine-readable.
    pub stop_reason: serde_json::Value,
    /// Why the run ended, for a person.
    pub stop_message: String,
    /// Requests due by the end.
    pub due: u64,
    /// Requests started.
    pub started: u64,
    /// Requests completed (successfully or not).
    pub completed: u64,
    /// Due requests never started.
    pub backlog_at_end: u64,
    /// Run length in seconds.
    pub elapsed_s: f64,
    /// The first message of each error class seen.
    pub error_samples: Vec<ErrorSample>,
    /// Whether the figures may describe aggro rather than the backend: some
    /// signal in `generator_signals` fired (arena runs decide it by their own
    /// verdict).
    pub generator_bound: bool,
    /// Each piece of evidence that the generator set the pace, with its
    /// figure and limit ([`crate::generator`]); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generator_signals: Vec<GeneratorSignal>,
    /// Command-specific results (a capacity search's trials, a verification).
    pub extra: serde_json::Value,
    /// The world the run ran on, as the store's world record named it;
    /// absent when the store held none (populated by an older aggro, or a
    /// target such as `null:` that keeps nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world: Option<WorldRecord>,
    /// The ids under which the run (each shard, for a merged file) logged
    /// itself in the store's run log, so a verify can tell which logged
    /// runs the given files cover.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_ids: Vec<String>,
    /// What the whole command did, per operation, where `totals` show only part of it: a capacity
    /// search's every trial (its `totals` are one trial's), so that a verify counts every commit.
    /// Absent when `totals` are the whole command.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub all_trials: Vec<OpCount>,
}

/// An operation's successes and failures (not conflicts) over a whole command.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct OpCount {
    /// Operation name.
    pub name: String,
    /// Successful requests.
    pub ok: u64,
    /// Failures that are not conflicts.
    pub errors: u64,
    /// Those of the failures that may still have committed ([`ErrorClass::may_have_committed`]).
    #[serde(default)]
    pub in_doubt: u64,
}

impl OpCount {
    /// An operation's counts over a whole run.
    pub fn of(o: &OpRecord) -> OpCount {
        let in_doubt = ErrorClass::ALL.iter().filter(|c| c.may_have_committed()).map(|&c| o.failures_of(c)).sum();
        OpCount { name: o.name.clone(), ok: o.ok, errors: o.errors, in_doubt }
    }

    /// `self` and `other` counted together (under `self`'s name).
    pub fn plus(mut self, other: OpCount) -> OpCount {
        self.add(&other);
        self
    }

    /// Counts `other` into `self` (under `self`'s name).
    pub fn add(&mut self, other: &OpCount) {
        self.ok += other.ok;
        self.errors += other.errors;
        self.in_doubt += other.in_doubt;
    }
}

impl RunRecord {
    /// The record of a run that has begun and recorded nothing yet (stop
    /// reason `running`), on this machine; runs fill in the rest as they end.
    pub fn begun(command: &str, spec: serde_json::Value, started_at: String, operations: &[&str]) -> Self {
        Self {
            format: FORMAT.into(),
            aggro_version: env!("CARGO_PKG_VERSION").into(),
            command: command.into(),
            spec,
            host: crate::host::HostInfo::current(),
            started_at,
            operations: operations.iter().map(|s| s.to_string()).collect(),
            intervals: Vec::new(),
            totals: op_records(operations, &Recorder::new(operations.len())),
            lag: Summary::default(),
            lag_hdr: String::new(),
            stop_reason: serde_json::json!({ "kind": "running" }),
            stop_message: "running".into(),
            due: 0,
            started: 0,
            completed: 0,
            backlog_at_end: 0,
            elapsed_s: 0.0,
            error_samples: Vec::new(),
            generator_bound: false,
            generator_signals: Vec::new(),
            extra: serde_json::Value::Null,
            world: None,
            run_ids: Vec::new(),
            all_trials: Vec::new(),
        }
    }

    /// The whole-run figures of operation `name`.
    pub fn total(&self, name: &str) -> Option<&OpRecord> {
        self.totals.iter().find(|o| o.name == name)
    }

    /// Operation `name`'s successes and failures over the whole command: every trial of a capacity
    /// search ([`RunRecord::all_trials`]), else the run's totals.
    pub fn done(&self, name: &str) -> Option<OpCount> {
        match self.all_trials.is_empty() {
            true => self.total(name).map(OpCount::of),
            false => self.all_trials.iter().find(|o| o.name == name).cloned(),
        }
    }
}

/// Now as RFC 3339 (UTC, seconds).
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
