//! A scripted swarm's funnel: for each stage its bots reached (`stage("matched")`, and `connected`), how
//! many reached it of those that started, the time from a bot's intended start to it (p50, p99, from the
//! merged histogram), its peak rate in an interval, and the bots still short of it when the run ended —
//! a stage the script names that no bot reached among them. Stages are ordered by their median time, the
//! way in.

use super::tally::Tally;
use aggro_arena::verdict::{Limit, Verdict};
use aggro_core::units::format_nanos;
use aggro_report::record::RunRecord;
use aggro_stats::Histogram;
use aggro_stats::Summary;
use aggro_swarm::STAGE;
use serde::{Deserialize, Serialize};

/// One stage of the funnel.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Stage {
    pub name: String,
    /// Bots that reached it.
    pub reached: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The most reached in one interval, per second.
    pub peak_per_s: f64,
    /// Bots playing at the end that had not reached it.
    pub short_at_end: u64,
}

/// The funnel: bots started, then each stage on the way in.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Funnel {
    pub started: u64,
    pub stages: Vec<Stage>,
}

impl Stage {
    /// Stage `name` of the bots whose times to it are `h`, `peak_per_s` of them in one interval at most,
    /// `short_at_end` still short of it at the end.
    fn new(name: String, h: &Histogram, peak_per_s: f64, short_at_end: u64) -> Stage {
        let s = Summary::of(h);
        Stage { name, reached: s.count, p50_ms: s.p50_ns as f64 / 1e6, p99_ms: s.p99_ns as f64 / 1e6, peak_per_s, short_at_end }
    }
}

impl Funnel {
    /// The funnel of the intervals `tally` added so far; None when no stage was named.
    pub fn of(tally: &Tally) -> Option<Funnel> {
        let whole = &tally.whole;
        let none = aggro_stats::new_histogram();
        // The stages timed, and those the script names that no bot reached.
        let reached = whole.timed.iter().filter_map(|(op, h)| Some((op.strip_prefix(STAGE)?.to_string(), h)));
        let missed = whole.short_of.iter().filter(|(name, _)| !whole.timed.iter().any(|(op, _)| op.strip_prefix(STAGE) == Some(name)));
        let stages = reached
            .chain(missed.map(|(name, _)| (name.clone(), &none)))
            .map(|(name, h)| {
                let peak_per_s = tally.peak_per_s(&format!("{STAGE}{name}"));
                let short_at_end = whole.short_of.iter().find(|(n, _)| *n == name).map_or(0, |(_, k)| *k);
                Stage::new(name, h, peak_per_s, short_at_end)
            })
            .collect();
        Funnel::in_order(whole.started, stages)
    }

    /// The funnel of shards' `record` merged (`aggro merge`), from their funnels `shards`: each stage's
    /// times from the merged record's totals, its peak from the merged intervals, the bots started and
    /// short of it summed. None when no shard had one.
    pub fn merged(record: &RunRecord, shards: &[Funnel]) -> Result<Option<Funnel>, aggro_stats::encode::DecodeError> {
        let mut names: Vec<&str> = Vec::new();
        for s in shards.iter().flat_map(|f| &f.stages) {
            if !names.contains(&s.name.as_str()) {
                names.push(&s.name);
            }
        }
        let mut stages = Vec::with_capacity(names.len());
        for name in names {
            let op = format!("{STAGE}{name}");
            let times = aggro_report::timeline::merged(record.totals.iter().filter(|o| o.name == op).map(|o| o.latency_hdr.as_str()))?;
            let short_at_end = shards.iter().flat_map(|f| &f.stages).filter(|s| s.name == name).map(|s| s.short_at_end).sum();
            stages.push(Stage::new(name.to_string(), &times, peak_per_s(record, &op), short_at_end));
        }
        Ok(Funnel::in_order(shards.iter().map(|f| f.started).sum(), stages))
    }

    /// The funnel of `stages` in the way in's order: by median time, the stages no bot reached last; None
    /// when there is none.
    fn in_order(started: u64, mut stages: Vec<Stage>) -> Option<Funnel> {
        if stages.is_empty() {
            return None;
        }
        stages.sort_by(|a, b| (a.reached == 0).cmp(&(b.reached == 0)).then(a.p50_ms.total_cmp(&b.p50_ms)));
        Some(Funnel { started, stages })
    }

    /// The lines the run prints.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!("funnel, timed from each bot's intended start ({} bots started):", self.started)];
        for s in &self.stages {
            let share = if self.started > 0 { format!(" ({:.1} %)", 100.0 * s.reached as f64 / self.started as f64) } else { String::new() };
            let short = if s.short_at_end > 0 { format!(", {} short of it at the end", s.short_at_end) } else { String::new() };
            lines.push(format!(
                "  {}: {}{share}, p50 {} p99 {}, peak {:.1}/s{short}",
                s.name,
                s.reached,
                format_nanos((s.p50_ms * 1e6) as u64),
                format_nanos((s.p99_ms * 1e6) as u64),
                s.peak_per_s
            ));
        }
        lines
    }
}

/// Checks `thresholds` on the stages and the way back (`--slo stage:matched p99<5s,reconnect:p99<10s`)
/// against `record`, each noted; a new verdict when one broke (a service failure, joined to `verdict` when
/// that was one already) and the server was not gone. A stage no bot reached (a way back no player made)
/// breaks its thresholds.
pub fn judge(thresholds: &[aggro_report::slo::Threshold], record: &RunRecord, notes: &mut Vec<String>, verdict: &Verdict) -> Option<Verdict> {
    let mut broken = Vec::new();
    for t in thresholds {
        let (measured, passed) = match t.check(record) {
            Ok(c) => (c.measured, c.passed),
            Err(_) => ("no bot got there".to_string(), false),
        };
        notes.push(format!("{} {}: {measured}", if passed { "pass" } else { "FAIL" }, t.text()));
        if !passed {
            broken.push(format!("{} ({measured})", t.text()));
        }
    }
    if broken.is_empty() || verdict.limit == Limit::Gone {
        return None;
    }
    let why = format!("the players' way in or back broke its thresholds: {}", broken.join("; "));
    let evidence = match verdict.limit {
        Limit::Service => format!("{}; {why}", verdict.evidence),
        _ => why,
    };
    Some(Verdict { limit: Limit::Service, evidence })
}

/// The most successes of operation `op` in one of `record`'s intervals, per second (0 when never).
pub fn peak_per_s(record: &RunRecord, op: &str) -> f64 {
    let rate = |iv: &aggro_report::record::IntervalRecord| Some(iv.ops.iter().find(|o| o.name == op)?.ok as f64 / (iv.end_s - iv.start_s).max(1e-3));
    record.intervals.iter().filter_map(rate).fold(0.0, f64::max)
}
