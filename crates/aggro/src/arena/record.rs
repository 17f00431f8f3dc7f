//! Arena runs in aggro's result format: each timed thing (a frame phase, the
//! gunfire delay) is an operation whose histogram is its duration.

use aggro_report::host::CpuUse;
use aggro_report::record::{IntervalRecord, OpRecord, RunRecord};
use aggro_stats::{Histogram, OpStats, Summary};

/// Where each arena process keeps its own figures in its record's `extra` (its intervals, totals, …):
/// written by the process, read back by the benches that ran it.
pub const SWARM: &str = "arena_swarm";
pub const GAME_SERVER: &str = "arena_server";
pub const RELAY_SERVER: &str = "relay_server";

/// The figures of an operation whose every sample is a duration in ns.
pub fn timed(h: &Histogram) -> OpStats {
    OpStats { latency: h.clone(), service: h.clone(), ok: h.len(), ..OpStats::default() }
}

/// The figures of an operation that only counts: `ok` successes and failures by class (no durations).
pub fn counts(ok: u64, failures: &[(aggro_core::ErrorClass, u64)]) -> OpStats {
    let mut s = OpStats { ok, ..OpStats::default() };
    for (class, n) in failures {
        s.failures[class.index()] += n;
    }
    s
}

/// An operation whose every sample is a duration in ns.
pub fn op(name: &str, h: &Histogram) -> OpRecord {
    OpRecord::from_stats(name, &timed(h))
}

/// One interval: `count` things happened (frames, ticks) at `rate` per second planned.
pub fn interval(start_s: f64, end_s: f64, count: u64, rate: Option<f64>, ops: Vec<OpRecord>, lag: Summary, cpu_pct: f64) -> IntervalRecord {
    IntervalRecord {
        start_s,
        end_s,
        backlog: 0,
        due: count,
        started: count,
        planned_rate: rate,
        ops,
        lag,
        lag_hdr: String::new(),
        cpu: CpuUse { generator_cores: cpu_pct / 100.0, ..CpuUse::default() },
        behind: 0,
        server: None,
    }
}

/// What a record needs beyond its intervals.
pub struct Whole {
    pub command: &'static str,
    pub spec: serde_json::Value,
    pub started_at: String,
    pub operations: Vec<String>,
    pub totals: Vec<OpRecord>,
    pub lag: Summary,
    pub count: u64,
    pub elapsed_s: f64,
    /// "completed" or "interrupted".
    pub stop_kind: &'static str,
    pub stop_message: String,
    pub generator_bound: bool,
    pub extra: serde_json::Value,
}

/// The record of an arena run.
pub fn run_record(w: Whole, intervals: Vec<IntervalRecord>) -> RunRecord {
    let operations: Vec<&str> = w.operations.iter().map(String::as_str).collect();
    RunRecord {
        intervals,
        totals: w.totals,
        lag: w.lag,
        stop_reason: serde_json::json!({ "kind": w.stop_kind }),
        stop_message: w.stop_message,
        due: w.count,
        started: w.count,
        completed: w.count,
        elapsed_s: w.elapsed_s,
        generator_bound: w.generator_bound,
        extra: w.extra,
        ..RunRecord::begun(w.command, w.spec, w.started_at, &operations)
    }
}

/// Milliseconds from ns, for tables.
pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}
